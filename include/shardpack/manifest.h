// The dataset manifest: `manifest.json` in a dataset directory.
//
// A dataset is a directory holding manifest.json and its shards. The manifest
// is written last, so a directory without one is not (yet) a dataset.
// docs/format.md lists every field.
#ifndef SHARDPACK_MANIFEST_H_
#define SHARDPACK_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/record.h"

namespace shardpack {

// Manifest format version this build writes. Any 1.x manifest is read; other
// majors are rejected with an error naming both versions.
inline constexpr int kManifestMajorVersion = 1;
inline constexpr int kManifestMinorVersion = 1;
// The minor version of a manifest that declares fields (schema.fields).
inline constexpr int kManifestFieldsMinorVersion = 2;

inline constexpr char kManifestFileName[] = "manifest.json";
// Bounds on a manifest's text (docs/format.md, "Manifest limits"), checked
// before what is past them is parsed or kept, local or fetched: its bytes
// (a manifest of 10^6 shards is ~130 MB), its shards, and the JSON values
// outside its shard list (label classes, the pack record). A manifest costs
// about 100 bytes of memory per shard plus its text, whatever the text holds.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxManifestShards = uint64_t{1} << 22;
inline constexpr uint64_t kMaxManifestValues = uint64_t{1} << 20;
// The record table's file name in datasets the tools write (docs/format.md,
// section 16); readers take the name from Manifest::record_table.
inline constexpr char kRecordTableFileName[] = "records.idx";

enum class Backend { kShard, kLmdb, kHdf5 };
// Every backend, in the order the tools list them.
inline constexpr Backend kBackends[] = {Backend::kShard, Backend::kLmdb, Backend::kHdf5};
std::string_view BackendName(Backend b);  // "shard", "lmdb", "hdf5"
// The inverse of BackendName: InvalidArgumentError listing the names for any
// other name.
absl::StatusOr<Backend> ParseBackend(std::string_view name);

// One label field of the schema; record.labels[i] belongs to field i.
struct LabelField {
  std::string name;                  // "label", or "fine" / "coarse"
  std::vector<std::string> classes;  // class i's name; may be empty
  friend bool operator==(const LabelField&, const LabelField&) = default;
};

// What every record of the dataset looks like. For datasets of encoded images
// of varying size, height and width are 0 and channels may be 0.
struct Schema {
  ImageInfo image;  // encoding, layout, and the fixed shape if there is one
  std::vector<LabelField> labels;
  // The declared fields (shardpack/fields.h), empty for a classic dataset
  // (one image and label fields: manifest 1.0 and 1.1). When not empty,
  // `image` and `labels` are derived from them by MakeSchema, and records
  // carry a field section where classic records carry extra bytes.
  std::vector<Field> fields;
  friend bool operator==(const Schema&, const Schema&) = default;
};

struct ShardEntry {
  std::string path;      // relative to the dataset directory
  uint64_t records = 0;
  uint64_t bytes = 0;    // file size
  uint32_t crc32c = 0;   // CRC-32C of the whole file
  friend bool operator==(const ShardEntry&, const ShardEntry&) = default;
};

// The record table beside the shards (manifest 1.1, docs/format.md section
// 16): every record's labels and key, and a hash table of keys, so that a
// record is found by key or by label without a scan.
struct RecordTableEntry {
  std::string path;     // relative to the dataset directory
  uint64_t bytes = 0;   // file size
  uint32_t crc32c = 0;  // CRC-32C of the whole file
  friend bool operator==(const RecordTableEntry&, const RecordTableEntry&) = default;
};

struct Manifest {
  int version_major = kManifestMajorVersion;
  int version_minor = kManifestMinorVersion;
  Backend backend = Backend::kShard;
  Schema schema;
  std::vector<ShardEntry> shards;  // in record order
  // How the dataset was packed (source, options, tool version), as a JSON
  // object serialized to text. Default "{}".
  std::string pack_json = "{}";
  // The record table, when the dataset has one (optional: datasets packed
  // before 1.1 have none until `shardpack index` adds it). Not part of the
  // fingerprint: it is derived from the shards.
  std::optional<RecordTableEntry> record_table;

  uint64_t records() const;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// InvalidArgumentError naming the class when a label field or class name is
// not well-formed UTF-8 (JSON text can only hold UTF-8). The message holds
// the name's bytes as they are: escape it before printing it.
absl::Status CheckSchemaNames(const Schema& schema);

// Whether a record agrees with its dataset's schema: the encoding, the raw
// layout and fixed shape (when the schema has one), one label per label
// field, and each label within its field's classes (when the field names
// them). A record that disagrees is damage, not data: DataLossError with a
// message saying what disagrees (callers prefix the file and record).
absl::Status CheckRecordAgainstSchema(const Record& record, const Schema& schema);

// Parses manifest text. `name` (usually the path) prefixes error messages.
// DataLossError for malformed JSON, missing/ill-typed fields, a key twice in
// an object, and text past the limits above (nesting past 64 levels, a
// string past 64 KiB, ...: format/json_text.h);
// FailedPreconditionError for an unsupported major version.
absl::StatusOr<Manifest> ParseManifest(std::string_view text, std::string_view name);

// The dataset's fingerprint: a 64-bit hash of what makes its records what
// they are, in order: the backend, the schema (encoding, layout, shape,
// label fields and class names) and each shard's path, record count, size
// and CRC-32C. Not of pack_json or the version: two copies of a dataset have
// the same fingerprint, datasets with other shards another. Stable across
// builds and machines (docs/reader.md gives the byte layout it hashes).
uint64_t ManifestFingerprint(const Manifest& manifest);

// A fingerprint as 16 lowercase hex digits.
std::string FormatFingerprint(uint64_t fingerprint);

// Serializes to pretty-printed JSON ending in a newline. Deterministic: the
// same manifest always gives the same bytes.
std::string SerializeManifest(const Manifest& manifest);

}  // namespace shardpack

#endif  // SHARDPACK_MANIFEST_H_
