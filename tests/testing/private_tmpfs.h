// A small tmpfs for tests of a full file system: mounted in a mount namespace
// of the test process's own, so that no other process sees it and the kernel
// removes it when the process ends, whatever happens. The tools the test
// runs (as children) inherit the namespace and write into it.
#ifndef SHARDPACK_TESTS_TESTING_PRIVATE_TMPFS_H_
#define SHARDPACK_TESTS_TESTING_PRIVATE_TMPFS_H_

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

namespace shardpack::testing {

class PrivateTmpfs {
 public:
  PrivateTmpfs() = default;
  PrivateTmpfs(const PrivateTmpfs&) = delete;
  PrivateTmpfs& operator=(const PrivateTmpfs&) = delete;
  ~PrivateTmpfs() {
    if (!dir_.empty()) umount2(dir_.c_str(), MNT_DETACH);
  }

  // Mounts a tmpfs of `bytes` at `dir` (created). Empty when it is mounted,
  // else why not, for GTEST_SKIP (not root; no mount namespaces, as in some
  // containers). The process must have one thread (unshare(CLONE_NEWNS)).
  std::string Mount(const std::string& dir, uint64_t bytes) {
    if (geteuid() != 0) return "needs root to mount a tmpfs (run the test as root)";
    if (unshare(CLONE_NEWNS) != 0) return Why("unshare(CLONE_NEWNS)");
    // Nothing mounted from here on propagates back to the host's namespace.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return Why("making / a private mount");
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string options = "size=" + std::to_string(bytes);
    if (mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      return Why("mount -t tmpfs");
    }
    dir_ = dir;
    return "";
  }

  // Gives the mounted tmpfs a new size; what it holds stays (a size below
  // that fails). Empty when done, else why not.
  std::string Resize(uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes);
    if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_REMOUNT,
              options.c_str()) != 0) {
      return Why("mount -o remount");
    }
    return "";
  }

  // The bytes its files take (whole pages), 0 when it cannot be read.
  uint64_t UsedBytes() const {
    struct statvfs st;
    if (statvfs(dir_.c_str(), &st) != 0) return 0;
    return (st.f_blocks - st.f_bfree) * st.f_frsize;
  }

 private:
  static std::string Why(const char* what) {
    return std::string(what) + " failed: " + std::strerror(errno) +
           " (mount namespaces may be off here)";
  }
  std::string dir_;
};

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_PRIVATE_TMPFS_H_
