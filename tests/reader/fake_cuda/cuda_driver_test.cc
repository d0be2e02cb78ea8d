// The CUDA copy engine through the fake driver (fake_libcuda.cc): how it
// loads the driver and what a reader says on each machine it cannot use.
// The driver is loaded once per process, so each case is a ctest entry of
// its own with the fake's environment (CMakeLists.txt) and runs only there:
// SHARDPACK_FAKE_CUDA_CASE names the case.
#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reader/cuda/driver.h"
#include "reader/cuda/finish_kernel.h"
#include "reader/staging.h"
#include "shardpack/reader.h"
#include "tests/testing/shard_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/write_shard.h"

namespace shardpack::reader {
namespace {

using ::testing::HasSubstr;

class FakeCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* c = std::getenv("SHARDPACK_FAKE_CUDA_CASE");
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (c == nullptr || name != c) GTEST_SKIP() << "run by ctest with the fake driver's settings";
  }
  ReaderOptions Options() {
    std::vector<testing::OwnedRecord> records;
    for (int i = 0; i < 40; ++i) records.push_back(testing::RawRecord(i, 6, 5, 3));
    ReaderOptions o;
    o.path = dir_.Join("data.shard");
    std::ofstream(o.path, std::ios::binary) << testing::WriteShard(records);
    o.batch_size = 8;
    o.threads = 2;
    o.rank = 0;
    o.world_size = 1;
    o.device = 0;
    return o;
  }
  // The fallback line of a reader of device 0, which must still read.
  std::string Fallback(const ReaderOptions& o) {
    absl::StatusOr<std::unique_ptr<Reader>> r = Reader::Open(o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "";
    absl::StatusOr<Batch> b = (*r)->Next();
    EXPECT_TRUE(b.ok()) << b.status();
    if (b.ok()) {
      EXPECT_FALSE(b->on_device());
    }
    return (*r)->device_fallback();
  }
  testing::TempDir dir_;
};

// FAKE_CUDA_INIT_ERROR=100: a driver, no GPU.
TEST_F(FakeCudaTest, NoDevice) {
  EXPECT_THAT(Fallback(Options()),
              HasSubstr("no CUDA device 0 (cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device "
                        "is detected, 100)): batches stay in host memory"));
}

// FAKE_CUDA_DRIVER_VERSION=10020.
TEST_F(FakeCudaTest, DriverTooOldToStage) {
  EXPECT_THAT(Fallback(Options()),
              HasSubstr("the CUDA driver supports CUDA 10.2; staging needs 11.0 or newer"));
}

// FAKE_CUDA_DEVICES=1, device 1 asked for.
TEST_F(FakeCudaTest, DeviceOutOfRange) {
  ReaderOptions o = Options();
  o.device = 1;
  EXPECT_THAT(Fallback(o), HasSubstr("no CUDA device 1 (this machine has 1 CUDA devices)"));
}

// FAKE_CUDA_DRIVER_VERSION=12040: uint8 batches stage, the kernel built with
// a newer CUDA is refused in one line.
TEST_F(FakeCudaTest, DriverTooOldForTheKernel) {
  if (kFinishCudaVersion / 1000 <= 12) GTEST_SKIP() << "the kernel was built with CUDA 12";
  ReaderOptions o = Options();
  SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
  SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
  EXPECT_TRUE(b.on_device());
  o.device_dtype = DeviceDType::kFloat16;
  EXPECT_THAT(Reader::Open(o),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr(absl::StrCat(
                                    "cuda:0: the float device_dtype runs a kernel built with CUDA ",
                                    CudaVersionText(kFinishCudaVersion), ", which needs a driver for CUDA ",
                                    kFinishCudaVersion / 1000,
                                    " or newer; this driver supports CUDA 12.4"))));
}

// The reader pushes its device's context and pops it: the caller's current
// context, here a marker pushed before, is the current one after every call.
TEST_F(FakeCudaTest, CallersContextIsLeftAsItWas) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto push = reinterpret_cast<CUresult (*)(void*)>(dlsym(lib, "cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<CUresult (*)(void**)>(dlsym(lib, "cuCtxPopCurrent_v2"));
  ASSERT_TRUE(push != nullptr && pop != nullptr);
  int marker = 0;
  ASSERT_EQ(push(&marker), kCudaSuccess);
  ReaderOptions o = Options();
  if (kFinishFatbinBytes > 0) o.device_dtype = DeviceDType::kFloat32;  // the kernel too
  {
    SP_ASSERT_OK_AND_ASSIGN(auto reader, Reader::Open(o));
    for (int k = 0; k < 5; ++k) {
      SP_ASSERT_OK_AND_ASSIGN(Batch b, reader->Next());
      EXPECT_TRUE(b.on_device());
    }
  }
  void* popped = nullptr;
  EXPECT_EQ(pop(&popped), kCudaSuccess);
  EXPECT_EQ(popped, &marker);
  EXPECT_NE(pop(&popped), kCudaSuccess) << "a context of the reader's was left current";
  dlclose(lib);
}

}  // namespace
}  // namespace shardpack::reader
