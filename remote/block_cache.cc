#include "remote/block_cache.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/size.h"
#include "common/status_macros.h"

namespace shardpack::remote {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSuffix = ".spc";
constexpr uint64_t kDefaultBytes = uint64_t{16} << 30;

bool IsEntry(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_regular_file(ec) && e.path().extension() == kSuffix;
}

}  // namespace

absl::StatusOr<CacheOptions> CacheOptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  CacheOptions o;
  if (const char* dir = getenv("SHARDPACK_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    o.dir = dir;
  } else if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    o.dir = absl::StrCat(xdg, "/shardpack");
  } else if (const char* home = getenv("HOME"); home != nullptr && *home != '\0') {
    o.dir = absl::StrCat(home, "/.cache/shardpack");
  }
  o.bytes = kDefaultBytes;
  if (const char* bytes = getenv("SHARDPACK_CACHE_BYTES"); bytes != nullptr) {
    const absl::string_view text = absl::StripAsciiWhitespace(bytes);
    absl::StatusOr<uint64_t> size = common::ParseSize({text.data(), text.size()});
    if (!size.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SHARDPACK_CACHE_BYTES: ", size.status().message(),
          " (bytes, or a number with KiB, MiB, GiB, K, M, G, kB, MB or GB)"));
    }
    o.bytes = *size;
  }
  return o;
}

BlockCache::BlockCache(CacheOptions options, std::string root, std::string space_dir)
    : options_(std::move(options)), root_(std::move(root)), space_dir_(std::move(space_dir)) {}

absl::StatusOr<std::unique_ptr<BlockCache>> BlockCache::Open(const CacheOptions& options,
                                                             std::string_view space) {
  if (options.dir.empty() || options.bytes == 0) {
    return std::unique_ptr<BlockCache>(new BlockCache(options, "", ""));
  }
  std::string root = absl::StrCat(options.dir, "/shardpack-cache");
  std::string dir = absl::StrCat(root, "/", common::AsAbsl(space));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache_dir ", options.dir, ": cannot make ", dir, ": ", ec.message()));
  }
  std::unique_ptr<BlockCache> cache(new BlockCache(options, std::move(root), std::move(dir)));
  cache->budget_ = BudgetOf(cache->root_);
  std::lock_guard<std::mutex> lock(cache->budget_->mu);
  cache->budget_->used = cache->ScanUsage() + cache->budget_->reserved;
  return cache;
}

std::string BlockCache::PathOf(std::string_view entry) const {
  return absl::StrCat(space_dir_, "/", common::AsAbsl(entry), common::AsAbsl(kSuffix));
}

bool BlockCache::Read(std::string_view entry, std::span<uint8_t> dst) {
  if (!enabled()) return false;
  const std::string path = PathOf(entry);
  auto file = common::PosixFile::Open(path);
  if (file.ok() && (*file)->size() == dst.size() && (*file)->ReadExact(0, dst).ok()) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (file.ok()) Drop(entry);  // another size, or unreadable
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool BlockCache::Contains(std::string_view entry, uint64_t size) {
  if (!enabled()) return false;
  uint64_t bytes = 0;
  return common::CheckRegularFile(PathOf(entry), &bytes).ok() && bytes == size;
}

void BlockCache::Drop(std::string_view entry) {
  std::error_code ec;
  if (fs::remove(PathOf(entry), ec)) dropped_.fetch_add(1, std::memory_order_relaxed);
}

bool BlockCache::Put(std::string_view entry, std::span<const uint8_t> bytes, size_t capacity) {
  if (!enabled() || !MakeRoom(bytes.size(), /*force=*/false)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const std::string path = PathOf(entry);
  const std::string partial = common::FreshPartialName(path);
  // Not fsynced: a cache entry torn by a crash fails its CRC when read and
  // is fetched again.
  absl::Status s = capacity > 0 ? common::WriteWholeFileDirect(partial, bytes, capacity)
                                : absl::UnavailableError("");
  if (absl::IsUnavailable(s)) s = common::WriteWholeFile(partial, bytes);
  if (s.ok()) s = common::RenamePath(partial, path);
  if (!s.ok()) {
    std::error_code ec;
    fs::remove(partial, ec);
  }
  Settle(bytes.size(), s.ok());
  return s.ok();
}

void BlockCache::Settle(uint64_t reserved, bool kept) {
  {
    std::lock_guard<std::mutex> lock(budget_->mu);
    budget_->reserved -= std::min(budget_->reserved, reserved);
    if (!kept) budget_->used -= std::min(budget_->used, reserved);
  }
  (kept ? kept_ : dropped_).fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<BlockCache::Budget> BlockCache::BudgetOf(const std::string& root) {
  static std::mutex mu;
  static auto* budgets = new std::map<std::string, std::weak_ptr<Budget>>;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Budget> budget = (*budgets)[root].lock();
  if (budget == nullptr) {
    budget = std::make_shared<Budget>();
    (*budgets)[root] = budget;
  }
  return budget;
}

uint64_t BlockCache::ScanUsage() const {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    if (IsEntry(*it)) total += it->file_size(ec);
  }
  return total;
}

bool BlockCache::MakeRoom(uint64_t incoming, bool force) {
  Budget& b = *budget_;
  std::lock_guard<std::mutex> lock(b.mu);
  if (!force && incoming > options_.bytes) return false;
  auto take = [&] {
    b.used += incoming;
    b.reserved += incoming;
    return true;
  };
  if (b.used + incoming <= options_.bytes) return take();
  // Over budget by this process's count: look at the cache as it is (other
  // processes add to it too), under the lock every process takes to evict.
  auto dir = common::OpenDirectory(root_);
  absl::StatusOr<common::LockResult> locked =
      dir.ok() ? common::TryLockExclusive(dir->get(), root_) : dir.status();
  if (!locked.ok() || *locked == common::LockResult::kBusy) return force && take();
  struct Found {
    fs::file_time_type time;
    uint64_t size;
    fs::path path;
  };
  std::vector<Found> entries;
  uint64_t total = b.reserved;  // entries being written are not on disk yet
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!IsEntry(*it)) continue;
    std::error_code e2;
    Found f{it->last_write_time(e2), it->file_size(e2), it->path()};
    if (!e2) {
      total += f.size;
      entries.push_back(std::move(f));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const Found& x, const Found& y) { return x.time < y.time; });
  const uint64_t target = options_.bytes / 10 * 9;
  for (const Found& f : entries) {
    if (total + incoming <= target) break;
    if (fs::remove(f.path, ec)) {
      total -= f.size;
      evicted_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  b.used = total;
  if (!force && total + incoming > options_.bytes) return false;
  return take();
}

CacheStats BlockCache::stats() const {
  return {hits_.load(), misses_.load(), kept_.load(), dropped_.load(), evicted_.load()};
}

}  // namespace shardpack::remote
