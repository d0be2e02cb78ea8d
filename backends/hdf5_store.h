// HDF5 shards: one HDF5 file per shard.
//
// Layout (docs/format.md, "HDF5 shards"). Per row (record) datasets, all
// with N rows:
//   images         uint8 [N,H,W,C] (HWC) or [N,C,H,W] (CHW), chunked along N:
//                  raw images of the schema's fixed shape, or else
//   data, offsets  uint8 [total] and int64 [N+1]: payloads back to back,
//                  record i is data[offsets[i]:offsets[i+1]]; with
//   image_info     uint32 [N,5]: encoding, layout, height, width, channels
//   labels         int64 [N]: label field 0; coarse_labels for field 1,
//                  labels_<k> for field k >= 2
//   keys, key_offsets      uint8 [total] and int64 [N+1]: record keys
//   extra, extra_offsets   uint8 [total] and int64 [N+1]: extra bytes
// and the root attribute `shardpack_manifest` (ShardMetaJson text).
//
// A plain file written by h5py or anything else, with `images` uint8
// [N,H,W,C] (or [N,C,H,W], [N,H,W]) and integer `labels` [N], opens too,
// whatever else it holds: its schema is made up from the shapes (see
// SynthesizeHdf5Manifest). The layout is told by what the file holds (our
// metadata attribute, else those two datasets), never by a name alone;
// datasets the layout does not use are never opened (docs/format.md, 14.2).
//
// Threads: Debian's libhdf5 is built without its thread-safety option, so
// every HDF5 call in this library holds one process-wide mutex. Each object
// below is thread-compatible (use one from one thread at a time); the
// reader's loader uses its HDF5 readers from its one loader thread.
#ifndef SHARDPACK_BACKENDS_HDF5_STORE_H_
#define SHARDPACK_BACKENDS_HDF5_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/dataset.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"

