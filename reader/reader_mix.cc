#include "reader/reader_mix.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "dataset/view.h"

namespace shardpack::reader {
namespace {

std::string SourceName(const ReaderOptions& o, size_t i) {
  return absl::StrCat("sources[", i, "] ('", common::Excerpt(o.sources[i].path), "')");
}

// Splits `left` samples among the weighted sources in proportion to their
// weights: floors, then one more for the largest fractions.
void ShareByWeight(const ReaderOptions& o, uint64_t left, std::vector<uint64_t>& counts) {
  double top = 0, sum = 0;
  for (const MixSource& m : o.sources) top = std::max(top, m.weight);
  for (const MixSource& m : o.sources) sum += m.weight / top;  // no overflow: each <= 1
  std::vector<std::pair<double, size_t>> fraction;
  uint64_t given = 0;
  for (size_t s = 0; s < o.sources.size(); ++s) {
    if (o.sources[s].weight == 0) continue;
    const double exact = double(left) * (o.sources[s].weight / top) / sum;
    counts[s] = std::min<uint64_t>(left, static_cast<uint64_t>(std::floor(exact)));
    given += counts[s];
    fraction.push_back({-(exact - std::floor(exact)), s});
  }
  std::sort(fraction.begin(), fraction.end());
  for (size_t i = 0; given < left && i < fraction.size(); ++i, ++given) ++counts[fraction[i].second];
}

// Each source's limit, and the repeat and choose sources' counts.
absl::Status FixedCounts(const ReaderOptions& o, const std::vector<uint64_t>& records,
                         std::vector<uint64_t>& counts) {
  for (size_t s = 0; s < o.sources.size(); ++s) {
    const MixSource& m = o.sources[s];
    const uint64_t limit = records[s] * kMaxMixRepeat;  // records < 2^53: no overflow
    if (records[s] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(SourceName(o, s), " holds no record"));
    }
    if (m.repeat != 0) {
      const double c = std::round(m.repeat * double(records[s]));
      if (c < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            SourceName(o, s), ": repeat ", m.repeat, " of its ", records[s],
            " records draws no sample an epoch"));
      }
      counts[s] = static_cast<uint64_t>(c);
    } else if (m.choose != 0) {
      if (m.choose > limit) {
        return absl::InvalidArgumentError(absl::StrCat(
            SourceName(o, s), ": choose ", m.choose, " is more than ", kMaxMixRepeat,
            " times its ", records[s], " records"));
      }
      counts[s] = m.choose;
    }
  }
  return absl::OkStatus();
}

std::string FieldsText(const std::vector<LabelField>& fields) {
  std::string out;
  for (const LabelField& f : fields) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "'", common::Excerpt(f.name), "' (",
                    f.classes.size(), " classes)");
  }
  return out.empty() ? "none" : out;
}

// A source opened: its view (a plain dataset is a view of everything)
// and how its labels become the mixture's.
struct OpenedSource {
  dataset::DatasetView view;
  bool schema_known = true;  // a lone `.shard` file carries none
  LabelMapping labels;
};

// Every source's images as source 0's (where the schema says them): one
// transform serves them all.
absl::Status CheckImages(const ReaderOptions& o, const std::vector<OpenedSource>& sources) {
  const ImageInfo* first = nullptr;
  size_t at = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (!sources[s].schema_known) continue;
    const ImageInfo& image = sources[s].view.schema.image;
    if (first == nullptr) {
      first = &image;
      at = s;
    } else if (!(image == *first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          SourceName(o, s), " holds images of another kind than ", SourceName(o, at), " (",
          dataset::ImageShapeText(image), " against ", dataset::ImageShapeText(*first),
          "): a mixture's sources share one image schema"));
    }
  }
  return absl::OkStatus();
}

// A field as messages give it: 'boxes' (f32[n,4]).
std::string FieldText(const Field& f) {
  return absl::StrCat("'", f.name, "' (", FieldTypeText(f), ")");
}

// The same field to a batch: name, type and shape (a label's classes are
// the label space's to reconcile; optional or not, absence is told).
bool SameField(const Field& a, const Field& b) {
  return a.name == b.name && a.type == b.type && a.image == b.image &&
         (a.type != FieldType::kArray || (a.dtype == b.dtype && a.shape == b.shape));
}

