#include "tools/pack/output_dir.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "shardpack/status.h"

namespace shardpack::pack {

namespace fs = std::filesystem;

namespace {
absl::Status FsError(std::string_view what, const fs::path& path, const std::error_code& ec) {
  return ErrnoError(what, path.string(), ec.value());
}
}  // namespace

absl::StatusOr<std::unique_ptr<OutputDir>> OutputDir::Create(std::string path, bool overwrite) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::error_code ec;
  if (fs::exists(path, ec) && !overwrite) {
    bool dataset = fs::exists(fs::path(path) / kManifestFileName, ec);
    return absl::AlreadyExistsError(absl::StrCat(
        path, " already exists", dataset ? "" : " (without a manifest: an interrupted pack?)",
        "; use --overwrite to replace it"));
  }
  std::string staging = path + ".partial";
  fs::remove_all(staging, ec);
  if (ec) return FsError("remove", staging, ec);
  fs::create_directories(staging, ec);
  if (ec) return FsError("create", staging, ec);
  return std::unique_ptr<OutputDir>(new OutputDir(std::move(path), std::move(staging)));
}

OutputDir::~OutputDir() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

absl::Status OutputDir::Publish(const Manifest& manifest) {
  std::error_code ec;
  std::string old;
  if (fs::exists(path_, ec)) {
    old = absl::StrCat(path_, ".old-", getpid());
    fs::rename(path_, old, ec);
    if (ec) return FsError("move aside", path_, ec);
  }
  fs::rename(staging_, path_, ec);
  if (ec) return FsError("rename", staging_, ec);
  published_ = true;
  SP_RETURN_IF_ERROR(WriteManifest(path_, manifest));
  if (!old.empty()) fs::remove_all(old, ec);
  return absl::OkStatus();
}

}  // namespace shardpack::pack
