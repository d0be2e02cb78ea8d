// CIFAR-10 / CIFAR-100 binary files as a Source (see datasets/cifar.h).
#include "datasets/cifar.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>


#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codec/interleave.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "shardpack/file.h"

namespace shardpack::datasets {
namespace {

namespace fs = std::filesystem;
using ::shardpack::common::AsAbsl;

constexpr uint64_t kPlaneBytes = uint64_t{kCifarSide} * kCifarSide;

// Official file names (the CIFAR page and the archives' contents).
constexpr std::string_view kCifar10Folder = "cifar-10-batches-bin";
constexpr std::string_view kCifar100Folder = "cifar-100-binary";
constexpr int kCifar10TrainBatches = 5;  // data_batch_1.bin .. data_batch_5.bin
constexpr std::string_view kCifar10Test = "test_batch.bin";
constexpr std::string_view kCifar100Train = "train.bin";
constexpr std::string_view kCifar100Test = "test.bin";
constexpr std::string_view kCifar10Names = "batches.meta.txt";
constexpr std::string_view kCifar100FineNames = "fine_label_names.txt";
constexpr std::string_view kCifar100CoarseNames = "coarse_label_names.txt";

uint64_t RecordBytes(int variant) {
  return variant == 10 ? kCifar10RecordBytes : kCifar100RecordBytes;
}

// One opened data file. Records [0, records) are whole; a truncated tail
// (skip mode) lies past records * RecordBytes and is never read.
struct CifarFile {
  std::string path;  // as the user named it (joined with its folder): messages
  std::string name;  // the file name alone: keys and ParamsJson
  std::unique_ptr<RandomAccessFile> file;
  uint64_t records = 0;
};

// Everything the workers read, immutable once opened and shared by the
// Source and its workers.
struct CifarData {
  int variant = 10;
  Layout layout = Layout::kHWC;
  int pad = 0;
  std::vector<CifarFile> files;
  std::vector<uint64_t> ends;  // ends[k]: items in files [0, k]

