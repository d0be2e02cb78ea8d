// The life of an output dataset directory: built under "<path>.partial",
// renamed into place when complete, manifest written last.
#ifndef SHARDPACK_TOOLS_PACK_OUTPUT_DIR_H_
#define SHARDPACK_TOOLS_PACK_OUTPUT_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/manifest.h"

namespace shardpack::pack {

class OutputDir {
 public:
  // Refuses an existing `path` unless `overwrite` (AlreadyExistsError that
  // says so, and says when it is the remains of an interrupted pack). Creates
  // a fresh "<path>.partial", removing a stale one.
  static absl::StatusOr<std::unique_ptr<OutputDir>> Create(std::string path, bool overwrite);

  // Removes the partial directory unless Publish() succeeded.
  ~OutputDir();

  // Where to write: the partial directory.
  const std::string& staging() const { return staging_; }

  // Renames the staging directory to the final path (moving an existing one
  // aside and deleting it after), then writes the manifest into it.
  absl::Status Publish(const Manifest& manifest);

 private:
  OutputDir(std::string path, std::string staging)
      : path_(std::move(path)), staging_(std::move(staging)) {}
  std::string path_;
  std::string staging_;
  bool published_ = false;
};

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_OUTPUT_DIR_H_
