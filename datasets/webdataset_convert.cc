#include "datasets/webdataset_convert.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "datasets/npy.h"
#include "datasets/webdataset.h"
#include "shardpack/file.h"

namespace shardpack::datasets {
namespace {

using common::AsAbsl;
using common::Excerpt;

// The type text an extension gets by its last part (see the header), or
// "npy" for an array whose dtype and shape the files tell.
std::string_view DefaultType(std::string_view ext) {
  const size_t dot = ext.rfind('.');
  std::string_view last = dot == std::string_view::npos ? ext : ext.substr(dot + 1);
  for (std::string_view e : {"jpg", "jpeg"}) {
    if (last == e) return "jpeg";
  }
  for (std::string_view e : {"png", "webp", "bmp", "ppm", "pgm", "pbm", "pnm", "tif", "tiff"}) {
    if (last == e) return "raw";
  }
  for (std::string_view e : {"cls", "cls2", "index", "label", "target"}) {
    if (last == e) return "label";
  }
  for (std::string_view e : {"txt", "text", "caption"}) {
    if (last == e) return "string";
  }
  if (last == "json") return "json";
  if (last == "npy") return "npy";
  return "bytes";
}

// --field EXT=NAME[:TYPE]
struct Override {
  std::string name;
  std::string type;  // empty: the default
};

absl::StatusOr<absl::flat_hash_map<std::string, Override>> ParseOverrides(
    const std::vector<std::string>& fields) {
  absl::flat_hash_map<std::string, Override> out;
  for (const std::string& f : fields) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--field '", Excerpt(f), "': expected EXT=NAME or EXT=NAME:TYPE"));
    }
    std::string ext = absl::AsciiStrToLower(f.substr(0, eq));
    std::string_view rest = std::string_view(f).substr(eq + 1);
    const size_t colon = rest.find(':');
    Override o{std::string(rest.substr(0, colon)),
               colon == std::string_view::npos ? "" : std::string(rest.substr(colon + 1))};
    if (!out.emplace(ext, std::move(o)).second) {
      return absl::InvalidArgumentError(absl::StrCat("--field: extension '", ext, "' given twice"));
    }
  }
  return out;
}

// What the inference saw of one extension.
struct Seen {
  std::string ext;
  uint64_t samples = 0;
  bool npy = false;
  ArrayDType dtype = ArrayDType::kU8;
  std::vector<uint64_t> shape;  // of the first; shape[0] set to 0 once it varies
};

absl::Status SeeNpy(const TarSample& sample, const SampleFile& file, ByteSpan data, Seen* seen,
                    std::string_view tar) {
  SP_ASSIGN_OR_RETURN(NpyArray a, ParseNpy(data, absl::StrCat(AsAbsl(tar), ": sample '", Excerpt(sample.key),
                                                               "' ", file.ext)));
  if (a.shape.empty()) a.shape = {1};
  if (seen->samples == 0) {
    seen->dtype = a.dtype;
    seen->shape = a.shape;
    return absl::OkStatus();
  }
  if (a.dtype != seen->dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        AsAbsl(tar), ": sample '", Excerpt(sample.key), "' ", file.ext, ": an array of ",
        AsAbsl(ArrayDTypeName(a.dtype)), " after arrays of ", AsAbsl(ArrayDTypeName(seen->dtype)),
        " (--field ", file.ext, "=NAME:TYPE says which)"));
  }
  if (a.shape.size() != seen->shape.size() ||
      !std::equal(a.shape.begin() + 1, a.shape.end(), seen->shape.begin() + 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        AsAbsl(tar), ": sample '", Excerpt(sample.key), "' ", file.ext,
        ": arrays of shapes that differ past their first dimension (--field ", file.ext,
        "=NAME:TYPE says which)"));
  }
  if (a.shape[0] != seen->shape[0]) seen->shape[0] = 0;
  return absl::OkStatus();
}

