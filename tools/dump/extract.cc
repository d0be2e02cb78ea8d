// sharddump extract: selected records' images as files, plus labels.tsv;
// for a dataset with fields, every field of each record as a file named as
// WebDataset names a sample's members ("<index>_<key>.<field>.<ext>"), each
// record checked first (format/record_check.h).
//
// File names are made from the record's index and its key with every byte
// outside [A-Za-z0-9._-] replaced, so no key can name a path: there is no
// '/', and a name always starts with a digit. Files are created relative to
// a descriptor of DIR with O_EXCL | O_NOFOLLOW: a name already in use is an
// error, or with --overwrite is removed first (a symlink or a hard link
// planted there is replaced, never written through). A failed extract
// removes every file it created (and DIR, when it made it), so that a disk
// that fills leaves DIR as it was and the same command can run again.
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/status_macros.h"
#include "format/record_check.h"
#include "shardpack/file.h"
#include "tools/common/cli.h"
#include "tools/common/escape.h"
#include "tools/common/progress_line.h"
#include "tools/dump/commands.h"
#include "tools/dump/extract_names.h"
#include "tools/dump/field_render.h"
#include "tools/dump/opened_dataset.h"
#include "tools/dump/record_pixels.h"
#include "tools/dump/selection.h"
#include "tools/dump/text.h"

namespace shardpack::dump {
namespace {

constexpr char kLabelsFile[] = "labels.tsv";

// An image as a file: a header (PPM/PGM) and the pixels or JPEG bytes.
struct ImageFile {
  std::string extension;
  std::string header;
  std::span<const uint8_t> body;
};

ImageFile ImageFileOf(const Record& r, std::vector<uint8_t>* buffer) {
  // A record's image, or an image field's (the same rules: docs/cli.md).
  if (r.image.encoding == Encoding::kJpeg) return {"jpg", "", r.payload};
  std::span<const uint8_t> pixels = Interleaved(r, buffer);
  const bool has_pixels = r.image.RawBytes() != 0;
  if (has_pixels && (r.image.channels == 3 || r.image.channels == 1)) {
    const char* magic = r.image.channels == 3 ? "P6" : "P5";
    return {r.image.channels == 3 ? "ppm" : "pgm",
            absl::StrCat(magic, "\n", r.image.width, " ", r.image.height, "\n255\n"), pixels};
  }
  return {"raw", "", pixels};
}

class Extractor {
 public:
  Extractor(const OpenedDataset& ds, std::string output, const common::DirFd& dir,
            bool overwrite, bool verbose)
      : ds_(ds),
        check_(ds.manifest().schema),
        output_(std::move(output)),
        dir_(dir),
        overwrite_(overwrite),
        verbose_(verbose),
        digits_(IndexDigits(ds.records())) {
    tsv_ = "file\tindex\tkey\tlabels\tclasses\tshape\n";
  }

  // Record `local` of the shard at `shard_path` (dataset index `index`),
  // which lives at `loc`.
  absl::Status Write(uint64_t index, const Record& r, std::string_view shard_path, uint64_t local,
                     const backends::RecordLocation& loc) {
    std::string name;
    if (check_.has_fields()) {
      if (absl::Status s = check_.Check(r); !s.ok()) {
        return absl::DataLossError(
            absl::StrCat(RecordWhere(shard_path, loc, local), ": ", s.message()));
      }
      SP_ASSIGN_OR_RETURN(name, WriteFields(index, r.key));
    } else {
      ImageFile image = ImageFileOf(r, &buffer_);
      name = ExtractFileName(index, digits_, r.key, image.extension);
      SP_RETURN_IF_ERROR(WriteFile(name, image.header, image.body));
    }
    absl::StrAppend(&tsv_, name, "\t", index, "\t", cli::EscapeText(r.key), "\t",
                    LabelsText(r.labels), "\t", ClassNames(r.labels), "\t", ShapeText(r.image),
                    "\n");
    ++count_;
    return absl::OkStatus();
  }

  absl::Status WriteLabels() { return WriteFileIn(kLabelsFile, tsv_, {}); }
  uint64_t count() const { return count_; }

  // Removes every file this extract created.
  void RemoveCreated() {
    for (const std::string& name : created_) (void)dir_.RemoveFile(name);
    created_.clear();
  }