  uint64_t total() const { return ends.empty() ? 0 : ends.back(); }
  // The file holding item i (< total()) and i's index within it.
  std::pair<size_t, uint64_t> Locate(uint64_t i) const {
    size_t k = std::upper_bound(ends.begin(), ends.end(), i) - ends.begin();
    return {k, i - (k == 0 ? 0 : ends[k - 1])};
  }
};

// Advises the kernel about bytes [offset, offset + n) of a mapped file,
// widened to whole pages: MADV_WILLNEED starts reading them in (one large
// sequential read), MADV_DONTNEED drops them from this process, so that
// the pages of input already packed do not pile up in its RSS. Widening may
// drop a neighbour's edge page, which then faults back in from the page
// cache. A file that is not mapped gets nothing.
void AdviseRange(const CifarFile& f, uint64_t offset, uint64_t n, common::MemoryAdvice advice) {
  const uint8_t* base = f.file->data();
  if (base == nullptr || n == 0 || offset >= f.file->size()) return;
  // The mapping is page aligned and its last page is whole in memory.
  const uint64_t end = std::min(f.file->size(), offset + n);
  common::AdviseMemory(base + offset, end - offset, advice);
}

// --- Names: which variant, which split --------------------------------------

bool IsCifar10BatchName(std::string_view name) {
  constexpr std::string_view kPrefix = "data_batch_", kSuffix = ".bin";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix) ||
      name.size() < kPrefix.size() + kSuffix.size()) {
    return false;
  }
  std::string_view rest =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return !rest.empty() &&
         std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// 10, 100, or 0 when the file name does not tell.
int VariantFromFileName(std::string_view name) {
  if (IsCifar10BatchName(name) || name == kCifar10Test) return 10;
  if (name == kCifar100Train || name == kCifar100Test) return 100;
  return 0;
}

// "train", "test", or "" when the file name does not tell.
std::string_view SplitFromFileName(std::string_view name) {
  if (IsCifar10BatchName(name) || name == kCifar100Train) return "train";
  if (name == kCifar10Test || name == kCifar100Test) return "test";
  return "";
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The last component of a folder path, ignoring a trailing '/'.
std::string FolderName(const fs::path& dir) {
  fs::path p = dir.has_filename() ? dir : dir.parent_path();
  return p.filename().string();
}

// 10, 100, or 0: from the folder's official name, else from what it holds.
int VariantFromFolder(const fs::path& dir) {
  std::string name = FolderName(dir);
  if (name == kCifar10Folder) return 10;
  if (name == kCifar100Folder) return 100;
  bool ten = IsFile(dir / "data_batch_1.bin") || IsFile(dir / kCifar10Test);
  bool hundred = IsFile(dir / kCifar100Train) || IsFile(dir / kCifar100Test);
  if (ten == hundred) return 0;
  return ten ? 10 : 100;
}

std::vector<std::string> SplitFileNames(int variant, std::string_view split) {
  if (variant == 100) {
    return {std::string(split == "train" ? kCifar100Train : kCifar100Test)};
  }
  if (split == "test") return {std::string(kCifar10Test)};
  std::vector<std::string> names;
  for (int b = 1; b <= kCifar10TrainBatches; ++b) {
    names.push_back(absl::StrCat("data_batch_", b, ".bin"));
  }
  return names;
}

absl::Status CheckOptions(const CifarOptions& o) {
  if (o.inputs.empty()) return absl::InvalidArgumentError("cifar: no input files or folders");
  if (o.variant != 0 && o.variant != 10 && o.variant != 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("cifar: variant ", o.variant, " is not 10 or 100"));
  }
  if (o.split != "train" && o.split != "test") {
    return absl::InvalidArgumentError(
        absl::StrCat("cifar: split '", o.split, "' is not train or test"));
  }
  if (o.pad < 0 || o.pad > kCifarMaxPad) {
    return absl::InvalidArgumentError(
        absl::StrCat("cifar: pad ", o.pad, " is out of range 0..", kCifarMaxPad));
  }
  if (o.layout != Layout::kHWC && o.layout != Layout::kCHW) {
    return absl::InvalidArgumentError("cifar: unknown layout");
  }
  return absl::OkStatus();
}

// Each input's kind, checked to exist.
struct Input {
  fs::path path;
  bool folder = false;
};

absl::StatusOr<std::vector<Input>> StatInputs(const std::vector<std::string>& paths) {
  std::vector<Input> inputs;
  for (const std::string& p : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (st.type() == fs::file_type::not_found) {
      return absl::NotFoundError(absl::StrCat(p, ": no such file or directory"));
    }
    if (ec) return absl::UnknownError(absl::StrCat(p, ": ", ec.message()));
    // A FIFO or a device: named for what it is, in the words every opener uses.
    if (st.type() != fs::file_type::directory) {
      SP_RETURN_IF_ERROR(::shardpack::common::CheckRegularFile(p));
    }
    inputs.push_back({fs::path(p), st.type() == fs::file_type::directory});
  }
  return inputs;
}

// The variant: the one asked for, else the one every input's name implies.
absl::StatusOr<int> DecideVariant(const std::vector<Input>& inputs, int asked) {
  if (asked != 0) return asked;
  int variant = 0;
  std::string first;
  for (const Input& in : inputs) {
    int v =
        in.folder ? VariantFromFolder(in.path) : VariantFromFileName(in.path.filename().string());
    if (v == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(in.path.string(), ": cannot tell CIFAR-10 from CIFAR-100 by ",
                       in.folder ? "this folder's name or contents" : "this file name",
                       " (expected data_batch_N.bin / test_batch.bin or train.bin / test.bin);"
                       " choose one with --cifar 10 or --cifar 100"));
    }
    if (variant != 0 && v != variant) {
      return absl::InvalidArgumentError(
          absl::StrCat("cifar: inputs mix CIFAR-", variant, " (", first, ") and CIFAR-", v, " (",
                       in.path.string(), "); pack them separately or choose with --cifar"));
    }
    if (variant == 0) first = in.path.string();
    variant = v;
  }
  return variant;
}

