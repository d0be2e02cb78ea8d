// The streaming reader: a dataset in, batches out, ready for a training step.
//
//   ReaderOptions options;
//   options.path = "cifar10-train";
//   options.batch_size = 512;
//   options.transform = Transform::CifarTrain();
//   absl::StatusOr<std::unique_ptr<Reader>> reader = Reader::Open(options);
//   if (!reader.ok()) return reader.status();
//   for (;;) {
//     absl::StatusOr<Batch> batch = (*reader)->Next();
//     if (absl::IsOutOfRange(batch.status())) break;   // end of the epoch
//     if (!batch.ok()) return batch.status();          // damage, with shard and offset
//     Train(batch->images(), batch->labels());          // valid while `batch` lives
//   }
//
// docs/reader.md explains every option and the contracts the tests check.
#ifndef SHARDPACK_READER_H_
#define SHARDPACK_READER_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/damage.h"
#include "shardpack/fields.h"
#include "shardpack/manifest.h"
#include "shardpack/storage.h"

namespace shardpack {

// How blocks are read from disk.
enum class IoEngine {
  kAuto,    // mmap on tmpfs/ramfs and for a page-cached dataset larger than
            // shuffle_bytes or mapped in 2 MiB pages, pread otherwise (the
            // default)
  kPread,   // pread with posix_fadvise(SEQUENTIAL/WILLNEED)
  kDirect,  // O_DIRECT into aligned buffers: bypasses the page cache
  kMmap,    // the file mapped; blocks are parsed in place
  kUring,   // io_uring with several reads in flight (when built with liburing)
  kRemote,  // a dataset in an object store: through its local cache (always,
            // whatever was asked; for a local dataset, an error)
};
std::string_view IoEngineName(IoEngine e);
absl::StatusOr<IoEngine> ParseIoEngine(std::string_view name);

// What happens to each sample between the shard and the batch slot.
struct Transform {
  enum class Kind {
    kNone,        // the stored raw pixels, unchanged (all records one shape)
    kCifarTrain,  // random crop `size` with zero padding `pad`, random h-flip
    kCifarEval,   // center crop `size` (the stored image when no padding)
    // JPEG records (decoded in the reader: DCT-scaled, region-only decode,
    // docs/reader.md). Output is size x size x 3 RGB; gray and CMYK/YCCK
    // JPEGs are converted.
    kRandomResizedCrop,  // torchvision's RandomResizedCrop(size, scale, ratio)
                         // + RandomHorizontalFlip(0.5): up to 10 attempts
                         // with area fraction ~ U(scale) and log aspect ratio
                         // ~ U(log ratio), then the central crop with the
                         // ratio clamped; antialiased bilinear resize
    kCenterCrop,         // eval: the shorter side resized to
                         // floor(size * 256 / 224) (256 for 224, as
                         // Resize(256) + CenterCrop(224)), then the central
                         // size x size, in one antialiased bilinear resize
  };
  Kind kind = Kind::kNone;
  int size = 32;  // output side for the crop transforms: 1..kMaxTransformSize
  int pad = 4;    // kCifarTrain: padding around the stored image, 0..
                  // kMaxTransformSize; if the dataset was packed with --pad,
                  // the stored padding is used first and only the rest is
                  // added on the fly
  // kRandomResizedCrop: the range of the crop's area as a fraction of the
  // image's, and of its aspect ratio (width / height).
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};

  static Transform None() { return {}; }
  static Transform CifarTrain(int size = 32, int pad = 4) {
    return {Kind::kCifarTrain, size, pad};
  }
  static Transform CifarEval(int size = 32) { return {Kind::kCifarEval, size, 0}; }
  static Transform RandomResizedCrop(int size = 224) {
    return {Kind::kRandomResizedCrop, size, 0};
  }
  static Transform CenterCrop(int size = 224) { return {Kind::kCenterCrop, size, 0}; }
};
// "none", "cifar-train", "cifar-eval", "rrc" (RandomResizedCrop, default
// 224), "center" (CenterCrop, default 224), each with an optional ":SIZE".
absl::StatusOr<Transform> ParseTransform(std::string_view text);

