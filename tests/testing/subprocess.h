// Runs a program and captures its exit code, stdout and stderr, for CLI tests.
#ifndef SHARDPACK_TESTS_TESTING_SUBPROCESS_H_
#define SHARDPACK_TESTS_TESTING_SUBPROCESS_H_

#include <functional>
#include <string>
#include <vector>

namespace shardpack::testing {

struct RunResult {
  int exit_code = -1;   // the exit status, or 128 + signal when killed
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv[0] with argv (no shell). `in_child`, if given, runs in the child
// just before exec (e.g. to set an rlimit).
RunResult Run(const std::vector<std::string>& argv,
              const std::function<void()>& in_child = nullptr);

// Runs the tool at `path` (SHARDPACK_PATH, SHARDDUMP_PATH, SHARDBENCH_PATH:
// the built binary CMake names for the test) on `args`: the one way the CLI
// tests run a tool.
RunResult RunTool(const std::string& path, std::vector<std::string> args,
                  const std::function<void()>& in_child = nullptr);

// For `in_child`: makes the child's stdout a pipe whose reader has gone
// (`tool | head` once head has exited), with SIGPIPE at its default
// (`ignore_sigpipe` false) or ignored, as a parent that ignores it leaves it.
void StdoutToClosedPipe(bool ignore_sigpipe);

// Starts argv in the background and returns its pid (stdout and stderr go to
// /dev/null). For tests that kill a process midway.
int Spawn(const std::vector<std::string>& argv);

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_SUBPROCESS_H_