// Data file paths in item order: files as given, folders expanded to the
// split's official files, every one of which must exist.
absl::StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<Input>& inputs, int variant,
                                                      std::string_view split) {
  std::vector<std::string> files;
  for (const Input& in : inputs) {
    if (!in.folder) {
      files.push_back(in.path.string());
      continue;
    }
    for (const std::string& name : SplitFileNames(variant, split)) {
      fs::path p = in.path / name;
      if (!IsFile(p)) {
        return absl::NotFoundError(absl::StrCat(p.string(), ": no such file (CIFAR-", variant, " ",
                                                AsAbsl(split), " split of folder ",
                                                in.path.string(), ")"));
      }
      files.push_back(p.string());
    }
  }
  return files;
}

// Keeps `status` as the error (fail mode) or records it as an open problem
// (skip mode, returning OK).
absl::Status Problem(OnError on_error, absl::Status status, std::string path, std::string reason,
                     std::vector<Skipped>* problems) {
  if (on_error == OnError::kFail) return status;
  problems->push_back({std::move(path), std::move(reason)});
  return absl::OkStatus();
}

// A DataLossError with `message`, carrying DataLossAt's offset payload so
// that tools can report the offset as a field.
absl::Status DataLossWithOffset(const std::string& path, uint64_t offset,
                                const std::string& message) {
  absl::Status at = ::shardpack::common::DataLossAt(path, offset, "");
  absl::Status out = absl::DataLossError(message);
  at.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Maps one data file and counts its whole records.
absl::StatusOr<CifarFile> OpenDataFile(const std::string& path, int variant, OnError on_error,
                                       std::vector<Skipped>* problems) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenMappedFile(path));
  CifarFile f;
  f.path = path;
  f.name = fs::path(path).filename().string();
  const uint64_t size = file->size();
  const uint64_t rec = RecordBytes(variant);
  f.file = std::move(file);
  if (size == 0) {
    std::string reason = "empty file (0 bytes), no CIFAR records";
    SP_RETURN_IF_ERROR(Problem(on_error, absl::DataLossError(absl::StrCat(path, ": ", reason)),
                               path, reason, problems));
    return f;
  }
  f.records = size / rec;
  if (size % rec == 0) return f;
  const int other = variant == 10 ? 100 : 10;
  const uint64_t other_rec = RecordBytes(other);
  if (size % other_rec == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes is not a whole number of ", rec, "-byte CIFAR-",
                     variant, " records but is ", size / other_rec, " ", other_rec, "-byte CIFAR-",
                     other, " records; is this CIFAR-", other, "? choose with --cifar ", other));
  }
  const uint64_t end = f.records * rec;
  std::string reason = absl::StrCat(size, " bytes is not a whole number of ", rec,
                                    "-byte records; the last whole record ends at offset ", end);
  SP_RETURN_IF_ERROR(
      Problem(on_error, DataLossWithOffset(path, end, absl::StrCat(path, ": ", reason)), path,
              absl::StrCat(reason, " (", size - end, " trailing bytes left out)"), problems));
  return f;
}

// --- Class names --------------------------------------------------------------

