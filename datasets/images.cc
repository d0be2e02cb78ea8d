#include "datasets/images.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/image_format.h"
#include "codec/jpeg_probe.h"
#include "codec/jpeg_restart.h"
#include "codec/transcode.h"
#include "common/enum_names.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/posix_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"
#include "shardpack/file.h"

namespace shardpack::datasets {
namespace {

namespace fs = std::filesystem;
using common::AsAbsl;

std::string_view AsStd(absl::string_view s) { return {s.data(), s.size()}; }


struct Item {
  std::string key;  // path relative to root, '/'-separated
  int64_t label = 0;
};

// torchvision's IMG_EXTENSIONS (torchvision/datasets/folder.py), matched as
// has_file_allowed_extension matches them: the lower-cased name ends with one.
constexpr std::string_view kImageExtensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                 ".pgm", ".tif",  ".tiff", ".webp"};

bool HasImageExtension(std::string_view name) {
  for (std::string_view ext : kImageExtensions) {
    if (name.size() >= ext.size() &&
        absl::EqualsIgnoreCase(AsAbsl(name.substr(name.size() - ext.size())), AsAbsl(ext))) {
      return true;
    }
  }
  return false;
}

// Problems met while opening: listed in skip mode, the error in fail mode.
class Problems {
 public:
  explicit Problems(OnError on_error) : on_error_(on_error) {}
  // Records `reason` about `path`; returns the problem as an error with
  // `code` in fail mode, OK in skip mode.
  absl::Status Add(std::string path, std::string reason, absl::StatusCode code) {
    absl::Status error(code, absl::StrCat(path, ": ", reason));
    list_.push_back(Skipped{std::move(path), std::move(reason)});
    return on_error_ == OnError::kFail ? error : absl::OkStatus();
  }
  std::vector<Skipped> Take() { return std::move(list_); }

 private:
  OnError on_error_;
  std::vector<Skipped> list_;
};

// One directory as os.walk yields it: its path relative to the class folder
// ("" for the folder itself, else "/sub/dir": the sort key, since os.walk's
// roots share the class folder as a prefix) and the names of its files.
struct Listing {
  std::string rel;
  std::vector<std::string> files;
};

struct DirId {
  uint64_t dev;
  uint64_t ino;
  bool operator==(const DirId&) const = default;
};

// os.walk(dir, followlinks=True), depth first; `ancestors` guards against
// symlink loops.
absl::Status WalkDir(const fs::path& dir, const std::string& rel, std::vector<DirId>* ancestors,
                     std::vector<Listing>* listings, Problems* problems) {
  absl::StatusOr<common::FileStatus> st = common::Stat(dir.string());
  if (!st.ok()) return absl::OkStatus();  // vanished
  const DirId id{st->device, st->inode};
  if (std::find(ancestors->begin(), ancestors->end(), id) != ancestors->end()) {
    return absl::OkStatus();  // a symlink back up the tree
  }
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return problems->Add(dir.string(), absl::StrCat("cannot list directory: ", ec.message()),
                         common::ErrnoError("list", dir.string(), ec.value()).code());
  }
  Listing listing{rel, {}};
  std::vector<std::string> subdirs;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    std::string name = it->path().filename().string();
    if (it->is_directory(type_ec)) {
      subdirs.push_back(std::move(name));
    } else {
      listing.files.push_back(std::move(name));
    }
  }
  if (ec) {
    return problems->Add(dir.string(), absl::StrCat("cannot list directory: ", ec.message()),
                         common::ErrnoError("list", dir.string(), ec.value()).code());
  }
  listings->push_back(std::move(listing));
  ancestors->push_back(id);
  for (const std::string& sub : subdirs) {
    absl::Status s = WalkDir(dir / sub, absl::StrCat(rel, "/", sub), ancestors, listings, problems);
    if (!s.ok()) return s;
  }
  ancestors->pop_back();
  return absl::OkStatus();
}