namespace shardpack::backends {

// The root attribute holding a shard's metadata.
inline constexpr char kHdf5MetaAttribute[] = "shardpack_manifest";

// Columns of the image_info dataset.
inline constexpr int kHdf5ImageInfoColumns = 5;

struct Hdf5WriterOptions {
  // Target bytes per chunk of `images` (rows per chunk = this / image bytes,
  // at least 1) and of the flat byte datasets. Default 1 MiB, h5py's and
  // HDF5's chunk cache size.
  uint64_t chunk_bytes = uint64_t{1} << 20;
  // Rows per chunk of the small per-row datasets (labels, offsets, ...).
  // Default 4096.
  uint64_t row_chunk = 4096;
};

// A ShardSink writing one HDF5 shard at `path` (under "<path>.partial" until
// Commit). The fixed layout (`images`) is used when the schema is raw with a
// fixed shape; every record must then have that shape. Otherwise the flat
// layout. Every record must carry one label per schema label field.
absl::StatusOr<std::unique_ptr<ShardSink>> OpenHdf5ShardSink(
    const std::string& path, const DatasetWriterOptions& options,
    const Hdf5WriterOptions& hdf5 = {});

// Reads one HDF5 shard (ours or a plain images/labels file), opened
// read-only. Reads go to the caller's buffers, one H5Dread per dataset per
// call, so read whole chunks (chunk_rows() rows) at a time.
class Hdf5ShardReader {
 public:
  // NotFoundError when `path` does not exist; DataLossError with one line
  // naming the path and what is wrong when it is not HDF5, truncated,
  // damaged, lacks a dataset the layout needs or has one of the wrong shape
  // or type, or holds neither layout (then what its root holds and what is
  // accepted). HDF5's own error stack is never printed.
  static absl::StatusOr<std::unique_ptr<Hdf5ShardReader>> Open(const std::string& path);
  ~Hdf5ShardReader();
  Hdf5ShardReader(const Hdf5ShardReader&) = delete;
  Hdf5ShardReader& operator=(const Hdf5ShardReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Rows per chunk of `images` (or of `offsets` in the flat layout); for an
  // unchunked plain file, the rows in about 1 MiB.
  uint64_t chunk_rows() const { return chunk_rows_; }
  // Whether the file has our metadata (false: a plain file).
  bool ours() const { return ours_; }
  // The shard's metadata: ours, or made up for a plain file (one shard, the
  // file's name, records = size(), bytes and crc32c 0).
  const Manifest& meta() const { return meta_; }
  // `images` layout (else flat data + offsets + image_info).
  bool fixed_shape() const { return fixed_shape_; }
  // The images' shape (fixed_shape() only).
  ImageInfo image_info() const { return meta_.schema.image; }
  // Label datasets: labels, coarse_labels, labels_2, ...
  int num_labels() const { return static_cast<int>(labels_.size()); }
  bool has_keys() const;
  bool has_extra() const;
  // How the file was recognized, and the root's links it does not use:
  // "fixed images/labels (plain file); ignored: keys, extra" (at most 16
  // names, then "and N more"), "flat data/offsets (shardpack)".
  std::string LayoutText() const;

  // OK while the file has the size it had when opened; else a
  // DataLossError naming it. libhdf5 reads the part of a file that shrank
  // as zeros, without an error: check this after reads whose bytes are
  // data (per read step, never per row). One stat().
  absl::Status CheckSize() const;

  // Rows [begin, end): with `images` non-null (fixed_shape() only), the
  // images, (end - begin) * image_info().RawBytes() bytes; with `labels`
  // non-null, num_labels() arrays of end - begin int64s (a null array is
  // skipped). One H5Dread per dataset. Precondition: begin <= end <= size().
  absl::Status ReadRows(uint64_t begin, uint64_t end, uint8_t* images, int64_t* const* labels);

  // Flat layout: offsets[begin .. end] (end - begin + 1 values), one read;
  // DataLossError unless they ascend and lie within `data`.
  absl::Status ReadOffsets(uint64_t begin, uint64_t end, int64_t* offsets);
  // Flat layout: data bytes [byte_begin, byte_end), one read.
  absl::Status ReadData(uint64_t byte_begin, uint64_t byte_end, uint8_t* out);
  // Flat layout: image_info rows [begin, end), 5 uint32s each.
  absl::Status ReadImageInfo(uint64_t begin, uint64_t end, uint32_t* out);

  // Keys (or extra bytes) of rows [begin, end): `offsets` gets end - begin + 1
  // offsets into `bytes`, starting at 0. Empty keys when the file has none.
  absl::Status ReadKeys(uint64_t begin, uint64_t end, std::vector<int64_t>* offsets,
                        std::vector<uint8_t>* bytes);
  absl::Status ReadExtra(uint64_t begin, uint64_t end, std::vector<int64_t>* offsets,
                         std::vector<uint8_t>* bytes);

 private:
  struct Files;
  explicit Hdf5ShardReader(std::string path);
  absl::Status Load();
  absl::Status LoadOurs(const std::string& meta);
  absl::Status LoadPlain();
  absl::StatusOr<bool> OpenSlot(int slot);
  void ListIgnored();
  void SetChunkRows();
  absl::Status ReadVarBytes(int which, uint64_t begin, uint64_t end,
                            std::vector<int64_t>* offsets, std::vector<uint8_t>* bytes);

  std::string path_;
  std::unique_ptr<Files> files_;
  uint64_t file_bytes_ = 0;  // the file's size when opened: bounds what it may claim
  uint64_t size_ = 0;
  uint64_t chunk_rows_ = 1;
  bool ours_ = false;
  bool fixed_shape_ = false;
  Manifest meta_;
  std::vector<int> labels_;  // slots in files_ of the label datasets
  std::vector<std::string> ignored_;  // names of root links not read (some)
  uint64_t ignored_count_ = 0;        // how many there are
};

// The manifest of a dataset that is one HDF5 file (ours without its
// directory, or a plain h5py file): backend hdf5, the file as its one shard
// (path: the file name, bytes: its size, crc32c 0: not known), the schema
// from our metadata or from the shapes. Errors as Hdf5ShardReader::Open.
absl::StatusOr<Manifest> SynthesizeHdf5Manifest(const std::string& path);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_HDF5_STORE_H_
