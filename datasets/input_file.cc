#include "datasets/input_file.h"

#include "absl/strings/str_format.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"

namespace shardpack::datasets {

absl::Status ReadInputFile(const std::string& path, std::vector<uint8_t>* out) {
  // The one opener: a FIFO named *.jpg is refused, not waited on.
  uint64_t size = 0;
  SP_ASSIGN_OR_RETURN(int raw, common::OpenRegularFile(path, 0, &size));
  const common::UniqueFd fd_owner(raw);
  const int fd = fd_owner.get();
  if (size == 0) return common::DataLossAt(path, 0, "empty file");
  if (size > kMaxInputFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: file too large for an image (%u bytes)", path, size));
  }
  out->resize(size);
  return common::PreadFull(fd, path, 0, {out->data(), size});
}

}  // namespace shardpack::datasets