 private:
  std::string ClassNames(const Labels& labels) const {
    const auto& fields = ds_.manifest().schema.labels;
    if (labels.empty()) return "-";
    std::vector<std::string> names;
    for (int i = 0; i < labels.size(); ++i) {
      int64_t v = labels[i];
      bool named = static_cast<size_t>(i) < fields.size() && v >= 0 &&
                   static_cast<uint64_t>(v) < fields[i].classes.size();
      names.push_back(named ? cli::EscapeText(fields[i].classes[static_cast<size_t>(v)]) : "-");
    }
    return absl::StrJoin(names, ",");
  }

  absl::Status WriteFile(const std::string& name, std::string_view header,
                         std::span<const uint8_t> body) {
    SP_RETURN_IF_ERROR(WriteFileIn(name, header, body));
    if (verbose_) cli::PrintLine(stderr, absl::StrCat("wrote ", output_, "/", name));
    return absl::OkStatus();
  }

  // Every present field of the record Check just passed, a file each;
  // returns the first image field's file name ("-" when it has none).
  absl::StatusOr<std::string> WriteFields(uint64_t index, std::string_view key) {
    std::string first_image = "-";
    const std::vector<Field>& fields = check_.fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      const Field& f = fields[i];
      const FieldValue& v = check_.values()[i];
      if (!v.present) continue;
      std::string header, extension(FieldFileExtension(f.type));
      std::span<const uint8_t> body = v.bytes;
      if (f.type == FieldType::kImage) {
        ImageFile image = ImageFileOf(Record{key, {}, v.image, v.bytes, {}}, &buffer_);
        header = std::move(image.header);
        extension = std::move(image.extension);
        body = image.body;
      } else if (f.type == FieldType::kArray) {
        header = NpyHeader(f, v.rows);
      } else if (f.type == FieldType::kLabel) {
        header = absl::StrCat(v.label);
      }
      const std::string name =
          ExtractFileName(index, digits_, key, absl::StrCat(f.name, ".", extension));
      SP_RETURN_IF_ERROR(WriteFile(name, header, body));
      if (f.type == FieldType::kImage && first_image == "-") first_image = name;
    }
    return first_image;
  }

  // Creates `name` in DIR afresh: O_EXCL | O_NOFOLLOW make sure the new file
  // is the one written; with --overwrite a file, symlink or hard link
  // already there is unlinked first, without it the name is an error.
  absl::Status WriteFileIn(const std::string& name, std::string_view header,
                           std::span<const uint8_t> body) {
    const std::string shown = absl::StrCat(output_, "/", name);
    if (overwrite_) {
      absl::Status removed = dir_.RemoveFile(name, "replace");
      if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
    }
    absl::StatusOr<common::UniqueFd> fd = dir_.CreateNewFile(name);
    if (absl::IsAlreadyExists(fd.status())) {
      return absl::AlreadyExistsError(
          absl::StrCat(shown, " already exists; use --overwrite to replace it"));
    }
    SP_RETURN_IF_ERROR(fd.status());
    created_.push_back(name);
    absl::Status s = ::shardpack::common::WriteFull(
        fd->get(), shown, {reinterpret_cast<const uint8_t*>(header.data()), header.size()});
    if (s.ok()) s = ::shardpack::common::WriteFull(fd->get(), shown, body);
    absl::Status closed = common::CloseFile(*std::move(fd), shown);
    return s.ok() ? closed : s;
  }

  const OpenedDataset& ds_;
  format::RecordCheck check_;  // of a dataset with fields: each record, its values
  const std::string output_;
  const common::DirFd& dir_;  // output_, open
  const bool overwrite_;
  const bool verbose_;
  const int digits_;
  std::string tsv_;
  std::vector<uint8_t> buffer_;
  std::vector<std::string> created_;  // names in DIR this extract created
  uint64_t count_ = 0;
};

// Opens (creating if needed) the output directory; *created tells whether
// this call made it.
absl::StatusOr<common::DirFd> OpenOutputDirectory(const std::string& output, bool* created) {
  std::error_code ec;
  *created = std::filesystem::create_directories(output, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("create directory ", output, ": ", ec.message()));
  }
  return common::DirFd::Open(output);
}

