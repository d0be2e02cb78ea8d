// The reader's HDF5 backend: units are runs of rows (whole chunks of the
// writer's default size), read with one H5Dread per dataset into the unit's
// buffer.
#include <optional>

#include "absl/strings/str_cat.h"
#include "backends/hdf5_store.h"
#include "backends/shard_gate.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "reader/backend_sources.h"

namespace shardpack::reader {
namespace {

constexpr size_t kInfoValues = 5;  // image_info columns per row

// A unit's buffer: [payload bytes | labels, one int64 array per field |
// image_info (flat layout)], each part 8-byte aligned.
struct UnitLayout {
  uint64_t payload = 0;  // bytes
  uint64_t labels = 0;   // offset of the first label array
  uint64_t info = 0;     // offset of image_info
  uint64_t total = 0;
};

struct Hdf5Shard {
  std::unique_ptr<backends::Hdf5ShardReader> reader;  // null until opened
  absl::Status open_error;                            // kept once opening failed
  uint64_t rows_per_unit = 1;
  uint64_t row_bytes = 1;  // payload bytes a row: the schema's, or the file's average
  std::vector<int64_t> offsets;  // flat layout: all size() + 1 offsets
};

// rows per chunk of `images` that the writer makes by default
// (Hdf5WriterOptions::chunk_bytes): units of whole chunks read fastest.
uint64_t DefaultChunkRows(uint64_t image_bytes) {
  return std::max<uint64_t>(1, backends::Hdf5WriterOptions{}.chunk_bytes / image_bytes);
}

class Hdf5Source final : public SyncUnitSource {
 public:
  Hdf5Source(std::vector<std::string> paths, bool checksummed,
             std::shared_ptr<remote::Storage> storage)
      : paths_(std::move(paths)), checksummed_(checksummed), storage_(std::move(storage)) {}

  // Units are cut from the manifest alone: a shard is opened (and its
  // CRC-32C checked, see backends/shard_gate.h) when the loader first needs
  // it, so that the first batch does not wait for a pass over the dataset.
  // A unit's bytes are then exact for the fixed layout (the schema's shape)
  // and an estimate from the file's average for the flat one.
  absl::Status Init(const Manifest& manifest) {
    manifest_ = manifest;
    image_ = manifest.schema.image;
    fixed_ = image_.encoding == Encoding::kRaw && image_.RawBytes() > 0;
    shards_.resize(paths_.size());
    uint64_t first = 0;
    for (size_t f = 0; f < paths_.size(); ++f) {
      Hdf5Shard& s = shards_[f];
      const ShardEntry& entry = manifest.shards[f];
      s.row_bytes = fixed_ ? image_.RawBytes()
                           : std::max<uint64_t>(1, entry.bytes / std::max<uint64_t>(entry.records, 1));
      const uint64_t chunk = fixed_ ? DefaultChunkRows(s.row_bytes) : 1;
      s.rows_per_unit = chunk * std::max<uint64_t>(1, kTargetUnitBytes / (chunk * s.row_bytes));
      CutUnits(static_cast<uint32_t>(f), entry.records, s.rows_per_unit, &first,
               [&](uint64_t b, uint64_t e) { return Layout(s, b, e).total; }, &units_);
    }
    return absl::OkStatus();
  }

  const std::vector<ReadUnit>& units() const override { return units_; }
  ImageInfo image() const override { return image_; }
  IoEngine engine() const override { return IoEngine::kPread; }
  uint64_t bytes_read() const override { return bytes_read_; }
  // Opens the unit's shard (the loader asks just before it loads the unit):
  // the flat layout's exact sizes need its offsets. 0 when it fails to open
  // (Load then reports why).
  size_t BufferBytes(uint32_t u) const override {
    auto [shard, begin, end] = Rows(u);
    if (!EnsureOpen(shard).ok()) return 0;
    return Layout(shards_[shard], begin, end).total;
  }

 protected:
  absl::StatusOr<UnitView> Load(uint32_t u, uint8_t* buffer) override {
    auto [f, begin, end] = Rows(u);
    SP_RETURN_IF_ERROR(EnsureOpen(f));
    Hdf5Shard& s = shards_[f];
    const UnitLayout layout = Layout(s, begin, end);
    const uint64_t n = end - begin;
    ColumnRows c;
    c.rows = static_cast<uint32_t>(n);
    c.image = image_;
    c.images = buffer;
    c.num_labels = s.reader->num_labels();
    std::array<int64_t*, kMaxLabels> labels{};
    for (int j = 0; j < c.num_labels; ++j) {
      labels[j] = reinterpret_cast<int64_t*>(buffer + layout.labels) + j * n;
      c.labels[j] = labels[j];
    }
    absl::Status read = ReadColumns(s, begin, end, buffer, layout, labels.data(), &c);
    // A file that shrank reads as zeros (or fails): say which happened.
    SP_RETURN_IF_ERROR(s.reader->CheckSize());
    SP_RETURN_IF_ERROR(read);
    bytes_read_ += layout.total;
    return UnitView::Columns(c, &paths_[f], begin);
  }

