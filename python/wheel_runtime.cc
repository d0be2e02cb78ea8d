// Linked into the wheel's module and tools alone (SHARDPACK_WHEEL,
// python/CMakeLists.txt): what keeps them within manylinux_2_34's glibc.
//
// The wheel links GCC 12's libstdc++ statically (CMakeLists.txt). Any
// exception pulls in its cow-string-inst.o, which references
// std::random_device, whose random.o calls arc4random: a glibc 2.36 function
// (GLIBC_2.36), which RHEL 9 and Ubuntu 22.04 do not have. This definition,
// hidden so that it binds inside each file and is never exported to the
// process, takes its place; it is what glibc's does: getrandom(2) (glibc
// 2.25, Linux 3.17), retried on EINTR, abort when the kernel has none.
// shardpack itself never calls it (common::RandomSeed is its seed source).
#include <errno.h>
#include <sys/random.h>

#include <cstdint>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value = 0;
  for (;;) {
    const ssize_t n = getrandom(&value, sizeof(value), 0);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
    if (n < 0 && errno != EINTR) __builtin_trap();
  }
}
