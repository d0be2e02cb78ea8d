#include "writer/output_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"

namespace shardpack::writer {
namespace {

namespace fs = std::filesystem;

constexpr char kOverwriteRule[] =
    "--overwrite replaces only a dataset shardpack wrote or an empty folder";

using Fd = ::shardpack::common::UniqueFd;

std::string Join(const std::string& dir, std::string_view name) {
  return absl::StrCat(dir, "/", absl::string_view(name.data(), name.size()));
}

using common::DirectoryEntry;
using common::LockResult;

// Opens the directory `dir` itself (never through a symbolic link) and
// tries to lock it; the lock lives as long as `fd`.
absl::StatusOr<LockResult> TryLockDir(const std::string& dir, Fd* fd) {
  SP_ASSIGN_OR_RETURN(*fd, common::OpenDirectory(dir));
  return common::TryLockExclusive(fd->get(), dir);
}

// "shard-00012.shard", ".lmdb" or ".h5", with a writer's ".partial" or an
// LMDB reader's "-lock" after it: the names our writers give (tools use the
// default prefix), for a dataset whose manifest was never written.
bool IsOurShardName(std::string_view name) {
  std::string_view base;
  if (common::IsPartialName(name, &base)) name = base;
  if (name.ends_with("-lock")) name.remove_suffix(5);
  const std::string_view prefix = "shard-";
  if (!name.starts_with(prefix)) return false;
  name.remove_prefix(prefix.size());
  size_t digits = 0;
  while (digits < name.size() && absl::ascii_isdigit(name[digits])) ++digits;
  if (digits < 5) return false;
  name.remove_prefix(digits);
  return name == ".shard" || name == ".lmdb" || name == ".h5";
}

const DirectoryEntry* FindEntry(const std::vector<DirectoryEntry>& entries,
                                std::string_view name) {
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const DirectoryEntry& e) { return e.name == name; });
  return it == entries.end() ? nullptr : &*it;
}

// Why `dir` is not a dataset shardpack wrote, or "" when it is one (or is
// empty); `files` then gets the names of its files, all ours.
std::string NotOursReason(const std::string& dir, std::vector<std::string>* files) {
  absl::StatusOr<common::FileStatus> st = common::Lstat(dir);
  if (!st.ok()) return absl::StrCat("cannot be read: ", st.status().message());
  if (st->IsSymbolicLink()) return "is a symbolic link (name the directory itself)";
  if (!st->IsDirectory()) return "is not a directory";
  absl::StatusOr<std::vector<DirectoryEntry>> entries = common::ListDirectory(dir);
  if (!entries.ok()) return absl::StrCat("cannot be listed: ", entries.status().message());
  // Our files, and (through IsPartialName) their temporaries.
  std::set<std::string, std::less<>> names = {kManifestFileName, "skipped.tsv", kStagingMarker};
  const DirectoryEntry* manifest = FindEntry(*entries, kManifestFileName);
  if (manifest != nullptr) {
    // A FIFO or a link in its place is not ours, and must not be opened.
    if (!S_ISREG(manifest->mode)) {
      return absl::StrCat("holds a ", kManifestFileName, " that is not a regular file");
    }
    absl::StatusOr<Manifest> m = ReadManifest(dir);
    if (!m.ok()) {
      return absl::StrCat("holds a ", kManifestFileName, " that is not one of shardpack's (",
                          m.status().message(), ")");
    }
    for (const ShardEntry& s : m->shards) {
      names.insert({s.path, s.path + "-lock"});
    }
    if (m->record_table.has_value()) names.insert(m->record_table->path);
  } else if (!entries->empty() && FindEntry(*entries, kStagingMarker) == nullptr) {
    return absl::StrCat("holds no ", kManifestFileName, ": it is not a dataset");
  } else {
    names.insert(kRecordTableFileName);  // written before the manifest
  }
  for (const DirectoryEntry& e : *entries) {
    std::string_view base;
    const bool ours = names.count(e.name) > 0 ||
                      (common::IsPartialName(e.name, &base) && names.count(base) > 0) ||
                      (manifest == nullptr && IsOurShardName(e.name));
    if (!ours || !S_ISREG(e.mode)) {
      return absl::StrCat("holds ", e.name, ", which shardpack did not write");
    }
    files->push_back(e.name);
  }
  return "";
}