 private:
  absl::Status ReadColumns(Hdf5Shard& s, uint64_t begin, uint64_t end, uint8_t* buffer,
                           const UnitLayout& layout, int64_t* const* labels, ColumnRows* c) {
    if (s.reader->fixed_shape()) {
      c->image = s.reader->image_info();
      return s.reader->ReadRows(begin, end, buffer, labels);
    }
    c->offsets = s.offsets.data() + begin;
    SP_RETURN_IF_ERROR(s.reader->ReadData(s.offsets[begin], s.offsets[end], buffer));
    SP_RETURN_IF_ERROR(s.reader->ReadRows(begin, end, nullptr, labels));
    auto* info = reinterpret_cast<uint32_t*>(buffer + layout.info);
    SP_RETURN_IF_ERROR(s.reader->ReadImageInfo(begin, end, info));
    c->info = info;
    return absl::OkStatus();
  }

  struct UnitRows {
    uint32_t shard;
    uint64_t begin, end;
  };
  UnitRows Rows(uint32_t u) const {
    const ReadUnit& unit = units_[u];
    const uint64_t begin = unit.block * shards_[unit.file].rows_per_unit;
    return {unit.file, begin, begin + unit.records};
  }

  // Before the shard is open: as the manifest says (see Init).
  uint64_t PayloadBytes(const Hdf5Shard& s, uint64_t begin, uint64_t end) const {
    if (s.reader == nullptr) return (end - begin) * s.row_bytes;
    if (s.reader->fixed_shape()) return (end - begin) * s.reader->image_info().RawBytes();
    return static_cast<uint64_t>(s.offsets[end] - s.offsets[begin]);
  }

  UnitLayout Layout(const Hdf5Shard& s, uint64_t begin, uint64_t end) const {
    const uint64_t n = end - begin;
    const bool fixed = s.reader != nullptr ? s.reader->fixed_shape() : fixed_;
    const uint64_t num_labels = s.reader != nullptr ? s.reader->num_labels()
                                                    : manifest_.schema.labels.size();
    UnitLayout l;
    l.payload = PayloadBytes(s, begin, end);
    l.labels = common::AlignUp(l.payload, 8);
    l.info = l.labels + n * sizeof(int64_t) * num_labels;
    l.total = l.info + (fixed ? 0 : n * kInfoValues * sizeof(uint32_t));
    return l;
  }

  // Opens shard f through the gate, once: a failure is kept and returned
  // for every later unit of the shard. Const: BufferBytes opens too; the
  // shards are the source's lazily filled state.
  absl::Status EnsureOpen(uint32_t f) const {
    Hdf5Shard& s = shards_[f];
    if (s.reader != nullptr || !s.open_error.ok()) return s.open_error;
    s.open_error = Open(f, s);
    if (!s.open_error.ok()) s.reader.reset();
    return s.open_error;
  }

  absl::Status Open(uint32_t f, Hdf5Shard& s) const {
    std::optional<ShardEntry> expected;
    if (checksummed_) expected = manifest_.shards[f];
    SP_ASSIGN_OR_RETURN(s.reader, backends::OpenHdf5Shard(paths_[f], expected, storage_.get()));
    SP_RETURN_IF_ERROR(
        common::CheckManifestRecords(paths_[f], s.reader->size(), manifest_.shards[f].records));
    if (!s.reader->fixed_shape()) return LoadOffsets(f, s);
    return absl::OkStatus();
  }

  // The flat layout's offsets, all of them (8 bytes a record), checked once
  // here so that loads can trust them.
  absl::Status LoadOffsets(size_t f, Hdf5Shard& s) const {
    const uint64_t rows = s.reader->size();
    s.offsets.resize(rows + 1);
    SP_RETURN_IF_ERROR(s.reader->ReadOffsets(0, rows, s.offsets.data()));
    for (uint64_t i = 0; i < rows; ++i) {
      if (s.offsets[i] < 0 || s.offsets[i + 1] < s.offsets[i]) {
        return absl::DataLossError(absl::StrCat(paths_[f], ": offsets of record ", i, " (",
                                                s.offsets[i], ", ", s.offsets[i + 1],
                                                ") do not ascend"));
      }
    }
    return absl::OkStatus();
  }

  std::vector<std::string> paths_;
  bool checksummed_;
  std::shared_ptr<remote::Storage> storage_;  // what a URL path is read through
  Manifest manifest_;
  bool fixed_ = false;  // the schema's shape is fixed: the `images` layout
  mutable std::vector<Hdf5Shard> shards_;
  std::vector<ReadUnit> units_;
  ImageInfo image_;
  uint64_t bytes_read_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnitSource>> OpenHdf5Source(
    const std::vector<std::string>& paths, const Manifest& manifest,
    bool checksummed, std::shared_ptr<remote::Storage> storage) {
  auto source = std::make_unique<Hdf5Source>(paths, checksummed, std::move(storage));
  SP_RETURN_IF_ERROR(source->Init(manifest));
  return source;
}

}  // namespace shardpack::reader
