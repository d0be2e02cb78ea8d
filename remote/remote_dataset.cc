#include "remote/remote_dataset.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/redact.h"
#include "common/status_macros.h"
#include "shardpack/crc32c.h"

namespace shardpack::remote {
namespace {

constexpr std::string_view kManifestName = "manifest.json";
// Whole objects come in ranges of this size, several in flight.
constexpr uint64_t kWholeChunkBytes = uint64_t{8} << 20;

// The cache space of a dataset at a URL: one per (URL, fingerprint).
std::string SpaceOf(std::string_view url, const Manifest& manifest) {
  const uint32_t url_hash =
      Crc32c({reinterpret_cast<const uint8_t*>(url.data()), url.size()});
  return absl::StrFormat("%08x-%s", url_hash, FormatFingerprint(ManifestFingerprint(manifest)));
}

}  // namespace

absl::StatusOr<std::shared_ptr<RemoteDataset>> RemoteDataset::Open(
    std::string_view url, const CacheOptions& cache, std::unique_ptr<ObjectStore> store) {
  // At most kMaxManifestBytes are fetched, the bound ParseManifest holds
  // a local manifest to.
  SP_ASSIGN_OR_RETURN(std::string text, store->Get(kManifestName, kMaxManifestBytes));
  const std::string manifest_url = store->UrlOf(kManifestName);
  SP_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_url));
  std::shared_ptr<RemoteDataset> d(new RemoteDataset(std::move(store), std::move(manifest)));
  SP_ASSIGN_OR_RETURN(d->cache_, BlockCache::Open(cache, SpaceOf(url, d->manifest_)));
  return d;
}

absl::StatusOr<std::pair<const ShardEntry*, size_t>> RemoteDataset::EntryOf(
    std::string_view name) const {
  for (size_t k = 0; k < manifest_.shards.size(); ++k) {
    if (manifest_.shards[k].path == name) return std::make_pair(&manifest_.shards[k], k);
  }
  return absl::NotFoundError(absl::StrCat(store_->UrlOf(name),
                                          ": not an object the dataset's manifest lists"));
}

absl::StatusOr<std::string> RemoteDataset::LocalCopy(std::string_view name) {
  ShardEntry entry;
  std::string key;
  if (manifest_.record_table && manifest_.record_table->path == name) {
    entry = {manifest_.record_table->path, 0, manifest_.record_table->bytes,
             manifest_.record_table->crc32c};
    key = "records";
  } else {
    SP_ASSIGN_OR_RETURN(auto found, EntryOf(name));
    entry = *found.first;
    key = absl::StrCat(found.second, "-file");
  }
  if (!cache_->enabled()) {
    return absl::FailedPreconditionError(absl::StrCat(
        store_->UrlOf(name), ": this object is read whole from a local copy, and no cache is "
        "set (cache_dir, cache_bytes; SHARDPACK_CACHE_DIR, SHARDPACK_CACHE_BYTES)"));
  }
  const std::string path = cache_->PathOf(key);
  // One fetch of an object at a time in this process; the copy handed out
  // is held (never evicted) until the dataset closes.
  std::lock_guard<std::mutex> lock(held_mu_);
  auto it = held_.find(key);
  if (it != held_.end() && common::NamesOpenFile(path, it->second.get())) return path;
  if (it != held_.end()) held_.erase(it);  // removed by hand: fetched again
  // A copy found in the cache is used only once it is checked against the
  // manifest (a damaged or another dataset's copy is dropped, fetched again).
  if (absl::StatusOr<BlockCache::Held> held = cache_->Hold(key); held.ok()) {
    if (CheckWhole(held->fd.get(), path, entry, held->size).ok()) {
      held_[key] = std::move(held->fd);
      return path;
    }
    cache_->Drop(key);
  }
  SP_ASSIGN_OR_RETURN(BlockCache::Writing w, cache_->BeginWhole(key));
  absl::Status fetched = FetchWhole(name, entry, w);
  absl::StatusOr<BlockCache::Held> held = cache_->EndWhole(key, std::move(w), fetched.ok());
  SP_RETURN_IF_ERROR(fetched);
  SP_RETURN_IF_ERROR(held.status());
  held_[key] = std::move(held->fd);
  return path;
}

