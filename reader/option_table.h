// The reader's options, each described once (DALI's operator schema): its
// ReaderOptions field, its Python keyword, its shardbench flag, its type,
// its default as docs/reader.md and docs/python.md write it, its range and
// a line of help. Reader::Open's range checks and their messages
// (reader/reader_options.cc), the Python Reader's keywords
// (python/module.cc), shardbench's range flags (tools/bench/flags.cc) come
// from it, and tests/reader/option_table_test.cc checks the docs' option
// tables and shardbench's --help against it: adding an option is a row here
// and the stage that uses it.
//
// The table is constexpr and immutable: thread-safe, no initialization order.
#ifndef SHARDPACK_READER_OPTION_TABLE_H_
#define SHARDPACK_READER_OPTION_TABLE_H_

#include <climits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "shardpack/reader.h"

namespace shardpack::reader {

enum class OptionType {
  kInt,      // an int with a range (lo..hi, or `special`)
  kUint64,   // 0 to 2^64-1
  kBool,
  kChoice,   // one of named values (an enum, or the transform's text)
  kPath,     // text without NULs, shorter than PATH_MAX
  kFloats,   // three floats, one a channel
  kNames,    // a list of field names (a flag: separated by commas)
  kOther,    // a list, a callback, a pointer: not a keyword or a flag
};

struct OptionSpec {
  std::string_view field;   // ReaderOptions' field, or "" (the Python Reader's own)
  std::string_view python;  // the Python Reader's keyword, or "" (none)
  std::string_view flag;    // shardbench's flag, or "" (none)
  OptionType type = OptionType::kOther;
  // The default as docs/reader.md's table writes it ("" when the field is
  // not in it) and as docs/python.md's does ("" when no keyword).
  std::string_view doc_default;
  std::string_view python_default;
  // kInt: the range lo..hi, and a value outside it that is accepted too
  // (the automatic choice), if any.
  int64_t lo = 0;
  int64_t hi = 0;
  std::optional<int64_t> special;
  // What a message says is accepted, with {lo}, {hi} and {special}
  // replaced by the numbers ("" for "{lo} to {hi}").
  std::string_view accepted;
  std::string_view help;
};

inline constexpr OptionSpec kNoSpec{};

// Rows in the Python Reader's keyword order (its error messages list them so).
inline constexpr OptionSpec kOptionTable[] = {
    {"path", "path", "PATH", OptionType::kPath, "—", "", 0, 0, {}, "",
     "a dataset folder, its manifest, a lone shard, a view (or a mixture's list, in Python)"},
    {"batch_size", "batch_size", "--batch-size", OptionType::kInt, "256", "256", 1, kMaxBatchSize,
     {}, "", "samples per batch"},
    {"shuffle", "shuffle", "--shuffle", OptionType::kBool, "true", "`True`", 0, 0, {}, "",
     "per-epoch permutation of blocks and of records"},
    {"seed", "seed", "--seed", OptionType::kUint64, "0", "0", 0, 0, {}, "",
     "seed of every random choice"},
    {"rank", "rank", "--rank", OptionType::kInt, "-1", "-1", 0, kMaxWorldSize - 1, -1,
     "-1 (from RANK) or {lo} to world_size-1 (at most {hi})", "this process's rank"},
    {"world_size", "world_size", "--world-size", OptionType::kInt, "-1", "-1", 1, kMaxWorldSize,
     -1, "-1 (from WORLD_SIZE) or {lo} to {hi}", "the number of ranks"},
    {"transform", "transform", "--transform", OptionType::kChoice, "none", "`\"none\"`", 0, 0, {},
     "", "what each sample goes through"},
    {"threads", "threads", "--threads", OptionType::kInt, "0", "0", 0, kMaxThreads, {},
     "{lo} (one per core) to {hi}", "transform workers; 0: all cores"},
    {"ring_slots", "ring_slots", "--ring-slots", OptionType::kInt, "0: chosen", "0", 2,
     kMaxRingSlots, kAutoRingSlots, "{lo} to {hi}, or {special} (chosen)", "batches in flight"},
    {"shuffle_bytes", "shuffle_bytes", "--shuffle-bytes", OptionType::kUint64, "0: chosen",
     "0", 0, 0, {}, "", "bytes of blocks the shuffle may hold; 0: chosen"},
    {"read_ahead_bytes", "read_ahead_bytes", "--read-ahead", OptionType::kUint64, "32 MiB",
     "32 MiB", 0, 0, {}, "", "bytes of reads in flight"},
    {"io", "io", "--io", OptionType::kChoice, "`kAuto`", "`\"auto\"`", 0, 0, {}, "",
     "the I/O engine"},
    {"remainder", "remainder", "", OptionType::kChoice, "`kDrop`", "`\"drop\"`", 0, 0, {}, "",
     "records that do not divide evenly"},
    {"layout", "layout", "--layout", OptionType::kChoice, "NHWC", "`\"NHWC\"`", 0, 0, {}, "",
     "the output layout"},
    {"dtype", "dtype", "--dtype", OptionType::kChoice, "uint8", "`\"uint8\"`", 0, 0, {}, "",
     "the output type"},
    {"mean", "mean", "", OptionType::kFloats, "0, 1", "(0, 0, 0), (1, 1, 1)", 0, 0, {}, "",
     "per channel, for float32"},
    {"std", "std", "", OptionType::kFloats, "0, 1", "(0, 0, 0), (1, 1, 1)", 0, 0, {}, "",
     "per channel, for float32"},
    {"on_corrupt", "on_corrupt", "", OptionType::kChoice, "`kError`", "`\"error\"`", 0, 0, {}, "",
     "what a damaged sample does"},
    {"", "copy", "", OptionType::kBool, "", "`False`", 0, 0, {}, "",
     "owned arrays instead of views of the ring slot"},
    {"", "indices", "", OptionType::kBool, "", "`False`", 0, 0, {}, "",
     "each item also holds the samples' record numbers"},
    {"", "output", "", OptionType::kChoice, "", "`\"numpy\"`", 0, 0, {}, "",
     "numpy arrays or torch tensors"},
    {"device", "device", "--device", OptionType::kInt, "-1", "`\"cpu\"`", 0, INT_MAX, -1,
     "-1 (host memory) or a CUDA device from {lo}", "the CUDA device batches are staged on"},
    {"epoch_samples", "epoch_samples", "--epoch-samples", OptionType::kUint64, "0", "0", 0, 0, {},
     "", "a mixture's samples an epoch, all ranks together"},
    {"label_space", "label_space", "--label-space", OptionType::kChoice, "`kShared`",
     "`\"shared\"`", 0, 0, {}, "", "how a mixture's labels relate"},
    {"cache_dir", "cache_dir", "--cache-dir", OptionType::kPath, "", "`None`", 0, 0, {}, "",
     "a dataset in an object store: its local cache's folder"},
    {"cache_bytes", "cache_bytes", "--cache-bytes", OptionType::kUint64, "", "`None`", 0, 0, {},
     "", "a dataset in an object store: the cache's budget"},
    {"fields", "fields", "--fields", OptionType::kNames, "empty: all", "`None`", 0, 0, {}, "",
     "the fields a batch delivers (a dataset's of any fields)"},
    {"image_fields", "image_fields", "--image-fields", OptionType::kNames,
     "empty: the first image field", "`None`", 0, 0, {}, "",
     "the image fields the transform applies to, the first leading"},
    {"", "ragged", "", OptionType::kChoice, "", "`\"offsets\"`", 0, 0, {}, "",
     "variable-length fields as values and offsets, or as a list a batch"},
    // C++ only: no Python keyword (a shardpack.Reader makes its own from
    // cache_dir and cache_bytes), no shardbench flag.
    {"storage", "", "", OptionType::kOther, "null", "", 0, 0, {}, "",
     "a Storage shared with other readers"},
    {"sources", "", "--source", OptionType::kOther, "empty", "", 0, 0, {}, "",
     "a mixture's datasets"},
    {"keys", "", "", OptionType::kBool, "false", "", 0, 0, {}, "",
     "copy each sample's key into the batch"},
    {"device_buffers", "", "--device-buffers", OptionType::kInt, "0: chosen", "", 2,
     kMaxDeviceBuffers, kAutoDeviceBuffers, "{lo} to {hi}, or {special} (chosen)",
     "device buffers in the staging ring"},
    {"device_dtype", "", "--device-dtype", OptionType::kChoice, "`kAsHost`", "", 0, 0, {}, "",
     "what the device makes of a uint8 batch"},
    {"consumer_stream", "", "", OptionType::kOther, "null", "", 0, 0, {}, "",
     "the consumer's cudaStream_t"},
    {"corrupt_reporter", "", "", OptionType::kOther, "", "", 0, 0, {}, "",
     "told of each damaged sample replaced"},
    // The transform's numbers, checked as options.
    {"transform size", "", "", OptionType::kInt, "", "", 1, kMaxTransformSize, {}, "",
     "the crop transforms' output side"},
    {"transform pad", "", "", OptionType::kInt, "", "", 0, kMaxTransformSize, {}, "",
     "cifar-train's padding"},
};

// The row of ReaderOptions' field (or "transform size" / "pad"), else of
// the Python keyword `name`; kNoSpec when none.
constexpr const OptionSpec& FindOption(std::string_view name) {
  for (const OptionSpec& s : kOptionTable) {
    if (s.field == name) return s;
  }
  for (const OptionSpec& s : kOptionTable) {
    if (s.python == name) return s;
  }
  return kNoSpec;
}

// Whether the kInt option `s` accepts `v`.
constexpr bool InRange(const OptionSpec& s, int64_t v) {
  return (v >= s.lo && v <= s.hi) || (s.special && v == *s.special);
}

// "1 to 1048576", "2 to 1024, or 0 (chosen)": what `s` accepts, for messages.
std::string Accepted(const OptionSpec& s);

static_assert(FindOption("batch_size").hi == kMaxBatchSize);
static_assert(FindOption("copy").field.empty());

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_OPTION_TABLE_H_
