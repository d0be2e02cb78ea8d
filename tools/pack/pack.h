// The packer: a Source in, a complete dataset directory out, or nothing.
#ifndef SHARDPACK_TOOLS_PACK_PACK_H_
#define SHARDPACK_TOOLS_PACK_PACK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataset/open_path.h"
#include "datasets/source.h"
#include "shardpack/dataset.h"
#include "tools/pack/part_order.h"
#include "writer/pack_identity.h"

namespace shardpack::pack {

struct PackOptions {
  std::string output;          // the dataset directory to create
  bool overwrite = false;      // replace an existing output
  datasets::OnError on_error = datasets::OnError::kSkip;
  bool shuffle = true;         // pack-time permutation of the items
  uint64_t seed = 0;
  int threads = 0;             // 0: all cores
  uint32_t part_index = 0;     // this run packs part part_index of part_count
  uint32_t part_count = 1;
  // A retried task: an existing output that this very pack wrote (the same
  // "pack" object: part, input fingerprint, seed, options, tool), whole or
  // cut short before its manifest, is replaced without `overwrite`. Output
  // is deterministic, so the retry writes the same bytes. Anything else at
  // the output is refused as without this.
  bool retry_replaces = false;
  bool quiet = false;          // no progress or summary on stderr
  // The shuffle's chunks and windows (PlanPart). Not a flag: the default
  // always, smaller in tests. Part of the order, so it is written to the
  // manifest's "pack" as "order" and parts must agree on it.
  OrderShape order_shape;
  // Shard limits, block size and compression; schema, pack_json and
  // directory are filled in by Pack.
  DatasetWriterOptions writer;
};

struct PackSummary {
  uint64_t records = 0;
  uint64_t items = 0;          // inputs considered by this part
  uint64_t skipped = 0;        // every input in skipped.tsv, left_out included
  uint64_t left_out = 0;       // skipped by choice (--non-jpeg skip), not for damage
  // Inputs stored in another form than they came in, by input format
  // ("PNG" -> 3): PreparedRecord::converted_from, counted.
  std::map<std::string, uint64_t, std::less<>> converted;
  uint64_t bytes_in = 0;       // input bytes of the items packed or skipped
  uint64_t bytes_out = 0;      // shard bytes written
  size_t shards = 0;
  size_t classes = 0;
  double seconds = 0;
  std::vector<datasets::Skipped> skipped_inputs;
};

// Packs `source` into options.output. The dataset is built in
// "<output>.partial" and renamed into place when complete; the manifest is
// written after the rename, so an interrupted pack never leaves a directory
// that reads as a dataset. On failure nothing is left at `output` (and the
// partial directory is removed). OutputDir (output_dir.h) says what an
// existing output or staging directory may be; the caller checks that the
// output lies apart from the source's paths (path_overlap.h) before it
// opens the source, since an image-folder walk reads the folder then.
absl::StatusOr<PackSummary> Pack(const datasets::Source& source, const PackOptions& options);

struct MergeOptions {
  std::string output;  // the dataset to make; may be empty with check_only
  bool overwrite = false;
  // The output's backend; nullopt: the parts'. Parts of another backend
  // are converted record by record (see Convert) instead of linked.
  std::optional<Backend> backend;
  bool check_only = false;  // check the parts, write nothing
  // N, for parts written with an open count (WriterPart::count
  // kOpenPartCount), which need it; for others, it must be theirs.
  std::optional<uint64_t> count;
};

struct MergeResult {
  size_t parts = 0;
  uint64_t records = 0;
  size_t shards = 0;
  std::string fingerprint;  // the parts' input fingerprint ("" for a Writer's parts)
  std::string job;          // a Writer's parts' job ("" for a pack's parts)
  Manifest manifest;        // the merged dataset's (not with check_only)
};

// Makes one dataset of the parts 1..N of one pack (or of one Writer job,
// shardpack/writer.h), given in any order.
// Before anything is written, every part is checked (ReadPart, CheckParts:
// part_check.h): a missing, duplicated or foreign part, other input, seed,
// option or N is a FailedPreconditionError naming the part and what differs.
// The parts' records are then laid out in part order, which is the order of
// one pack of the whole input with the same seed (PartOrder); shard bytes
// are not rewritten (hard-linked, or copied across file systems). The
// manifest's "pack" is the parts' without "part", with "merged" listing
// them. Same atomicity as Pack; an output that is a part, holds one or lies
// inside one is refused.
absl::StatusOr<MergeResult> Merge(const std::vector<std::string>& parts, const MergeOptions& o);

// A dataset directory (manifest.json), or one LMDB or HDF5 shard file whose
// manifest is made up from its metadata (a plain h5py images/labels file
// included), as dataset::OpenNamedPath resolves it; a lone `.shard` file,
// which has no schema, is refused. Errors name the path.
absl::StatusOr<dataset::NamedPath> OpenInputDataset(const std::string& path);

struct ConvertOptions {
  std::string output;
  Backend backend = Backend::kShard;
  bool overwrite = false;
  bool quiet = false;
  // Block size and compression of `.shard` output; directory, schema,
  // pack_json and shard limits are set by Convert.
  DatasetWriterOptions writer;
  // The output's identity, to which "converted_from" and "converted_by"
  // are added; nullopt: that of the one input, or an empty one for many.
  std::optional<writer::PackIdentity> pack;
};

// Converts `inputs` (datasets, in order) into one dataset of o.backend:
// every record byte for byte, one output shard per input shard, the schema
// and (for one input) its pack parameters plus a "converted_from" entry.
// An output that is an input, holds one or lies inside one is refused
// (InvalidArgumentError naming both) before anything is written.
// An input that is a view file (dataset/view.h) must be the only one; it
// is materialized by ConvertView.
absl::StatusOr<Manifest> Convert(const std::vector<std::string>& inputs, const ConvertOptions& o);

// The writer of a conversion into `staging`: o.writer's block size and
// compression, o.backend, `schema`, `pack`; no manifest (the output folder
// publishes it), no shard larger than `largest` records, a shard closed by
// FinishShard at each input shard's end.
absl::StatusOr<std::unique_ptr<DatasetWriter>> CreateConvertWriter(
    const ConvertOptions& o, const std::string& staging, const Schema& schema, uint64_t largest,
    const writer::PackIdentity& pack);

// A view file materialized as a dataset of o.backend: the records it
// selects, in view order, labels as the view gives them, the view's
// schema; one output shard per input shard holding any of them. The pack
// record is that of the view's one dataset (or o.pack, or empty), with each
// dataset in "converted_from" and "view": {path, fingerprint, selection
// (the view's canonical JSON)}. Errors: OpenView's, and those of Convert.
absl::StatusOr<Manifest> ConvertView(const std::string& path, const ConvertOptions& o);

struct IndexResult {
  uint64_t records = 0;
  RecordTableEntry entry;  // as the manifest now lists it
  bool had_table = false;  // the manifest listed one before (now replaced)
};

// `shardpack index`: builds the record table of the dataset `path` names
// (docs/format.md section 16) by one scan of its records, writes it as
// records.idx and rewrites manifest.json atomically to list it (the table
// first, so a crash leaves the old manifest). A dataset that has a table
// gets it rebuilt. InvalidArgumentError for a lone shard (no manifest);
// the scan's errors for damaged shards.
absl::StatusOr<IndexResult> Index(const std::string& path);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_PACK_H_