absl::Status RemoteDataset::CheckWhole(int fd, const std::string& path, const ShardEntry& entry,
                                       uint64_t size) const {
  if (size != entry.bytes) return absl::DataLossError(absl::StrCat(path, ": another size"));
  std::vector<uint8_t> chunk(std::min(kWholeChunkBytes, entry.bytes));
  uint32_t crc = 0;
  for (uint64_t at = 0; at < entry.bytes; at += chunk.size()) {
    chunk.resize(std::min(kWholeChunkBytes, entry.bytes - at));
    SP_RETURN_IF_ERROR(common::PreadFull(fd, path, at, chunk));
    crc = Crc32cExtend(crc, chunk.data(), chunk.size());
  }
  if (crc != entry.crc32c) return absl::DataLossError(absl::StrCat(path, ": another CRC-32C"));
  return absl::OkStatus();
}

absl::Status RemoteDataset::FetchWhole(std::string_view name, const ShardEntry& entry,
                                       BlockCache::Writing& w) {
  std::vector<uint8_t> chunk;
  uint32_t crc = 0;
  for (uint64_t at = 0; at < entry.bytes; at += chunk.size()) {
    chunk.resize(std::min(kWholeChunkBytes * 4, entry.bytes - at));
    // Room as the bytes come: a size the object does not have (a damaged
    // manifest) evicts no more than what was fetched before it failed.
    cache_->Reserve(w, chunk.size());
    std::vector<RangeRequest> parts;
    for (uint64_t p = 0; p < chunk.size(); p += kWholeChunkBytes) {
      const uint64_t n = std::min(kWholeChunkBytes, chunk.size() - p);
      parts.push_back({name, at + p, {chunk.data() + p, n}, {}});
    }
    store_->Fetch(parts);
    for (const RangeRequest& r : parts) SP_RETURN_IF_ERROR(r.status);
    crc = Crc32cExtend(crc, chunk.data(), chunk.size());
    SP_RETURN_IF_ERROR(common::WriteFull(w.file.fd.get(), w.partial, chunk));
  }
  if (crc != entry.crc32c) {
    CountDamage();
    return absl::DataLossError(absl::StrFormat(
        "%s: CRC-32C of the fetched object is %08x, the manifest says %08x",
        store_->UrlOf(name), crc, entry.crc32c));
  }
  return absl::OkStatus();
}

RemoteStats RemoteDataset::stats() const {
  return {store_->stats(), cache_->stats(), refetched_.load(), damaged_.load()};
}

// The dataset's prefix: `url` without a final "manifest.json", ending in '/'.
std::string PrefixOf(std::string_view url) {
  if (url.ends_with("/" + std::string(kManifestName))) url.remove_suffix(kManifestName.size());
  std::string prefix(url);
  if (!prefix.ends_with('/')) prefix += '/';
  return prefix;
}

absl::StatusOr<CacheOptions> CacheOptionsWith(const std::string& dir, int64_t bytes,
                                              bool remote_path) {
  CacheOptions cache;
  if (remote_path) {
    SP_ASSIGN_OR_RETURN(cache, CacheOptionsFromEnvironment(
                                   [](const char* name) { return std::getenv(name); }));
  }
  if (!dir.empty()) cache.dir = dir;
  if (bytes >= 0) cache.bytes = static_cast<uint64_t>(bytes);
  if (common::LooksLikeUrl(cache.dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache_dir ", common::RedactUrl(cache.dir),
                     ": the cache is a local folder (a disk or tmpfs), not a URL"));
  }
  return cache;
}

}  // namespace shardpack::remote
