#include "tools/dump/lmdb_hdf5_records.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "backends/store.h"
#include "shardpack/file.h"
#include "format/status_macros.h"

namespace shardpack::dump {
namespace {

class BackendShardRecords : public ShardRecords {
 public:
  BackendShardRecords(std::string path, uint64_t bytes,
                      std::unique_ptr<backends::ShardScanner> scanner)
      : path_(std::move(path)), bytes_(bytes), scanner_(std::move(scanner)) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return scanner_->size(); }
  uint64_t file_bytes() const override { return bytes_; }
  // No blocks and no compression: the file is its own storage.
  StorageStats storage() const override { return {0, 0, bytes_, bytes_}; }
  std::string format_version() const override { return "1.0"; }
  std::string layout() const override { return scanner_->LayoutText(); }

  // Damage stops the walk (LMDB and HDF5 give no way to step past it);
  // `on_damage` is told, with the first record not visited.
  absl::Status Scan(uint64_t begin, uint64_t end, RecordVisitor visit,
                    const DamageHandler* on_damage) override {
    RecordLocation location;
    location.has_offset = false;
    uint64_t next = begin;
    absl::Status s = scanner_->Scan(begin, end, [&](uint64_t i, const Record& r) {
      next = i + 1;
      return visit(i, r, location);
    });
    if (!s.ok() && on_damage != nullptr && absl::IsDataLoss(s)) {
      (*on_damage)(s, next);
      return absl::OkStatus();
    }
    return s;
  }

 private:
  std::string path_;
  uint64_t bytes_;
  std::unique_ptr<backends::ShardScanner> scanner_;
};

// LMDB and HDF5 records have no file offset of their own.
Damage Problem(const std::string& path, absl::Status status,
               std::optional<uint64_t> record = std::nullopt) {
  return {path, 0, record, std::move(status)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardRecords>> OpenBackendShardFile(
    const std::string& path, Backend backend, const std::optional<ShardEntry>& expected) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(path));
  SP_ASSIGN_OR_RETURN(auto scanner, backends::OpenShardScanner(path, backend, expected));
  return std::unique_ptr<ShardRecords>(
      new BackendShardRecords(path, file->size(), std::move(scanner)));
}

ShardCheck CheckBackendShardFile(const std::string& path, Backend backend,
                                 const std::optional<ShardEntry>& expected,
                                 const Schema* schema) {
  ShardCheck check;
  auto digest = backends::DigestFile(path);
  if (!digest.ok()) {
    check.problems.push_back(Problem(path, digest.status()));
    return check;
  }
  check.opened = true;
  check.bytes = digest->bytes;
  check.crc_valid = true;
  check.file_crc32c = digest->crc32c;
  // With an entry, the digest just taken is the gate's check (no second
  // read); without, the gate vets the file (or knows it vetted these bytes).
  absl::Status admitted = expected.has_value()
                              ? backends::CompareDigest(path, *digest, *expected)
                              : backends::AdmitShardFile(path, backend, std::nullopt);
  if (!admitted.ok()) {
    check.problems.push_back(Problem(path, admitted));
    return check;
  }
  auto scanner = backends::ShardScanner::Open(path, backend);
  if (!scanner.ok()) {
    check.problems.push_back(Problem(path, scanner.status()));
    return check;
  }
  check.index_ok = true;
  check.records = (*scanner)->size();
  uint64_t next = 0;
  absl::Status s = (*scanner)->Scan(0, check.records, [&](uint64_t i, const Record& r) {
    next = i + 1;
    if (schema == nullptr) return absl::OkStatus();
    if (absl::Status agrees = CheckRecordAgainstSchema(r, *schema); !agrees.ok()) {
      check.problems.push_back(Problem(
          path, absl::DataLossError(absl::StrCat(path, " record ", i, ": ", agrees.message())), i));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) check.problems.push_back(Problem(path, s, next));
  return check;
}

}  // namespace shardpack::dump
