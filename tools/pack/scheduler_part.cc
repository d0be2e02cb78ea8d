#include "tools/pack/scheduler_part.h"

#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace shardpack::pack {
namespace {

constexpr char kId[] = "SLURM_ARRAY_TASK_ID";
constexpr char kMin[] = "SLURM_ARRAY_TASK_MIN";
constexpr char kMax[] = "SLURM_ARRAY_TASK_MAX";
constexpr char kCount[] = "SLURM_ARRAY_TASK_COUNT";
constexpr char kStep[] = "SLURM_ARRAY_TASK_STEP";
constexpr char kIndex[] = "JOB_COMPLETION_INDEX";

absl::Status Bad(const std::string& name, const std::string& value, const std::string& why) {
  // A hostile value may be long: quote its start.
  const std::string shown = value.size() <= 32 ? value : value.substr(0, 32) + "...";
  return absl::InvalidArgumentError(absl::StrCat("--part auto: ", name, "='", shown, "' ", why));
}

// A variable's value as a whole number in 0..kMaxParts; nullopt when unset.
// Digits only: a sign, spaces, hex or a fraction is refused, not guessed at.
absl::StatusOr<std::optional<uint64_t>> Number(const EnvLookup& env, const char* name) {
  const char* raw = env(name);
  if (raw == nullptr) return std::optional<uint64_t>();
  const std::string value(raw);
  if (value.empty()) return Bad(name, value, "is set but empty");
  uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return Bad(name, value, "is not a whole number");
    n = n * 10 + static_cast<uint64_t>(c - '0');
    if (n > kMaxParts) return Bad(name, value, absl::StrCat("is out of range 0..", kMaxParts));
  }
  return std::optional<uint64_t>(n);
}

std::string Said(const char* name, uint64_t v) { return absl::StrCat(name, "=", v); }

absl::StatusOr<SchedulerPart> FromSlurm(const EnvLookup& env, std::optional<uint64_t> parts,
                                        uint64_t id) {
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> min, Number(env, kMin));
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> count, Number(env, kCount));
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> max, Number(env, kMax));
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> step, Number(env, kStep));
  for (const auto& [name, v] : {std::pair{kMin, min}, std::pair{kCount, count}}) {
    if (!v) {
      return absl::InvalidArgumentError(
          absl::StrCat("--part auto: ", kId, " is set but ", name,
                       " is not (Slurm sets both for a job array): give --part I/N instead"));
    }
  }
  const std::string where =
      absl::StrCat(Said(kId, id), " ", Said(kMin, *min), " ", Said(kCount, *count));
  if (*count == 0) return Bad(kCount, "0", "is not a number of parts (1 or more)");
  if (id < *min)
    return absl::InvalidArgumentError(
        absl::StrCat("--part auto: ", where, ": the task ID is below MIN"));
  if (id - *min >= *count || (max && *max != *min + *count - 1) || (step && *step != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--part auto: ", where, max ? absl::StrCat(" ", Said(kMax, *max)) : "",
        step ? absl::StrCat(" ", Said(kStep, *step)) : "",
        ": not one task of a contiguous array (submit it as --array=1-N or 0-N-1, no step "
        "and no list)"));
  }
  if (parts && *parts != *count) {
    return absl::InvalidArgumentError(absl::StrCat("--part auto: --parts ", *parts, " but ", where,
                                                   ": the array has ", *count, " tasks"));
  }
  return SchedulerPart{static_cast<uint32_t>(id - *min), static_cast<uint32_t>(*count), where};
}

}  // namespace

absl::StatusOr<SchedulerPart> PartFromScheduler(std::optional<uint64_t> parts,
                                                const EnvLookup& lookup) {
  const EnvLookup env = lookup ? lookup : [](const char* name) { return std::getenv(name); };
  if (parts && (*parts == 0 || *parts > kMaxParts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parts ", *parts, " is out of range 1..", kMaxParts));
  }
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> id, Number(env, kId));
  SP_ASSIGN_OR_RETURN(std::optional<uint64_t> index, Number(env, kIndex));
  if (id && index) {
    return absl::InvalidArgumentError(
        absl::StrCat("--part auto: both ", Said(kId, *id), " (Slurm) and ", Said(kIndex, *index),
                     " (Kubernetes) are set: unset one, or give --part I/N"));
  }
  if (id) return FromSlurm(env, parts, *id);
  if (!index) {
    return absl::InvalidArgumentError(
        absl::StrCat("--part auto: no scheduler variables: set ", kId, ", ", kMin, " and ", kCount,
                     " (a Slurm job array sets them), or ", kIndex,
                     " with --parts N (a Kubernetes Indexed Job sets it), or give --part I/N"));
  }
  if (!parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("--part auto: ", Said(kIndex, *index),
                     " gives the part's index; give the number of parts with --parts N (the Job's "
                     "completions)"));
  }
  if (*index >= *parts) {
    return absl::InvalidArgumentError(absl::StrCat("--part auto: ", Said(kIndex, *index),
                                                   " is not below --parts ", *parts,
                                                   " (indexes are 0-based)"));
  }
  return SchedulerPart{static_cast<uint32_t>(*index), static_cast<uint32_t>(*parts),
                       absl::StrCat(Said(kIndex, *index), " --parts ", *parts)};
}

}  // namespace shardpack::pack
