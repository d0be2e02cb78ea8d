#include "remote/storage.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "remote/object_store.h"
#include "remote/url.h"

namespace shardpack::remote {

absl::StatusOr<std::shared_ptr<Storage>> Storage::Make(const std::string& dir, int64_t bytes) {
  // Only the folder's spelling is checked now; the environment, when a URL
  // is opened.
  SP_RETURN_IF_ERROR(CacheOptionsWith(dir, bytes, /*remote_path=*/false).status());
  return std::shared_ptr<Storage>(new Storage(dir, bytes));
}

std::shared_ptr<Storage> Storage::WithCache(const CacheOptions& cache) {
  std::shared_ptr<Storage> s(new Storage(cache.dir, -1));
  s->cache_ = cache;
  return s;
}

absl::StatusOr<CacheOptions> Storage::cache_options() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cache_.has_value()) {
    SP_ASSIGN_OR_RETURN(cache_, CacheOptionsWith(dir_, bytes_, /*remote_path=*/true));
  }
  return *cache_;
}

absl::StatusOr<std::shared_ptr<RemoteDataset>> Storage::OpenRemoteDataset(std::string_view url) {
  const std::string prefix = PrefixOf(url);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& d : datasets_) {
      if (d->url() == prefix) return d;
    }
  }
  SP_ASSIGN_OR_RETURN(const CacheOptions cache, cache_options());
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store, OpenObjectStore(prefix, FetchOptions{}));
  SP_ASSIGN_OR_RETURN(std::shared_ptr<RemoteDataset> d,
                      RemoteDataset::Open(prefix, cache, std::move(store)));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& other : datasets_) {
    if (other->url() == prefix) return other;  // another thread was first
  }
  datasets_.push_back(d);
  return d;
}

absl::StatusOr<std::pair<std::shared_ptr<RemoteDataset>, std::string>> Storage::Find(
    std::string_view path) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<RemoteDataset> best;
  for (const auto& d : datasets_) {
    if (path.starts_with(d->url()) && (!best || d->url().size() > best->url().size())) best = d;
  }
  if (!best) {
    return absl::NotFoundError(
        absl::StrCat(common::AsAbsl(path), ": no dataset is open at this URL"));
  }
  std::string name(path.substr(best->url().size()));
  return std::make_pair(std::move(best), std::move(name));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> Storage::OpenFile(const std::string& path,
                                                                    bool mmap) {
  if (!IsUrl(path)) return mmap ? OpenMappedFile(path) : OpenPosixFile(path);
  SP_ASSIGN_OR_RETURN(auto found, Find(path));
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RemoteFile> file, found.first->OpenFile(found.second));
  return std::unique_ptr<RandomAccessFile>(std::move(file));
}

absl::StatusOr<std::vector<std::unique_ptr<RandomAccessFile>>> Storage::OpenFiles(
    std::span<const std::string> paths) {
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  // Runs of URLs of one dataset (a mixture's sources follow one another).
  for (size_t begin = 0; begin < paths.size();) {
    if (!IsUrl(paths[begin])) {
      SP_ASSIGN_OR_RETURN(files.emplace_back(), OpenFile(paths[begin]));
      ++begin;
      continue;
    }
    SP_ASSIGN_OR_RETURN(auto first, Find(paths[begin]));
    std::vector<std::string> names = {std::move(first.second)};
    size_t end = begin + 1;
    for (; end < paths.size() && IsUrl(paths[end]); ++end) {
      auto next = Find(paths[end]);
      if (!next.ok() || next->first != first.first) break;
      names.push_back(std::move(next->second));
    }
    std::vector<std::string_view> views(names.begin(), names.end());
    SP_ASSIGN_OR_RETURN(auto opened, first.first->OpenFiles(views));
    for (auto& f : opened) files.push_back(std::move(f));
    begin = end;
  }
  return files;
}

absl::StatusOr<std::string> Storage::LocalPath(const std::string& path) {
  if (!IsUrl(path)) return path;
  SP_ASSIGN_OR_RETURN(auto found, Find(path));
  return found.first->LocalCopy(found.second);
}

std::vector<std::shared_ptr<RemoteDataset>> Storage::datasets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return datasets_;
}

}  // namespace shardpack::remote