// Fails when another process holds `dir` locked (a pack publishing it).
absl::Status CheckNotInUse(const std::string& dir) {
  Fd fd;
  SP_ASSIGN_OR_RETURN(LockResult lock, TryLockDir(dir, &fd));
  if (lock == LockResult::kBusy) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is in use: another shardpack is writing it"));
  }
  return absl::OkStatus();
}

constexpr std::string_view kMarkerPackPrefix = "pack ";

// The identity `dir` records: its manifest's, or (a publish cut short
// before the manifest) the one its staging marker holds; nullopt when
// neither, or when what is there does not parse.
std::optional<PackIdentity> RecordedPack(const std::string& dir,
                                         const std::vector<std::string>& files) {
  absl::StatusOr<PackIdentity> recorded = absl::NotFoundError("");
  if (std::find(files.begin(), files.end(), kManifestFileName) != files.end()) {
    absl::StatusOr<Manifest> m = ReadManifest(dir);
    if (!m.ok()) return std::nullopt;
    recorded = PackIdentity::FromJson(m->pack_json, dir);
  } else {
    const std::string marker_path = Join(dir, kStagingMarker);
    absl::StatusOr<std::string> marker = ReadSmallFile(marker_path);
    if (!marker.ok()) return std::nullopt;
    // The line that starts with the prefix (the first line, "shardpack
    // staging ...", holds it too, mid-line).
    std::string_view text = *marker;
    const size_t at = text.find(absl::StrCat("\n", std::string(kMarkerPackPrefix)));
    if (at == std::string_view::npos) return std::nullopt;
    text.remove_prefix(at + 1 + kMarkerPackPrefix.size());
    recorded = PackIdentity::FromJson(text.substr(0, text.find('\n')), marker_path);
  }
  if (!recorded.ok()) return std::nullopt;
  return *std::move(recorded);
}

// True when the dataset of ours at `dir` (its `files`) was written by the
// very pack `identity` describes: a retry may replace it.
bool SamePack(const std::string& dir, const std::vector<std::string>& files,
              const PackIdentity* identity) {
  if (identity == nullptr) return false;
  const std::optional<PackIdentity> recorded = RecordedPack(dir, files);
  return recorded.has_value() && *recorded == *identity;
}

// The refusal of an existing `path`, or OK when it may be replaced.
absl::Status CheckExistingOutput(const std::string& path, bool overwrite,
                                 const PackIdentity* identity) {
  if (absl::Status st = common::Lstat(path).status(); !st.ok()) {
    return absl::IsNotFound(st) ? absl::OkStatus() : st;
  }
  std::vector<std::string> files;
  const std::string why = NotOursReason(path, &files);
  if (!overwrite) {
    if (!why.empty()) {
      return absl::AlreadyExistsError(absl::StrCat(path, " already exists and ", why, "; ",
                                                   kOverwriteRule, ": choose another output"));
    }
    if (SamePack(path, files, identity)) return CheckNotInUse(path);  // a retry
    // Ours without a manifest: a pack killed while it published (its marker
    // is there). Never a whole dataset, so any pack may replace it.
    const bool interrupted =
        !files.empty() && std::find(files.begin(), files.end(), kManifestFileName) == files.end();
    if (interrupted && identity == nullptr) return CheckNotInUse(path);
    if (identity != nullptr && !files.empty()) {
      return absl::AlreadyExistsError(absl::StrCat(
          path, " already exists", interrupted ? " (without a manifest)" : "",
          " and was not written by this pack (another part, input, seed or option): a retry "
          "replaces only its own output; use --overwrite to replace it"));
    }
    return absl::AlreadyExistsError(
        absl::StrCat(path, " already exists; use --overwrite to replace it"));
  }
  if (!why.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(path, " ", why, "; ", kOverwriteRule,
                                                      ", so nothing was deleted"));
  }
  return CheckNotInUse(path);
}

