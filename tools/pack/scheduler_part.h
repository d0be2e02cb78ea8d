// `--part auto`: which part of a multi-machine pack this process is, from
// the variables a job scheduler sets for each task of an array.
#ifndef SHARDPACK_TOOLS_PACK_SCHEDULER_PART_H_
#define SHARDPACK_TOOLS_PACK_SCHEDULER_PART_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "shardpack/writer.h"  // kMaxParts

namespace shardpack::pack {

struct SchedulerPart {
  uint32_t index = 0;  // 0-based
  uint32_t count = 1;
  std::string source;  // where it came from, for logs: "SLURM_ARRAY_TASK_ID=3 ..."
};

// Reads a variable; returns null when it is not set. The default is getenv.
using EnvLookup = std::function<const char*(const char*)>;

// The part from the scheduler's variables:
// - Slurm job array (`sbatch --array=A-B`): SLURM_ARRAY_TASK_ID,
//   SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT give part
//   ID - MIN of COUNT, so arrays starting at 0, 1 or any A are right. The
//   array must be one contiguous range: SLURM_ARRAY_TASK_MAX, when set, must
//   be MIN + COUNT - 1, and SLURM_ARRAY_TASK_STEP, when set, 1. `parts`,
//   when given, must equal COUNT.
// - Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based) with `parts` (the
//   Job's completions), which is then required.
// Values are decimal digits only, within 32 bits. Every refusal is an
// InvalidArgumentError naming the variable and its value; with neither
// scheduler's variables set, the error says what to set.
absl::StatusOr<SchedulerPart> PartFromScheduler(std::optional<uint64_t> parts,
                                                const EnvLookup& env = nullptr);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_SCHEDULER_PART_H_
