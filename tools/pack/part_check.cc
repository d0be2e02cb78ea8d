#include "tools/pack/part_check.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/status_macros.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "tools/pack/pack.h"
#include "tools/pack/scheduler_part.h"

namespace shardpack::pack {
namespace {

absl::Status NotAPart(const std::string& path, std::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": not a part merge can check: ", absl::string_view(why.data(), why.size())));
}

// `message` names the part: "<path>: <what is wrong>".
absl::Status Damaged(std::string_view message) {
  return absl::FailedPreconditionError(absl::StrCat(
      absl::string_view(message.data(), message.size()), " (a damaged or edited part manifest)"));
}

// A part's N: its own, or for a part of an open count the one merge is given.
absl::StatusOr<uint64_t> PartCount(const PartDataset& p, std::optional<uint64_t> given) {
  const writer::PackPart& part = *p.pack.part;
  if (part.has_count()) {
    if (given && *given != part.count) {
      return absl::FailedPreconditionError(absl::StrCat("--count ", *given, ", but ", p.path,
                                                        " is part ", part.index, " of ",
                                                        part.count));
    }
    return part.count;
  }
  if (p.pack.input) {
    return Damaged(absl::StrCat(p.path, ": a pack's part of an open count (only a Writer's "
                                "part, with a job, leaves N open)"));
  }
  if (!given) {
    return absl::FailedPreconditionError(absl::StrCat(
        p.path, ": part ", part.index,
        " of an open count (written without knowing N, as by a Ray Data write task): give "
        "the number of parts, merge --count N"));
  }
  if (part.index > *given) {
    return absl::FailedPreconditionError(
        absl::StrCat(p.path, ": part ", part.index, ", beyond --count ", *given));
  }
  return *given;
}

// What a part must record beyond a well-formed identity (FromJson checked
// the types and part's bounds): part and input, and no more records than
// its share of the input's items.
absl::Status CheckPartFields(PartDataset* p, std::optional<uint64_t> count) {
  const writer::PackIdentity& pack = p->pack;
  if (pack.merged) return NotAPart(p->path, "it is a merged dataset, not a part");
  if (!pack.part || (!pack.input && !pack.job)) {
    return NotAPart(p->path,
                    "its manifest's \"pack\" records no part {index, count} and input "
                    "(a conversion of many datasets, or packed by an older shardpack): pack it "
                    "again with --part (a Writer: give it part and job)");
  }
  p->index = pack.part->index;
  SP_ASSIGN_OR_RETURN(p->count, PartCount(*p, count));
  // A Writer's part has no input listing to hold it to a share: its job and
  // options are compared (ComparePart), its records are what it wrote.
  if (!pack.input) return absl::OkStatus();
  const uint64_t n = pack.input->items;
  const uint64_t share = PartBegin(n, p->index, static_cast<uint32_t>(p->count)) -
                         PartBegin(n, p->index - 1, static_cast<uint32_t>(p->count));
  if (p->manifest.records() > share) {
    return Damaged(absl::StrCat(p->path, ": ", p->manifest.records(), " records, but part ",
                                p->index, " of ", p->count, " of ", n, " inputs holds at most ",
                                share));
  }
  return absl::OkStatus();
}