enum class OutputLayout { kNHWC, kNCHW };
std::string_view OutputLayoutName(OutputLayout l);  // "nhwc", "nchw"
absl::StatusOr<OutputLayout> ParseOutputLayout(std::string_view name);  // any case

enum class DType { kUint8, kFloat32 };
std::string_view DTypeName(DType d);  // "uint8", "float32"
absl::StatusOr<DType> ParseDType(std::string_view name);

// The element type of a batch's images (Batch::dtype()): ReaderOptions::dtype
// on the host, or what the device's kernel made (DeviceDType).
enum class ElementType { kUint8, kFloat16, kFloat32 };
std::string_view ElementTypeName(ElementType t);  // "uint8", "float16", "float32"
size_t ElementBytes(ElementType t);               // 1, 2, 4

// What the device's small kernel makes of a uint8 NHWC batch after its copy
// (docs/reader.md, GPU staging). kAsHost: no kernel, the device holds the
// host batch's bytes.
enum class DeviceDType { kAsHost, kFloat32, kFloat16 };
std::string_view DeviceDTypeName(DeviceDType d);  // "as-host", "float32", "float16"
absl::StatusOr<DeviceDType> ParseDeviceDType(std::string_view name);

// Records left over when the records do not divide evenly.
enum class Remainder {
  kDrop,     // each rank gets floor(N / world) records, and batches are full:
             // the last partial batch is dropped (the default)
  kPartial,  // each rank gets floor(N / world) records; the last batch may
             // be short (Batch::size() < batch_size)
  kPad,      // each rank gets ceil(N / world) records, padded by repeating
             // records from the start of the epoch order; the last batch is
             // padded the same way, so every batch is full
};
std::string_view RemainderName(Remainder r);  // "drop", "partial", "pad"
absl::StatusOr<Remainder> ParseRemainder(std::string_view name);

// What a damaged block or sample does.
enum class OnCorrupt {
  kError,  // Next() returns the error, naming shard and offset (the default)
  kSkip,   // the sample is replaced by another record of the same batch
           // position chosen deterministically, and counted in
           // Batch::skipped() and ReaderStats::skipped
};
std::string_view OnCorruptName(OnCorrupt c);  // "error", "skip"
absl::StatusOr<OnCorrupt> ParseOnCorrupt(std::string_view name);

// A damaged sample that OnCorrupt::kSkip replaced, as told to
// ReaderOptions::corrupt_reporter: where in the stream it was replaced, and
// the damage, described as VerifyShard and sharddump describe it.
struct CorruptSample {
  uint64_t epoch = 0;
  uint64_t batch = 0;      // within the epoch
  int position = 0;        // in the batch
  // path: the shard; offset: where in it, when the error says (else 0);
  // record: the damaged record's global index (Batch::record_index's
  // numbering); status: what was wrong, naming the shard and offset.
  Damage damage;
};

// One source of a mixture (ReaderOptions::sources; docs/reader.md,
// "Mixtures"): a dataset and how many of its samples each mixture epoch
// draws, all ranks together. Set exactly one of weight, repeat and choose.
// Each source is an endless stream of its own epochs (each a permutation
// of its records): a mixture epoch takes the next `count` samples of it, so
// every record is drawn exactly once per epoch of its source, whatever the
// ratio; the reader says the counts it resolved (Reader::sources()).
struct MixSource {
  std::string path;  // a dataset folder, its manifest, a lone shard, a view file
  // A share of the samples that ReaderOptions::epoch_samples leaves after
  // the repeat and choose sources, in proportion to the weights (> 0).
  double weight = 0;
  // This many times its records (> 0): 2 draws each record twice an epoch,
  // 0.5 half of them (the other half the next epoch). At most kMaxMixRepeat.
  double repeat = 0;
  // Exactly this many samples (1 to kMaxMixRepeat times its records).
  uint64_t choose = 0;
};

