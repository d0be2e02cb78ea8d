// Fixtures written by the ecosystem's own tools: /usr/bin/python3 with h5py
// and lmdb (Debian's python3-h5py, python3-lmdb). A test skips, saying why,
// when that python lacks the module.
#ifndef SHARDPACK_TESTS_TESTING_PYTHON_FIXTURES_H_
#define SHARDPACK_TESTS_TESTING_PYTHON_FIXTURES_H_

#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace shardpack::testing {

inline constexpr char kPython[] = "/usr/bin/python3";

// Skips the test unless /usr/bin/python3 can import `module`.
#define SKIP_WITHOUT_PYTHON_MODULE(module)                                                 \
  do {                                                                                     \
    if (access(::shardpack::testing::kPython, X_OK) != 0 ||                                \
        ::shardpack::testing::Run({::shardpack::testing::kPython, "-c", "import " module}) \
                .exit_code != 0) {                                                         \
      GTEST_SKIP() << ::shardpack::testing::kPython << " cannot import " module            \
                   << " (scripts/setup installs python3-h5py and python3-lmdb)";          \
    }                                                                                      \
  } while (0)

// Runs `script` with /usr/bin/python3 -c, `args` as sys.argv[1:].
inline RunResult Python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kPython, "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_PYTHON_FIXTURES_H_
