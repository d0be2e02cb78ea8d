// VerifyShard: every byte of the file is covered by a check, so a flipped
// byte anywhere is found: CRCs over header, block headers, payloads, footer
// and trailer; zero checks over the padding. Each byte is read once; the
// whole-file CRC is assembled from the parts with Crc32cCombine.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "format/record_check.h"
#include "format/shard_layout.h"
#include "shardpack/crc32c.h"
#include "shardpack/manifest.h"
#include "shardpack/shard.h"

namespace shardpack {
namespace {

class Verifier {
 public:
  using OnRecord = absl::FunctionRef<void(uint64_t, const Record&)>;
  Verifier(const RandomAccessFile& file, const Schema* schema, ShardVerifyResult* result,
           std::optional<OnRecord> on_record)
      : file_(file), result_(result), on_record_(on_record) {
    if (schema != nullptr) check_.emplace(*schema);
  }

  void Run();

 private:
  // Bytes [offset, offset + n) as a view: from the mapping when there is one.
  absl::StatusOr<std::span<const uint8_t>> Bytes(uint64_t offset, uint64_t n);
  void Problem(const absl::Status& s, std::optional<uint64_t> record = std::nullopt) {
    result_->problems.push_back(
        Damage{file_.name(), common::ErrorOffset(s).value_or(0), record, s});
  }
  // Checks that [offset, offset + n) is zero and folds it into the file CRC.
  void CheckPadding(uint64_t offset, uint64_t n);
  void CheckBlock(const ShardIndex& index, size_t b, uint64_t end);

  const RandomAccessFile& file_;
  // Each record against the schema, its CRC-32C and fields' content when
  // it has fields; none: records are not checked against a schema.
  std::optional<format::RecordCheck> check_;
  ShardVerifyResult* result_;
  std::optional<OnRecord> on_record_;  // each record that passed its checks
  std::vector<uint8_t> buffer_;
  BlockDecoder decoder_;
  uint32_t crc_ = 0;
};

absl::StatusOr<std::span<const uint8_t>> Verifier::Bytes(uint64_t offset, uint64_t n) {
  if (const uint8_t* base = file_.data()) return std::span<const uint8_t>(base + offset, n);
  if (buffer_.size() < n) buffer_.resize(n);
  absl::Status s = file_.ReadExact(offset, {buffer_.data(), n});
  if (!s.ok()) return s;
  return std::span<const uint8_t>(buffer_.data(), n);
}

void Verifier::CheckPadding(uint64_t offset, uint64_t n) {
  auto bytes = Bytes(offset, n);
  if (!bytes.ok()) return Problem(bytes.status());
  auto nonzero = std::find_if(bytes->begin(), bytes->end(), [](uint8_t c) { return c != 0; });
  if (nonzero != bytes->end()) {
    Problem(common::DataLossAt(file_.name(), offset + (nonzero - bytes->begin()),
                                 "padding byte is not zero"));
  }
  crc_ = Crc32cCombine(crc_, Crc32c(*bytes), n);
}

void Verifier::CheckBlock(const ShardIndex& index, size_t b, uint64_t end) {
  const BlockInfo& info = index.block(b);
  auto stored = Bytes(info.offset, end - info.offset);
  if (!stored.ok()) return Problem(stored.status());
  auto padding = stored->subspan(info.stored_size);
  auto view = decoder_.Decode(index, b, stored->first(info.stored_size));
  // Fold the block into the file CRC: header, payload (its CRC is known only
  // when the block decoded), padding.
  uint32_t crc = Crc32c(stored->first(format::kBlockHeaderSize));
  auto payload = stored->subspan(format::kBlockHeaderSize, info.stored_size -
                                                                 format::kBlockHeaderSize);
  crc = Crc32cCombine(crc, view.ok() ? info.payload_crc32c : Crc32c(payload), payload.size());
  crc_ = Crc32cCombine(crc_, Crc32cCombine(crc, Crc32c(padding), padding.size()),
                       stored->size());
  if (!view.ok()) return Problem(view.status(), info.first_record);
  auto nonzero = std::find_if(padding.begin(), padding.end(), [](uint8_t c) { return c != 0; });
  if (nonzero != padding.end()) {
    Problem(common::DataLossAt(file_.name(), info.offset + info.stored_size +
                                                   (nonzero - padding.begin()),
                                 absl::StrCat("padding after block ", b, " is not zero")));
  }
  for (size_t i = 0; i < view->size(); ++i) {
    auto record = view->record(i);
    if (!record.ok()) {
      Problem(record.status(), info.first_record + i);
      continue;
    }
    ++result_->records;
    absl::Status agrees = check_.has_value() ? check_->Check(*record) : absl::OkStatus();
    if (agrees.ok()) {
      if (on_record_.has_value()) (*on_record_)(info.first_record + i, *record);
    } else {
      // At the record's bytes when they lie in the file (an uncompressed
      // block), else at its block.
      const std::span<const uint8_t> bytes = view->record_bytes(i);
      const bool in_file = bytes.data() >= stored->data() && bytes.data() < stored->data() + stored->size();
      const uint64_t at = in_file ? info.offset + (bytes.data() - stored->data()) : info.offset;
      Problem(common::DataLossAt(file_.name(), at,
                                   absl::StrCat("record ", info.first_record + i, ": ",
                                                agrees.message())),
              info.first_record + i);
    }
  }
}

void Verifier::Run() {
  auto index = ShardIndex::Load(file_);
  if (!index.ok()) return Problem(index.status());
  auto header = Bytes(0, format::kFileHeaderSize);
  if (!header.ok()) return Problem(header.status());
  crc_ = Crc32c(*header);
  CheckPadding(format::kFileHeaderSize, kShardAlignment - format::kFileHeaderSize);
  for (size_t b = 0; b < index->num_blocks(); ++b) {
    uint64_t end = b + 1 < index->num_blocks() ? index->block(b + 1).offset
                                               : index->footer_offset();
    CheckBlock(*index, b, end);
  }
  // Footer and trailer were checked by Load; fold them into the file CRC.
  auto tail = Bytes(index->footer_offset(), file_.size() - index->footer_offset());
  if (!tail.ok()) return Problem(tail.status());
  crc_ = Crc32cCombine(crc_, Crc32c(*tail), tail->size());
  result_->bytes = file_.size();
  result_->file_crc32c = crc_;
}

}  // namespace

ShardVerifyResult VerifyShard(const RandomAccessFile& file, const Schema* schema) {
  ShardVerifyResult result;
  Verifier(file, schema, &result, std::nullopt).Run();
  return result;
}

ShardVerifyResult VerifyShard(const RandomAccessFile& file, const Schema* schema,
                              absl::FunctionRef<void(uint64_t, const Record&)> on_record) {
  ShardVerifyResult result;
  Verifier(file, schema, &result, on_record).Run();
  return result;
}

}  // namespace shardpack