// How a mixture's labels relate (ReaderOptions::label_space).
enum class LabelSpace {
  kShared,  // the sources' label fields are the same (names, class names):
            // labels as stored (the default; Open refuses other sources)
  kOffset,  // each field's label + the classes of that field in the sources
            // before (every source names its classes); the schema's classes
            // are the sources' concatenated
  kSource,  // labels as stored, and one more label field, "source": the
            // source's index in ReaderOptions::sources
};
std::string_view LabelSpaceName(LabelSpace l);  // "shared", "offset", "source"
absl::StatusOr<LabelSpace> ParseLabelSpace(std::string_view name);

// Sources a mixture may have.
inline constexpr int kMaxMixSources = 64;
// The most a mixture epoch draws of a source: this many times its records.
inline constexpr int kMaxMixRepeat = 1024;

// Bounds of ReaderOptions: values past them are an InvalidArgumentError from
// Reader::Open, not an attempt to start a million threads.
inline constexpr int kMaxBatchSize = 1 << 20;
inline constexpr int kMaxRingSlots = 1024;
inline constexpr int kMaxDeviceBuffers = 1024;
// ReaderOptions::device_buffers' default: 3, or for small batches as many up
// to 16 as fit in 32 MiB of device memory.
inline constexpr int kAutoDeviceBuffers = 0;
// ReaderOptions::ring_slots' default: 4 slots, or for small batches as many
// up to 16 as keep the ring within 32 MiB, and at least threads + 2 (each
// worker builds a whole batch in a slot of its own), plus device_buffers
// when staging to a device. Reader::ring_slots() says which.
inline constexpr int kAutoRingSlots = 0;
// ReaderOptions::shuffle_bytes' default: a rank's share of the dataset when
// it is at most 256 MiB (permuted whole, and held across epochs: read once),
// else 32 MiB (a dataset larger than the window is read again every epoch
// whatever its size, which then only sets how many blocks each position
// mixes). Reader::shuffle_bytes() says which.
inline constexpr uint64_t kAutoShuffleBytes = 0;
inline constexpr int kMaxThreads = 1024;
// Transform::size and Transform::pad: at most this many pixels.
inline constexpr int kMaxTransformSize = 8192;
inline constexpr int kMaxWorldSize = 1 << 20;
// Segments a saved state may list for one epoch (ReaderState::earlier).
inline constexpr size_t kMaxStateSegments = 64;
// The last epoch a reader reads: 2^63-1. Restore refuses a state past it;
// after that epoch's end (its OutOfRangeError) the reader stays there and
// Next() is a FailedPreconditionError. So the pipeline's epoch arithmetic
// (the next epoch, the one after it) never wraps around.
inline constexpr uint64_t kMaxEpoch = (uint64_t{1} << 63) - 1;

