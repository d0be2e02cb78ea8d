// SIGBUS containment for read-only file mappings.
//
// A file that shrinks while it is mapped (truncated by another process, a
// tmpfs that evicts, a network filesystem that loses the file) turns every
// access to the lost pages into SIGBUS, which kills the process. pread just
// returns fewer bytes. To give mapped reads the same clear error, every
// mapping we read is registered here: a SIGBUS inside a registered range maps
// zero pages over the range from the faulting page to its end, marks the
// mapping damaged and lets the access go on. Readers then ask Damage() once
// they have used the bytes (per block or per batch, never per byte) and turn
// any damage into a DataLossError naming the file, so zero-filled bytes never
// pass as data.
//
// A SIGBUS outside every registered range goes to the handler that was
// installed before ours (the default one kills the process, as before).
//
// Zeros are safe for bytes we read as data, not for a library that trusts
// the mapping's structure: liblmdb walking a B-tree page that became zeros
// follows whatever they point to. Such walks run inside MappingGuard::Call,
// which leaves the library at the fault instead.
#ifndef SHARDPACK_COMMON_MAPPING_GUARD_H_
#define SHARDPACK_COMMON_MAPPING_GUARD_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace shardpack::common {

// One registered mapping. Move-only; unregisters on destruction, which must
// happen before the range is unmapped. Thread-safe.
class MappingGuard {
 public:
  MappingGuard() = default;
  // Registers [base, base + size) as a mapping of `name`. At most
  // kMaxGuardedMappings are registered at once; past that the range is not
  // guarded (ok() is false) and a SIGBUS there kills the process as before.
  MappingGuard(const void* base, size_t size, std::string name);
  ~MappingGuard();
  MappingGuard(MappingGuard&& other) noexcept;
  MappingGuard& operator=(MappingGuard&& other) noexcept;

  // Registers the whole mapping that holds `inside`, as /proc/self/maps
  // lists it: for a library that maps a file and does not say where (liblmdb
  // reports no map address). Not guarded (ok() false) when none holds it.
  static MappingGuard Around(const void* inside, std::string name);

  bool ok() const { return slot_ >= 0; }
  // OK while no access to the range has faulted; else DataLossError
  // "<name>: the file shrank while it was mapped (...)". Cheap: one atomic
  // load while nothing has faulted anywhere.
  absl::Status Damage() const;

  // Runs `call`, a library's walk of this mapping that trusts its bytes
  // (liblmdb's cursor), so that a lost page ends the walk with Damage()'s
  // error rather than a crash: refused before it starts when the mapping is
  // already damaged; a SIGBUS in any guarded mapping during the call, or a
  // SIGSEGV during the call once any guarded mapping has lost pages (the
  // library following zeros that another thread's fault put in place),
  // leaves the call at once (siglongjmp). The library's state from that
  // call is then garbage: Damage() stays set, so callers that check it
  // first never use it again. `call` must hold no object with a destructor
  // across the library's calls. A SIGSEGV with no guarded mapping damaged
  // goes to the previous handler, as before. One sigsetjmp a call (it saves
  // the signal mask): a walk of many records, not one per record.
  absl::Status Call(absl::FunctionRef<absl::Status()> call) const;

 private:
  void Reset();
  int slot_ = -1;
  std::string name_;
};

inline constexpr int kMaxGuardedMappings = 4096;

// How many SIGBUS faults inside guarded mappings the process has contained.
// Zero on a healthy run; a reader compares it before and after a batch.
uint64_t ContainedMappingFaults();

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_MAPPING_GUARD_H_
