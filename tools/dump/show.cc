// sharddump show: a contact sheet of stored records (codec/contact_sheet.h),
// each tile captioned with the record's index, labels and class name. A
// record with fields shows its first image field (the record's payload); a
// record where that optional field is absent gets an empty tile.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codec/contact_sheet.h"
#include "codec/jpeg_decoder.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "shardpack/file.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/dump/commands.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/opened_view.h"
#include "tools/dump/record_pixels.h"
#include "tools/dump/selection.h"
#include "tools/dump/text.h"

namespace shardpack::dump {
namespace {

// The records shown, ascending: --range, --random N (distinct, drawn with
// --seed), or the first kDefaultShown.
absl::StatusOr<std::vector<uint64_t>> SelectIndexes(const ShowOptions& o, uint64_t records) {
  std::vector<uint64_t> indexes;
  if (o.random) {
    if (*o.random == 0) return absl::InvalidArgumentError("--random 0: show at least one record");
    if (*o.random > records) {
      return absl::InvalidArgumentError(
          absl::StrCat("--random ", *o.random, ": the dataset has ", records, " records"));
    }
    // Floyd's sampling: N distinct indexes in N draws, whatever N / records.
    std::mt19937_64 rng(o.seed);
    absl::flat_hash_set<uint64_t> chosen;
    for (uint64_t j = records - *o.random; j < records; ++j) {
      uint64_t t = std::uniform_int_distribution<uint64_t>(0, j)(rng);
      chosen.insert(chosen.contains(t) ? j : t);
    }
    indexes.assign(chosen.begin(), chosen.end());
    std::sort(indexes.begin(), indexes.end());
    return indexes;
  }
  IndexRange range{0, std::min<uint64_t>(records, kDefaultShown)};
  if (o.range) {
    SP_ASSIGN_OR_RETURN(range, ResolveRange(*o.range, records));
  }
  if (range.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.range ? absl::StrCat("--range ", *o.range) : std::string("the dataset"),
                     " selects no records (the dataset has ", records, ")"));
  }
  for (uint64_t i = range.begin; i < range.end; ++i) indexes.push_back(i);
  return indexes;
}

class SheetFiller {
 public:
  // `path` names the records in messages; `schema` gives the class names.
  SheetFiller(const std::string& path, const Schema& schema, codec::ContactSheet* sheet)
      : path_(path), sheet_(sheet), may_lack_image_(!schema.fields.empty()) {
    for (const LabelField& field : schema.labels) {
      std::vector<std::string> names;
      for (const std::string& name : field.classes) names.push_back(cli::EscapeText(name));
      classes_.push_back(std::move(names));
    }
  }

  absl::Status Add(uint64_t index, const Record& r) {
    // An absent first image field leaves a raw 0x0x0 payload (docs/format.md
    // 17.2): one pixel of the sheet's background fills the tile.
    static constexpr uint8_t kBlank = codec::kSheetBackground;
    absl::StatusOr<codec::PixelView> pixels =
        may_lack_image_ && r.image.encoding == Encoding::kRaw && r.image.channels == 0
            ? codec::PixelView{&kBlank, 1, 1, 1}
            : RecordPixels(r, &decoder_, &buffer_);
    absl::Status s = pixels.status();
    if (s.ok()) {
      const std::span<const int64_t> labels(r.labels.begin(), r.labels.end());
      const std::string line1 = codec::IndexLabelCaption(index, labels);
      const std::string line2 = codec::ClassCaption(labels, classes_);
      const std::string_view caption[] = {line1, line2};
      s = sheet_->Draw(next_++, *pixels, caption);
    }
    if (s.ok()) return s;
    return common::WithMessage(s, absl::StrCat(path_, ": record ", index, " (key '",
                                              common::AsAbsl(r.key), "'): ", s.message()));
  }

 private:
  const std::string& path_;
  codec::ContactSheet* sheet_;
  std::vector<std::vector<std::string>> classes_;  // escaped as `ls` shows them
  codec::JpegDecoder decoder_;
  std::vector<uint8_t> buffer_;
  size_t next_ = 0;
  const bool may_lack_image_;  // a dataset with fields
};

// A dataset with fields but no image field has nothing to show.
absl::Status CheckHasImage(const std::string& path, const Schema& schema) {
  if (schema.fields.empty()) return absl::OkStatus();
  for (const Field& f : schema.fields) {
    if (f.type == FieldType::kImage) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": its records have no image field to show"));
}