std::string ArrayText(const Seen& s) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < s.shape.size(); ++d) {
    dims.push_back(d == 0 && s.shape[0] == 0 ? "n" : absl::StrCat(s.shape[d]));
  }
  return absl::StrCat(AsAbsl(ArrayDTypeName(s.dtype)), "[", absl::StrJoin(dims, ","), "]");
}

// A label's text: a decimal integer, whitespace around it allowed.
absl::StatusOr<int64_t> ParseLabel(ByteSpan data) {
  std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  int64_t v = 0;
  if (!absl::SimpleAtoi(AsAbsl(text), &v)) {
    return absl::InvalidArgumentError(absl::StrCat("'", Excerpt(text), "' is not an integer"));
  }
  return v;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenTar(const WebDatasetOptions& options,
                                                         const std::string& tar) {
  return options.open ? options.open(tar) : OpenMappedFile(tar);
}

}  // namespace

absl::StatusOr<std::vector<WebDatasetColumn>> InferWebDatasetColumns(
    const WebDatasetOptions& options) {
  if (options.tars.empty()) return absl::InvalidArgumentError("webdataset: no tar files given");
  SP_ASSIGN_OR_RETURN(auto overrides, ParseOverrides(options.fields));
  absl::flat_hash_set<std::string> drop;
  for (const std::string& d : options.drop) drop.insert(absl::AsciiStrToLower(d));
  const std::string& tar = options.tars[0];
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenTar(options, tar));
  TarStream stream(*file);
  TarSamples samples(&stream);
  TarSample sample;
  std::vector<Seen> seen;
  absl::flat_hash_map<std::string, size_t> index;
  uint64_t n = 0;
  while (n < options.infer_samples) {
    SP_ASSIGN_OR_RETURN(bool more, samples.Next(&sample));
    if (!more) break;
    ++n;
    for (size_t i = 0; i < sample.size; ++i) {
      const SampleFile& f = sample.files[i];
      if (drop.contains(f.ext)) continue;
      auto [it, added] = index.emplace(f.ext, seen.size());
      if (added) {
        seen.emplace_back();
        seen.back().ext = f.ext;
      }
      Seen& s = seen[it->second];
      auto o = overrides.find(f.ext);
      const bool typed = o != overrides.end() && !o->second.type.empty();
      if (!typed && DefaultType(f.ext) == "npy") {
        s.npy = true;
        SP_RETURN_IF_ERROR(SeeNpy(sample, f, samples.Data(f), &s, tar));
      }
      ++s.samples;
    }
  }
  SP_RETURN_IF_ERROR(file->CheckIntact());
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(tar, ": no WebDataset samples"));
  for (const auto& [ext, o] : overrides) {
    if (!index.contains(ext)) {
      return absl::InvalidArgumentError(absl::StrCat("--field ", ext, "=", o.name, ": no sample of ",
                                                     tar, "'s first ", n, " has a ." , ext));
    }
  }
  std::vector<WebDatasetColumn> columns;
  for (const Seen& s : seen) {
    auto o = overrides.find(s.ext);
    std::string name = o != overrides.end() ? o->second.name : s.ext;
    std::string type = o != overrides.end() && !o->second.type.empty() ? o->second.type
                       : s.npy ? ArrayText(s)
                               : std::string(DefaultType(s.ext));
    if (s.samples < n && !type.ends_with("?")) type += "?";
    absl::StatusOr<Field> field = ParseFieldText(name, type);
    if (!field.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(tar, ": extension '", Excerpt(s.ext), "': ",
                                                     field.status().message()));
    }
    columns.push_back({s.ext, *std::move(field)});
  }
  return columns;
}

namespace {

// Turns one sample's files into the columns' values.
class SampleValues {
 public:
  SampleValues(const std::vector<WebDatasetColumn>& columns, const WebDatasetOptions& options,
               std::unique_ptr<ImageConverter> images)
      : columns_(columns), images_(std::move(images)), values_(columns.size()),
        storage_(columns.size()) {
    for (size_t c = 0; c < columns.size(); ++c) index_[columns[c].ext] = c;
    for (const std::string& d : options.drop) drop_.insert(absl::AsciiStrToLower(d));
  }

  std::span<const FieldValue> values() const { return values_; }