// The marker names the pack (its "pack" object on one line) when it has an
// identity, so that a retry can tell its own cut-short publish.
absl::Status WriteMarker(const std::string& staging, const PackIdentity* identity) {
  std::string text =
      absl::StrCat("shardpack staging directory, written by process ", ::getpid(), "\n");
  if (identity != nullptr) {
    absl::StrAppend(&text, std::string(kMarkerPackPrefix), identity->ToJson(), "\n");
  }
  return WriteFileAtomically(Join(staging, kStagingMarker), text);
}

// Removes everything in a directory of ours but the marker. The marker
// stays until the rest is gone, so that a process killed halfway leaves a
// directory that still says it is ours.
// Needs no new descriptor (common::RemoveFilesAt), so that a pack that
// failed for want of them (ulimit -n) still cleans up.
absl::Status ClearDirectory(int fd, const std::string& dir) {
  return common::RemoveFilesAt(fd, dir, /*keep=*/kStagingMarker);
}

// Removes a directory of ours whole: its contents, then the marker, then
// the directory.
absl::Status RemoveOurDirectory(int fd, const std::string& dir) {
  SP_RETURN_IF_ERROR(ClearDirectory(fd, dir));
  SP_RETURN_IF_ERROR(common::RemoveFilesAt(fd, dir));
  return common::RemoveDirectory(dir);
}

// True when `dir` holds nothing, or nothing but temporaries of our marker:
// a staging directory whose pack was killed before its marker was written.
bool HoldsNothingOfAnyones(const std::string& dir) {
  absl::StatusOr<std::vector<DirectoryEntry>> entries = common::ListDirectory(dir);
  if (!entries.ok()) return false;
  for (const DirectoryEntry& e : *entries) {
    std::string_view base;
    if (!S_ISREG(e.mode) || !common::IsPartialName(e.name, &base) || base != kStagingMarker) {
      return false;
    }
  }
  return true;
}

// True when `fd` (an open directory) is what `path` names now.
bool IsDirectoryAt(int fd, const std::string& path) {
  absl::StatusOr<common::FileStatus> by_fd = common::Fstat(fd, path);
  absl::StatusOr<common::FileStatus> by_path = common::Lstat(path);
  return by_fd.ok() && by_path.ok() && by_fd->SameFile(*by_path);
}

// An OUT.partial that exists already: ours and abandoned (cleared and
// taken), in use, or not ours (refused, untouched).
absl::StatusOr<Fd> TakeExistingStaging(const std::string& staging, const std::string& out,
                                       const PackIdentity* identity) {
  SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Lstat(staging));
  if (!st.IsDirectory()) {
    return absl::FailedPreconditionError(absl::StrCat(
        staging, " exists and is not a directory shardpack made: nothing was deleted; move it "
                 "away to pack into ", out));
  }
  Fd fd;
  SP_ASSIGN_OR_RETURN(LockResult lock, TryLockDir(staging, &fd));
  if (lock == LockResult::kBusy) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, " is in use: another shardpack is writing it (", staging, " is locked)"));
  }
  if (lock == LockResult::kUnsupported) {
    return absl::FailedPreconditionError(absl::StrCat(
        staging, " exists, and this file system has no locks to tell whether a pack is still "
                 "writing it: remove it if none is"));
  }
  absl::StatusOr<common::FileStatus> marker = common::Lstat(Join(staging, kStagingMarker));
  const bool marked = marker.ok() && marker->IsRegularFile();
  if (!marked && !HoldsNothingOfAnyones(staging)) {
    return absl::FailedPreconditionError(absl::StrCat(
        staging, " exists and was not made by shardpack (no ", kStagingMarker,
        " in it): nothing was deleted; move it away or remove it to pack into ", out));
  }
  // Ours, and the pack that made it is gone (killed, before its marker was
  // written when there is none): its lock is free.
  SP_RETURN_IF_ERROR(ClearDirectory(fd.get(), staging));
  SP_RETURN_IF_ERROR(WriteMarker(staging, identity));
  return fd;
}

