// The identity of a pack: the manifest's "pack" object (docs/format.md 12.1)
// as the packer's tools and the Writer write, read and compare it. `pack`
// and the Writer (shardpack/writer.h) write one, `merge` checks that its
// parts carry one identity but for "part" and records itself in "merged",
// `convert` carries its input's and records itself in
// "converted_from"/"converted_by", and the output folder tells a retry of
// the same pack by it (output_dir.h). This file is the only place that knows
// the keys.
//
// The format lets "pack" be any object (DatasetWriterOptions::pack_json is
// free-form), so every key is optional here; but the keys below are
// shardpack's, and one present with another type is damage:
//   tool               string       "shardpack <version>"
//   source             any          the Source's ParamsJson(), kept as it is
//   shuffle            bool
//   seed               uint64
//   part               {index, count}, 1 <= index <= count <= kMaxParts;
//                      or {index} alone: an open count (kOpenPartCount),
//                      1 <= index <= kMaxParts, N given to merge;
//                      or the text "I/N" an older shardpack wrote
//   input              {items, bytes, fingerprint}: uint64, uint64, string
//   order              {chunk_items, window_chunks}: uint64 each
//   shard_max_bytes, shard_max_records, block_size    uint64
//   format             "shard" | "lmdb" | "hdf5"
//   compression        string ("none", "zstd:<level>")
//   on_error           "skip" | "fail"
//   job                string       a Writer part's job (WriterOptions::job)
//   metadata           object       a Writer's user metadata
//   merged             {tool, count, parts: [{index, path, records, shards}]}
//   converted_from     [{path, backend, pack (any object, as it was)}]
//   converted_by       string
// Decided: the objects above (part, input, order, merged and its parts,
// converted_from's entries; not metadata, the user's) are closed, a key they do not have is damage;
// the "pack" object itself is open, its other keys (a newer shardpack's, a
// library user's) are kept in order, written back and compared like the
// rest. Numbers must be JSON integers in range: 9.0, -1 and 2^64 (which
// JSON parsers read as a float) are refused.
#ifndef SHARDPACK_WRITER_PACK_IDENTITY_H_
#define SHARDPACK_WRITER_PACK_IDENTITY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "shardpack/manifest.h"
#include "shardpack/writer.h"

namespace shardpack::writer {

using PackJson = nlohmann::ordered_json;

// Part `index` of `count` (1-based) of a pack split over machines; `count`
// kOpenPartCount for a part written without knowing N (merge is told N).
struct PackPart {
  uint64_t index = 1;
  uint64_t count = 1;
  bool has_count() const { return count != kOpenPartCount; }
  bool operator==(const PackPart&) const = default;
};

// The whole input as the pack saw it (every part records the same).
struct PackInput {
  uint64_t items = 0;       // inputs, before any is skipped
  uint64_t bytes = 0;       // bytes of the input files
  std::string fingerprint;  // Source::input_fingerprint(): "crc32c:<8 hex>"
  bool operator==(const PackInput&) const = default;
};

// The shape of the pack order (tools/pack/part_order.h, OrderShape), as
// recorded.
struct PackOrder {
  uint64_t chunk_items = 0;
  uint64_t window_chunks = 0;
  bool operator==(const PackOrder&) const = default;
};

// One part of a merged dataset, as merge records it.
struct MergedPart {
  uint64_t index = 0;
  std::string path;
  uint64_t records = 0;
  uint64_t shards = 0;
  bool operator==(const MergedPart&) const = default;
};

struct MergeRecord {
  std::string tool;
  uint64_t count = 0;  // N
  std::vector<MergedPart> parts;  // in index order
  bool operator==(const MergeRecord&) const = default;
};

// One input of a conversion: its path, backend and "pack" as it was.
struct ConvertedInput {
  std::string path;
  Backend backend = Backend::kShard;
  PackJson pack = PackJson::object();
};

struct PackIdentity {
  std::optional<std::string> tool;
  std::optional<PackJson> source;
  std::optional<bool> shuffle;
  std::optional<uint64_t> seed;
  std::optional<PackPart> part;           // absent in a merged dataset
  std::optional<std::string> legacy_part;  // "I/N": "part" before merge checked parts
  std::optional<PackInput> input;
  std::optional<PackOrder> order;          // absent: an order without a shape (older)
  std::optional<uint64_t> shard_max_bytes;
  std::optional<uint64_t> shard_max_records;
  std::optional<Backend> format;
  std::optional<uint64_t> block_size;      // .shard only
  std::optional<std::string> compression;  // .shard only
  std::optional<OnError> on_error;
  std::optional<std::string> job;          // a Writer part's
  std::optional<PackJson> metadata;        // a Writer's, an object
  PackJson extra = PackJson::object();     // every other key, in order
  std::optional<MergeRecord> merged;
  std::optional<std::vector<ConvertedInput>> converted_from;
  std::optional<std::string> converted_by;

  // `text`, a "pack" object (a manifest's pack_json, a staging marker's
  // line). DataLossError "<where>: pack.<key> <value> <what is wrong>",
  // e.g. "ds: pack.part.index 0 is not in 1..3", "ds: pack.input has no
  // fingerprint", "ds: pack.seed -1 is not an unsigned integer"; also for
  // text that is not a JSON object or is nested more than 64 levels deep.
  static absl::StatusOr<PackIdentity> FromJson(std::string_view text, std::string_view where);

  // The object, keys in the order of the table above (other keys after
  // metadata), compact; bytes that are not UTF-8 become U+FFFD. Never throws.
  std::string ToJson() const;
  PackJson ToJsonValue() const;

  // This identity without what tells one part of a pack from another or a
  // converted copy from its original: "part", "converted_from" and
  // "converted_by". What merge compares and what it writes "merged" beside.
  PackIdentity WithoutPart() const;
};

// Where two identities first differ: `field` a dotted path ("seed",
// "order.window_chunks", "input.fingerprint"), each side's value as JSON cut
// to 80 characters ("null" where a side has none).
struct PackDifference {
  std::string field;
  std::string first;
  std::string second;
};

// How identities are compared: kExact (a retry: the very same pack), or
// kAsParts (merge: WithoutPart() of each, and the source's own paths,
// source.root and source.list, left out: an input mounted elsewhere on
// another machine is the same input, the fingerprint says so).
enum class PackComparison { kExact, kAsParts };

// The first difference, in `a`'s key order then `b`'s; nullopt when equal.
std::optional<PackDifference> FirstDifference(const PackIdentity& a, const PackIdentity& b,
                                              PackComparison how = PackComparison::kExact);

bool operator==(const PackIdentity& a, const PackIdentity& b);

}  // namespace shardpack::writer

#endif  // SHARDPACK_WRITER_PACK_IDENTITY_H_
