// What ReaderOptions accepts: the checks and the environment's RANK and
// WORLD_SIZE that Reader::Open applies, and the names of option values.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "reader/epoch_share.h"
#include "common/enum_names.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "reader/option_table.h"
#include "reader/options.h"
#include "reader/pipeline.h"
#include "reader/reader_impl.h"

namespace shardpack {

using common::AsAbsl;

namespace {

// An integer from the environment variable `name`, in [lo, hi]; `fallback`
// when it is not set. `*named` says where the value came from, for messages.
absl::StatusOr<int> FromEnvironment(const char* name, int fallback, int lo, int hi,
                                    std::string* named) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    *named = absl::StrCat(name, " unset: ", fallback);
    return fallback;
  }
  const std::string shown = common::Excerpt(text);
  *named = absl::StrCat(name, "=", shown);
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    // Digits that do not fit are a number out of range, not a non-number.
    const std::string_view digits = std::string_view(text).substr(text[0] == '-' || text[0] == '+');
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", shown, "' is not an integer: ", lo, " to ", hi));
    }
    v = text[0] == '-' ? INT64_MIN : INT64_MAX;
  }
  if (v < lo || v > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", shown, " is out of range: ", lo, " to ", hi));
  }
  return static_cast<int>(v);
}

}  // namespace


// RANK / WORLD_SIZE from the environment when the option is -1; the
// options themselves are checked (CheckOptions).
absl::Status reader::ResolveRank(ReaderOptions* o) {
  std::string world = absl::StrCat("world_size ", o->world_size);
  std::string rank = absl::StrCat("rank ", o->rank);
  if (o->world_size == -1) {
    SP_ASSIGN_OR_RETURN(o->world_size, FromEnvironment("WORLD_SIZE", 1, 1, kMaxWorldSize, &world));
  }
  if (o->rank == -1) {
    SP_ASSIGN_OR_RETURN(o->rank, FromEnvironment("RANK", 0, 0, kMaxWorldSize - 1, &rank));
  }
  if (o->rank >= o->world_size) {
    return absl::InvalidArgumentError(absl::StrCat(rank, " is out of range: 0 to ",
                                                   o->world_size - 1, " (", world, ")"));
  }
  return absl::OkStatus();
}

// The plan options of `o`, whose rank and world size are resolved.
reader::PlanOptions reader::PlanOptionsOf(const ReaderOptions& o) {
  return reader::PlanOf(reader::SegmentOf(o), o.seed, o.rank);
}

reader::PipelineConfig reader::PipelineConfigOf(const ReaderOptions& o) {
  PipelineConfig c;
  c.loader = {.batch_size = o.batch_size,
              .shuffle_bytes = o.shuffle_bytes,
              .read_ahead_bytes = o.read_ahead_bytes};
  c.builder = {.threads = o.threads,
               .batch_size = o.batch_size,
               .keys = o.keys,
               .on_corrupt = o.on_corrupt,
               .seed = o.seed};
  c.ring_slots = o.ring_slots;
  return c;
}

// A path goes to the system as a C string: a NUL would cut it short.
absl::Status reader::CheckPathOption(std::string_view what, std::string_view path) {
  if (const size_t nul = path.find('\0'); nul != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(common::AsAbsl(what), " '", common::Excerpt(path),
                     "' holds a NUL byte (at byte ", nul, "): a path is text without NULs"));
  }
  if (path.size() >= PATH_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(common::AsAbsl(what), " '",
                                                   common::Excerpt(path),
                                                   "' is too long: at most ", PATH_MAX - 1,
                                                   " bytes"));
  }
  return absl::OkStatus();
}

