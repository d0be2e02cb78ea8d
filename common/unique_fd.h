// A file descriptor closed when it goes out of scope (which also lets go of
// an flock() taken through it). Move-only.
#ifndef SHARDPACK_COMMON_UNIQUE_FD_H_
#define SHARDPACK_COMMON_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace shardpack::common {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Gives up ownership: the caller closes the descriptor.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_UNIQUE_FD_H_
