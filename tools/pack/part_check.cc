#include "tools/pack/part_check.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shardpack/dataset.h"
#include "shardpack/file.h"
#include "format/status_macros.h"
#include "tools/pack/pack.h"
#include "tools/pack/scheduler_part.h"
#include "format/errors.h"

namespace shardpack::pack {
namespace {

using Json = nlohmann::ordered_json;

absl::Status NotAPart(const std::string& path, std::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": not a part merge can check: ", absl::string_view(why.data(), why.size())));
}

absl::Status Damaged(const std::string& path, std::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(path, ": ",
                                                    absl::string_view(what.data(), what.size()),
                                                    " (a damaged or edited part manifest)"));
}

// obj[key], or null when `obj` is not an object or lacks `key` (a const
// nlohmann operator[] must not be asked for a key that is not there). The
// key is a std::string: a manifest's key may hold NUL, which a char* would
// cut.
const Json& Field(const Json& obj, const std::string& key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// A value for a message: its JSON, cut short (a manifest may hold anything).
std::string Shown(const Json& v) {
  std::string text = v.dump();
  if (text.size() > 80) text = text.substr(0, 80) + "...";
  return text;
}

// pack.part and pack.input, checked for presence, type and bounds.
absl::Status ReadPartFields(PartDataset* p) {
  const Json& pack = p->pack;
  if (pack.contains("merged")) return NotAPart(p->path, "it is a merged dataset, not a part");
  const Json& part = Field(pack, "part");
  const Json& input = Field(pack, "input");
  if (!part.is_object() || !input.is_object()) {
    return NotAPart(p->path,
                    "its manifest's \"pack\" records no part {index, count} and input "
                    "(a conversion of many datasets, or packed by an older shardpack): pack it "
                    "again with --part");
  }
  const Json& index = Field(part, "index");
  const Json& count = Field(part, "count");
  if (!count.is_number_unsigned() || count.get<uint64_t>() < 1 ||
      count.get<uint64_t>() > kMaxParts) {
    return Damaged(p->path,
                   absl::StrCat("pack.part.count ", Shown(count), " is not in 1..", kMaxParts));
  }
  p->count = count.get<uint64_t>();
  if (!index.is_number_unsigned() || index.get<uint64_t>() < 1 ||
      index.get<uint64_t>() > p->count) {
    return Damaged(p->path,
                   absl::StrCat("pack.part.index ", Shown(index), " is not in 1..", p->count));
  }
  p->index = index.get<uint64_t>();
  const Json& items = Field(input, "items");
  if (!Field(input, "fingerprint").is_string() || !items.is_number_unsigned()) {
    return Damaged(p->path, "pack.input has no fingerprint string or items count");
  }
  const uint64_t n = items.get<uint64_t>();
  const uint64_t share = PartBegin(n, p->index, static_cast<uint32_t>(p->count)) -
                         PartBegin(n, p->index - 1, static_cast<uint32_t>(p->count));
  if (p->manifest.records() > share) {
    return Damaged(p->path,
                   absl::StrCat(p->manifest.records(), " records, but part ", p->index, " of ",
                                p->count, " of ", n, " inputs holds at most ", share));
  }
  return absl::OkStatus();
}

// Each shard is there, a regular file of the manifest's size: a missing,
// truncated or replaced shard is caught here, before anything is linked.
absl::Status CheckShardFiles(const PartDataset& p) {
  for (const ShardEntry& s : p.manifest.shards) {
    const std::string file = (std::filesystem::path(p.path) / s.path).string();
    struct stat st;
    if (::lstat(file.c_str(), &st) != 0) return internal::ErrnoError("stat", file, errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(file, ": not a regular file"));
    }
    if (static_cast<uint64_t>(st.st_size) != s.bytes) {
      return absl::FailedPreconditionError(absl::StrCat(file, ": ", st.st_size,
                                                        " bytes, but the part's manifest says ",
                                                        s.bytes, " (damaged or replaced)"));
    }
  }
  return absl::OkStatus();
}

// The pack object as merge compares it: without "part", without what
// `convert` adds (a part converted to another backend holds the same
// records), and without the source's own paths (an input mounted elsewhere
// on another machine is the same input: the fingerprint says so).
Json Comparable(const Json& pack) {
  Json j = pack;
  for (const char* key : {"part", "converted_from", "converted_by"}) j.erase(key);
  if (j.contains("source") && j["source"].is_object()) {
    j["source"].erase("root");
    j["source"].erase("list");
  }
  return j;
}

// The first field (a dotted path) where `a` and `b` differ, "" when equal.
std::string FirstDifference(const Json& a, const Json& b, const std::string& prefix) {
  if (!a.is_object() || !b.is_object()) return a == b ? "" : prefix;
  for (const Json* side : {&a, &b}) {
    for (auto it = side->begin(); it != side->end(); ++it) {
      const Json& x = Field(a, it.key());
      const Json& y = Field(b, it.key());
      const std::string name = prefix.empty() ? it.key() : absl::StrCat(prefix, ".", it.key());
      if (std::string d = FirstDifference(x, y, name); !d.empty()) return d;
    }
  }
  return "";
}

const Json& At(const Json& j, const std::string& dotted) {
  const Json* at = &j;
  for (absl::string_view key : absl::StrSplit(dotted, '.')) {
    at = &Field(*at, std::string(key));
  }
  return *at;
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
  const Json a = Comparable(p.pack), b = Comparable(ref.pack);
  const std::string field = FirstDifference(a, b, "");
  if (field.empty()) return absl::OkStatus();
  const std::string what = field.starts_with("input") ? "was packed from other input than"
                                                      : "was packed with other parameters than";
  return absl::FailedPreconditionError(absl::StrCat(PartName(p), " ", what, " ", PartName(ref),
                                                    ": ", field, " is ", Shown(At(a, field)),
                                                    ", not ", Shown(At(b, field))));
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

absl::StatusOr<PartDataset> ReadPart(const std::string& path) {
  PartDataset p;
  p.path = path;
  SP_ASSIGN_OR_RETURN(p.manifest, ReadManifest(path));
  p.pack = Json::parse(p.manifest.pack_json, nullptr, /*allow_exceptions=*/false);
  if (!p.pack.is_object()) return NotAPart(path, "its manifest's \"pack\" is not an object");
  SP_RETURN_IF_ERROR(ReadPartFields(&p));
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