// Creates and locks the staging directory, or takes over an abandoned one.
absl::StatusOr<Fd> TakeStaging(const std::string& staging, const std::string& out,
                               const PackIdentity* identity) {
  std::error_code ec;
  const fs::path parent = fs::path(staging).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) return common::ErrnoError("create", parent.string(), ec.value());
  if (absl::Status made = common::MakeDirectory(staging); !made.ok()) {
    if (absl::IsAlreadyExists(made)) return TakeExistingStaging(staging, out, identity);
    return made;
  }
  // Another pack that finds the new directory before its marker takes it
  // as abandoned (TakeExistingStaging): then it holds the lock, or has
  // written its marker, and the directory is no longer this pack's, which
  // leaves it alone. The marker is written only under the lock, so a marker
  // seen under a free lock always belongs to a pack that is gone.
  Fd fd;
  SP_ASSIGN_OR_RETURN(LockResult lock, TryLockDir(staging, &fd));
  if (lock == LockResult::kBusy || !IsDirectoryAt(fd.get(), staging) ||
      common::PathExists(Join(staging, kStagingMarker))) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, " is in use: another shardpack is writing it (it took ", staging, ")"));
  }
  absl::Status status = WriteMarker(staging, identity);
  if (!status.ok()) {
    (void)RemoveOurDirectory(fd.get(), staging);  // ours, locked: its marker at most
    return status;
  }
  return fd;
}

// Removes the files of an old dataset that CheckExistingOutput verified,
// then its folder, which fails if anything else appeared there since.
absl::Status RemoveOldDataset(const std::string& old, const std::string& path,
                              const std::vector<std::string>& files) {
  // The marker last (Publish listed it): until then, a kill leaves a
  // folder marked as ours.
  std::vector<std::string> marker_last = files;
  std::stable_partition(marker_last.begin(), marker_last.end(),
                        [](const std::string& name) { return name != kStagingMarker; });
  for (const std::string& name : marker_last) {
    absl::Status removed = common::RemoveFile(Join(old, name));
    if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  }
  absl::Status removed = common::RemoveDirectory(old);
  if (absl::IsFailedPrecondition(removed)) {  // not empty
    return absl::FailedPreconditionError(absl::StrCat(
        path, " was replaced, but its old folder, moved to ", old,
        ", holds files that shardpack did not write: left there for you"));
  }
  return removed;
}

}  // namespace

absl::Status CheckOurDataset(const std::string& dir) {
  std::vector<std::string> files;
  const std::string why = NotOursReason(dir, &files);
  if (why.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(dir, " ", why));
}

absl::StatusOr<std::unique_ptr<OutputDir>> OutputDir::Create(std::string path, bool overwrite,
                                                             const PackIdentity* identity) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return absl::InvalidArgumentError("the output path is empty");
  SP_RETURN_IF_ERROR(CheckExistingOutput(path, overwrite, identity));
  std::string staging = path + ".partial";
  SP_ASSIGN_OR_RETURN(Fd lock, TakeStaging(staging, path, identity));
  return std::unique_ptr<OutputDir>(
      new OutputDir(std::move(path), std::move(staging), std::move(lock)));
}

OutputDir::~OutputDir() {
  if (!published_) (void)RemoveOurDirectory(lock_.get(), staging_);
}

