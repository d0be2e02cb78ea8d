#include "remote/block_cache.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
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
// A partial file untouched this long, and not held, is a dead writer's: a
// live one writes a block in milliseconds and holds a whole object's.
constexpr auto kStalePartial = std::chrono::seconds(60);

// What a file found under the cache's root is.
enum class Kind { kEntry, kPartial, kOther, kLink, kNotFile };

Kind KindOf(const fs::directory_entry& e) {
  std::error_code ec;
  const fs::file_status st = e.symlink_status(ec);
  if (ec) return Kind::kNotFile;
  if (fs::is_symlink(st)) return Kind::kLink;
  if (!fs::is_regular_file(st)) return Kind::kNotFile;
  const std::string name = e.path().filename().string();
  std::string_view base;
  if (common::IsPartialName(name, &base)) {
    return base.ends_with(kSuffix) ? Kind::kPartial : Kind::kOther;
  }
  return name.ends_with(kSuffix) ? Kind::kEntry : Kind::kOther;
}

// A real folder at `dir` (made if missing): a link there is removed, never
// followed, and a real one made in its place.
absl::Status RealFolder(const std::string& dir, const std::string& cache_dir) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(dir, ec))) fs::remove(dir, ec);
  fs::create_directory(dir, ec);
  if (!ec && fs::is_directory(fs::symlink_status(dir, ec))) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "cache_dir ", cache_dir, ": cannot make ", dir, ": ",
      ec ? ec.message() : "something other than a folder is there"));
}

// Opens `path` (a regular file, never through a link) and holds it: true
// with the hold when it is still the file at `path` once held.
absl::StatusOr<common::UniqueFd> OpenHeld(const std::string& path, uint64_t* size) {
  SP_ASSIGN_OR_RETURN(int raw, common::OpenRegularFile(path, O_NOFOLLOW, size));
  common::UniqueFd fd(raw);
  SP_ASSIGN_OR_RETURN(common::LockResult held, common::LockShared(fd.get(), path));
  (void)held;  // kUnsupported (no flock here): used unheld, as before
  // An evictor holds it exclusively to unlink it: once we hold it, it is
  // either still at `path` or gone.
  if (!common::NamesOpenFile(path, fd.get())) {
    return absl::NotFoundError(absl::StrCat(path, ": removed while opened"));
  }
  return fd;
}

// Removes the file at `path` unless someone holds it: true when removed.
bool RemoveUnheld(const fs::path& path) {
  uint64_t size = 0;
  auto raw = common::OpenRegularFile(path.string(), O_NOFOLLOW, &size);
  if (!raw.ok()) return false;
  common::UniqueFd fd(*raw);
  auto locked = common::TryLockExclusive(fd.get(), path.string());
  if (!locked.ok() || *locked == common::LockResult::kBusy) return false;
  std::error_code ec;
  return fs::remove(path, ec);  // while still locked: no one holds it meanwhile
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
  fs::create_directories(options.dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache_dir ", options.dir, ": cannot make ", dir, ": ", ec.message()));
  }
  SP_RETURN_IF_ERROR(RealFolder(root, options.dir));
  SP_RETURN_IF_ERROR(RealFolder(dir, options.dir));
  std::unique_ptr<BlockCache> cache(new BlockCache(options, std::move(root), std::move(dir)));
  cache->budget_ = BudgetOf(cache->root_);
  std::lock_guard<std::mutex> lock(cache->budget_->mu);
  cache->budget_->used = cache->ScanUsage() + cache->budget_->reserved;
  cache->budget_->open.push_back(cache->space_dir_);
  return cache;
}

BlockCache::~BlockCache() {
  if (budget_ == nullptr) return;
  std::lock_guard<std::mutex> lock(budget_->mu);
  std::vector<std::string>& open = budget_->open;
  open.erase(std::find(open.begin(), open.end(), space_dir_));
}

std::string BlockCache::PathOf(std::string_view entry) const {
  return absl::StrCat(space_dir_, "/", common::AsAbsl(entry), common::AsAbsl(kSuffix));
}