// CIFAR's own class names, in label order, as its meta files list them
// (batches.meta.txt; fine_label_names.txt and coarse_label_names.txt of the
// binary CIFAR-100, the same as the Python version's meta): used when no
// meta file sits beside the input.
constexpr std::string_view kCifar10Classes[] = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
constexpr std::string_view kCifar100Fine[] = {
    "apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle",
    "bottle", "bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle",
    "caterpillar", "cattle", "chair", "chimpanzee", "clock", "cloud", "cockroach", "couch",
    "crab", "crocodile", "cup", "dinosaur", "dolphin", "elephant", "flatfish", "forest", "fox",
    "girl", "hamster", "house", "kangaroo", "keyboard", "lamp", "lawn_mower", "leopard", "lion",
    "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain", "mouse", "mushroom",
    "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
    "plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road",
    "rocket", "rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake",
    "spider", "squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank",
    "telephone", "television", "tiger", "tractor", "train", "trout", "tulip", "turtle",
    "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm"};
constexpr std::string_view kCifar100Coarse[] = {
    "aquatic_mammals", "fish", "flowers", "food_containers", "fruit_and_vegetables",
    "household_electrical_devices", "household_furniture", "insects", "large_carnivores",
    "large_man-made_outdoor_things", "large_natural_outdoor_scenes",
    "large_omnivores_and_herbivores", "medium_mammals", "non-insect_invertebrates", "people",
    "reptiles", "small_mammals", "trees", "vehicles_1", "vehicles_2"};
static_assert(std::size(kCifar10Classes) == 10 && std::size(kCifar100Fine) == 100 &&
              std::size(kCifar100Coarse) == 20);

// The class names in `file_name` in the first of `dirs` that has it, else
// CIFAR's own (`builtin`). A file with the wrong number of names is a
// problem, and its names are left out.
template <size_t N>
absl::StatusOr<std::vector<std::string>> ReadClassNames(const std::vector<fs::path>& dirs,
                                                        std::string_view file_name,
                                                        const std::string_view (&builtin)[N],
                                                        OnError on_error,
                                                        std::vector<Skipped>* problems) {
  constexpr size_t expected = N;
  for (const fs::path& dir : dirs) {
    fs::path p = dir / file_name;
    if (!IsFile(p)) continue;
    SP_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(p.string()));
    std::vector<std::string> names;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      names.emplace_back(absl::StripAsciiWhitespace(line));
    }
    while (!names.empty() && names.back().empty()) names.pop_back();
    bool blank =
        std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); });
    if (names.size() == expected && !blank) return names;
    std::string reason = blank
                             ? absl::StrCat("a blank line among the class names (expected ",
                                            expected, " names, one per line); class names left out")
                             : absl::StrCat(names.size(), " class names, expected ", expected,
                                            "; class names left out");
    SP_RETURN_IF_ERROR(Problem(on_error,
                               absl::DataLossError(absl::StrCat(p.string(), ": ", reason)),
                               p.string(), reason, problems));
    return std::vector<std::string>{};
  }
  return std::vector<std::string>(std::begin(builtin), std::end(builtin));
}

absl::StatusOr<std::vector<LabelField>> ReadLabelFields(const std::vector<CifarFile>& files,
                                                        int variant, OnError on_error,
                                                        std::vector<Skipped>* problems) {
  std::vector<fs::path> dirs;
  for (const CifarFile& f : files) {
    fs::path dir = fs::path(f.path).parent_path();
    if (dir.empty()) dir = ".";
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  std::vector<LabelField> fields;
  if (variant == 10) {
    SP_ASSIGN_OR_RETURN(auto names, ReadClassNames(dirs, kCifar10Names, kCifar10Classes, on_error, problems));
    fields.push_back({"label", std::move(names)});
    return fields;
  }
  SP_ASSIGN_OR_RETURN(auto fine, ReadClassNames(dirs, kCifar100FineNames, kCifar100Fine, on_error, problems));
  SP_ASSIGN_OR_RETURN(auto coarse,
                      ReadClassNames(dirs, kCifar100CoarseNames, kCifar100Coarse, on_error, problems));
  fields.push_back({"fine", std::move(fine)});
  fields.push_back({"coarse", std::move(coarse)});
  return fields;
}

// --- Preparing records ----------------------------------------------------------

// Appends `v` in decimal, zero-padded to at least `width` digits.
void AppendPadded(std::string* out, uint64_t v, int width) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (int i = n; i < width; ++i) out->push_back('0');
  while (n > 0) out->push_back(digits[--n]);
}