struct ReaderOptions {
  // A dataset folder, its manifest.json, a lone shard of any backend, or a
  // view file (docs/cli.md, "PATH": what a path may name, for the tools
  // too; docs/reader.md, "Views"). A view is read as a mixture of one
  // source, drawn whole each epoch.
  std::string path;
  // A mixture (docs/reader.md, "Mixtures"): when not empty, the reader
  // reads these datasets (and `path` must be empty), 1..kMaxMixSources.
  // Every rank takes the same number of each source's samples, and every
  // batch holds floor or ceil of batch_size times a source's share of them.
  std::vector<MixSource> sources;
  // Samples a mixture epoch draws, all ranks together, for the weighted
  // sources to share; 0 (the default): the sum of all sources' records.
  uint64_t epoch_samples = 0;
  LabelSpace label_space = LabelSpace::kShared;
  // A dataset in an object store (a path or source `s3://bucket/prefix/` or
  // `https://host/path/`; docs/reader.md, "Datasets in an object store") is
  // read through a local cache of checked blocks in cache_dir, kept within
  // cache_bytes and shared by the processes of a node. "" and -1 (the
  // defaults): SHARDPACK_CACHE_DIR and SHARDPACK_CACHE_BYTES, else
  // ~/.cache/shardpack and 16 GiB. cache_bytes 0: nothing is kept.
  std::string cache_dir;
  int64_t cache_bytes = -1;
  // A Storage shared with other readers and record readers
  // (shardpack/storage.h): every path is then opened through it, a dataset
  // in an object store once for all of them, and stats().remote counts what
  // all of them did through it. cache_dir and cache_bytes must then be left
  // at their defaults (the handle carries its own cache options): an
  // InvalidArgumentError naming both otherwise. Null (the default): the
  // reader makes its own from cache_dir and cache_bytes. C++ only (no
  // Python keyword).
  std::shared_ptr<Storage> storage;
  int batch_size = 256;        // 1..kMaxBatchSize
  bool shuffle = true;         // per-epoch permutation of blocks and of records
  // Bytes of blocks the shuffle may hold at once (docs/reader.md, Shuffle):
  // a dataset share within it is permuted uniformly; a larger one by a
  // jittered sort that keeps about this many bytes of blocks in use at any
  // position. kAutoShuffleBytes (the default) chooses. Reads ahead are
  // read_ahead_bytes, apart.
  uint64_t shuffle_bytes = kAutoShuffleBytes;
  uint64_t seed = 0;
  // Distributed reading: this process is `rank` of `world_size`. -1 (the
  // default) takes RANK / WORLD_SIZE from the environment, else 0 / 1.
  int rank = -1;               // -1 or 0..world_size-1
  int world_size = -1;         // -1 or 1..kMaxWorldSize
  Remainder remainder = Remainder::kDrop;
  IoEngine io = IoEngine::kAuto;
  // Bytes of reads kept in flight ahead of the blocks in use. Default 32 MiB.
  uint64_t read_ahead_bytes = uint64_t{32} << 20;
  int threads = 0;             // transform workers; 0: all cores; at most kMaxThreads
  // Batches in flight (staging slots): 2..kMaxRingSlots, or kAutoRingSlots.
  // A deeper ring lets the workers run on while the consumer is held back
  // (by the scheduler, or a slow step), at the ring's memory.
  int ring_slots = kAutoRingSlots;
  Transform transform;
  OutputLayout layout = OutputLayout::kNHWC;
  DType dtype = DType::kUint8;
  // float32 output is (pixel / 255 - mean[c]) / std[c].
  std::array<float, 3> mean = {0.f, 0.f, 0.f};
  std::array<float, 3> std = {1.f, 1.f, 1.f};
  bool keys = false;           // fill Batch::key(i) (off: no per-sample copies)
  // Records of any fields (docs/reader.md, "Fields in batches"). `fields`:
  // the names of the fields a batch delivers (Batch::field), in any order;
  // empty (the default): all of them. Fields left out are neither decoded
  // nor copied. A classic dataset (images and labels) read without
  // `fields` and `image_fields` has no Batch::field: its batches are what
  // they always were.
  std::vector<std::string> fields;
  // The image fields the transform applies to, each "NAME", "NAME:linear"
  // or "NAME:nearest" (how a raw one is resized by rrc and center; default:
  // nearest for a raw 1-channel field after the first, a label map, linear
  // otherwise). The first is Batch::images(); the others follow it: the
  // same crop window (scaled to their size) and flip. Empty (the default):
  // the first image field of the schema, unless `transform` is none and its
  // images have no fixed raw shape (then no field is transformed).
  std::vector<std::string> image_fields;
  OnCorrupt on_corrupt = OnCorrupt::kError;
  // With kSkip: told of each damaged sample that was replaced, as LevelDB's
  // log reader reports the bytes it drops. Called by Next(), on its thread,
  // before it returns the batch, in the batch's order.
  std::function<void(const CorruptSample&)> corrupt_reporter;

