#include "tools/dump/shard_check.h"

#include "absl/strings/str_cat.h"
#include "backends/record_scan.h"
#include "backends/shard_gate.h"
#include "format/record_check.h"
#include "shardpack/file.h"
#include "shardpack/shard.h"

namespace shardpack::dump {
namespace {

// A problem with no offset: a file that could not be opened, or an LMDB or
// HDF5 record (which has no file offset of its own).
Damage Problem(const std::string& path, absl::Status status,
               std::optional<uint64_t> record = std::nullopt) {
  return {path, 0, record, std::move(status)};
}

}  // namespace

ShardCheck CheckShardFile(const std::string& path, const Schema* schema,
                          remote::Storage* storage, const RecordVisitor* on_record) {
  ShardCheck check;
  auto file = backends::OpenShardBytes(path, storage);
  if (!file.ok()) {
    check.problems.push_back(Problem(path, file.status()));
    return check;
  }
  check.opened = true;
  check.bytes = (*file)->size();
  ShardVerifyResult result =
      on_record != nullptr ? VerifyShard(**file, schema, *on_record) : VerifyShard(**file, schema);
  // VerifyShard leaves bytes at 0 when it could not load the index; it
  // reported why.
  if (result.bytes != 0) {
    auto index = ShardIndex::Load(**file);
    if (index.ok()) {
      check.index_ok = true;
      check.records = index->num_records();
      // The footer's record count: u64 at footer + 8 (docs/format.md).
      check.records_offset = index->footer_offset() + 8;
      check.crc_valid = true;
      check.file_crc32c = result.file_crc32c;
    }
  }
  check.problems = std::move(result.problems);
  return check;
}

ShardCheck CheckBackendShardFile(const std::string& path, Backend backend,
                                 const std::optional<ShardEntry>& expected,
                                 const Schema* schema, remote::Storage* storage) {
  ShardCheck check;
  auto digest = backends::DigestFile(path, storage);
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
                              : backends::AdmitShardFile(path, backend, std::nullopt, {}, storage);
  if (!admitted.ok()) {
    check.problems.push_back(Problem(path, admitted));
    return check;
  }
  auto scanner = backends::ShardScanner::Open(path, backend, storage);
  if (!scanner.ok()) {
    check.problems.push_back(Problem(path, scanner.status()));
    return check;
  }
  check.index_ok = true;
  check.records = (*scanner)->size();
  uint64_t next = 0;
  std::optional<format::RecordCheck> record_check;
  if (schema != nullptr) record_check.emplace(*schema);
  absl::Status s = (*scanner)->Scan(0, check.records, [&](uint64_t i, const Record& r) {
    next = i + 1;
    if (!record_check.has_value()) return absl::OkStatus();
    if (absl::Status agrees = record_check->Check(r); !agrees.ok()) {
      check.problems.push_back(Problem(
          path, absl::DataLossError(absl::StrCat(path, " record ", i, ": ", agrees.message())), i));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) check.problems.push_back(Problem(path, s, next));
  return check;
}

}  // namespace shardpack::dump
