#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace shardpack::common {

void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "shardpack: check failed: %s (%s:%d)\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace shardpack::common