  // GPU staging (docs/reader.md). `device` -1 (the default): batches stay in
  // host memory. 0 or more: ring slots are pinned and each batch is copied
  // to that CUDA device on the reader's own stream, into one of
  // `device_buffers` device buffers (2..kMaxDeviceBuffers, or kAutoDeviceBuffers). Without CUDA or
  // without that device at run time, the reader serves host memory
  // (Batch::on_device() is false) and Reader::device_fallback() says why.
  int device = -1;
  int device_buffers = kAutoDeviceBuffers;
  // kFloat32 / kFloat16: the host batch is built as uint8 NHWC (`dtype` must
  // stay kUint8) and one kernel on the device converts it to `layout` with
  // `mean` / `std`, so the bus carries a quarter of a float32 batch's bytes.
  // Served on the host as float32 when there is no device; float16 needs one.
  DeviceDType device_dtype = DeviceDType::kAsHost;
  // Optional cudaStream_t of the consumer. When set, the copy that reuses a
  // device buffer waits (on the GPU, cudaStreamWaitEvent) for the work this
  // stream held when that buffer's Batch was destroyed. When null, the
  // consumer's work on a batch must be complete before the Batch is destroyed.
  void* consumer_stream = nullptr;
};

// A stretch of an epoch read with one set of plan options: the world size
// and options of the job that read it, and the batches each of its ranks
// delivered (docs/reader.md, Elastic resume). With the seed, the epoch and
// the dataset, this says which records every rank of the job delivered:
// the one type for a reader's position (ReaderState) and the plan's input
// (reader/epoch_plan.h, PlanOf).
struct ReadSegment {
  int world_size = 0;
  int batch_size = 0;
  Remainder remainder = Remainder::kDrop;
  bool shuffle = true;
  uint64_t shuffle_bytes = 0;
  uint64_t batches = 0;
  friend bool operator==(const ReadSegment&, const ReadSegment&) = default;
};

// Where a reader is: enough for any number of ranks to resume.
//
// The same on every rank of a job: ranks deliver the same number of batches
// in lockstep and a plan is a pure function of (seed, epoch, world size,
// options), so the batch count of one rank tells which records every rank
// delivered. A state saved by any rank restores on a job of another world
// size, batch size, remainder or shuffle budget (Reader::Restore). Every
// field is checked on Restore: a state is data from outside.
//
// Saved as JSON text by ToJson and read back by FromJson (docs/reader.md,
// "The saved state"); the Python binding's state_dict() is the same fields.
struct ReaderState {
  uint64_t seed = 0;
  uint64_t epoch = 0;  // 0..kMaxEpoch
  // Reader::fingerprint() of the dataset the state was saved on.
  uint64_t fingerprint = 0;
  // The segment being read: the saving reader's plan options, and in
  // `batches` the batches of `epoch` it delivered in this segment ("batch"
  // in the saved form).
  ReadSegment segment;
  // Earlier segments of `epoch`, oldest first (empty unless the epoch was
  // resumed with other options); at most kMaxStateSegments.
  std::vector<ReadSegment> earlier;
  friend bool operator==(const ReaderState&, const ReaderState&) = default;

  // One line of JSON: {"seed":..,"epoch":..,"batch":..,"fingerprint":"<16
  // hex digits>","world_size":..,"batch_size":..,"remainder":"drop",
  // "shuffle":true,"shuffle_bytes":..,"earlier":[{..,"batches":..}]}.
  std::string ToJson() const;
  // The state ToJson wrote. InvalidArgumentError naming the field and
  // quoting its value (bounded) for text that is not JSON, a missing or
  // unknown key, a value of the wrong type, a negative number or one past
  // its field's range (epoch past kMaxEpoch, more than kMaxStateSegments
  // earlier segments): `state["epoch"] is -1: it must be an integer from 0
  // to 2^63-1`. What depends on the dataset and the reader (the
  // fingerprint, the seed, a batch past its epoch's end, a world size of 0)
  // is Reader::Restore's to check.
  static absl::StatusOr<ReaderState> FromJson(std::string_view text);
};