// Copies CIFAR's CHW planes into `dst`, an image (32 + 2 pad) square in
// `layout`, whose border the caller has zeroed.
void PlacePixels(const uint8_t* chw, Layout layout, int pad, uint8_t* dst) {
  const size_t side = kCifarSide + 2 * static_cast<size_t>(pad);
  if (layout == Layout::kCHW) {
    for (int c = 0; c < kCifarChannels; ++c) {
      uint8_t* plane = dst + c * side * side;
      for (int y = 0; y < kCifarSide; ++y) {
        std::memcpy(plane + (y + pad) * side + pad, chw + c * kPlaneBytes + y * kCifarSide,
                    kCifarSide);
      }
    }
    return;
  }
  const uint8_t* r = chw;
  const uint8_t* g = chw + kPlaneBytes;
  const uint8_t* b = chw + 2 * kPlaneBytes;
  if (pad == 0) {  // rows are contiguous: the whole image at once
    codec::InterleaveRgb(r, g, b, kPlaneBytes, dst);
    return;
  }
  for (int y = 0; y < kCifarSide; ++y) {
    const int base = y * kCifarSide;
    codec::InterleaveRgb(r + base, g + base, b + base, kCifarSide,
                            dst + ((y + pad) * side + pad) * kCifarChannels);
  }
}

ImageInfo StoredImage(Layout layout, int pad) {
  const uint32_t side = kCifarSide + 2 * static_cast<uint32_t>(pad);
  return ImageInfo{Encoding::kRaw, layout, side, side, static_cast<uint8_t>(kCifarChannels)};
}

class CifarWorker : public SourceWorker {
 public:
  explicit CifarWorker(std::shared_ptr<const CifarData> data) : data_(std::move(data)) {}

  absl::Status Prepare(size_t i, PreparedRecord* out) override {
    if (i >= data_->total()) {
      return absl::OutOfRangeError(
          absl::StrCat("cifar: item ", i, " of ", data_->total(), " does not exist"));
    }
    const auto [k, index] = data_->Locate(i);
    const CifarFile& f = data_->files[k];
    const uint64_t rec_bytes = RecordBytes(data_->variant);
    const uint64_t offset = index * rec_bytes;
    SP_ASSIGN_OR_RETURN(const uint8_t* rec, RecordBytesAt(f, offset, rec_bytes));

    out->labels = Labels();
    if (data_->variant == 10) {
      if (rec[0] >= 10) return BadLabel(f, offset, index, "label", rec[0], 10);
      out->labels.push_back(rec[0]);
    } else {
      const uint8_t coarse = rec[0], fine = rec[1];
      if (fine >= 100) return BadLabel(f, offset, index, "fine label", fine, 100);
      if (coarse >= 20) return BadLabel(f, offset, index, "coarse label", coarse, 20);
      out->labels.push_back(fine);
      out->labels.push_back(coarse);
    }
    out->key.assign(f.name);
    out->key.push_back('/');
    AppendPadded(&out->key, index, kCifarKeyDigits);
    out->image = StoredImage(data_->layout, data_->pad);
    const size_t n = out->image.RawBytes();
    if (data_->pad > 0) {
      out->payload.assign(n, 0);  // keeps capacity: no allocation once grown
    } else {
      out->payload.resize(n);
    }
    PlacePixels(rec + (rec_bytes - kCifarPixelBytes), data_->layout, data_->pad,
                out->payload.data());
    return f.file->CheckIntact();  // a mapped file truncated under us read as zeros
  }