// With fields, every source's as source 0's: one batch layout serves them
// all. Sources of images and labels only are CheckImages' and
// CheckLabelFields' to compare.
absl::Status CheckFields(const ReaderOptions& o, const std::vector<OpenedSource>& sources) {
  if (std::ranges::none_of(sources, [](const OpenedSource& s) { return !s.view.schema.fields.empty(); })) {
    return absl::OkStatus();
  }
  const std::vector<Field> first = FieldsOf(sources[0].view.schema);
  for (size_t s = 1; s < sources.size(); ++s) {
    const std::vector<Field> mine = FieldsOf(sources[s].view.schema);
    for (size_t i = 0; i < std::max(first.size(), mine.size()); ++i) {
      if (i < first.size() && i < mine.size() && SameField(first[i], mine[i])) continue;
      auto say = [i](const std::vector<Field>& f) {
        return i < f.size() ? absl::StrCat("field ", i, " ", FieldText(f[i]))
                            : absl::StrCat("no field ", i);
      };
      return absl::InvalidArgumentError(absl::StrCat(
          SourceName(o, s), " has ", say(mine), ", ", SourceName(o, 0), " ", say(first),
          ": a mixture's sources have the same fields (names, types, shapes)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLabelFields(const ReaderOptions& o, const std::vector<OpenedSource>& sources) {
  const std::vector<LabelField>& first = sources[0].view.schema.labels;
  for (size_t s = 1; s < sources.size(); ++s) {
    const std::vector<LabelField>& mine = sources[s].view.schema.labels;
    const bool fields_differ = mine.size() != first.size();
    if (fields_differ || (o.label_space == LabelSpace::kShared && mine != first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          SourceName(o, s), " labels otherwise than ", SourceName(o, 0), ": label fields ",
          FieldsText(mine), " against ", FieldsText(first),
          fields_differ ? "; a mixture's sources have as many label fields"
                        : "; set label_space to offset (labels numbered on from source to "
                          "source) or source (the source's index as one more label)"));
    }
  }
  return absl::OkStatus();
}

// The mixture's label fields under o.label_space, each source's mapping to
// them set.
absl::StatusOr<Schema> MixSchema(const ReaderOptions& o, std::vector<OpenedSource>& sources) {
  SP_RETURN_IF_ERROR(CheckLabelFields(o, sources));
  Schema schema = sources[0].view.schema;
  for (OpenedSource& src : sources) src.labels.map = src.view.label_map;
  if (o.label_space == LabelSpace::kOffset) {
    std::vector<int64_t> offset(schema.labels.size(), 0);
    for (size_t s = 0; s < sources.size(); ++s) {
      const std::vector<LabelField>& mine = sources[s].view.schema.labels;
      for (size_t f = 0; f < mine.size(); ++f) {
        if (mine[f].classes.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              SourceName(o, s), ": label field '", common::Excerpt(mine[f].name),
              "' names no class, so label_space offset has no count to number on from"));
        }
        if (s > 0) {
          schema.labels[f].classes.insert(schema.labels[f].classes.end(),
                                          mine[f].classes.begin(), mine[f].classes.end());
        }
      }
      sources[s].labels.offset = offset;
      for (size_t f = 0; f < mine.size(); ++f) offset[f] += mine[f].classes.size();
    }
  }
  if (o.label_space == LabelSpace::kSource) {
    LabelField source{"source", {}};
    for (size_t s = 0; s < sources.size(); ++s) {
      source.classes.push_back(o.sources[s].path);
      sources[s].labels.source = static_cast<int64_t>(s);
    }
    schema.labels.push_back(std::move(source));
  }
  return schema;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> MixCounts(const ReaderOptions& o,
                                                const std::vector<uint64_t>& records) {
  std::vector<uint64_t> counts(o.sources.size(), 0);
  SP_RETURN_IF_ERROR(FixedCounts(o, records, counts));
  uint64_t fixed = 0, all = 0;
  bool weighted = false;
  for (size_t s = 0; s < counts.size(); ++s) {
    fixed += counts[s];
    all += records[s];
    weighted = weighted || o.sources[s].weight != 0;
  }
  const uint64_t epoch = o.epoch_samples != 0 ? o.epoch_samples : all;
  if (!weighted) {
    if (o.epoch_samples != 0 && o.epoch_samples != fixed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "epoch_samples ", o.epoch_samples, ", but the sources draw ", fixed,
          " an epoch (their repeat and choose), and none has a weight to take the rest"));
    }
    return counts;
  }
  if (epoch <= fixed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epoch_samples ", epoch, " leaves no sample for the weighted sources: the repeat and "
        "choose sources draw ", fixed));
  }
  ShareByWeight(o, epoch - fixed, counts);
  for (size_t s = 0; s < counts.size(); ++s) {
    if (o.sources[s].weight == 0) continue;
    if (counts[s] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          SourceName(o, s), ": weight ", o.sources[s].weight, " gives it no sample of the ",
          epoch - fixed, " the weighted sources share an epoch"));
    }
    if (counts[s] > records[s] * kMaxMixRepeat) {
      return absl::InvalidArgumentError(absl::StrCat(
          SourceName(o, s), ": weight ", o.sources[s].weight, " draws ", counts[s],
          " samples an epoch, more than ", kMaxMixRepeat, " times its ", records[s], " records"));
    }
  }
  return counts;
}