// make_dataset for one class: appends its JPEG files, in torchvision's order.
absl::Status WalkClass(const fs::path& root, const std::string& class_name, int64_t label,
                       std::vector<Item>* items, Problems* problems) {
  std::vector<Listing> listings;
  std::vector<DirId> ancestors;
  absl::Status s = WalkDir(root / class_name, "", &ancestors, &listings, problems);
  if (!s.ok()) return s;
  std::sort(listings.begin(), listings.end(),
            [](const Listing& a, const Listing& b) { return a.rel < b.rel; });
  const size_t before = items->size();
  for (Listing& listing : listings) {
    std::sort(listing.files.begin(), listing.files.end());
    for (const std::string& file : listing.files) {
      if (!HasImageExtension(file)) continue;
      items->push_back(Item{absl::StrCat(class_name, listing.rel, "/", file), label});
    }
  }
  // Refused in both on_error modes, as torchvision's ImageFolder refuses
  // it: the class would keep a label no record has, and a stray folder
  // (an output, a .ipynb_checkpoints) would shift the labels after it.
  if (items->size() == before) {
    return absl::InvalidArgumentError(absl::StrCat(
        (root / class_name).string(),
        ": empty class folder: no image files (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff "
        ".webp; torchvision's ImageFolder refuses it too: a class without images would take a "
        "label): remove or fill it, or pack a --list"));
  }
  return absl::OkStatus();
}

// find_classes: sorted names of root's entries that are directories.
absl::Status FindClasses(const fs::path& root, std::vector<std::string>* classes) {
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) classes->push_back(it->path().filename().string());
  }
  if (ec) return common::ErrnoError("list", root.string(), ec.value());
  std::sort(classes->begin(), classes->end());
  if (classes->empty()) {
    return absl::NotFoundError(
        absl::StrCat(root.string(), ": no class folders in the image folder"));
  }
  // torchvision would take such a name as a str with surrogate escapes
  // (sorted by them, not by bytes); manifest.json holds UTF-8 text only.
  for (const std::string& name : *classes) {
    if (!common::IsValidUtf8(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          (root / name).string(),
          ": class folder name is not UTF-8; class names are stored in manifest.json, which "
          "holds UTF-8 text only: rename the folder (e.g. convmv -f latin1 -t utf-8), or name "
          "the images in a --list"));
    }
  }
  return absl::OkStatus();
}

// Parses one list-file line into `item`; an error text if it is bad.
std::string ParseListLine(std::string_view line, Item* item) {
  const size_t cut = line.find_last_of(" \t");
  if (cut == std::string_view::npos) return "expected '<relative/path> <label>'";
  std::string_view path = line.substr(0, cut);
  while (!path.empty() && (path.back() == ' ' || path.back() == '\t')) path.remove_suffix(1);
  const std::string_view label = line.substr(cut + 1);
  if (path.empty()) return "expected '<relative/path> <label>'";
  if (path.front() == '/') return absl::StrCat("path '", AsAbsl(path), "' is not relative");
  int64_t value = 0;
  if (!absl::SimpleAtoi(AsAbsl(label), &value) || value < 0) {
    return absl::StrCat("bad label '", AsAbsl(label), "' (want an integer >= 0)");
  }
  item->key.assign(path);
  item->label = value;
  return "";
}

