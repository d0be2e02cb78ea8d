// GPU staging (reader/staging.h). The ring's logic runs through a fake copy
// engine (a thread that "copies" with memcpy after a delay, can fail a copy,
// and holds copies at a gate the test opens), so it is tested without a GPU;
// the CUDA tests skip without one. No test asserts what happened during a
// sleep: they wait on the fake's latches (AwaitIssued) and hold copies at its
// gate instead.
#include "reader/staging.h"

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/fields.h"
#include "shardpack/reader.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/write_shard.h"

namespace shardpack::reader {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

// What the fake saw; outlives it (the reader owns the engine).
struct FakeLog {
  std::atomic<int> host_alive{0}, host_allocs{0};
  std::atomic<int> in_flight{0}, max_in_flight{0};
  std::atomic<int> issued{0}, completed{0}, released{0};
  std::atomic<int> overwritten{0};  // a host slot changed while its copy was in flight
  // A device buffer issued again while the consumer still held its batch.
  std::atomic<int> overruns{0};

  // The gate: copy number `i` (in issue order) completes only once
  // i < open_below. Open by default.
  void OpenGate(int below) {
    {
      std::lock_guard<std::mutex> lock(mu);
      open_below = below;
    }
    cv.notify_all();
  }
  // The latch: waits until `n` copies were issued (false after a minute).
  bool AwaitIssued(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return issued >= n; });
  }

  std::mutex mu;
  std::condition_variable cv;
  int open_below = INT_MAX;  // guarded by mu
};

// Opens the gate when it goes, so that a failed assertion does not leave a
// reader to be destroyed waiting on copies held at the gate. Declare it
// after the reader: it goes first.
struct GateOpener {
  ~GateOpener() { log->OpenGate(INT_MAX); }
  FakeLog* log;
};

