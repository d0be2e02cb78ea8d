// Records by index: random access to one record of a dataset, and lookup by
// key through the dataset's record table (docs/format.md, section 16).
//
//   SP_ASSIGN_OR_RETURN(auto records, RecordReader::Open("imagenet-train"));
//   RecordBuffer buffer;                      // one per thread, reused
//   SP_RETURN_IF_ERROR(records->Read(12345, &buffer));
//   use(buffer.record().labels[0], buffer.record().payload);
//   SP_ASSIGN_OR_RETURN(uint64_t i, records->Find("n01440764/n01440764_10026.JPEG"));
//
// Any path the tools accept: a dataset directory, its manifest.json, or one
// shard file of any backend (docs/cli.md, "What a path may name"). A record
// is found in O(1) from the indexes: its shard by the prefix sums of the
// manifest's record counts, its block by the shard's footer index; then only
// the record's bytes are read where its block is stored uncompressed (a
// compressed block is read and decompressed whole). LMDB shards are read by
// one key lookup, HDF5 shards by one row of each dataset.
//
// What a read checks: the record's own structure (its header, lengths and
// padding: format/record_codec.h), and for a compressed block the block's
// CRC-32C. The CRC-32C of an uncompressed block covers the whole block, so a
// single-record read cannot check it. A record of a dataset with fields
// (shardpack/fields.h) carries a CRC-32C of its own: every read checks it
// and the record's field section against the schema (presence, lengths,
// array shapes, image headers, labels within their classes) and the fields'
// content (UTF-8 strings, JSON that parses) before handing the record out,
// whichever backend or object store it comes from, so that a flipped byte is
// a DataLossError, never data (docs/reliability.md, "The record CRC").
// A classic record (images and labels) has no CRC of its own: `sharddump
// verify` checks every byte.
#ifndef SHARDPACK_RECORDS_H_
#define SHARDPACK_RECORDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <span>
#include <vector>

#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/storage.h"

namespace shardpack {

struct RecordReaderOptions {
  // Read `.shard` files through a read-only mapping instead of pread: a
  // record in the page cache is then a memcpy, no system call (a shard that
  // shrinks while mapped is a DataLossError, never a SIGBUS). Default false
  // (pread, the better choice for data not in the page cache).
  bool mmap = false;
  // A dataset in an object store: its local cache, as ReaderOptions'
  // cache_dir and cache_bytes ("" and -1: the environment's, else the
  // defaults). A record read remotely fetches its whole block (checked).
  std::string cache_dir;
  int64_t cache_bytes = -1;
  // A Storage shared with other record readers and readers, as
  // ReaderOptions::storage: then cache_dir and cache_bytes must be left at
  // their defaults (an InvalidArgumentError naming both otherwise). Null
  // (the default): one of its own from cache_dir and cache_bytes.
  std::shared_ptr<Storage> storage;
};

// A decoded image: HWC pixels, 1 (gray) or 3 (RGB) channels.
struct DecodedImage {
  const uint8_t* data = nullptr;
  uint32_t height = 0;
  uint32_t width = 0;
  int channels = 0;
  size_t bytes() const { return size_t{height} * width * static_cast<size_t>(channels); }
};

// Where a read puts a record: memory that keeps its capacity, so that reading
// into the same buffer again allocates nothing once it has grown to the
// largest record (and image) read. Owned by the caller; one per thread (not
// thread-safe). Move-only.
class RecordBuffer {
 public:
  RecordBuffer();
  ~RecordBuffer();
  RecordBuffer(RecordBuffer&&) noexcept;
  RecordBuffer& operator=(RecordBuffer&&) noexcept;