// Each shard is there, a regular file of the manifest's size: a missing,
// truncated or replaced shard is caught here, before anything is linked.
absl::Status CheckShardFiles(const PartDataset& p) {
  for (const ShardEntry& s : p.manifest.shards) {
    const std::string file = (std::filesystem::path(p.path) / s.path).string();
    SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Lstat(file));
    if (!st.IsRegularFile()) {
      return absl::FailedPreconditionError(absl::StrCat(file, ": not a regular file"));
    }
    if (st.size != s.bytes) {
      return absl::FailedPreconditionError(absl::StrCat(file, ": ", st.size,
                                                        " bytes, but the part's manifest says ",
                                                        s.bytes, " (damaged or replaced)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ComparePart(const PartDataset& ref, const PartDataset& p) {
  if (p.count != ref.count) {
    return absl::FailedPreconditionError(absl::StrCat("parts of different packs: ", PartName(p),
                                                      " but ", PartName(ref), ": N differs"));
  }
  if (!(p.manifest.schema == ref.manifest.schema)) {
    return absl::FailedPreconditionError(
        absl::StrCat(PartName(p), ": schema differs from that of ", PartName(ref)));
  }
  const std::optional<writer::PackDifference> d =
      writer::FirstDifference(p.pack, ref.pack, writer::PackComparison::kAsParts);
  if (!d) return absl::OkStatus();
  const std::string what = d->field.starts_with("input") ? "was packed from other input than"
                           : d->field == "job"            ? "belongs to another write (job) than"
                                                          : "was packed with other parameters than";
  return absl::FailedPreconditionError(absl::StrCat(PartName(p), " ", what, " ", PartName(ref),
                                                    ": ", d->field, " is ", d->first, ", not ",
                                                    d->second));
}

// Each index 1..N once; `sorted` is ordered by index.
absl::Status CheckCoverage(const std::vector<const PartDataset*>& sorted) {
  const uint64_t count = sorted.front()->count;
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->index == sorted[i - 1]->index) {
      return absl::FailedPreconditionError(absl::StrCat("part ", sorted[i]->index, " of ", count,
                                                        " is given twice: ", sorted[i - 1]->path,
                                                        " and ", sorted[i]->path));
    }
  }
  if (sorted.size() == count) return absl::OkStatus();
  // Fewer than N distinct indexes: name the first few missing (a walk that
  // stops early, so a huge N costs nothing).
  std::vector<uint64_t> missing;
  size_t k = 0;
  for (uint64_t want = 1; want <= count && missing.size() < 5; ++want) {
    if (k < sorted.size() && sorted[k]->index == want) {
      ++k;
    } else {
      missing.push_back(want);
    }
  }
  const uint64_t absent = count - sorted.size();
  return absl::FailedPreconditionError(absl::StrCat(
      absent == 1 ? "part " : "parts ", absl::StrJoin(missing, ", "),
      absent > missing.size() ? ", ..." : "", " of ", count, absent == 1 ? " is" : " are",
      " missing (", sorted.size(), " of ", count, " parts given)"));
}

}  // namespace

std::string PartName(const PartDataset& p) {
  return absl::StrCat("part ", p.index, " of ", p.count, " (", p.path, ")");
}

absl::StatusOr<PartDataset> ReadPart(const std::string& path, std::optional<uint64_t> count) {
  PartDataset p;
  p.path = path;
  SP_ASSIGN_OR_RETURN(p.manifest, ReadManifest(path));
  absl::StatusOr<writer::PackIdentity> pack =
      writer::PackIdentity::FromJson(p.manifest.pack_json, path);
  if (!pack.ok()) {
    const absl::string_view message = pack.status().message();
    return Damaged({message.data(), message.size()});
  }
  p.pack = *std::move(pack);
  SP_RETURN_IF_ERROR(CheckPartFields(&p, count));
  SP_RETURN_IF_ERROR(CheckShardFiles(p));
  return p;
}

absl::StatusOr<std::vector<const PartDataset*>> CheckParts(const std::vector<PartDataset>& parts) {
  if (parts.empty()) return absl::InvalidArgumentError("merge needs at least one part");
  std::vector<const PartDataset*> sorted;
  for (const PartDataset& p : parts) {
    SP_RETURN_IF_ERROR(ComparePart(parts.front(), p));
    sorted.push_back(&p);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const PartDataset* a, const PartDataset* b) { return a->index < b->index; });
  SP_RETURN_IF_ERROR(CheckCoverage(sorted));
  return sorted;
}

}  // namespace shardpack::pack