uint64_t Hash(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

class FakeCopyEngine final : public CopyEngine {
 public:
  FakeCopyEngine(std::shared_ptr<FakeLog> log, milliseconds delay, int fail_copy = -1)
      : log_(std::move(log)), delay_(delay), fail_copy_(fail_copy) {
    thread_ = std::thread([this] { Main(); });
  }
  ~FakeCopyEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    log_->OpenGate(INT_MAX);  // a copy held at the gate must not hang the join
    thread_.join();
  }
  std::string name() const override { return "fake"; }
  uint8_t* HostAlloc(size_t bytes) override {
    ++log_->host_alive;
    ++log_->host_allocs;
    return static_cast<uint8_t*>(std::malloc(bytes));
  }
  void HostFree(uint8_t* p) override {
    --log_->host_alive;
    std::free(p);
  }
  absl::Status Init(int buffers, size_t, size_t out_bytes, const FinishParams& finish) override {
    buffers_.assign(buffers, std::vector<uint8_t>(out_bytes));
    state_.assign(buffers, Buffer());
    finish_ = finish;
    return absl::OkStatus();
  }
  void* buffer(int b) override { return buffers_[b].data(); }
  void* event(int) override { return nullptr; }
  absl::Status Issue(int b, const uint8_t* src, size_t bytes, int samples, DoneFn done,
                     void* arg) override {
    int n = ++log_->in_flight;
    for (int m = log_->max_in_flight; n > m && !log_->max_in_flight.compare_exchange_weak(m, n);) {
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_[b].held) ++log_->overruns;
      state_[b].held = true;
      ++state_[b].issued;
      std::lock_guard<std::mutex> log_lock(log_->mu);
      queue_.push_back({b, src, bytes, samples, done, arg, Hash(src, bytes), log_->issued++});
    }
    cv_.notify_all();
    log_->cv.notify_all();
    return absl::OkStatus();
  }
  absl::Status Wait(int b) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return state_[b].completed == state_[b].issued; });
    return state_[b].status;
  }
  void Released(int b) override {
    ++log_->released;
    std::lock_guard<std::mutex> lock(mu_);
    state_[b].held = false;
  }

 private:
  struct Job {
    int b;
    const uint8_t* src;
    size_t bytes;
    int samples;
    DoneFn done;
    void* arg;
    uint64_t hash;
    int index;
  };
  struct Buffer {
    uint64_t issued = 0, completed = 0;
    bool held = false;  // issued, and not yet Released by the consumer
    absl::Status status;
  };

  void Main() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = queue_.front();
        queue_.pop_front();
      }
      {
        std::unique_lock<std::mutex> lock(log_->mu);
        log_->cv.wait(lock, [&] { return job.index < log_->open_below; });
      }
      std::this_thread::sleep_for(delay_);  // a slow copy, never a test's clock
      absl::Status s;
      if (job.index == fail_copy_) {
        s = absl::InternalError("injected copy failure");
      } else if (finish_.enabled) {
        FinishOnHost(finish_, job.samples, job.src, buffers_[job.b].data());
      } else {
        std::memcpy(buffers_[job.b].data(), job.src, job.bytes);
      }
      if (Hash(job.src, job.bytes) != job.hash) ++log_->overwritten;
      --log_->in_flight;
      ++log_->completed;
      job.done(job.arg);
      {
        std::lock_guard<std::mutex> lock(mu_);
        state_[job.b].status = s;
        ++state_[job.b].completed;
      }
      cv_.notify_all();
    }
  }

  std::shared_ptr<FakeLog> log_;
  const milliseconds delay_;
  const int fail_copy_;
  FinishParams finish_;
  std::vector<std::vector<uint8_t>> buffers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Buffer> state_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class StagingTest : public ::testing::Test {
 protected:
  // One shard of `n` 6x5x3 raw records.
  std::string MakeShard(int n) {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < n; ++i) records.push_back(testing::RawRecord(i, 6, 5, 3));
    std::string path = dir_.Join("data.shard");
    std::ofstream(path, std::ios::binary) << testing::WriteShard(records);
    return path;
  }
  ReaderOptions Options(int n) {
    ReaderOptions o;
    o.path = MakeShard(n);
    o.batch_size = 8;
    o.threads = 2;
    o.ring_slots = 3;
    o.device_buffers = 3;
    o.rank = 0;
    o.world_size = 1;
    o.seed = 7;
    return o;
  }
  // Every batch's images and labels of one epoch, from device_images().
  static std::string ReadEpoch(Reader& reader, bool expect_on_device) {
    std::string out;
    for (;;) {
      absl::StatusOr<Batch> b = reader.Next();
      if (absl::IsOutOfRange(b.status())) break;
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) break;
      EXPECT_EQ(b->on_device(), expect_on_device);
      out.append(static_cast<const char*>(b->device_images()), b->image_bytes());
      out.append(reinterpret_cast<const char*>(b->labels()), b->size() * sizeof(int64_t));
    }
    return out;
  }
  static absl::StatusOr<std::unique_ptr<Reader>> OpenFake(ReaderOptions o,
                                                          std::shared_ptr<FakeLog> log,
                                                          milliseconds delay, int fail = -1) {
    o.device = 0;
    return OpenReaderWithEngine(o, std::make_unique<FakeCopyEngine>(log, delay, fail));
  }

  testing::TempDir dir_;
};