  // The sample's values; an error naming the field (not the sample: the
  // writer adds it) for what its field cannot hold.
  absl::Status Fill(const TarSample& sample, const TarSamples& samples) {
    for (FieldValue& v : values_) v = FieldValue{};
    for (size_t i = 0; i < sample.size; ++i) {
      const SampleFile& f = sample.files[i];
      if (drop_.contains(f.ext)) continue;
      auto it = index_.find(f.ext);
      if (it == index_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a .", Excerpt(f.ext), " file, which no field holds (the fields come from the first "
            "samples of the first tar: --field or --drop it)"));
      }
      const Field& field = columns_[it->second].field;
      absl::Status s = Value(field, samples.Data(f), it->second);
      const std::string named = absl::StrCat("field '", field.name, "': ");
      if (!s.ok() && !absl::StartsWith(s.message(), named)) {  // the converter names it
        return common::WithMessage(s, absl::StrCat(named, s.message()));
      }
      SP_RETURN_IF_ERROR(s);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Value(const Field& field, ByteSpan data, size_t c) {
    FieldValue& v = values_[c];
    switch (field.type) {
      case FieldType::kImage: {
        absl::StatusOr<FieldValue> image = images_->FromFile(field, data, &storage_[c]);
        if (!image.ok()) return image.status();
        v = *image;
        break;
      }
      case FieldType::kLabel: {
        SP_ASSIGN_OR_RETURN(v.label, ParseLabel(data));
        break;
      }
      case FieldType::kArray: {
        SP_ASSIGN_OR_RETURN(NpyArray a, ParseNpy(data, "its .npy"));
        if (a.shape.empty()) a.shape = {1};
        if (a.dtype != field.dtype || a.shape.size() != field.shape.size() ||
            !std::equal(a.shape.begin() + 1, a.shape.end(), field.shape.begin() + 1) ||
            (field.shape[0] != 0 && a.shape[0] != field.shape[0])) {
          return absl::InvalidArgumentError(absl::StrCat(
              "an array of ", AsAbsl(ArrayDTypeName(a.dtype)), " [",
              absl::StrJoin(a.shape, ","), "], the field holds ", FieldText(field)));
        }
        v.bytes = a.data;
        break;
      }
      default:
        v.bytes = data;
    }
    v.present = true;
    return absl::OkStatus();
  }

  const std::vector<WebDatasetColumn>& columns_;
  std::unique_ptr<ImageConverter> images_;
  std::vector<FieldValue> values_;
  std::vector<std::vector<uint8_t>> storage_;  // per column: converted images
  absl::flat_hash_map<std::string, size_t> index_;
  absl::flat_hash_set<std::string> drop_;
};

}  // namespace

absl::Status ConvertWebDataset(const WebDatasetOptions& options,
                               const std::vector<WebDatasetColumn>& columns, Writer* writer,
                               WebDatasetStats* stats,
                               const std::function<void(const WebDatasetStats&)>& progress) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ImageConverter> images, ImageConverter::Create(options.images));
  SampleValues values(columns, options, std::move(images));
  TarSample sample;
  for (const std::string& tar : options.tars) {
    SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenTar(options, tar));
    TarStream stream(*file);
    TarSamples samples(&stream);
    while (true) {
      SP_ASSIGN_OR_RETURN(bool more, samples.Next(&sample));
      if (!more) break;
      for (size_t i = 0; i < sample.size; ++i) stats->bytes += sample.files[i].member.size;
      absl::Status filled = values.Fill(sample, samples);
      SP_RETURN_IF_ERROR(filled.ok() ? writer->Write(sample.key, values.values())
                                     : writer->Reject(sample.key, filled));
      // The writer has copied the sample: were its bytes the tar's?
      SP_RETURN_IF_ERROR(file->CheckIntact());
      ++stats->samples;
      if (progress) progress(*stats);
    }
    SP_RETURN_IF_ERROR(file->CheckIntact());  // the end was not a truncation read as zeros
  }
  return absl::OkStatus();
}

}  // namespace shardpack::datasets
