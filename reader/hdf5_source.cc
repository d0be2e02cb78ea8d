// The reader's HDF5 backend: units are runs of whole chunks of rows, read
// with one H5Dread per dataset into the unit's buffer.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "backends/hdf5_store.h"
#include "format/coding.h"
#include "reader/backend_sources.h"
#include "shardpack/status.h"

namespace shardpack::internal {
namespace {

constexpr size_t kInfoValues = 5;  // image_info columns per row

// A unit's buffer: [payload bytes | labels, one int64 array per field |
// image_info (flat layout)], each part 8-byte aligned.
struct UnitLayout {
  uint64_t payload = 0;  // bytes
  uint64_t labels = 0;   // offset of the first label array
  uint64_t info = 0;     // offset of image_info
  uint64_t total = 0;
};

struct Hdf5Shard {
  std::unique_ptr<backends::Hdf5ShardReader> reader;
  uint64_t rows_per_unit = 1;
  std::vector<int64_t> offsets;  // flat layout: all size() + 1 offsets
};

class Hdf5Source final : public SyncUnitSource {
 public:
  explicit Hdf5Source(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  absl::Status Init(const Manifest& manifest) {
    uint64_t first = 0;
    for (size_t f = 0; f < paths_.size(); ++f) {
      Hdf5Shard s;
      SP_ASSIGN_OR_RETURN(s.reader, backends::Hdf5ShardReader::Open(paths_[f]));
      const uint64_t rows = s.reader->size();
      if (!manifest.shards.empty() && rows != manifest.shards[f].records) {
        return absl::DataLossError(absl::StrCat(paths_[f], ": holds ", rows,
                                                " records, the manifest says ",
                                                manifest.shards[f].records));
      }
      if (!s.reader->fixed_shape()) SP_RETURN_IF_ERROR(LoadOffsets(f, s));
      // Whole chunks per unit, about kTargetUnitBytes of payload.
      const uint64_t per_row = std::max<uint64_t>(1, PayloadBytes(s, 0, rows) / std::max<uint64_t>(rows, 1));
      const uint64_t chunk = std::max<uint64_t>(s.reader->chunk_rows(), 1);
      s.rows_per_unit = chunk * std::max<uint64_t>(1, kTargetUnitBytes / (chunk * per_row));
      shards_.push_back(std::move(s));
      CutUnits(static_cast<uint32_t>(f), rows, shards_.back().rows_per_unit, &first,
               [&](uint64_t b, uint64_t e) { return Layout(shards_.back(), b, e).total; },
               &units_);
    }
    image_ = manifest.schema.image;
    return absl::OkStatus();
  }

  const std::vector<ReadUnit>& units() const override { return units_; }
  ImageInfo image() const override { return image_; }
  IoEngine engine() const override { return IoEngine::kPread; }
  uint64_t bytes_read() const override { return bytes_read_; }
  size_t BufferBytes(uint32_t u) const override {
    auto [shard, begin, end] = Rows(u);
    return Layout(shards_[shard], begin, end).total;
  }

 protected:
  absl::StatusOr<UnitView> Load(uint32_t u, uint8_t* buffer) override {
    auto [f, begin, end] = Rows(u);
    Hdf5Shard& s = shards_[f];
    const UnitLayout layout = Layout(s, begin, end);
    const uint64_t n = end - begin;
    ColumnRows c;
    c.rows = static_cast<uint32_t>(n);
    c.image = image_;
    c.images = buffer;
    c.num_labels = s.reader->num_labels();
    std::array<int64_t*, kMaxLabels> labels{};
    for (int j = 0; j < c.num_labels; ++j) {
      labels[j] = reinterpret_cast<int64_t*>(buffer + layout.labels) + j * n;
      c.labels[j] = labels[j];
    }
    if (s.reader->fixed_shape()) {
      c.image = s.reader->image_info();
      SP_RETURN_IF_ERROR(s.reader->ReadRows(begin, end, buffer, labels.data()));
    } else {
      c.offsets = s.offsets.data() + begin;
      SP_RETURN_IF_ERROR(s.reader->ReadData(s.offsets[begin], s.offsets[end], buffer));
      SP_RETURN_IF_ERROR(s.reader->ReadRows(begin, end, nullptr, labels.data()));
      auto* info = reinterpret_cast<uint32_t*>(buffer + layout.info);
      SP_RETURN_IF_ERROR(s.reader->ReadImageInfo(begin, end, info));
      c.info = info;
    }
    bytes_read_ += layout.total;
    return UnitView::Columns(c, &paths_[f], begin);
  }

 private:
  struct UnitRows {
    uint32_t shard;
    uint64_t begin, end;
  };
  UnitRows Rows(uint32_t u) const {
    const ReadUnit& unit = units_[u];
    const uint64_t begin = unit.block * shards_[unit.file].rows_per_unit;
    return {unit.file, begin, begin + unit.records};
  }

  static uint64_t PayloadBytes(const Hdf5Shard& s, uint64_t begin, uint64_t end) {
    if (s.reader->fixed_shape()) return (end - begin) * s.reader->image_info().RawBytes();
    return static_cast<uint64_t>(s.offsets[end] - s.offsets[begin]);
  }

  static UnitLayout Layout(const Hdf5Shard& s, uint64_t begin, uint64_t end) {
    const uint64_t n = end - begin;
    UnitLayout l;
    l.payload = PayloadBytes(s, begin, end);
    l.labels = AlignUp(l.payload, 8);
    l.info = l.labels + n * sizeof(int64_t) * static_cast<uint64_t>(s.reader->num_labels());
    l.total = l.info + (s.reader->fixed_shape() ? 0 : n * kInfoValues * sizeof(uint32_t));
    return l;
  }

  // The flat layout's offsets, all of them (8 bytes a record), checked once
  // here so that loads can trust them.
  absl::Status LoadOffsets(size_t f, Hdf5Shard& s) {
    const uint64_t rows = s.reader->size();
    s.offsets.resize(rows + 1);
    SP_RETURN_IF_ERROR(s.reader->ReadOffsets(0, rows, s.offsets.data()));
    for (uint64_t i = 0; i < rows; ++i) {
      if (s.offsets[i] < 0 || s.offsets[i + 1] < s.offsets[i]) {
        return absl::DataLossError(absl::StrCat(paths_[f], ": offsets of record ", i, " (",
                                                s.offsets[i], ", ", s.offsets[i + 1],
                                                ") do not ascend"));
      }
    }
    return absl::OkStatus();
  }

  std::vector<std::string> paths_;
  std::vector<Hdf5Shard> shards_;
  std::vector<ReadUnit> units_;
  ImageInfo image_;
  uint64_t bytes_read_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnitSource>> OpenHdf5Source(const std::vector<std::string>& paths,
                                                           const Manifest& manifest) {
  auto source = std::make_unique<Hdf5Source>(paths);
  SP_RETURN_IF_ERROR(source->Init(manifest));
  return source;
}

}  // namespace shardpack::internal