 private:
  // The record's bytes: in the mapping when there is one, else read into
  // scratch_ (valid until the next call).
  absl::StatusOr<const uint8_t*> RecordBytesAt(const CifarFile& f, uint64_t offset, uint64_t n) {
    if (const uint8_t* base = f.file->data()) return base + offset;
    scratch_.resize(n);
    SP_RETURN_IF_ERROR(f.file->ReadExact(offset, scratch_));
    return scratch_.data();
  }

  static absl::Status BadLabel(const CifarFile& f, uint64_t offset, uint64_t index,
                               std::string_view what, int value, int classes) {
    return ::shardpack::common::DataLossAt(
        f.path, offset,
        absl::StrCat("record ", index, ": ", AsAbsl(what), " byte ", value, " is out of range 0..",
                     classes - 1));
  }

  std::shared_ptr<const CifarData> data_;
  std::vector<uint8_t> scratch_;
};

// --- The source -----------------------------------------------------------------

class CifarSource : public Source {
 public:
  CifarSource(std::shared_ptr<const CifarData> data, Schema schema, std::vector<Skipped> problems,
              std::string params, std::string fingerprint)
      : data_(std::move(data)),
        schema_(std::move(schema)),
        problems_(std::move(problems)),
        params_(std::move(params)),
        fingerprint_(std::move(fingerprint)) {
    for (const CifarFile& f : data_->files) input_bytes_ += f.file->size();
  }

  size_t size() const override { return data_->total(); }
  const Schema& schema() const override { return schema_; }
  std::string ItemPath(size_t i) const override {
    if (i >= data_->total()) return "";
    return data_->files[data_->Locate(i).first].path;
  }
  const std::vector<Skipped>& open_problems() const override { return problems_; }
  uint64_t input_bytes() const override { return input_bytes_; }
  const std::string& input_fingerprint() const override { return fingerprint_; }
  std::string ParamsJson() const override { return params_; }
  std::unique_ptr<SourceWorker> NewWorker() const override {
    return std::make_unique<CifarWorker>(data_);
  }
  void WillNeed(size_t begin, size_t end) const override {
    Advise(begin, end, common::MemoryAdvice::kWillNeed);
  }
  void DoneWith(size_t begin, size_t end) const override {
    Advise(begin, end, common::MemoryAdvice::kDontNeed);
  }

 private:
  // Advises on the bytes of items [begin, end), file by file.
  void Advise(size_t begin, size_t end, common::MemoryAdvice advice) const {
    const uint64_t rec = RecordBytes(data_->variant);
    end = std::min<size_t>(end, data_->total());
    while (begin < end) {
      const auto [k, index] = data_->Locate(begin);
      const uint64_t in_file = std::min<uint64_t>(end - begin, data_->files[k].records - index);
      AdviseRange(data_->files[k], index * rec, in_file * rec, advice);
      begin += in_file;
    }
  }

  std::shared_ptr<const CifarData> data_;
  Schema schema_;
  std::vector<Skipped> problems_;
  std::string params_;
  std::string fingerprint_;
  uint64_t input_bytes_ = 0;
};

// Each file's name, size and the CRC-32C of a sample of its bytes: the
// whole file up to kFingerprintPieces x kFingerprintPiece bytes (4 MiB), else
// that many pieces evenly spaced from its first byte to its last. The cost is
// bounded whatever the input's size: every part of a pack fingerprints the
// whole input, and reading all of it on each of N machines would cost N
// times the input (a full read also held a 24.6 GB pack to 0.4-0.6x of `dd`:
// docs/benchmarks.md, "Packing at scale"). The fingerprint tells inputs apart
// by accident (another file, another size, another version of a file), not
// by design against an edit aimed between the pieces.
constexpr size_t kFingerprintPiece = size_t{64} << 10;
constexpr uint64_t kFingerprintPieces = 64;