bool BlockCache::Read(std::string_view entry, std::span<uint8_t> dst) {
  if (!enabled()) return false;
  const std::string path = PathOf(entry);
  uint64_t size = 0;
  auto raw = common::OpenRegularFile(path, O_NOFOLLOW, &size);
  if (raw.ok()) {
    common::UniqueFd fd(*raw);
    if (size == dst.size() && common::PreadFull(fd.get(), path, 0, dst).ok()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    Drop(entry);  // another size, or unreadable
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

absl::StatusOr<BlockCache::Held> BlockCache::Hold(std::string_view entry) {
  if (!enabled()) return absl::NotFoundError("no cache");
  Held held;
  SP_ASSIGN_OR_RETURN(held.fd, OpenHeld(PathOf(entry), &held.size));
  hits_.fetch_add(1, std::memory_order_relaxed);
  return held;
}

absl::StatusOr<BlockCache::Writing> BlockCache::BeginWhole(std::string_view entry) {
  Writing w;
  w.partial = common::FreshPartialName(PathOf(entry));
  SP_ASSIGN_OR_RETURN(w.file.fd, common::CreateNewFile(w.partial));
  SP_ASSIGN_OR_RETURN(common::LockResult held, common::LockShared(w.file.fd.get(), w.partial));
  (void)held;
  misses_.fetch_add(1, std::memory_order_relaxed);
  return w;
}

absl::StatusOr<BlockCache::Held> BlockCache::EndWhole(std::string_view entry, Writing w,
                                                      bool keep) {
  absl::Status s = keep ? common::RenamePath(w.partial, PathOf(entry))
                        : absl::CancelledError("not kept");
  if (!s.ok()) {
    std::error_code ec;
    fs::remove(w.partial, ec);
  }
  Settle(w.reserved, s.ok());
  if (!s.ok()) return s;
  return std::move(w.file);
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
    const Kind kind = KindOf(*it);
    if (kind != Kind::kLink && kind != Kind::kNotFile) total += it->file_size(ec);
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
  // Full of this dataset's own entries at the last look: what does not fit
  // streams, and the cache is looked at again (a scan) only after a tenth
  // of the budget was refused, not for every block.
  if (!force && full_of_own_ && refused_since_look_ < options_.bytes / 10) {
    refused_since_look_ += incoming;
    return false;
  }
  // Over budget by this process's count: look at the cache as it is (other
  // processes add to it too), under the lock every process takes to evict.
  auto dir = common::OpenDirectory(root_);
  absl::StatusOr<common::LockResult> locked =
      dir.ok() ? common::TryLockExclusive(dir->get(), root_) : dir.status();
  if (!locked.ok() || *locked == common::LockResult::kBusy) return force && take();
  b.used = Evict(incoming, /*spare_own=*/!force);
  full_of_own_ = !force && b.used + incoming > options_.bytes;
  refused_since_look_ = 0;
  if (full_of_own_) return false;
  return take();
}

uint64_t BlockCache::Evict(uint64_t incoming, bool spare_own) {
  struct Found {
    fs::file_time_type time;
    uint64_t size;
    fs::path path;
    bool own;  // a dataset's open in this process
  };
  std::vector<Found> entries;
  uint64_t total = budget_->reserved;  // entries being written are not on disk yet
  const auto stale_before = fs::file_time_type::clock::now() - kStalePartial;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    const Kind kind = KindOf(*it);
    std::error_code e2;
    if (kind == Kind::kLink) {
      fs::remove(it->path(), e2);  // the link itself, never its target
      continue;
    }
    if (kind == Kind::kNotFile) continue;
    Found f{it->last_write_time(e2), it->file_size(e2), it->path(), false};
    if (e2) continue;
    if (kind == Kind::kPartial && f.time < stale_before && RemoveUnheld(f.path)) continue;
    total += f.size;
    if (kind != Kind::kEntry) continue;
    const std::vector<std::string>& open = budget_->open;
    f.own = spare_own &&
            std::find(open.begin(), open.end(), f.path.parent_path().string()) != open.end();
    entries.push_back(std::move(f));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Found& x, const Found& y) { return x.time < y.time; });
  const uint64_t target = options_.bytes / 10 * 9;
  for (const Found& f : entries) {
    // Others' entries make room for the incoming one; those of the datasets
    // open here go only while the cache is over its budget without it (a
    // budget lowered).
    const bool needed = f.own ? total > options_.bytes : total + incoming > target;
    if (!needed) continue;
    if (RemoveUnheld(f.path)) {  // one in use is passed over
      total -= f.size;
      evicted_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return total;
}

CacheStats BlockCache::stats() const {
  return {hits_.load(), misses_.load(), kept_.load(), dropped_.load(), evicted_.load()};
}

}  // namespace shardpack::remote
