#include "reader/unit_view.h"

#include "absl/strings/str_cat.h"
#include "format/record_codec.h"

namespace shardpack::reader {

UnitView UnitView::Encoded(std::span<const ByteSpan> records, const std::string* where,
                           uint64_t first_record) {
  UnitView v(Kind::kEncoded, where, first_record);
  v.encoded_ = records;
  return v;
}

UnitView UnitView::Columns(const ColumnRows& columns, const std::string* where,
                           uint64_t first_record) {
  UnitView v(Kind::kColumns, where, first_record);
  v.columns_ = columns;
  return v;
}

size_t UnitView::size() const {
  switch (kind_) {
    case Kind::kBlock:
      return block_.size();
    case Kind::kEncoded:
      return encoded_.size();
    case Kind::kColumns:
      return columns_.rows;
    case Kind::kNone:
      break;
  }
  return 0;
}

ByteSpan UnitView::record_bytes(size_t i) const {
  switch (kind_) {
    case Kind::kBlock:
      return block_.record_bytes(i);
    case Kind::kEncoded:
      return encoded_[i];
    case Kind::kColumns: {
      const ColumnRows& c = columns_;
      if (c.offsets == nullptr) {
        const uint64_t row = c.image.RawBytes();
        return {c.images + row * i, row};
      }
      return {c.images + (c.offsets[i] - c.offsets[0]),
              static_cast<size_t>(c.offsets[i + 1] - c.offsets[i])};
    }
    case Kind::kNone:
      break;
  }
  return {};
}

void UnitView::PrefetchIndex(size_t i) const {
  const void* p = nullptr;
  if (kind_ == Kind::kBlock) p = block_.record_offsets().data() + i;
  if (kind_ == Kind::kEncoded) p = encoded_.data() + i;
  if (kind_ == Kind::kColumns && columns_.offsets != nullptr) p = columns_.offsets + i;
  if (p != nullptr) __builtin_prefetch(p);
}

absl::StatusOr<Record> UnitView::SlowRecord(size_t i) const {
  if (kind_ == Kind::kEncoded) {
    return format::DecodeRecord(encoded_[i],
                        [&] { return absl::StrCat(*where_, ": record ", first_record_ + i); });
  }
  const ColumnRows& c = columns_;
  Record r;
  r.image = c.image;
  if (c.info != nullptr) {
    const uint32_t* info = c.info + 5 * i;
    if (info[0] > 1 || info[1] > 1 || info[4] > 255) {
      return absl::DataLossError(absl::StrCat(*where_, ": record ", first_record_ + i,
                                              ": bad image_info ", info[0], " ", info[1], " ",
                                              info[4]));
    }
    r.image = {static_cast<Encoding>(info[0]), static_cast<Layout>(info[1]), info[2], info[3],
               static_cast<uint8_t>(info[4])};
  }
  r.payload = record_bytes(i);
  for (int j = 0; j < c.num_labels; ++j) r.labels.push_back(c.labels[j][i]);
  if (c.keys != nullptr) {
    r.key = std::string_view(c.keys + (c.key_offsets[i] - c.key_offsets[0]),
                             static_cast<size_t>(c.key_offsets[i + 1] - c.key_offsets[i]));
  }
  return r;
}

}  // namespace shardpack::reader
