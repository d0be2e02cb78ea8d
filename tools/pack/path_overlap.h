// Where the output of a pack, merge or convert may lie: never inside a
// folder it reads as a whole (a walk of an image folder would find its own
// output there and take it as a class), and never over or around an input
// (--overwrite would then replace the input itself).
#ifndef SHARDPACK_TOOLS_PACK_PATH_OVERLAP_H_
#define SHARDPACK_TOOLS_PACK_PATH_OVERLAP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardpack::pack {

struct InputPath {
  std::string path;
  // A base folder that is not walked (the --root of a list file, whose
  // default is the list's own folder): the output may lie inside it.
  bool output_may_be_inside = false;
};

// InvalidArgumentError naming both paths when `output`, or its staging
// directory "<output>.partial", is an input, holds an input, or lies inside
// an input folder. Paths are compared as canonical absolute paths, through
// symbolic links, so another spelling of the same folder is caught too.
// Inputs that do not exist are left to the readers to report.
absl::Status CheckOutputApartFromInputs(const std::string& output,
                                        const std::vector<InputPath>& inputs);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_PATH_OVERLAP_H_
