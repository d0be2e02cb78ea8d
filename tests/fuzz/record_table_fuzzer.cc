// libFuzzer target for the record table's loader (format/record_table.h).
// The input is a table file; its header CRC and the manifest's size and
// CRC-32C are made to agree with it (and the manifest's record and label
// counts taken from its header), so mutations reach every structural check.
// A bad table is a DataLossError (another major version a
// FailedPreconditionError) naming the file; nothing crashes. A table that
// loads answers Find(key(r)) with a record holding that key, no later than r.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/coding.h"
#include "format/record_table.h"
#include "shardpack/crc32c.h"
#include "shardpack/file.h"

namespace {

constexpr char kName[] = "fuzz.idx";

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "record_table_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// The manifest the table claims to belong to.
shardpack::Manifest ManifestFor(const std::string& bytes) {
  shardpack::Manifest m;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint32_t fields = shardpack::common::LoadLE<uint32_t>(p + 12);
  m.schema.labels.resize(fields <= shardpack::kMaxLabels ? fields : 0);
  m.shards.push_back({"a.shard", shardpack::common::LoadLE<uint64_t>(p + 16), 0, 0});
  m.record_table = shardpack::RecordTableEntry{
      "records.idx", bytes.size(), shardpack::Crc32c({p, bytes.size()})};
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace format = shardpack::format;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= format::kRecordTableHeaderSize) {
    auto* p = reinterpret_cast<uint8_t*>(bytes.data());
    shardpack::common::StoreLE<uint32_t>(
        p + format::kRecordTableHeaderCrcOffset,
        shardpack::Crc32c({p, format::kRecordTableHeaderCrcOffset}));
  }
  shardpack::Manifest m;
  if (bytes.size() >= format::kRecordTableHeaderSize) m = ManifestFor(bytes);
  m.record_table = shardpack::RecordTableEntry{
      "records.idx", bytes.size(),
      shardpack::Crc32c({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()})};
  auto file = shardpack::NewMemoryFile(
      kName, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  auto table = format::RecordTable::Parse(*file, *m.record_table, m);
  if (!table.ok()) {
    const absl::Status& s = table.status();
    std::string_view msg(s.message().data(), s.message().size());
    Expect(s.code() == absl::StatusCode::kDataLoss ||
               s.code() == absl::StatusCode::kFailedPrecondition,
           "error code", s.ToString());
    Expect(msg.starts_with(kName), "error does not name the file", msg);
    return 0;
  }
  for (uint64_t r = 0; r < table->records() && r < 256; ++r) {
    for (int f = 0; f < table->label_fields(); ++f) (void)table->label(r, f);
    auto found = table->Find(table->key(r));
    Expect(found.has_value() && *found <= r && table->key(*found) == table->key(r),
           "Find(key(r)) is not a record with that key");
  }
  return 0;
}
