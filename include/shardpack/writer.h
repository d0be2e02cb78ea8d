// Writing a dataset of any fields, one sample at a time: the library behind
// shardpack.Writer (Python) and the converters built on it.
//
//   absl::StatusOr<std::vector<Field>> fields = ...;  // or ParseFieldText per field
//   WriterOptions o;                                   // shard limits, backend, parts ...
//   absl::StatusOr<std::unique_ptr<Writer>> w = Writer::Create("out", *fields, o);
//   for (each sample) {
//     std::vector<FieldValue> values(fields->size());  // values[i]: field i
//     ...
//     absl::Status s = (*w)->Write(key, values);
//   }
//   absl::StatusOr<Manifest> m = (*w)->Finish();       // "out" appears, whole
//
// The dataset is written as `shardpack pack` writes one, by the same code
// (library shardpack::writer): shards of any backend cut at the same limits,
// blocks and CRCs of the `.shard` format, the record table, a manifest whose
// "pack" object records how it was written, built in "OUT.partial" (a marker
// file and a lock say whose it is) and published by one rename, the manifest
// last. A Writer destroyed without Finish() leaves nothing at OUT and removes
// its staging folder; a process killed while writing leaves an OUT.partial
// that the next writer (or pack) of OUT clears. docs/cli.md, "Output and
// safety", states the rules of an existing OUT, `overwrite` and retries.
//
// Images reach a Writer in their field's encoding (FieldValue). An
// ImageConverter turns image files (JPEG, PNG, WebP, BMP, TIFF, PNM) and
// pixels into such values.
#ifndef SHARDPACK_WRITER_H_
#define SHARDPACK_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/shard.h"

namespace shardpack {

// What a writer does with a bad sample (a value its field refuses, or one
// the caller could not make: Writer::Reject), and a packer with a bad input.
enum class OnError {
  kSkip,  // leave it out, list it (skipped.tsv, the on_skip callback), go on
  kFail,  // return the error
};

// A sample or input left out, and why. `path` is the input file for a
// packer, the sample's key for a Writer.
struct Skipped {
  std::string path;
  std::string reason;
};

// The largest block a `.shard` writer takes (ShardWriterOptions::block_size).
inline constexpr uint32_t kMaxBlockSize = uint32_t{1} << 30;

// The most parts a multi-machine write may have.
inline constexpr uint64_t kMaxParts = UINT32_MAX;

// WriterPart::count of a part written where the number of parts is not known
// (a Ray Data write task): `shardpack merge --count N` is told it.
inline constexpr uint32_t kOpenPartCount = 0;

// Part `index` of `count` (1-based) of a dataset written on many machines,
// which `shardpack merge` makes one dataset of, in index order. `count` may be
// kOpenPartCount: the writer then only knows that it is part `index`.
struct WriterPart {
  uint32_t index = 1;
  uint32_t count = 1;
};

struct WriterOptions {
  // The shards' backend: kShard (the default), kLmdb or kHdf5.
  Backend backend = Backend::kShard;
  // A shard is closed once it holds this many bytes of records (0: no
  // limit). Default 256 MiB, as `shardpack pack --shard-size`.
  uint64_t shard_max_bytes = uint64_t{256} << 20;
  // A shard is closed once it holds this many records (0, the default: no
  // limit), as `--shard-records`.
  uint64_t shard_max_records = 0;
  // Block size (1 byte to kMaxBlockSize; default 4 MiB) and compression
  // (default none) of `.shard` output; with another backend they must be
  // left at their defaults.
  ShardWriterOptions shard;
  // Replace an existing OUT, when it is a dataset shardpack wrote or an empty
  // folder; anything else is refused with or without it. Default false.
  bool overwrite = false;
  // This writer writes one part of a dataset written on many machines;
  // nullopt (the default) for a whole dataset. A part needs a `job`.
  std::optional<WriterPart> part;
  // With `part`: the name of the write the parts belong to, the same in
  // every part (a scheduler's job id, a run name); 1 to 256 bytes of UTF-8.
  // `shardpack merge` refuses parts of different jobs, and a retried part
  // (the same job, part and options) replaces its own earlier output
  // without `overwrite`, as a retried `shardpack pack --part` does.
  std::string job;
  // Bad samples: kFail (the default) returns the error from Write (the
  // writer stays usable: nothing of the sample was written); kSkip leaves
  // the sample out, lists it in OUT/skipped.tsv and calls on_skip.
  OnError on_error = OnError::kFail;
  // Called (on the writing thread) for each sample left out with kSkip: its
  // key, and the error Write would have returned. May be empty.
  std::function<void(std::string_view key, const absl::Status& reason)> on_skip;
  // A JSON object recorded as the manifest's pack.metadata (docs/format.md
  // 12.1); "{}" or empty: none. At most the manifest's limits.
  std::string metadata_json;
  // The manifest's pack.source: what the samples came from, a JSON object
  // (a converter's own parameters). Default {"kind":"writer"}.
  std::string source_json = R"({"kind":"writer"})";
  // Write the record table (records.idx, docs/format.md section 16).
  // Default true.
  bool record_table = true;
};

// Writes one dataset. Not thread-safe: one thread at a time. See the file
// comment.
class Writer {
 public:
  // Checks `fields` (MakeSchema) and `options` (InvalidArgumentError naming
  // the option), then takes OUT's staging folder "OUT.partial" as `shardpack
  // pack` does: an existing OUT is refused unless `overwrite` (or a retried
  // part's own output) allows it (AlreadyExistsError or
  // FailedPreconditionError naming OUT and why), as is an OUT another
  // process is writing.
  static absl::StatusOr<std::unique_ptr<Writer>> Create(std::string out,
                                                        std::vector<Field> fields,
                                                        const WriterOptions& options);
  // Without a successful Finish(): removes what was written; nothing is
  // published.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Writes one sample: values[i] is the value of fields()[i] (the views need
  // not outlive the call). A value its field refuses (RecordFields::Build:
  // a missing field that is not optional, a wrong shape or encoding, text
  // that is not UTF-8, JSON that does not parse, a label outside its
  // classes) is a bad sample: with OnError::kFail, InvalidArgumentError
  // "sample N ('KEY'): field 'NAME': why", N the 0-based count of samples
  // offered before it (written, skipped or refused); with kSkip it is
  // listed and OK is returned. Write errors (a full disk) are returned
  // whatever on_error says, and end the writer: every later call returns
  // the same error.
  absl::Status Write(std::string_view key, std::span<const FieldValue> values);