  // The record last read: its views (key, payload, extra) point into this
  // buffer and are valid until the next read into it.
  const Record& record() const { return record_; }
  // Its index in the dataset (a view: in the view).
  uint64_t index() const { return index_; }
  // The decoded image of the last read made with decode = true (else empty);
  // valid until the next read into this buffer. For a dataset with fields,
  // the first image field's (empty when that field is absent).
  const DecodedImage& image() const { return image_; }
  // For a dataset with fields: the record's value of each field of
  // RecordReader::fields(), in that order, checked (see the file comment);
  // labels as the view gives them. Views into this buffer, valid until the
  // next read into it. Empty for a classic dataset: record() is all of it.
  std::span<const FieldValue> fields() const { return fields_; }
  // For a dataset with fields, after a read with decode = true: one entry
  // per field, the decoded image of each image field that is present (as
  // image() decodes one) and an empty one for every other field. Valid until
  // the next read into this buffer. Empty otherwise.
  std::span<const DecodedImage> images() const { return images_; }

 private:
  friend class RecordReader;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Record record_;
  uint64_t index_ = 0;
  DecodedImage image_;
  // Sized once to the schema's fields; their capacity is kept.
  std::vector<FieldValue> fields_;
  std::vector<DecodedImage> images_;
};

// Random access to a dataset's records. Thread-safe: any number of threads
// may Read (each into its own RecordBuffer) and Find at once. `.shard` files
// are read with pread (or memcpy from a mapping) on shared descriptors with
// no lock; an LMDB or HDF5 shard is read under a mutex of its own (HDF5's
// library allows one call at a time in the process anyway).
class RecordReader {
 public:
  // Opens the dataset, shard or view file `path` names (a view: its
  // datasets, records numbered in the view, labels as the view maps them;
  // docs/reader.md, "Views"): every shard's index (a `.shard`
  // footer, an LMDB or HDF5 file through the gate of
  // backends/shard_gate.h, which checks its size and CRC-32C against the
  // manifest), and the record table when the manifest lists one. Errors name
  // the path: NotFoundError when missing, DataLossError naming the file and
  // offset for a damaged shard index or record table, or a shard holding
  // another number of records than its manifest entry.
  static absl::StatusOr<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                            const RecordReaderOptions& options = {});
  ~RecordReader();

  const std::string& path() const;
  // Records in the dataset (a view: those it selects).
  uint64_t size() const;
  // The dataset's schema; empty (no label fields, shape 0) for a lone
  // `.shard` file, which carries none.
  const Schema& schema() const;
  // The fields each record holds, as the view gives them (a relabelled
  // field with its kept classes): the schema's declared fields, empty for a
  // classic dataset (shardpack/fields.h; FieldsOf(schema()) gives its
  // implicit ones).
  const std::vector<Field>& fields() const;
  // Whether Find can answer (the dataset, or every dataset of a view, has a
  // record table).
  bool has_record_table() const;

  // Reads record `index` into `out`: its stored bytes (key, labels, image
  // info, payload, extra) and, with `decode`, its image as pixels (a JPEG
  // decoded whole to RGB or gray; a raw image as it is, CHW planes
  // interleaved to HWC; with fields, every image field). For a dataset with
  // fields, the record's field values too (RecordBuffer::fields), checked
  // first. OutOfRangeError naming the index and size() past the end;
  // DataLossError naming the shard, offset and record for damage (and the
  // field, when one is to blame: "... record 3 (index 3): disagrees with the
  // schema: field 'caption': not UTF-8", or "record CRC-32C mismatch"). On
  // error `out` holds no record. Once `out` has read the largest record
  // (and images), a read allocates nothing, but for the check of a JSON
  // field's text (nlohmann's parser makes a few small allocations).
  absl::Status Read(uint64_t index, RecordBuffer* out, bool decode = false) const;

  // The index of the first record whose key is `key`, from the record table
  // (no scan); for a view, its index in the view. NotFoundError when no
  // record has it, or when the view leaves that record out (the message
  // says which); FailedPreconditionError naming the path and `shardpack
  // index` when the dataset (or a dataset of the view) has no table.
  absl::StatusOr<uint64_t> Find(std::string_view key) const;

 private:
  struct Impl;
  explicit RecordReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack

#endif  // SHARDPACK_RECORDS_H_