// Visits the (ascending) indexes, one Scan per run of consecutive ones.
absl::Status FillSheet(const OpenedDataset& ds, const std::vector<uint64_t>& indexes,
                       SheetFiller* filler) {
  size_t a = 0;
  while (a < indexes.size()) {
    auto [k, local] = ds.Locate(indexes[a]);
    const uint64_t shard_end = ds.first_record(k + 1);
    size_t b = a + 1;
    while (b < indexes.size() && indexes[b] == indexes[b - 1] + 1 && indexes[b] < shard_end) ++b;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t first = ds.first_record(k);
    SP_RETURN_IF_ERROR(shard->Scan(local, local + (b - a),
                                   [&](uint64_t i, const Record& r) {
                                     return filler->Add(first + i, r);
                                   }));
    a = b;
  }
  return absl::OkStatus();
}

// The same over a view: one Scan per run of consecutive view indexes.
absl::Status FillViewSheet(const OpenedView& view, const std::vector<uint64_t>& indexes,
                           SheetFiller* filler) {
  size_t a = 0;
  while (a < indexes.size()) {
    size_t b = a + 1;
    while (b < indexes.size() && indexes[b] == indexes[b - 1] + 1) ++b;
    SP_RETURN_IF_ERROR(view.Scan(indexes[a], indexes[b - 1] + 1,
                                 [&](const ViewRecordPlace& p, const Record& r) {
                                   return filler->Add(p.index, r);
                                 }));
    a = b;
  }
  return absl::OkStatus();
}

absl::Status WriteSheet(const ShowOptions& options, const codec::ContactSheet& sheet,
                        size_t shown) {
  SP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                      codec::EncodeForPath(sheet.view(), options.output));
  SP_RETURN_IF_ERROR(WriteFileAtomically(
      options.output, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
      options.overwrite ? AtomicFile::Existing::kReplace : AtomicFile::Existing::kRefuse));
  if (!options.common.quiet) {
    cli::PrintLine(stderr, absl::StrCat("wrote ", shown, " records as a ", sheet.view().width,
                                        "x", sheet.view().height, " sheet to ", options.output));
  }
  return absl::OkStatus();
}

absl::Status ShowView(const ShowOptions& options, dataset::DatasetView view) {
  SP_ASSIGN_OR_RETURN(OpenedView opened, OpenedView::Open(std::move(view)));
  SP_RETURN_IF_ERROR(CheckHasImage(opened.path(), opened.view().schema));
  SP_ASSIGN_OR_RETURN(std::vector<uint64_t> indexes, SelectIndexes(options, opened.records()));
  SP_ASSIGN_OR_RETURN(codec::ContactSheet sheet,
                      codec::ContactSheet::Create(indexes.size(), {options.tile, options.columns}));
  SheetFiller filler(opened.path(), opened.view().schema, &sheet);
  SP_RETURN_IF_ERROR(FillViewSheet(opened, indexes, &filler));
  return WriteSheet(options, sheet, indexes.size());
}

}  // namespace

absl::Status RunShow(const ShowOptions& options) {
  SP_RETURN_IF_ERROR(cli::CheckLocalPath("-o", options.output, cli::LocalPath::kOutput));
  SP_RETURN_IF_ERROR(codec::CheckSheetPath(options.output));
  SP_RETURN_IF_ERROR(cli::CheckOutputFile(options.output, options.overwrite));
  SP_ASSIGN_OR_RETURN(std::optional<dataset::DatasetView> view, OpenIfView(options.path));
  if (view) return ShowView(options, std::move(*view));
  SP_ASSIGN_OR_RETURN(OpenedDataset ds,
                      OpenedDataset::Open(options.path, OpenedDataset::ShardPolicy::kRequireAll));
  SP_RETURN_IF_ERROR(CheckHasImage(ds.path(), ds.manifest().schema));
  SP_ASSIGN_OR_RETURN(std::vector<uint64_t> indexes, SelectIndexes(options, ds.records()));
  SP_ASSIGN_OR_RETURN(codec::ContactSheet sheet,
                      codec::ContactSheet::Create(indexes.size(), {options.tile, options.columns}));
  SheetFiller filler(ds.path(), ds.manifest().schema, &sheet);
  SP_RETURN_IF_ERROR(FillSheet(ds, indexes, &filler));
  return WriteSheet(options, sheet, indexes.size());
}

}  // namespace shardpack::dump