// A dataset of fields staged: the images go to the device, the fields stay
// in host memory, each batch's own (its host slot's columns swap into its
// device buffer's slot, and the host slot builds into the ones given back).
TEST_F(StagingTest, FieldsStayOnTheHostBesideTheirStagedImages) {
  std::vector<Field> fields = {testing::FieldOf("photo", FieldType::kImage),
                               testing::FieldOf("caption", FieldType::kString)};
  fields[0].image = {Encoding::kRaw, Layout::kHWC, 6, 5, 3};
  DatasetWriterOptions w;
  w.directory = dir_.Join("fields");
  std::filesystem::create_directories(w.directory);
  SP_ASSERT_OK_AND_ASSIGN(w.schema, MakeSchema(fields));
  SP_ASSERT_OK_AND_ASSIGN(auto writer, DatasetWriter::Create(w));
  RecordFields build(w.schema);
  for (int i = 0; i < 100; ++i) {
    const testing::OwnedRecord r = testing::RawRecord(uint64_t(i), 6, 5, 3);
    const std::string caption(size_t(i % 17), char('a' + i % 26)), key = "k" + std::to_string(i);
    std::vector<FieldValue> v(2);
    v[0] = {true, r.image, 0, r.payload};
    v[1] = {true, {}, 0, {reinterpret_cast<const uint8_t*>(caption.data()), caption.size()}};
    SP_ASSERT_OK_AND_ASSIGN(Record record, build.Build(key, v));
    SP_ASSERT_OK(writer->Add(record));
  }
  SP_ASSERT_OK(writer->Finish().status());
  ReaderOptions o = Options(1);
  o.path = w.directory;
  auto read = [](Reader& reader, bool on_device) {
    std::string out;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (;;) {
        absl::StatusOr<Batch> b = reader.Next();
        if (absl::IsOutOfRange(b.status())) break;
        EXPECT_TRUE(b.ok()) << b.status();
        if (!b.ok()) return out;
        EXPECT_EQ(b->on_device(), on_device);
        out.append(static_cast<const char*>(b->device_images()), b->image_bytes());
        const BatchField caption = b->field(1);
        EXPECT_EQ(b->field(0).values, on_device ? nullptr : b->images());
        out.append(static_cast<const char*>(caption.values), size_t(caption.offsets[b->size()]));
        out.append(reinterpret_cast<const char*>(caption.offsets), 8 * size_t(b->size() + 1));
        out.append(reinterpret_cast<const char*>(b->crops()), 16 * size_t(b->size()));
      }
    }
    return out;
  };
  SP_ASSERT_OK_AND_ASSIGN(auto host, Reader::Open(o));
  const std::string want = read(*host, false);
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto staged, OpenFake(o, log, milliseconds(1)));
  EXPECT_TRUE(read(*staged, true) == want);
  // No image field is transformed: nothing to stage.
  o.fields = {"caption"};
  EXPECT_THAT(OpenFake(o, log, milliseconds(1)).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("no image field is transformed")));
}

TEST_F(StagingTest, StagedBatchesAreTheHostBatchesInOrder) {
  ReaderOptions o = Options(100);
  SP_ASSERT_OK_AND_ASSIGN(auto host, Reader::Open(o));
  const std::string want = ReadEpoch(*host, false) + ReadEpoch(*host, false);
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto staged, OpenFake(o, log, milliseconds(1)));
  // EXPECT_TRUE, not EXPECT_EQ: a mismatch would print every byte.
  EXPECT_TRUE(ReadEpoch(*staged, true) + ReadEpoch(*staged, true) == want);
  EXPECT_EQ(log->host_allocs, o.ring_slots);  // the ring's slots come from the engine
  EXPECT_EQ(log->released, 24);               // 12 batches x 2 epochs
  // The workers run into the third epoch, and may stage as many of its
  // batches as there are device buffers the consumer does not hold.
  staged.reset();
  EXPECT_EQ(log->completed, log->issued);
  EXPECT_GE(log->completed, 24);
  EXPECT_LE(log->completed, 24 + o.device_buffers);
}

TEST_F(StagingTest, HostSlotIsReusedOnlyAfterItsCopyCompleted) {
  ReaderOptions o = Options(200);
  o.threads = 4;
  auto log = std::make_shared<FakeLog>();
  // Slow copies, fast builders: a slot handed back too early would be
  // overwritten while the fake still "copies" it.
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(5)));
  ReadEpoch(*reader, true);
  reader.reset();  // its copies ahead, into the next epoch, complete
  EXPECT_EQ(log->completed, log->issued);
  EXPECT_GE(log->completed, 25);
  EXPECT_LE(log->completed, 25 + o.device_buffers);
  EXPECT_EQ(log->overwritten, 0);
}