// Where time goes. Each stage's wait is time that stage spent blocked on the
// stage before it (I/O: the sequencer waiting for blocks; transform: workers
// waiting for work; consumer: Next() waiting for a finished batch).
struct ReaderStats {
  // Batches and samples delivered by Next() (not those built ahead).
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t bytes_read = 0;       // from storage
  uint64_t skipped = 0;          // damaged samples replaced, in delivered batches
  double io_wait_s = 0;
  double transform_wait_s = 0;
  double consumer_wait_s = 0;
  // What the reader holds: shuffle_bytes + read_ahead_bytes + ring + index_bytes
  // + plan_bytes (docs/reader.md, "Memory").
  uint64_t memory_budget_bytes = 0;
  // The dataset's index in memory: per shard its block table and 4 bytes a
  // record (record offsets), per read unit its bookkeeping.
  uint64_t index_bytes = 0;
  // The most bytes the epoch plans will hold at once: the plan of the
  // consumer's epoch (8 bytes a position) while the next one is built (its
  // order, 8 bytes a position, and the shuffle's scratch: 10 bytes a record
  // of a share within the shuffle budget, else at most 33 bytes a record of
  // twice what the budget holds; docs/reader.md, "Memory").
  uint64_t plan_bytes = 0;
  // The most bytes they held at once so far (<= plan_bytes).
  uint64_t plan_peak_bytes = 0;
  // A mixture (or a view): the samples delivered from each source
  // (Reader::sources()' order), counted by the workers as they build them;
  // a damaged sample that kSkip replaced is not counted. Empty otherwise.
  std::vector<uint64_t> source_samples;
  // Datasets in an object store: what their stores and caches did since
  // the reader's storage opened them (with a Storage shared through
  // ReaderOptions::storage, what every reader of it did). All zero for
  // local datasets.
  struct Remote {
    uint64_t requests = 0;      // HTTP requests, retries included
    uint64_t bytes = 0;         // bytes received
    uint64_t retries = 0;       // requests that were retries (faults, throttling)
    uint64_t cache_hits = 0;    // blocks read from the local cache
    uint64_t cache_misses = 0;  // blocks fetched
    uint64_t cache_kept = 0;    // blocks added to the cache
    uint64_t cache_evicted = 0; // entries removed for the budget
    uint64_t refetched = 0;     // blocks fetched again after failing their CRC-32C
    uint64_t damaged = 0;       // blocks that failed twice (then on_corrupt applies)
  } remote;
};

// A source as the reader resolved it (Reader::sources()).
struct SourceInfo {
  std::string path;
  uint64_t records = 0;    // in the dataset
  uint64_t per_epoch = 0;  // samples each epoch draws, all ranks together
  uint64_t per_rank = 0;   // of them, samples each rank takes
};

class Reader;

// One field of a batch, collated (Batch::field; docs/reader.md, "Fields in
// batches"). Its pointers view the batch's slot: valid while the Batch lives.
struct BatchField {
  std::string_view name;
  FieldType type = FieldType::kBytes;
  // Fixed: `values` is [size(), shape[1]...], one row a sample (labels, an
  // array of a fixed shape, a transformed image, a raw image of a fixed
  // shape delivered as stored). Variable (strings, bytes, JSON, an array
  // whose first dimension varies, any other image delivered as stored):
  // `values` is [offsets[size()], shape[1]...] and sample i's value is its
  // rows offsets[i] to offsets[i + 1] (Arrow's list layout; a row of the
  // byte-like types is a byte).
  bool variable = false;
  ArrayDType dtype = ArrayDType::kU8;  // of values' elements
  int rank = 0;                        // dimensions of `shape` in use
  // shape[0]: size() when fixed, offsets[size()] when variable.
  std::array<int64_t, kMaxArrayDims + 1> shape{};
  // Null for Batch::images()' field when on_device() (device_images()).
  const void* values = nullptr;
  const int64_t* offsets = nullptr;  // variable: [size() + 1], offsets[0] = 0
  // [size()]: 1 where the sample has the field; 0 where an optional field
  // is absent (then its row is zeros, or it has no rows; a label is -1).
  const uint8_t* present = nullptr;
  // Images delivered as stored: [size(), 3] height, width, channels of each
  // (zeros where absent); null for every other field.
  const int32_t* image_shapes = nullptr;
  // An image the transform made (Batch::images() or one that follows it);
  // Batch::crops() says where it came from.
  bool transformed = false;
  bool optional = false;  // declared optional: `present` may hold 0s
};