namespace {

// A mixture's sources, as far as they can be checked without their
// records (reader/reader_mix.cc checks the counts they give).
absl::Status CheckSources(const ReaderOptions& o) {
  if (!o.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "path '", common::Excerpt(o.path), "' and ", o.sources.size(),
        " sources: a reader reads a path or a mixture of sources, not both"));
  }
  if (o.sources.size() > static_cast<size_t>(kMaxMixSources)) {
    return absl::InvalidArgumentError(absl::StrCat(o.sources.size(), " sources: at most ",
                                                   kMaxMixSources));
  }
  for (size_t i = 0; i < o.sources.size(); ++i) {
    const MixSource& m = o.sources[i];
    const std::string name = absl::StrCat("sources[", i, "] ('", common::Excerpt(m.path), "')");
    SP_RETURN_IF_ERROR(reader::CheckPathOption(absl::StrCat("sources[", i, "].path"), m.path));
    const int set = (m.weight != 0) + (m.repeat != 0) + (m.choose != 0);
    if (set != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": set exactly one of weight, repeat and choose (", set, " are set)"));
    }
    for (auto [what, v] : {std::pair{"weight", m.weight}, std::pair{"repeat", m.repeat}}) {
      if (v != 0 && !(v > 0 && std::isfinite(v))) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", what, " ", v, " is not a positive finite number"));
      }
    }
    if (m.repeat > kMaxMixRepeat) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": repeat ", m.repeat, " is more than ", kMaxMixRepeat));
    }
  }
  if (o.label_space != LabelSpace::kShared && o.label_space != LabelSpace::kOffset &&
      o.label_space != LabelSpace::kSource) {
    return absl::InvalidArgumentError(absl::StrCat(
        "label_space ", static_cast<int>(o.label_space), " is not shared, offset or source"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status reader::CheckOptions(const ReaderOptions& o) {
  SP_RETURN_IF_ERROR(reader::CheckPathOption("path", o.path));
  SP_RETURN_IF_ERROR(reader::CheckPathOption("cache_dir", o.cache_dir));
  if (!o.sources.empty()) SP_RETURN_IF_ERROR(CheckSources(o));
  // Each int option against its row of the table (reader/option_table.h).
  auto check = [](std::string_view name, int v) {
    return reader::InRange(reader::FindOption(name), v)
               ? absl::OkStatus()
               : reader::OptionOutOfRange(name, absl::StrCat(v));
  };
  for (auto [name, v] : {std::pair<std::string_view, int>{"batch_size", o.batch_size},
                         {"ring_slots", o.ring_slots},
                         {"threads", o.threads},
                         {"device", o.device}}) {
    SP_RETURN_IF_ERROR(check(name, v));
  }
  // Device buffers matter only with a device.
  if (o.device >= 0) SP_RETURN_IF_ERROR(check("device_buffers", o.device_buffers));
  for (auto [name, v] : {std::pair<std::string_view, int>{"world_size", o.world_size},
                         {"rank", o.rank},
                         {"transform size", o.transform.size},
                         {"transform pad", o.transform.pad}}) {
    SP_RETURN_IF_ERROR(check(name, v));
  }
  if (o.device_dtype != DeviceDType::kAsHost && o.dtype != DType::kUint8) {
    return absl::InvalidArgumentError(
        "with device_dtype, dtype must stay uint8: the device converts the uint8 batch");
  }
  if (o.device_dtype != DeviceDType::kAsHost && o.device < 0) {
    return absl::InvalidArgumentError("device_dtype needs a device (ReaderOptions::device >= 0)");
  }
  return absl::OkStatus();
}


std::string reader::Accepted(const OptionSpec& s) {
  std::string text(s.accepted.empty() ? "{lo} to {hi}" : s.accepted);
  return absl::StrReplaceAll(text, {{"{lo}", absl::StrCat(s.lo)},
                                    {"{hi}", absl::StrCat(s.hi)},
                                    {"{special}", absl::StrCat(s.special.value_or(0))}});
}

absl::Status reader::OptionOutOfRange(std::string_view option, std::string_view value) {
  if (const OptionSpec& s = FindOption(option); s.type == OptionType::kInt) {
    return absl::InvalidArgumentError(absl::StrCat(common::AsAbsl(option), " ",
                                                   common::Excerpt(value),
                                                   " is out of range: ", Accepted(s)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(common::AsAbsl(option), " ", common::Excerpt(value), " is out of range"));
}

absl::StatusOr<reader::PlanOptions> reader::ReaderPlanOptions(
    ReaderOptions options, const std::vector<ReadUnit>& units) {
  SP_RETURN_IF_ERROR(CheckOptions(options));
  SP_RETURN_IF_ERROR(ResolveRank(&options));
  if (options.shuffle_bytes == kAutoShuffleBytes) {
    options.shuffle_bytes = ChosenShuffleBytes(units, options.world_size);
  }
  return PlanOptionsOf(options);
}


// ---- Option names -----------------------------------------------------------

// Option values, given by people, parse in any case (common/enum_names.h).
namespace {

using common::Case;
using common::NameIn;
template <typename E>
using Name = common::EnumName<E>;

template <typename E, size_t N>
absl::StatusOr<E> ParseOption(const Name<E> (&names)[N], std::string_view what,
                              std::string_view name) {
  return common::ParseIn(names, what, name, Case::kAny);
}

constexpr Name<IoEngine> kIoEngines[] = {{IoEngine::kAuto, "auto"},
                                        {IoEngine::kPread, "pread"},
                                        {IoEngine::kDirect, "direct"},
                                        {IoEngine::kMmap, "mmap"},
                                        {IoEngine::kUring, "uring"},
                                        {IoEngine::kRemote, "remote"}};
constexpr Name<OutputLayout> kLayouts[] = {{OutputLayout::kNHWC, "nhwc"},
                                          {OutputLayout::kNCHW, "nchw"}};
constexpr Name<DType> kDTypes[] = {{DType::kUint8, "uint8"}, {DType::kFloat32, "float32"}};
constexpr Name<ElementType> kElementTypes[] = {{ElementType::kUint8, "uint8"},
                                              {ElementType::kFloat16, "float16"},
                                              {ElementType::kFloat32, "float32"}};
constexpr Name<DeviceDType> kDeviceDTypes[] = {{DeviceDType::kAsHost, "as-host"},
                                              {DeviceDType::kFloat32, "float32"},
                                              {DeviceDType::kFloat16, "float16"}};
constexpr Name<Remainder> kRemainders[] = {
    {Remainder::kDrop, "drop"}, {Remainder::kPartial, "partial"}, {Remainder::kPad, "pad"}};
constexpr Name<OnCorrupt> kOnCorrupt[] = {{OnCorrupt::kError, "error"},
                                         {OnCorrupt::kSkip, "skip"}};
constexpr Name<LabelSpace> kLabelSpaces[] = {{LabelSpace::kShared, "shared"},
                                            {LabelSpace::kOffset, "offset"},
                                            {LabelSpace::kSource, "source"}};

}  // namespace

std::string_view IoEngineName(IoEngine e) { return NameIn(kIoEngines, e); }
absl::StatusOr<IoEngine> ParseIoEngine(std::string_view name) {
  return ParseOption(kIoEngines, "I/O engine", name);
}
std::string_view OutputLayoutName(OutputLayout l) { return NameIn(kLayouts, l); }
absl::StatusOr<OutputLayout> ParseOutputLayout(std::string_view name) {
  return ParseOption(kLayouts, "layout", name);
}
std::string_view DTypeName(DType d) { return NameIn(kDTypes, d); }
absl::StatusOr<DType> ParseDType(std::string_view name) { return ParseOption(kDTypes, "dtype", name); }
std::string_view ElementTypeName(ElementType t) { return NameIn(kElementTypes, t); }
size_t ElementBytes(ElementType t) {
  return t == ElementType::kFloat32 ? 4 : t == ElementType::kFloat16 ? 2 : 1;
}
std::string_view DeviceDTypeName(DeviceDType d) { return NameIn(kDeviceDTypes, d); }
absl::StatusOr<DeviceDType> ParseDeviceDType(std::string_view name) {
  return ParseOption(kDeviceDTypes, "device dtype", name);
}
std::string_view RemainderName(Remainder r) { return NameIn(kRemainders, r); }
absl::StatusOr<Remainder> ParseRemainder(std::string_view name) {
  return ParseOption(kRemainders, "remainder", name);
}
std::string_view OnCorruptName(OnCorrupt c) { return NameIn(kOnCorrupt, c); }
absl::StatusOr<OnCorrupt> ParseOnCorrupt(std::string_view name) {
  return ParseOption(kOnCorrupt, "on_corrupt", name);
}

std::string_view LabelSpaceName(LabelSpace l) { return NameIn(kLabelSpaces, l); }
absl::StatusOr<LabelSpace> ParseLabelSpace(std::string_view name) {
  return ParseOption(kLabelSpaces, "label_space", name);
}

absl::StatusOr<Transform> ParseTransform(std::string_view text) {
  std::string_view kind = text.substr(0, text.find(':'));
  Transform t;
  if (kind == "none") {
    t = Transform::None();
  } else if (kind == "cifar-train") {
    t = Transform::CifarTrain();
  } else if (kind == "cifar-eval") {
    t = Transform::CifarEval();
  } else if (kind == "rrc" || kind == "random-resized-crop") {
    t = Transform::RandomResizedCrop();
  } else if (kind == "center" || kind == "center-crop") {
    t = Transform::CenterCrop();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown transform '", common::Excerpt(text),
        "' (none, cifar-train[:SIZE], cifar-eval[:SIZE], rrc[:SIZE], center[:SIZE])"));
  }
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    const std::string_view size = text.substr(colon + 1);
    if (!absl::SimpleAtoi(AsAbsl(size), &t.size) || t.size < 1 || t.size > kMaxTransformSize) {
      return absl::InvalidArgumentError(absl::StrCat("transform '", common::Excerpt(text),
                                                     "': SIZE is an integer from 1 to ",
                                                     kMaxTransformSize));
    }
  }
  return t;
}

}  // namespace shardpack