absl::Status OutputDir::Publish(const Manifest& manifest) {
  // Checked again: the old output may have changed while the pack ran.
  std::vector<std::string> old_files;
  Fd old_lock;
  const bool replace = common::Lstat(path_).ok();
  if (replace) {
    const std::string why = NotOursReason(path_, &old_files);
    if (!why.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path_, " ", why, " (it changed during the pack); ", kOverwriteRule,
          ": left as it is, and the new dataset was not published"));
    }
    SP_ASSIGN_OR_RETURN(LockResult lock, TryLockDir(path_, &old_lock));
    if (lock == LockResult::kBusy) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, " is in use: another shardpack is writing it"));
    }
  }
  if (replace) {
    // Marked as ours before it moves: a pack killed while removing it leaves
    // a folder (at the staging name) that the next pack clears.
    SP_RETURN_IF_ERROR(WriteMarker(path_, nullptr));
    if (std::find(old_files.begin(), old_files.end(), kStagingMarker) == old_files.end()) {
      old_files.push_back(kStagingMarker);
    }
  }
  SP_ASSIGN_OR_RETURN(std::string old, MoveIntoPlace(replace));
  // The rename made durable before the manifest says the dataset is whole,
  // and the marker's removal after it. A failure on the way (a disk that
  // fills as the manifest is written) puts everything back as it was.
  absl::Status status = common::SyncParentDirectory(path_);
  if (status.ok()) status = WriteManifest(path_, manifest);
  if (status.ok()) status = common::RemoveFile(Join(path_, kStagingMarker));
  if (status.ok()) status = common::SyncDirectory(path_);
  if (!status.ok()) {
    absl::Status back = MoveBack(old);
    // Where moving back failed, nothing is removed: the folders may be
    // anywhere, and the message says what is where.
    published_ = !back.ok();
    if (!back.ok()) {
      return common::WithMessage(status,
                                 absl::StrCat(status.message(), "; then ", back.message()));
    }
    return status;
  }
  published_ = true;
  if (!old.empty()) status = RemoveOldDataset(old, path_, old_files);
  return status;
}

absl::Status OutputDir::MoveBack(const std::string& old) {
  using common::RenameMode;
  if (old == staging_) {  // swapped: swap again
    if (absl::Status back = common::RenamePath(path_, staging_, RenameMode::kExchange);
        !back.ok()) {
      return absl::InternalError(absl::StrCat("swapping ", path_, " back with ", staging_,
                                              " failed (", back.message(),
                                              "): the new dataset is at ", path_,
                                              " without a manifest, the old one at ", staging_));
    }
    (void)common::RemoveFile(Join(path_, kStagingMarker));  // the old one is whole again
    return common::SyncParentDirectory(path_);
  }
  if (absl::Status back = common::RenamePath(path_, staging_); !back.ok()) {
    return absl::InternalError(
        absl::StrCat("moving ", path_, " back to ", staging_, " failed (", back.message(), ")"));
  }
  if (!old.empty()) {
    if (absl::Status back = common::RenamePath(old, path_); !back.ok()) {
      return absl::InternalError(absl::StrCat("moving the old dataset back from ", old, " to ",
                                              path_, " failed (", back.message(), ")"));
    }
    (void)common::RemoveFile(Join(path_, kStagingMarker));
  }
  return common::SyncParentDirectory(path_);
}

absl::StatusOr<std::string> OutputDir::MoveIntoPlace(bool replace) {
  using common::RenameMode;
  if (!replace) {
    // NOREPLACE: a directory that appeared at path_ meanwhile is left alone.
    absl::Status moved = common::RenamePath(staging_, path_, RenameMode::kNoReplace);
    if (absl::IsUnimplemented(moved)) moved = common::RenamePath(staging_, path_);
    SP_RETURN_IF_ERROR(moved);
    return std::string();
  }
  absl::Status swapped = common::RenamePath(staging_, path_, RenameMode::kExchange);
  if (swapped.ok()) return staging_;  // the swap put the old dataset where the staging was
  if (!absl::IsUnimplemented(swapped)) return swapped;
  // No atomic swap on this file system: move the old one aside first.
  std::string old = absl::StrCat(path_, ".old-", ::getpid());
  if (common::PathExists(old)) {
    return absl::AlreadyExistsError(absl::StrCat(old, " exists: move it away"));
  }
  SP_RETURN_IF_ERROR(common::RenamePath(path_, old));
  if (absl::Status moved = common::RenamePath(staging_, path_); !moved.ok()) {
    (void)common::RenamePath(old, path_);
    return moved;
  }
  return old;
}

}  // namespace shardpack::writer