absl::Status ReadListFile(const std::string& list_file, std::vector<Item>* items,
                          Problems* problems) {
  // A list may come from a pipe (`--list <(find ...)`): read to its end,
  // within the bound a regular list file has.
  absl::StatusOr<std::string> text = common::ReadStream(list_file, kMaxSmallFileBytes);
  if (!text.ok()) return text.status();
  std::string_view rest = *text;
  for (size_t line_no = 1; !rest.empty(); ++line_no) {
    const size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    line = std::string_view(AsStd(absl::StripAsciiWhitespace(AsAbsl(line))));
    if (line.empty()) continue;
    Item item;
    const std::string error = ParseListLine(line, &item);
    if (error.empty()) {
      items->push_back(std::move(item));
      continue;
    }
    absl::Status s =
        problems->Add(absl::StrCat(list_file, ":", line_no), absl::StrCat("bad list line: ", error),
                      absl::StatusCode::kInvalidArgument);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

class ImageWorker : public SourceWorker {
 public:
  ImageWorker(const ImageOptions& options, const std::string& root, const std::vector<Item>& items)
      : options_(options), root_(root), items_(items) {
    probe_.max_pixels = options.max_pixels;
  }

  absl::Status Prepare(size_t i, PreparedRecord* out) override {
    if (i >= items_.size()) {
      return absl::OutOfRangeError(absl::StrCat("images: no item ", i, " of ", items_.size()));
    }
    const Item& item = items_[i];
    path_.assign(root_);
    path_ += '/';
    path_ += item.key;
    out->key.assign(item.key);
    out->labels = Labels{item.label};
    out->converted_from = {};
    out->left_out.clear();
    // Passthrough may store the file's bytes: read them straight into the
    // record.
    std::vector<uint8_t>& input =
        options_.mode == ImageMode::kPassthrough ? out->payload : input_;
    SP_RETURN_IF_ERROR(common::ReadInputFile(path_, &input));
    // The content decides, never the name.
    const codec::ImageFormat format = codec::SniffImageFormat(input);
    const bool jpeg = format == codec::ImageFormat::kJpeg;
    if (!jpeg && codec::HasDecoder(format)) out->converted_from = codec::ImageFormatName(format);
    if (options_.mode == ImageMode::kPassthrough) {
      if (jpeg) return PreparePassthrough(out);
      if (options_.non_jpeg == NonJpeg::kSkip && IsImage(format)) {
        out->left_out = absl::StrCat(
            AsAbsl(codec::ImageContentName(format)),
            ", not a JPEG: left out by --non-jpeg skip (--non-jpeg convert stores it as JPEG)");
        return absl::OkStatus();
      }
      input_.swap(out->payload);
    }
    SP_RETURN_IF_ERROR(EnsureTranscoder());
    absl::StatusOr<ImageInfo> image =
        options_.mode == ImageMode::kRaw
            ? transcoder_->DecodeToRaw(input_, path_, options_.raw_width, options_.raw_height,
                                       probe_, &out->payload)
            : transcoder_->Reencode(input_, path_, ReencodeOptionsNow(), probe_,
                                    &out->payload);
    if (!image.ok()) return image.status();
    out->image = *image;
    return options_.mode == ImageMode::kRaw ? absl::OkStatus() : AddRestartMarkers(out);
  }

 private:
  // A format that --non-jpeg skip leaves out: an image, but not a JPEG (a
  // GIF too: it is not decoded, but it is no damage either). Empty files and
  // unknown content stay bad input.
  static bool IsImage(codec::ImageFormat format) {
    return codec::HasDecoder(format) || format == codec::ImageFormat::kGif;
  }

  // Reencode's settings; passthrough converts a non-JPEG at full size and
  // full chroma.
  codec::ReencodeOptions ReencodeOptionsNow() const {
    if (options_.mode == ImageMode::kReencode) {
      return {.max_side = options_.max_side, .quality = options_.quality, .full_chroma = false};
    }
    return {.max_side = 0, .quality = options_.convert_quality, .full_chroma = true};
  }

  absl::Status PreparePassthrough(PreparedRecord* out) {
    absl::StatusOr<codec::JpegInfo> info = codec::ProbeJpeg(out->payload, path_, probe_);
    if (!info.ok()) return info.status();
    if (options_.validate_decode && !options_.restart_markers) {
      absl::Status s = EnsureTranscoder();
      if (s.ok()) s = transcoder_->Validate(out->payload, path_, probe_);
      if (!s.ok()) return s;
    }
    out->image = ImageInfo{Encoding::kJpeg, Layout::kHWC, info->height, info->width,
                           static_cast<uint8_t>(info->components)};
    return AddRestartMarkers(out);
  }

  // With restart_markers: the payload re-coded (progressive ones kept).
  absl::Status AddRestartMarkers(PreparedRecord* out) {
    if (!options_.restart_markers) return absl::OkStatus();
    if (recoder_ == nullptr) recoder_ = std::make_unique<codec::JpegRestartRecoder>();
    absl::StatusOr<bool> recoded = recoder_->Recode(out->payload, &recoded_);
    if (!recoded.ok()) {
      return common::WithMessage(recoded.status(),
                                 absl::StrCat(path_, ": ", recoded.status().message()));
    }
    if (*recoded) out->payload.swap(recoded_);
    return absl::OkStatus();
  }

  absl::Status EnsureTranscoder() {
    if (transcoder_ != nullptr) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<codec::Transcoder>> made = codec::Transcoder::Create();
    if (!made.ok()) return made.status();
    transcoder_ = *std::move(made);
    return absl::OkStatus();
  }

  const ImageOptions& options_;
  const std::string& root_;
  const std::vector<Item>& items_;
  codec::JpegProbeOptions probe_;
  std::string path_;
  std::vector<uint8_t> input_;
  std::unique_ptr<codec::Transcoder> transcoder_;  // made on first use
  std::unique_ptr<codec::JpegRestartRecoder> recoder_;  // made on first use
  std::vector<uint8_t> recoded_;
};

class ImageSource : public Source {
 public:
  ImageSource(ImageOptions options, std::string root, std::vector<Item> items,
              std::vector<std::string> classes, std::vector<Skipped> problems)
      : options_(std::move(options)),
        root_(std::move(root)),
        items_(std::move(items)),
        problems_(std::move(problems)) {
    schema_.image =
        options_.mode == ImageMode::kRaw
            ? ImageInfo{Encoding::kRaw, Layout::kHWC, options_.raw_height, options_.raw_width, 3}
            : ImageInfo{Encoding::kJpeg, Layout::kHWC, 0, 0, 0};
    InputHasher hasher;
    for (const std::string& name : classes) hasher.Add(name);
    schema_.labels.push_back(LabelField{"label", std::move(classes)});
    hasher.Add(uint64_t{items_.size()});
    for (const Item& item : items_) {
      std::error_code ec;
      const uintmax_t bytes = fs::file_size(ItemPath(item), ec);
      if (!ec) input_bytes_ += bytes;
      // One stat per item, already made for input_bytes: the fingerprint
      // costs no more I/O. A file that cannot be read counts as size 2^64-1.
      hasher.Add(item.key);
      hasher.Add(static_cast<uint64_t>(item.label));
      hasher.Add(ec ? ~uint64_t{0} : uint64_t{bytes});
    }
    fingerprint_ = hasher.Text();
  }

  size_t size() const override { return items_.size(); }
  const Schema& schema() const override { return schema_; }
  std::string ItemPath(size_t i) const override { return ItemPath(items_[i]); }
  const std::vector<Skipped>& open_problems() const override { return problems_; }
  uint64_t input_bytes() const override { return input_bytes_; }
  const std::string& input_fingerprint() const override { return fingerprint_; }
  std::string ParamsJson() const override;
  std::unique_ptr<SourceWorker> NewWorker() const override {
    return std::make_unique<ImageWorker>(options_, root_, items_);
  }

 private:
  std::string ItemPath(const Item& item) const { return absl::StrCat(root_, "/", item.key); }

  ImageOptions options_;
  std::string root_;
  std::vector<Item> items_;
  std::vector<Skipped> problems_;
  Schema schema_;
  uint64_t input_bytes_ = 0;
  std::string fingerprint_;
};

std::string ImageSource::ParamsJson() const {
  nlohmann::json j;
  j["kind"] = "images";
  j["root"] = root_;
  if (!options_.list_file.empty()) j["list"] = options_.list_file;
  j["mode"] = std::string(ImageModeName(options_.mode));
  j["max_pixels"] = options_.max_pixels;
  switch (options_.mode) {
    case ImageMode::kPassthrough:
      j["validate_decode"] = options_.validate_decode;
      j["restart_markers"] = options_.restart_markers;
      j["non_jpeg"] = std::string(NonJpegName(options_.non_jpeg));
      if (options_.non_jpeg == NonJpeg::kConvert) j["convert_quality"] = options_.convert_quality;
      break;
    case ImageMode::kReencode:
      j["max_side"] = options_.max_side;
      j["quality"] = options_.quality;
      j["restart_markers"] = options_.restart_markers;
      break;
    case ImageMode::kRaw:
      j["width"] = options_.raw_width;
      j["height"] = options_.raw_height;
      break;
  }
  // The root may be any bytes; JSON holds UTF-8 only (U+FFFD in its place).
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status CheckOptions(const ImageOptions& o) {
  auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("images: ", AsAbsl(what)));
  };
  if (o.root.empty() && o.list_file.empty()) return bad("an image folder (root) is required");
  if (o.max_pixels == 0) return bad("max_pixels must be positive");
  if (o.convert_quality < 1 || o.convert_quality > 100) return bad("quality must be in 1..100");
  if (o.mode == ImageMode::kReencode) {
    if (o.quality < 1 || o.quality > 100) return bad("quality must be in 1..100");
    if (o.max_side < 0 || o.max_side > static_cast<int>(codec::kMaxJpegSide)) {
      return bad("max_side must be in 0..65500");
    }
  }
  if (o.mode == ImageMode::kRaw) {
    if (o.restart_markers) return bad("raw mode stores pixels: restart markers do not apply");
    if (o.raw_width == 0 || o.raw_height == 0) return bad("raw mode needs --size WxH");
    if (o.raw_width > codec::kMaxJpegSide || o.raw_height > codec::kMaxJpegSide ||
        uint64_t{o.raw_width} * o.raw_height > o.max_pixels) {
      return bad(absl::StrCat("raw size ", o.raw_width, "x", o.raw_height,
                              " is too large: each side at most ", codec::kMaxJpegSide,
                              ", width x height at most ", o.max_pixels, " pixels"));
    }
  }
  return absl::OkStatus();
}

// Root without trailing separators ("/" stays "/"), or the list file's
// directory when no root is given.
std::string NormalizeRoot(const ImageOptions& o) {
  std::string root = o.root;
  if (root.empty()) {
    root = fs::path(o.list_file).parent_path().string();
    if (root.empty()) root = ".";
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

}  // namespace

namespace {
constexpr common::EnumName<ImageMode> kImageModes[] = {{ImageMode::kPassthrough, "passthrough"},
                                                        {ImageMode::kReencode, "reencode"},
                                                        {ImageMode::kRaw, "raw"}};
constexpr common::EnumName<NonJpeg> kNonJpeg[] = {{NonJpeg::kConvert, "convert"},
                                                    {NonJpeg::kSkip, "skip"}};
}  // namespace

std::string_view ImageModeName(ImageMode mode) { return common::NameIn(kImageModes, mode); }
std::string_view NonJpegName(NonJpeg policy) { return common::NameIn(kNonJpeg, policy); }
absl::StatusOr<ImageMode> ParseImageMode(std::string_view name) {
  return common::ParseIn(kImageModes, "image mode", name);
}

absl::StatusOr<std::unique_ptr<Source>> OpenImages(const ImageOptions& options) {
  absl::Status s = CheckOptions(options);
  if (!s.ok()) return s;
  const std::string root = NormalizeRoot(options);
  SP_ASSIGN_OR_RETURN(const common::FileStatus st, common::Stat(root, "image folder"));
  if (!st.IsDirectory()) {
    return absl::FailedPreconditionError(absl::StrCat(root, ": image folder is not a directory"));
  }
  Problems problems(options.on_error);
  std::vector<Item> items;
  std::vector<std::string> classes;
  if (!options.list_file.empty()) {
    s = ReadListFile(options.list_file, &items, &problems);
  } else {
    s = FindClasses(root, &classes);
    for (size_t c = 0; s.ok() && c < classes.size(); ++c) {
      s = WalkClass(root, classes[c], static_cast<int64_t>(c), &items, &problems);
    }
  }
  if (!s.ok()) return s;
  return std::make_unique<ImageSource>(options, root, std::move(items), std::move(classes),
                                       problems.Take());
}

}  // namespace shardpack::datasets
