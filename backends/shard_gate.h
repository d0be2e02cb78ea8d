// The one gate in front of liblmdb and libhdf5.
//
// Both libraries trust their files: liblmdb maps an environment and follows
// its page numbers, libhdf5 follows its object headers and B-trees, and one
// flipped byte in either can make them read through a wild pointer (SIGSEGV,
// SIGBUS) or loop. A training job must never die by a signal because of its
// data, so no LMDB or HDF5 file reaches either library without passing here:
//
//  - A file shardpack wrote is listed in a manifest.json with its size and
//    CRC-32C. Before the library sees it, its size and CRC-32C are checked
//    against that entry (one streaming pread pass); a mismatch is a
//    DataLossError naming the file, the expected and the actual value.
//  - A file nobody checksummed (a plain h5py file, a foreign LMDB, a lone
//    shard with no manifest.json beside it listing it) is vetted in a forked
//    child process: the child opens it with our reader classes and reads
//    every record; the parent waits with a time limit. A child that dies by
//    a signal, fails or runs out of time makes the file a DataLossError; the
//    parent process lives.
//
// Every opener of an LMDB or HDF5 shard (the reader's sources, sharddump,
// shardpack convert and merge, shardbench through the reader) goes through
// AdmitShardFile or one of the gated openers below. The raw openers
// (LmdbShardReader::Open, Hdf5ShardReader::Open, ShardScanner::Open,
// SynthesizeHdf5Manifest) are for the vetting child, tests and benchmarks.
//
// What risk remains (docs/reliability.md, "LMDB and HDF5"):
//  - Checked, then opened: a file changed in place between the check and
//    the library's reads (or, for LMDB, while it is mapped) is read as it is
//    then. Shards are written once and never modified by shardpack; another
//    process writing into a dataset while it is read is outside what any
//    check before the read can cover.
//  - Vetting runs the same code on the same bytes as the parent, but not the
//    same calls: the reader's HDF5 source reads rows in runs of its own
//    making where the child read whole chunks. A file that only crashes
//    libhdf5 for one pattern of reads could pass. Vetting also cannot tell
//    libhdf5 bugs apart from damage: both make the file an error.
//  - A file that passed vetting is remembered for the process's life by its
//    size and CRC-32C, so that opening it again costs a CRC pass, not a
//    second vetting. CRC-32C is no cryptographic hash: a file made to
//    collide with one vetted earlier in the same process would pass.
//  - Cost: a checksummed file is read once more (the CRC pass; its pages are
//    then in the page cache for the library); an unchecked file is read once
//    more through the library, in the child, plus a fork and two CRC passes
//    (before and after, to remember what was vetted). Measured on 2 loaded
//    cores, 100,000 CIFAR records from the page cache: the CRC pass runs at
//    ~5 GB/s (0.08 s for the 412 MB LMDB dataset, 0.06 s for the 313 MB
//    HDF5 one), paid once per reader per shard when the shard is first read;
//    an epoch (shardbench --transform none, 2 threads) then takes 0.21 s on
//    LMDB, 0.25 s on HDF5 and 0.22 s on `.shard`. Vetting a 354 MB LMDB
//    shard took 0.02 s, a 270 MB HDF5 shard 0.04 s.
#ifndef SHARDPACK_BACKENDS_SHARD_GATE_H_
#define SHARDPACK_BACKENDS_SHARD_GATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/hdf5_store.h"
#include "backends/lmdb_store.h"
#include "backends/store.h"
#include "format/file_system.h"
#include "shardpack/manifest.h"

namespace shardpack::backends {

// A whole file's size and CRC-32C.
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Reads `path` once with pread, 4 MiB at a time, to its end, for its size
// and CRC-32C. Errors name the path (NotFoundError when missing).
// A URL is digested in its local copy, made through `files` (the dataset's
// format::FileSystem: a remote::Storage); with none, a URL is a
// NotFoundError (a path, never a store, is what this opens).
absl::StatusOr<FileDigest> DigestFile(const std::string& path,
                                      format::FileSystem* files = nullptr);

// OK when `actual` is what `expected` (a manifest entry) says; otherwise a
// DataLossError naming the path, the expected and the actual size or CRC.
absl::Status CompareDigest(const std::string& path, const FileDigest& actual,
                           const ShardEntry& expected);

struct VetOptions {
  // The child gets base_seconds plus the file's size / bytes_per_second
  // before it is killed. Defaults: 60 s plus 1 s per 20 MB, ten times what
  // a scan of a page-cached file takes on a slow machine.
  double base_seconds = 60;
  double bytes_per_second = 20e6;
};

// Vets a file nobody checksummed: a forked child opens it with
// ShardScanner and visits every record, then _exit()s with the result sent
// over a pipe. The child's error is returned as it is; a child killed by a
// signal, exiting without a result or running out of time is a
// DataLossError "<path>: damaged: libhdf5 died with SIGSEGV while checking
// it (the file was not checksummed by shardpack)". Must not be called with
// the HDF5 lock held. Thread-safe.
absl::Status VetShardFile(const std::string& path, Backend backend, const VetOptions& options = {});

// Makes `path` fit for the library of `backend`: with `expected` (the
// manifest's entry), its size and CRC-32C are checked; without, it is
// vetted, unless this process vetted the same bytes before (one CRC pass
// tells). A `.shard` file passes as it is (the format carries its own
// checksums). Thread-safe.
absl::Status AdmitShardFile(const std::string& path, Backend backend,
                            const std::optional<ShardEntry>& expected,
                            const VetOptions& vet = {}, format::FileSystem* files = nullptr);

// The gated openers: AdmitShardFile, then the raw opener. A URL (an object
// of a dataset `files` opened) is admitted and opened as its checked local
// copy (liblmdb and libhdf5 open files, not streams), a `.shard` object
// read through `files` (its cache); with no file system, a URL is a
// NotFoundError.
absl::StatusOr<std::unique_ptr<LmdbShardReader>> OpenLmdbShard(
    const std::string& path, const std::optional<ShardEntry>& expected,
    format::FileSystem* files = nullptr);
absl::StatusOr<std::unique_ptr<Hdf5ShardReader>> OpenHdf5Shard(
    const std::string& path, const std::optional<ShardEntry>& expected,
    format::FileSystem* files = nullptr);
absl::StatusOr<std::unique_ptr<ShardScanner>> OpenShardScanner(
    const std::string& path, Backend backend, const std::optional<ShardEntry>& expected,
    const VetOptions& vet = {}, format::FileSystem* files = nullptr);

// `path` when it is no URL; else its local copy through `files`
// (NotFoundError naming the URL when there is none).
absl::StatusOr<std::string> LocalPathOf(const std::string& path, format::FileSystem* files);

// A lone LMDB or HDF5 file (named without its dataset directory).
struct LoneShard {
  // The entry of a manifest.json beside the file that lists it by name (and
  // is of `backend`), when there is one: the file is checked against it.
  std::optional<ShardEntry> entry;
  // The file as a dataset of one shard: its own metadata (or, for a plain
  // HDF5 file, made up from its shapes), the shard's path its file name,
  // bytes its size, crc32c the entry's (0 when there is none).
  Manifest manifest;
};

// Admits a lone file (against the entry beside it, else by vetting) and
// reads its metadata. Errors name the path.
absl::StatusOr<LoneShard> OpenLoneShard(const std::string& path, Backend backend);

}  // namespace shardpack::backends

#endif  // SHARDPACK_BACKENDS_SHARD_GATE_H_