// By default: 3 device buffers, or up to 16 for small batches; the ring has
// a slot for each worker and each device buffer, and two more.
TEST_F(StagingTest, DefaultDepthsFollowTheBatchAndTheStaging) {
  EXPECT_EQ(DeviceBuffersFor(kAutoDeviceBuffers, 1536 << 10), 16);  // CIFAR, 512 a batch
  EXPECT_EQ(DeviceBuffersFor(kAutoDeviceBuffers, 8 << 20), 4);
  EXPECT_EQ(DeviceBuffersFor(kAutoDeviceBuffers, 19 << 20), 3);     // 224x224, 128
  EXPECT_EQ(DeviceBuffersFor(kAutoDeviceBuffers, 0), 16);
  EXPECT_EQ(DeviceBuffersFor(5, 1), 5);
  ReaderOptions o = Options(200);
  o.ring_slots = kAutoRingSlots;
  o.device_buffers = kAutoDeviceBuffers;
  auto log = std::make_shared<FakeLog>();
  log->OpenGate(INT_MAX);
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(0)));
  EXPECT_EQ(reader->ring_slots(), 2 + 16 + 4);  // workers, device buffers (tiny batches), four
  ReadEpoch(*reader, true);
  EXPECT_LE(log->max_in_flight, 16);
  EXPECT_EQ(log->overruns, 0);
  EXPECT_EQ(log->overwritten, 0);
}

TEST_F(StagingTest, SlowCopiesStallTheBuildersWithinBoundedMemory) {
  ReaderOptions o = Options(200);
  auto log = std::make_shared<FakeLog>();
  log->OpenGate(1);  // copy 0 completes; the others wait for the test
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(1)));
  GateOpener opener{log.get()};
  {
    SP_ASSERT_OK_AND_ASSIGN(Batch first, reader->Next());
    // The consumer holds batch 0 and copies 1 and 2 cannot finish: the
    // stager fills every device buffer, then must stop (a buffer issued
    // again while held counts as an overrun, whenever it happens), and the
    // builders, whose host slots are still being copied, must wait (a slot
    // rebuilt under its copy counts as overwritten).
    ASSERT_TRUE(log->AwaitIssued(o.device_buffers));
    EXPECT_EQ(log->overruns, 0);
    EXPECT_LE(log->max_in_flight, o.device_buffers);
    log->OpenGate(INT_MAX);
  }
  ReadEpoch(*reader, true);
  EXPECT_EQ(log->overruns, 0);
  EXPECT_EQ(log->overwritten, 0);
  EXPECT_LE(log->max_in_flight, o.device_buffers);
  EXPECT_EQ(log->host_allocs, o.ring_slots);
  EXPECT_GT(reader->stats().transform_wait_s, 0);  // the builders waited for slots
}

TEST_F(StagingTest, DestroyingTheReaderWithCopiesInFlightNeitherHangsNorLeaks) {
  ReaderOptions o = Options(200);
  auto log = std::make_shared<FakeLog>();
  {
    log->OpenGate(1);  // copies 1 and up wait at the gate
    SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(50)));
    GateOpener opener{log.get()};
    { SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next()); }
    // Batches 1 and 2 are built and their copies issued, held at the gate.
    ASSERT_TRUE(log->AwaitIssued(3));
    EXPECT_GT(log->in_flight, 0);
    // Let them go: they take 50 ms each, so the reader dies under them.
    log->OpenGate(INT_MAX);
  }
  EXPECT_EQ(log->in_flight, 0);
  EXPECT_EQ(log->host_alive, 0);
}

TEST_F(StagingTest, RestoreWithCopiesInFlightGivesTheSameRest) {
  ReaderOptions o = Options(100);
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(2)));
  const std::string whole = ReadEpoch(*reader, true);
  for (int i = 0; i < 3; ++i) { SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next()); }
  ReaderState state = reader->state();
  state.epoch = 0;
  state.segment.batches = 5;
  SP_ASSERT_OK(reader->Restore(state));
  const std::string rest = ReadEpoch(*reader, true);
  const size_t per_batch = whole.size() / 12;
  EXPECT_TRUE(rest == whole.substr(5 * per_batch));
}

TEST_F(StagingTest, CopyErrorComesOutOfNextNamingTheBatch) {
  ReaderOptions o = Options(100);
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(1), /*fail=*/2));
  SP_ASSERT_OK(reader->Next().status());
  SP_ASSERT_OK(reader->Next().status());
  EXPECT_THAT(reader->Next(),
              testing::StatusIs(absl::StatusCode::kInternal,
                                HasSubstr("copy of batch 2 of epoch 0 to fake: injected")));
  SP_EXPECT_OK(reader->Next().status());  // the next batch is fine
}

