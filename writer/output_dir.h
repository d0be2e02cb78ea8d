// The life of an output dataset directory OUT (of `shardpack pack`, merge
// and convert, and of a Writer): built in the staging directory
// "OUT.partial", renamed into place when complete, manifest written last.
//
// Nothing shardpack did not write is ever deleted:
// - The staging directory belongs to one process. It is created with a
//   marker file of ours in it (kStagingMarker) and held with flock() on the
//   directory for the pack's life. An OUT.partial without the marker is the
//   user's and is refused; one with the marker whose lock is free was left
//   by a killed pack and is cleared; one whose lock is held is in use by
//   another pack, which is said at once.
// - An existing OUT is replaced (with `overwrite`) only when it is an empty
//   directory or a dataset shardpack wrote: see CheckOurDataset. Anything
//   else is refused with a message naming it and saying why.
// - The old dataset is swapped out atomically and removed file by file,
//   only the files it was verified to hold, our marker (written into it
//   before the swap) last.
// - Whatever moment a pack is killed at, a retry of the same command works
//   without anything removed by hand: a staging directory with our marker,
//   or with nothing in it yet, whose lock is free is cleared and taken; a
//   published folder still holding the marker and no manifest (killed
//   between the move and the manifest) is replaced (see CheckExistingOutput).
// - A pack with an identity (its PackIdentity: a part of a multi-machine
//   pack) writes it into the marker as a line "pack <ToJson()>". A later run
//   with the same identity (a retried array task) may replace, without
//   `overwrite`, a dataset of ours that records that identity: in its
//   manifest, or in its marker when its publish was cut short.
#ifndef SHARDPACK_WRITER_OUTPUT_DIR_H_
#define SHARDPACK_WRITER_OUTPUT_DIR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "shardpack/manifest.h"
#include "writer/pack_identity.h"

namespace shardpack::writer {

// The marker file in a staging directory (and in a dataset whose publish
// was interrupted before its manifest was written).
inline constexpr char kStagingMarker[] = ".shardpack-staging";

// OK when `dir` may be replaced: an empty directory, or a directory whose
// manifest.json parses as ours (or, with no manifest, that holds our staging
// marker) and that holds nothing but the files that manifest names (shards,
// with an LMDB reader's "-lock" file beside one) and our own files
// (manifest.json, skipped.tsv, their ".partial" temporaries, the marker).
// Otherwise FailedPreconditionError "<dir> <why>": a symbolic link, not a
// directory, no manifest, a manifest that does not parse, or the first
// file that is not ours. Never follows a symbolic link inside `dir`.
absl::Status CheckOurDataset(const std::string& dir);

class OutputDir {
 public:
  // Refuses an existing `path` unless `overwrite`, and even then unless
  // CheckOurDataset accepts it (AlreadyExistsError / FailedPreconditionError
  // naming the path and why), or while another process holds it
  // (FailedPreconditionError "... is in use"). Then takes the staging
  // directory "<path>.partial" as described above.
  // With an `identity` (not kept past the call), an existing dataset of
  // ours recording the same identity (PackIdentity's operator==) is
  // replaced as with `overwrite`; one recording another, or one whose
  // record does not parse, is refused saying so.
  static absl::StatusOr<std::unique_ptr<OutputDir>> Create(
      std::string path, bool overwrite, const PackIdentity* identity = nullptr);

  // Removes the staging directory unless Publish() succeeded, then lets the
  // lock go.
  ~OutputDir();

  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Where to write: the staging directory, locked by this object.
  const std::string& staging() const { return staging_; }

  // Moves the staging directory to the final path, writes the manifest into
  // it and removes the marker, fsyncing the directories after the move and
  // after the marker's removal (common::PublishFile's rule for a folder).
  // An existing dataset there is checked again (it may have changed during
  // the pack), given our marker, swapped out in one rename where the file
  // system can (common::RenameMode::kExchange), and its files removed, the
  // marker last. A failure before the manifest and the marker's removal are
  // durable moves everything back: no dataset without a manifest is left at
  // the final path, and the staging directory is removed as on any failure.
  absl::Status Publish(const Manifest& manifest);

 private:
  OutputDir(std::string path, std::string staging, common::UniqueFd lock)
      : path_(std::move(path)), staging_(std::move(staging)), lock_(std::move(lock)) {}
  // Renames the staging directory to path_; returns where the dataset it
  // replaced now is ("" when there was none).
  absl::StatusOr<std::string> MoveIntoPlace(bool replace);
  // Undoes MoveIntoPlace, which returned `old`: the new dataset back at the
  // staging name, the old one (if any) back at path_.
  absl::Status MoveBack(const std::string& old);

  std::string path_;
  std::string staging_;
  // The staging directory, open; flock()ed where the file system has locks.
  // Closed (the lock let go) after the destructor's body removed it.
  common::UniqueFd lock_;
  bool published_ = false;
};

}  // namespace shardpack::writer

#endif  // SHARDPACK_WRITER_OUTPUT_DIR_H_
