// Checks of what the code itself promises, never of what a file or a user
// hands in (those are Status errors that say where).
//
//   SP_CHECK(cond)   always on: a cheap invariant whose breach would corrupt
//                    memory or data if execution went on (Riegeli's
//                    RIEGELI_CHECK). Prints the condition, file and line to
//                    stderr and aborts.
//   SP_DCHECK(cond)  a precondition or invariant, on where
//                    SHARDPACK_DEBUG_CHECKS is defined: every build but
//                    Release and MinSizeRel (CMakeLists.txt), so the test,
//                    sanitizer and fuzz builds run them and the benchmarks'
//                    and wheels' Release builds do not. Off, the condition
//                    is not evaluated but still compiled (names stay used).
//
// `assert` is not used: every build defines NDEBUG, so it never ran.
#ifndef SHARDPACK_COMMON_CHECK_H_
#define SHARDPACK_COMMON_CHECK_H_

namespace shardpack::common {

// Prints "shardpack: check failed: <condition> (<file>:<line>)" and aborts.
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);

}  // namespace shardpack::common

#define SP_CHECK(cond)                                                  \
  (__builtin_expect(static_cast<bool>(cond), 1)                         \
       ? static_cast<void>(0)                                           \
       : ::shardpack::common::CheckFailed(#cond, __FILE__, __LINE__))

#ifdef SHARDPACK_DEBUG_CHECKS
#define SP_DCHECK(cond) SP_CHECK(cond)
#else
#define SP_DCHECK(cond) static_cast<void>(sizeof(static_cast<bool>(cond)))
#endif

#endif  // SHARDPACK_COMMON_CHECK_H_
