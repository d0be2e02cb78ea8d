#include "common/mapping_guard.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shardpack::common {
namespace {

// The registry is plain atomics so that the signal handler, which may run on
// any thread at any moment, reads it without a lock.
struct Slot {
  std::atomic<uint32_t> used{0};
  std::atomic<uint32_t> damaged{0};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};  // rounded up to a page
};

Slot g_slots[kMaxGuardedMappings];
std::atomic<uint64_t> g_faults{0};
uintptr_t g_page = 4096;
struct sigaction g_previous;
struct sigaction g_previous_segv;
std::once_flag g_install_once;
std::once_flag g_install_segv_once;
// Where the thread's MappingGuard::Call leaves a faulting library walk; null
// outside one. Set (so allocated, for a module's dynamic TLS) before the
// walk, so the handlers only read it.
thread_local sigjmp_buf* t_escape = nullptr;

// Passes a signal that is not ours to whoever handled it before us. With the
// default action, resetting it and returning re-runs the faulting access,
// which then kills the process exactly as it would have without us.
void Forward(const struct sigaction& previous, int sig, siginfo_t* info, void* context) {
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(sig, info, context);
    return;
  }
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
    signal(sig, SIG_DFL);
    return;
  }
  previous.sa_handler(sig);
}

// Async-signal-safe: atomics and mmap only.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_acquire) == 0) continue;
    const uintptr_t begin = s.begin.load(std::memory_order_relaxed);
    const uintptr_t end = s.end.load(std::memory_order_relaxed);
    if (addr < begin || addr >= end) continue;
    const uintptr_t page = addr & ~(g_page - 1);
    // Zero pages from the fault on: the access completes, and every later one
    // in the lost tail too, without another signal.
    void* p = mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) break;
    s.damaged.store(1, std::memory_order_release);
    g_faults.fetch_add(1, std::memory_order_release);
    if (sigjmp_buf* escape = t_escape; escape != nullptr) siglongjmp(*escape, 1);
    return;
  }
  Forward(g_previous, sig, info, context);
}

// A library walk that faults after a guarded mapping lost pages is leaving
// the rails on the zeros: end it. Any other SIGSEGV is not ours.
void OnSigsegv(int sig, siginfo_t* info, void* context) {
  sigjmp_buf* escape = t_escape;
  if (escape != nullptr && g_faults.load(std::memory_order_acquire) > 0) siglongjmp(*escape, 1);
  Forward(g_previous_segv, sig, info, context);
}

void Install() {
  g_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  struct sigaction action = {};
  action.sa_sigaction = &OnSigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &g_previous);
}

void InstallSegv() {
  struct sigaction action = {};
  action.sa_sigaction = &OnSigsegv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_previous_segv);
}

}  // namespace

MappingGuard::MappingGuard(const void* base, size_t size, std::string name)
    : name_(std::move(name)) {
  std::call_once(g_install_once, Install);
  if (size == 0) return;
  const auto begin = reinterpret_cast<uintptr_t>(base);
  const uintptr_t end = (begin + size + g_page - 1) & ~(g_page - 1);
  for (int i = 0; i < kMaxGuardedMappings; ++i) {
    uint32_t expected = 0;
    Slot& s = g_slots[i];
    // Claim with a value the handler skips (2), publish the range, then mark
    // it live (1).
    if (!s.used.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) continue;
    s.damaged.store(0, std::memory_order_relaxed);
    s.begin.store(begin, std::memory_order_relaxed);
    s.end.store(end, std::memory_order_relaxed);
    s.used.store(1, std::memory_order_release);
    slot_ = i;
    return;
  }
}

MappingGuard MappingGuard::Around(const void* inside, std::string name) {
  const auto at = reinterpret_cast<uintptr_t>(inside);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode path", addresses in hex.
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &begin, &end) != 2) continue;
    if (at >= begin && at < end) {
      return MappingGuard(reinterpret_cast<const void*>(begin), end - begin, std::move(name));
    }
  }
  return MappingGuard();
}

MappingGuard::~MappingGuard() { Reset(); }

MappingGuard::MappingGuard(MappingGuard&& other) noexcept
    : slot_(std::exchange(other.slot_, -1)), name_(std::move(other.name_)) {}

MappingGuard& MappingGuard::operator=(MappingGuard&& other) noexcept {
  if (this != &other) {
    Reset();
    slot_ = std::exchange(other.slot_, -1);
    name_ = std::move(other.name_);
  }
  return *this;
}

void MappingGuard::Reset() {
  if (slot_ < 0) return;
  g_slots[slot_].used.store(0, std::memory_order_release);
  slot_ = -1;
}

absl::Status MappingGuard::Damage() const {
  if (slot_ < 0 || g_faults.load(std::memory_order_acquire) == 0) return absl::OkStatus();
  if (g_slots[slot_].damaged.load(std::memory_order_acquire) == 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      name_, ": the file shrank while it was mapped (truncated or replaced while being read); "
             "the bytes past its new end are gone"));
}

absl::Status MappingGuard::Call(absl::FunctionRef<absl::Status()> call) const {
  if (absl::Status d = Damage(); !d.ok()) return d;
  std::call_once(g_install_segv_once, InstallSegv);
  sigjmp_buf escape;
  sigjmp_buf* const outer = t_escape;
  if (sigsetjmp(escape, /*savemask=*/1) != 0) {
    t_escape = outer;
    if (absl::Status d = Damage(); !d.ok()) return d;
    return absl::DataLossError(absl::StrCat(
        name_, ": reading it faulted after a mapped file shrank while it was read"));
  }
  t_escape = &escape;
  absl::Status s = call();
  t_escape = outer;
  if (absl::Status d = Damage(); !d.ok()) return d;
  return s;
}

uint64_t ContainedMappingFaults() { return g_faults.load(std::memory_order_acquire); }

}  // namespace shardpack::common