TEST_F(StagingTest, HoldingEveryDeviceBufferIsAnErrorNotADeadlock) {
  ReaderOptions o = Options(100);
  o.device_buffers = 2;
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto reader, OpenFake(o, log, milliseconds(1)));
  SP_ASSERT_OK_AND_ASSIGN(Batch a, reader->Next());
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_THAT(reader->Next(), testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                                HasSubstr("2 device buffers")));
}

// The finish through the fake runs the CPU reference: the ring hands it the
// uint8 NHWC batch, and the output has the device's layout and dtype.
TEST_F(StagingTest, DeviceFinishGetsTheUint8BatchAndMatchesHostFloat) {
  ReaderOptions o = Options(40);
  o.layout = OutputLayout::kNCHW;
  o.mean = {0.5f, 0.4f, 0.3f};
  o.std = {0.2f, 0.25f, 0.3f};
  ReaderOptions host = o;
  host.dtype = DType::kFloat32;
  SP_ASSERT_OK_AND_ASSIGN(auto reference, Reader::Open(host));
  const std::string want = ReadEpoch(*reference, false);
  o.device_dtype = DeviceDType::kFloat32;
  auto log = std::make_shared<FakeLog>();
  SP_ASSERT_OK_AND_ASSIGN(auto staged, OpenFake(o, log, milliseconds(0)));
  EXPECT_TRUE(ReadEpoch(*staged, true) == want);
  // Each batch says what the device made: float32 here, float16 when asked.
  SP_ASSERT_OK_AND_ASSIGN(auto f32, OpenFake(o, std::make_shared<FakeLog>(), milliseconds(0)));
  SP_ASSERT_OK_AND_ASSIGN(Batch a, f32->Next());
  EXPECT_EQ(a.dtype(), ElementType::kFloat32);
  o.device_dtype = DeviceDType::kFloat16;
  SP_ASSERT_OK_AND_ASSIGN(auto f16, OpenFake(o, std::make_shared<FakeLog>(), milliseconds(0)));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, f16->Next());
  EXPECT_EQ(b.dtype(), ElementType::kFloat16);
  EXPECT_EQ(b.image_bytes(), a.image_bytes() / 2);
}

TEST(HalfBitsTest, RoundsToNearestEvenLikeCuda) {
  EXPECT_EQ(HalfBits(0.f), 0x0000);
  EXPECT_EQ(HalfBits(-0.f), 0x8000);
  EXPECT_EQ(HalfBits(1.f), 0x3c00);
  EXPECT_EQ(HalfBits(-2.f), 0xc000);
  EXPECT_EQ(HalfBits(65504.f), 0x7bff);
  EXPECT_EQ(HalfBits(65520.f), 0x7c00);                 // rounds up to inf
  EXPECT_EQ(HalfBits(1.f + 1.f / 2048), 0x3c00);        // tie, to even
  EXPECT_EQ(HalfBits(1.f + 3.f / 2048), 0x3c02);        // tie, to even
  EXPECT_EQ(HalfBits(5.960464477539063e-8f), 0x0001);   // smallest subnormal
  EXPECT_EQ(HalfBits(6.103515625e-05f), 0x0400);        // smallest normal
  EXPECT_EQ(HalfBits(2.98023223876953125e-8f), 0x0000); // half of the smallest: to even
}

TEST_F(StagingTest, OptionsThatCannotWorkAreRejected) {
  ReaderOptions o = Options(40);
  o.device = 0;
  o.device_buffers = 1;
  EXPECT_THAT(Reader::Open(o),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("device_buffers 1 is out of range: 2 to 1024")));
  o.device_buffers = 1 << 30;  // not a billion buffers' bookkeeping, then a crash
  EXPECT_THAT(Reader::Open(o),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("device_buffers 1073741824 is out of range: 2 to 1024")));
  o.device_buffers = 3;
  o.device_dtype = DeviceDType::kFloat32;
  o.dtype = DType::kFloat32;
  EXPECT_THAT(Reader::Open(o), testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("dtype must stay uint8")));
}

