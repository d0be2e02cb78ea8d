#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace shardpack::testing {
namespace {

[[noreturn]] void Exec(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

void StdoutToClosedPipe(bool ignore_sigpipe) {
  std::signal(SIGPIPE, ignore_sigpipe ? SIG_IGN : SIG_DFL);
  int fds[2];
  if (pipe(fds) != 0) _exit(126);
  close(fds[0]);
  if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(126);
  close(fds[1]);
}

RunResult Run(const std::vector<std::string>& argv, const std::function<void()>& in_child) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    if (in_child) in_child();
    Exec(argv);
  }
  close(out[1]);
  close(err[1]);
  RunResult result;
  // Drain both pipes together so neither fills up and blocks the child.
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, n);
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = ExitCode(status);
  return result;
}

RunResult RunTool(const std::string& path, std::vector<std::string> args,
                  const std::function<void()>& in_child) {
  args.insert(args.begin(), path);
  return Run(args, in_child);
}

int Spawn(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    Exec(argv);
  }
  return pid;
}

}  // namespace shardpack::testing