absl::StatusOr<std::string> Fingerprint(const CifarData& data) {
  // pread, not the mapping: the pages read never enter the RSS.
  std::vector<uint8_t> buffer(kFingerprintPiece);
  InputHasher hasher;
  for (const CifarFile& f : data.files) {
    const uint64_t size = f.file->size();
    SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(f.path));
    if (file->size() != size) {
      return absl::AbortedError(absl::StrCat(f.path, ": changed size while opening (", size,
                                             " then ", file->size(), " bytes)"));
    }
    const bool whole = size <= kFingerprintPieces * kFingerprintPiece;
    const uint64_t pieces = whole ? (size + kFingerprintPiece - 1) / kFingerprintPiece
                                  : kFingerprintPieces;
    uint32_t crc = 0;
    for (uint64_t i = 0; i < pieces; ++i) {
      const uint64_t at = whole ? i * kFingerprintPiece
                                : (size - kFingerprintPiece) * i / (kFingerprintPieces - 1);
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kFingerprintPiece, size - at));
      SP_RETURN_IF_ERROR(file->ReadExact(at, std::span<uint8_t>(buffer.data(), n)));
      crc = Crc32cExtend(crc, buffer.data(), n);
    }
    hasher.Add(f.name);
    hasher.Add(size);
    hasher.Add(uint64_t{crc});
  }
  return hasher.Text();
}

std::string MakeParamsJson(const CifarOptions& options, const std::vector<Input>& inputs,
                           const CifarData& data) {
  using Json = nlohmann::ordered_json;
  Json split = nullptr;
  if (std::any_of(inputs.begin(), inputs.end(), [](const Input& in) { return in.folder; })) {
    split = options.split;
  } else {
    std::string_view common = SplitFromFileName(data.files.front().name);
    for (const CifarFile& f : data.files) {
      if (SplitFromFileName(f.name) != common) common = "";
    }
    if (!common.empty()) split = std::string(common);
  }
  Json files = Json::array();
  for (const CifarFile& f : data.files) files.push_back(f.name);
  Json j = {{"kind", "cifar"}, {"variant", data.variant},
            {"split", split},  {"layout", std::string(LayoutName(data.layout))},
            {"pad", data.pad}, {"files", files}};
  // A file name may be any bytes; JSON holds UTF-8 only (U+FFFD in its place).
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Source>> OpenCifar(const CifarOptions& options) {
  SP_RETURN_IF_ERROR(CheckOptions(options));
  SP_ASSIGN_OR_RETURN(std::vector<Input> inputs, StatInputs(options.inputs));
  SP_ASSIGN_OR_RETURN(int variant, DecideVariant(inputs, options.variant));
  SP_ASSIGN_OR_RETURN(std::vector<std::string> paths, ExpandInputs(inputs, variant, options.split));

  auto data = std::make_shared<CifarData>();
  data->variant = variant;
  data->layout = options.layout;
  data->pad = options.pad;
  std::vector<Skipped> problems;
  uint64_t total = 0;
  for (const std::string& path : paths) {
    SP_ASSIGN_OR_RETURN(CifarFile f, OpenDataFile(path, variant, options.on_error, &problems));
    total += f.records;
    data->ends.push_back(total);
    data->files.push_back(std::move(f));
  }
  if (total == 0) {
    return absl::DataLossError(absl::StrCat(
        "cifar: no whole CIFAR-", variant, " records in ", absl::StrJoin(paths, ", "),
        problems.empty()
            ? ""
            : absl::StrCat(" (", problems.front().path, ": ", problems.front().reason, ")")));
  }

  Schema schema;
  schema.image = StoredImage(options.layout, options.pad);
  SP_ASSIGN_OR_RETURN(schema.labels,
                      ReadLabelFields(data->files, variant, options.on_error, &problems));
  std::string params = MakeParamsJson(options, inputs, *data);
  SP_ASSIGN_OR_RETURN(std::string fingerprint, Fingerprint(*data));
  return std::make_unique<CifarSource>(std::move(data), std::move(schema), std::move(problems),
                                       std::move(params), std::move(fingerprint));
}

}  // namespace shardpack::datasets