uint64_t MemberFingerprint(const StreamMember& m, const std::vector<ReadUnit>& units) {
  uint64_t h = ManifestFingerprint(m.named->manifest);
  if (!m.named->manifest.shards.empty()) return h;
  for (const ReadUnit& u : units) h = common::Draw(h, u.first_record, u.records, u.bytes);
  return h;
}

// The index of source s's first member (a view's datasets are several).
size_t FirstMember(const StreamDataset& d, uint32_t s) {
  size_t first = 0;
  while (d.members[first].source != s) ++first;
  return first;
}

// Source s's units (those of its first member up to the next source's),
// records numbered from 0 within it.
std::vector<ReadUnit> SourceUnits(const StreamDataset& d, uint32_t s) {
  const size_t first = FirstMember(d, s);
  size_t next = first;
  while (next < d.members.size() && d.members[next].source == s) ++next;
  const size_t end = next < d.members.size() ? d.members[next].first_unit : d.units().size();
  std::vector<ReadUnit> units(d.units().begin() + d.members[first].first_unit,
                              d.units().begin() + end);
  for (ReadUnit& u : units) u.first_record -= d.members[first].first_record;
  return units;
}

// Source s's records: its view's selection (all of them for a plain path).
// DataLossError when its datasets no longer hold what the view counted.
absl::StatusOr<EpochRest> Selection(const ReaderOptions& o, size_t s, const OpenedSource& src,
                                    const std::vector<ReadUnit>& units) {
  EpochRest all = AllOwed(units);
  if (src.view.selected.empty()) return all;
  if (all.count != src.view.base_records) {
    return absl::DataLossError(absl::StrCat(
        SourceName(o, s), ": its datasets hold ", all.count, " records, but the view counted ",
        src.view.base_records));
  }
  return EpochRest{src.view.selected, src.view.records, 0};
}

absl::StatusOr<std::vector<OpenedSource>> OpenSources(
    const ReaderOptions& o, const std::shared_ptr<remote::Storage>& storage,
    std::vector<StreamMember>* members) {
  std::vector<OpenedSource> sources(o.sources.size());
  for (size_t s = 0; s < sources.size(); ++s) {
    SP_ASSIGN_OR_RETURN(sources[s].view, dataset::OpenView(o.sources[s].path, storage));
    for (std::shared_ptr<const dataset::NamedPath>& named : sources[s].view.datasets) {
      sources[s].schema_known = sources[s].schema_known && named->schema_known();
      StreamMember m;
      m.named = std::move(named);
      m.source = static_cast<uint32_t>(s);
      members->push_back(std::move(m));
    }
    sources[s].view.datasets.clear();
  }
  SP_RETURN_IF_ERROR(CheckFields(o, sources));
  SP_RETURN_IF_ERROR(CheckImages(o, sources));
  return sources;
}

absl::StatusOr<OpenedMix> OpenMix(const ReaderOptions& o,
                                  const std::shared_ptr<remote::Storage>& storage) {
  const size_t n = o.sources.size();
  std::vector<StreamMember> members;
  SP_ASSIGN_OR_RETURN(std::vector<OpenedSource> sources, OpenSources(o, storage, &members));
  OpenedMix mix;
  SP_ASSIGN_OR_RETURN(mix.schema, MixSchema(o, sources));
  for (StreamMember& m : members) m.labels = sources[m.source].labels;
  SP_ASSIGN_OR_RETURN(mix.dataset, OpenStreamMembers(std::move(members), o.io, o.shuffle_bytes));
  mix.dataset.sources = static_cast<uint32_t>(n);
  std::vector<uint64_t> records(n, 0);
  for (size_t s = 0; s < n; ++s) {
    MixSourcePlan plan;
    plan.units = SourceUnits(mix.dataset, static_cast<uint32_t>(s));
    SP_ASSIGN_OR_RETURN(plan.selection, Selection(o, s, sources[s], plan.units));
    plan.first_unit = mix.dataset.members[FirstMember(mix.dataset, uint32_t(s))].first_unit;
    records[s] = plan.selection.count;
    mix.plans.push_back(std::move(plan));
  }
  SP_ASSIGN_OR_RETURN(std::vector<uint64_t> counts, MixCounts(o, records));
  mix.fingerprint = common::Draw(common::kStreamMixSource, n, static_cast<uint64_t>(o.label_space));
  for (size_t s = 0; s < n; ++s) {
    mix.plans[s].per_epoch = counts[s];
    mix.sources.push_back({o.sources[s].path, records[s], counts[s], 0});
    const uint64_t source = sources[s].view.is_view
                                ? sources[s].view.fingerprint
                                : MemberFingerprint(
                                      mix.dataset.members[FirstMember(mix.dataset, uint32_t(s))],
                                      mix.plans[s].units);
    mix.fingerprint = common::Draw(mix.fingerprint, source, counts[s], s);
  }
  return mix;
}

}  // namespace shardpack::reader