// A finished batch in a staging slot. Move-only; destroying it returns the
// slot to the ring. Views are valid while the Batch lives. Batch k is built
// into the slot of batch k - ring_slots: Next() returns FailedPreconditionError
// rather than wait while that older Batch is still alive. A Batch may be
// destroyed on any thread, also while Next() runs on another (a training
// thread freeing what a loading thread fetched); the Reader must outlive it.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  // Samples in this batch (batch_size except a short last batch).
  int size() const;
  // Image tensor: size() x H x W x C (NHWC) or size() x C x H x W (NCHW),
  // of dtype() elements; shape() gives the four dimensions.
  // Host memory; null when on_device() (the host slot went back to the ring
  // once its copy completed). shape() and image_bytes() describe
  // device_images() when on_device().
  const void* images() const;
  // True when the images are in device memory (ReaderOptions::device >= 0,
  // CUDA built in and the device present).
  bool on_device() const;
  // The device tensor when on_device(), else images(). Owned by the reader's
  // ring of device buffers; valid while the Batch lives (see
  // ReaderOptions::consumer_stream for work still queued at destruction).
  const void* device_images() const;
  // A cudaEvent_t recorded on the reader's stream after this batch's copy
  // (and kernel); null on the host. Next() returns once it has completed, so
  // cudaStreamWaitEvent(your_stream, event) costs nothing; keep it so the
  // ordering is explicit.
  void* device_event() const;
  std::array<int64_t, 4> shape() const;
  // The images' element type, on the host or the device: uint8 or float32
  // as ReaderOptions::dtype says; with device_dtype, float32 or float16 on
  // the device (float32 on the host when there is no device). The same for
  // every batch of a reader.
  ElementType dtype() const;
  uint64_t image_bytes() const;
  // labels()[i * num_labels() + j] is label j of sample i.
  const int64_t* labels() const;
  int num_labels() const;
  // Position of sample i in the dataset (its global record index). In a
  // mixture, records are numbered on from one source to the next: source
  // k's record r is the sum of the records of sources 0..k-1, plus r.
  uint64_t record_index(int i) const;
  // Key of sample i (empty unless ReaderOptions::keys).
  std::string_view key(int i) const;
  uint64_t epoch() const;
  uint64_t index() const;  // batch number within the epoch
  int skipped() const;     // samples replaced because they were damaged

  // The fields delivered (ReaderOptions::fields), in the schema's order: 0
  // for a classic dataset read without `fields` or `image_fields`.
  int num_fields() const;
  // Field k, 0 <= k < num_fields().
  BatchField field(int k) const;
  // The index of the field named `name`, or -1.
  int field_index(std::string_view name) const;
  // Where each sample's image (images()) came from, so that boxes can follow
  // it: crops()[4 i .. 4 i + 3] are y, x, h, w of the crop window in the
  // source image's pixels (fractional for a center crop; beyond the image
  // where CIFAR's padding was cropped; 0, 0, H, W for none), source_sizes()
  // [2 i], [2 i + 1] the source's height and width, flips()[i] 1 where the
  // output was mirrored after the crop and resize. Zeros for an absent
  // image, or when no field is transformed; null for a classic read
  // (num_fields() 0), which has no field to follow its images.
  const float* crops() const;
  const int32_t* source_sizes() const;
  const uint8_t* flips() const;

 private:
  friend class Reader;
  struct Slot;
  Batch(Reader* reader, Slot* slot) : reader_(reader), slot_(slot) {}
  Reader* reader_ = nullptr;
  Slot* slot_ = nullptr;
};