  // A sample the caller could not turn into values (its own checks, an image
  // that does not decode): counted as a sample, and handled as a bad sample
  // of Write with `reason` ("field 'x': ..."): returned prefixed with
  // "sample N ('KEY'): " (its code kept) with kFail, listed with kSkip.
  absl::Status Reject(std::string_view key, const absl::Status& reason);

  // Closes the last shard, writes skipped.tsv and the record table and
  // publishes OUT with its manifest last; returns the manifest. Call once.
  // On failure nothing is published (OUT as it was before).
  absl::StatusOr<Manifest> Finish();

  // The fields, in record order (FieldsOf the schema: the order given).
  const std::vector<Field>& fields() const;
  // The index of the field named `name`, or -1.
  int Find(std::string_view name) const;
  const Schema& schema() const;
  const std::string& path() const;  // OUT as given (no trailing '/')
  uint64_t samples() const;  // offered: written, skipped and refused
  uint64_t records() const;  // written
  const std::vector<Skipped>& skipped() const;

 private:
  class Impl;
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A field named `name` from its type as text, the form of shardpack.Writer's
// schema: ParseFieldTypeText's grammar (shardpack/fields.h: "jpeg",
// "raw:gray", "raw:32x32x3", "label", "string", "bytes", "json", "f32[n,4]",
// a trailing "?" for an optional field). InvalidArgumentError "field 'NAME':
// type 'TEXT' is not one of ..." naming the forms otherwise. `name` is not
// checked here (MakeSchema does).
absl::StatusOr<Field> ParseFieldText(std::string_view name, std::string_view text);

// The text form of `field`'s type: FieldTypeText.
std::string FieldText(const Field& field);

struct ImageConverterOptions {
  // The JPEG quality (1..100) of images stored into a JPEG field from other
  // formats or pixels, at full size and full chroma (4:4:4): what `shardpack
  // images --mode passthrough` does with a PNG (--convert-quality). Default
  // 100.
  int jpeg_quality = 100;
  // Images with more pixels are refused before they are decoded. Default 2^28.
  uint64_t max_pixels = uint64_t{1} << 28;
};

// Turns image files and pixels into values of an image field, in the
// field's encoding. Not thread-safe: one per thread. Keeps its decoders and
// buffers for life.
//
// - JPEG field: a JPEG file is stored as it is (its header probed for the
//   shape; channels as in the file: 1, 3, or 4 for CMYK); a PNG, WebP, BMP,
//   TIFF or PNM file, or pixels (1 or 3 channels), is encoded as a JPEG of
//   the same size, as passthrough mode converts it.
// - Raw field: a file of any of those formats is decoded at its own size,
//   losslessly but for a JPEG's own loss (a PNG mask stays exact, 16-bit
//   samples keep their high byte, alpha is dropped, a palette is looked up:
//   codec/decode.h), to the field's channels: 1 keeps a grayscale image
//   gray, 3 makes it RGB, 0 (any) keeps what the file holds; pixels are
//   taken as they are. A channel count the field does not hold, or a shape
//   other than the field's fixed one, is an error: nothing is resized.
//   A CHW field gets its pixels transposed from HWC.
// Errors name the field: InvalidArgumentError "field 'mask': a 3-channel
// (RGB) image, the field holds 1-channel images", the decoders' DataLossError
// for a damaged file ("field 'photo': corrupt PNG data: ...").
class ImageConverter {
 public:
  static absl::StatusOr<std::unique_ptr<ImageConverter>> Create(
      const ImageConverterOptions& options = {});
  ~ImageConverter();
  ImageConverter(const ImageConverter&) = delete;
  ImageConverter& operator=(const ImageConverter&) = delete;

  // `file`: the bytes of an image file, its format told by its content.
  // The value's bytes view `file` (a JPEG into a JPEG field) or `storage`
  // (resized to what it holds; its capacity is reused), valid as long as
  // those are. `field` must be an image field.
  absl::StatusOr<FieldValue> FromFile(const Field& field, ByteSpan file,
                                      std::vector<uint8_t>* storage);
  // `pixels`: height x width x channels uint8, HWC, rows packed. The value's
  // bytes view `pixels` (a HWC raw field) or `storage`.
  absl::StatusOr<FieldValue> FromPixels(const Field& field, ByteSpan pixels, uint32_t height,
                                        uint32_t width, uint32_t channels,
                                        std::vector<uint8_t>* storage);

 private:
  class Impl;
  explicit ImageConverter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack

#endif  // SHARDPACK_WRITER_H_