// Visits the selected records of shard k's local range [begin, end).
absl::Status ExtractRange(const OpenedDataset& ds, IndexRange range, Extractor* x,
                          cli::ProgressLine* progress) {
  for (size_t k = 0; k < ds.num_shards(); ++k) {
    IndexRange part = Intersect(range, ds.first_record(k), ds.first_record(k + 1));
    if (part.size() == 0) continue;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t first = ds.first_record(k);
    SP_RETURN_IF_ERROR(shard->Scan(part.begin - first, part.end - first,
                                   [&](uint64_t i, const Record& r,
                                       const backends::RecordLocation& loc) {
                                     progress->Add(r.payload.size(), 1);
                                     return x->Write(first + i, r, shard->path(), i, loc);
                                   }));
  }
  return absl::OkStatus();
}

absl::Status ExtractIndexes(const OpenedDataset& ds, const std::vector<uint64_t>& indexes,
                            Extractor* x, cli::ProgressLine* progress) {
  for (uint64_t index : indexes) {
    if (index >= ds.records()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--index ", index, ": ", ds.path(), " has ", ds.records(), " records"));
    }
  }
  std::optional<size_t> open_k;
  std::unique_ptr<backends::ShardScanner> shard;
  for (uint64_t index : indexes) {
    auto [k, local] = ds.Locate(index);
    if (open_k != k) {
      SP_ASSIGN_OR_RETURN(shard, ds.OpenShard(k));
      open_k = k;
    }
    SP_RETURN_IF_ERROR(
        shard->Scan(local, local + 1,
                    [&](uint64_t i, const Record& r, const backends::RecordLocation& loc) {
                      progress->Add(r.payload.size(), 1);
                      return x->Write(index, r, shard->path(), i, loc);
                    }));
  }
  return absl::OkStatus();
}

absl::Status ExtractKey(const OpenedDataset& ds, std::string_view key, Extractor* x,
                        cli::ProgressLine* progress) {
  for (size_t k = 0; k < ds.num_shards(); ++k) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<backends::ShardScanner> shard, ds.OpenShard(k));
    const uint64_t first = ds.first_record(k);
    SP_RETURN_IF_ERROR(
        shard->Scan(0, shard->size(),
                    [&](uint64_t i, const Record& r, const backends::RecordLocation& loc) {
                      progress->Add(r.payload.size(), 1);
                      if (r.key != key) return absl::OkStatus();
                      return x->Write(first + i, r, shard->path(), i, loc);
                    }));
  }
  if (x->count() == 0) {
    return absl::NotFoundError(
        absl::StrCat(ds.path(), ": no record has the key '", common::AsAbsl(key), "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunExtract(const ExtractOptions& options) {
  SP_RETURN_IF_ERROR(cli::CheckLocalPath("-o", options.output, cli::LocalPath::kOutput));
  SP_ASSIGN_OR_RETURN(OpenedDataset ds,
                      OpenedDataset::Open(options.path, OpenedDataset::ShardPolicy::kRequireAll));
  std::optional<IndexRange> range;
  if (options.range) {
    SP_ASSIGN_OR_RETURN(range, ResolveRange(*options.range, ds.records()));
  }
  bool created_dir = false;
  SP_ASSIGN_OR_RETURN(const common::DirFd dir, OpenOutputDirectory(options.output, &created_dir));
  Extractor x(ds, options.output, dir, options.overwrite, options.common.verbose > 0);
  uint64_t expected = range ? range->size() : options.key ? ds.records() : options.indexes.size();
  absl::Status s;
  {
    cli::ProgressLine progress("extract", 0, expected, "records", !options.common.quiet);
    if (range) {
      s = ExtractRange(ds, *range, &x, &progress);
    } else if (options.key) {
      s = ExtractKey(ds, *options.key, &x, &progress);
    } else {
      s = ExtractIndexes(ds, options.indexes, &x, &progress);
    }
    if (s.ok()) s = x.WriteLabels();  // last: a DIR without it is not whole
    if (!s.ok()) x.RemoveCreated();
  }
  if (!s.ok()) {
    if (created_dir) (void)common::RemoveDirectory(options.output);
    return s;
  }
  if (!options.common.quiet) {
    cli::PrintLine(stderr, absl::StrCat("extracted ", x.count(), " records to ", options.output));
  }
  return absl::OkStatus();
}

}  // namespace shardpack::dump