// Thread-compatible: call Next/state/Restore from one thread (a Batch may be
// destroyed on any).
class Reader {
 public:
  static absl::StatusOr<std::unique_ptr<Reader>> Open(const ReaderOptions& options);
  ~Reader();

  // The next batch. OutOfRangeError once at the end of each epoch; the call
  // after it starts the next epoch. A damaged sample (with kError) or an I/O
  // failure comes out here, naming shard and offset.
  // FailedPreconditionError when the Batch delivered ring_slots calls ago is
  // still alive (its slot is the one the next batch needs), and after the
  // end of epoch kMaxEpoch.
  absl::StatusOr<Batch> Next();
  // The same, waiting at most `timeout` for the batch to be built:
  // DeadlineExceededError when it is not, and nothing is consumed (the next
  // call waits for the same batch). A ready batch costs what Next() costs:
  // the clock is read only when there is a wait. For a caller that must do
  // something while it waits (the Python binding answers Ctrl-C between
  // waits). With GPU staging, the wait for a batch's copy to complete is
  // not cut short: it is as long as the device's work.
  absl::StatusOr<Batch> Next(std::chrono::nanoseconds timeout);

  // Batches per epoch on this rank (the same on every rank).
  uint64_t batches_per_epoch() const;
  // Batches of the current epoch on this rank: batches_per_epoch(), or after
  // an elastic Restore, what that epoch's rest gives (the same on every rank).
  uint64_t batches_in_epoch() const;
  // Records the reader draws from: the dataset's, a view's selected ones, a
  // mixture's sources' together.
  uint64_t records() const;
  // What each source draws an epoch: a mixture's sources in order, else
  // one, the dataset (per_epoch its records).
  const std::vector<SourceInfo>& sources() const;
  // Slots of the ring: ReaderOptions::ring_slots, or what kAutoRingSlots
  // chose for this batch's bytes. Up to ring_slots() - 1 Batches may be held.
  int ring_slots() const;
  // The shuffle's budget: ReaderOptions::shuffle_bytes, or what
  // kAutoShuffleBytes chose for this dataset.
  uint64_t shuffle_bytes() const;
  // The dataset's schema: its image encoding and shape (when fixed) and its
  // label fields with their class names (LabelField::classes, may be empty).
  // A lone `.shard` file carries none: its schema is made up from its first
  // record and has no class names.
  const Schema& schema() const;
  // The shape of a full batch's images(), as Batch::shape() gives it, known
  // before the first batch: batch_size x H x W x C (NHWC) or x C x H x W.
  std::array<int64_t, 4> output_shape() const;
  // The I/O engine in use: what kAuto chose (never kAuto).
  IoEngine io_engine() const;
  // Why batches stay in host memory though ReaderOptions::device >= 0 (no
  // CUDA built in, no such device); empty otherwise. The library never
  // prints: the tools print this.
  const std::string& device_fallback() const;
  // The dataset's fingerprint (docs/reader.md): equal on every rank that
  // reads the same dataset. Computed once by Open.
  uint64_t fingerprint() const;

  // The position after the last batch returned by Next().
  ReaderState state() const;
  // Continues from `state`, saved by any rank of any job on this dataset
  // with this seed. With the same world size and plan options, the stream is
  // the same as if the batches before it had been read. With others
  // (elastic resume), the ranks of this job together deliver every record
  // that the state's epoch still owed, once, each rank the same number of
  // batches (docs/reader.md); later epochs are ordinary ones. Costs what
  // planning and filling the buffers cost, not what reading the skipped
  // batches would. InvalidArgumentError naming the field for a state of
  // another dataset or seed or with a value out of range (an epoch past
  // kMaxEpoch, a batch past the epoch's end, ...).
  absl::Status Restore(const ReaderState& state);

  ReaderStats stats() const;

 private:
  // The implementation (reader/reader_impl.h); complete only there.
  class Impl;
  friend class Batch;
  friend class ReaderAccess;  // the reader's own way to make one (reader/reader_impl.h)
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardpack

#endif  // SHARDPACK_READER_H_