// ---- With CUDA, when there is a device; without, the host fallback --------

bool HaveDevice(std::string* why) {
  absl::StatusOr<std::unique_ptr<CopyEngine>> e = MakeCudaCopyEngine(0, nullptr);
  if (!e.ok()) *why = std::string(e.status().message());
  return e.ok();
}

TEST_F(StagingTest, WithoutADeviceTheSameApiServesHostMemoryAndSaysWhy) {
  std::string why;
  if (HaveDevice(&why)) GTEST_SKIP() << "a CUDA device is present: the fallback does not apply";
  ReaderOptions o = Options(40);
  SP_ASSERT_OK_AND_ASSIGN(auto host, Reader::Open(o));
  const std::string want = ReadEpoch(*host, false);
  o.device = 0;
  ::testing::internal::CaptureStderr();
  SP_ASSERT_OK_AND_ASSIGN(auto a, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(auto b, Reader::Open(o));
  // The library never prints: the reason is a value the tools print.
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_THAT(a->device_fallback(), HasSubstr("no CUDA device 0"));
  EXPECT_THAT(a->device_fallback(), HasSubstr("batches stay in host memory"));
  EXPECT_EQ(host->device_fallback(), "") << "no device was asked for";
  EXPECT_TRUE(ReadEpoch(*a, false) == want);
  SP_ASSERT_OK_AND_ASSIGN(Batch batch, b->Next());
  EXPECT_EQ(batch.device_event(), nullptr);
  EXPECT_EQ(batch.device_images(), batch.images());
  // float32 on the device becomes float32 on the host; float16 needs a device.
  o.device_dtype = DeviceDType::kFloat16;
  EXPECT_THAT(Reader::Open(o), testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("float16 needs CUDA device 0")));
}

// The CUDA engine end to end: staged bytes and the kernel against the host.
void ExpectDeviceMatchesHost(ReaderOptions o, DeviceDType dtype, OutputLayout layout) {
  o.layout = layout;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  ReaderOptions d = o;
  d.device = 0;
  d.device_dtype = dtype;
  if (dtype != DeviceDType::kAsHost) o.layout = OutputLayout::kNHWC;  // the kernel's input
  SP_ASSERT_OK_AND_ASSIGN(auto host, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(auto device, Reader::Open(d));
  FinishParams p{dtype != DeviceDType::kAsHost, dtype == DeviceDType::kFloat16,
                 layout == OutputLayout::kNCHW, 6, 5, 3};
  p.Normalize(o.mean, o.std);
  for (int k = 0; k < 5; ++k) {
    SP_ASSERT_OK_AND_ASSIGN(Batch h, host->Next());
    SP_ASSERT_OK_AND_ASSIGN(Batch g, device->Next());
    ASSERT_TRUE(g.on_device());
    ASSERT_NE(g.device_event(), nullptr);
    std::vector<uint8_t> got(g.image_bytes()), want(g.image_bytes());
    SP_ASSERT_OK(CopyDeviceToHost(0, got.data(), g.device_images(), got.size()));
    if (p.enabled) {
      FinishOnHost(p, h.size(), static_cast<const uint8_t*>(h.images()), want.data());
    } else {
      std::memcpy(want.data(), h.images(), want.size());
    }
    EXPECT_EQ(got, want) << "batch " << k;
  }
}

TEST_F(StagingTest, CudaCopiesAndFinishMatchTheHost) {
  std::string why;
  if (!HaveDevice(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  ReaderOptions o = Options(100);
  ExpectDeviceMatchesHost(o, DeviceDType::kAsHost, OutputLayout::kNHWC);
  ExpectDeviceMatchesHost(o, DeviceDType::kFloat32, OutputLayout::kNCHW);
  ExpectDeviceMatchesHost(o, DeviceDType::kFloat16, OutputLayout::kNCHW);
  ExpectDeviceMatchesHost(o, DeviceDType::kFloat16, OutputLayout::kNHWC);
}

}  // namespace
}  // namespace shardpack::reader
