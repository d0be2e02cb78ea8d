// reader/image_ops: every path of the resize (ResizeIsa) against the
// portable one, byte for byte, over many random sizes, boxes and options,
// with the source ending at an unreadable page and the destination
// followed by guard bytes; and the output pinned to what the resize
// computed before its AVX2 path.
#include "codec/resize.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shardpack::codec {
namespace {

// `size` bytes that end where an unreadable page begins: a read past the
// end faults.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t size) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t pages = (size + page - 1) / page;
    length_ = (pages + 1) * page;
    void* base = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(base);
    if (mprotect(base_ + pages * page, page, PROT_NONE) != 0) return;
    data_ = base_ + pages * page - size;
  }
  ~GuardedBuffer() {
    if (base_ != nullptr) munmap(base_, length_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  uint8_t* data() const { return data_; }  // null if the mapping failed

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t length_ = 0;
};

struct Case {
  uint32_t sw = 0, sh = 0;
  int channels = 3;
  ResizeBox box;
  uint32_t w = 0, h = 0;
  bool clamp = true, mirror = false;
};

std::string Describe(const Case& c) {
  std::ostringstream s;
  s.precision(17);
  s << c.sw << "x" << c.sh << "x" << c.channels << " box [" << c.box.x0 << ", " << c.box.x1
    << ") x [" << c.box.y0 << ", " << c.box.y1 << ") -> " << c.w << "x" << c.h
    << " clamp " << c.clamp << " mirror " << c.mirror;
  return s.str();
}

// The cases, drawn from raw mt19937 output (the same on every standard
// library): mostly small and odd sizes, down to 1x1 (rows shorter than one
// SIMD load, where the loops read padded copies and store partially), some
// large; whole, integral and fractional boxes; from 8x down (taps past the
// unrolled counts) to 4x up.
class Cases {
 public:
  explicit Cases(uint32_t seed) : rng_(seed) {}

  Case Next() {
    Case c;
    const uint32_t kind = Uniform(0, 15);
    auto side = [&] {
      return kind < 2 ? Uniform(1, 4) : kind < 14 ? Uniform(1, 80) : Uniform(80, 400);
    };
    c.sw = side();
    c.sh = side();
    const uint32_t channels = Uniform(0, 9);
    c.channels = channels == 0 ? 1 : channels == 1 ? 4 : 3;
    const uint32_t box = Uniform(0, 2);
    if (box == 0) {
      c.box = {0, 0, double(c.sw), double(c.sh)};
    } else {
      c.box.x0 = Below(c.sw, box == 2);
      c.box.x1 = Above(c.box.x0, c.sw, box == 2);
      c.box.y0 = Below(c.sh, box == 2);
      c.box.y1 = Above(c.box.y0, c.sh, box == 2);
    }
    c.w = OutputSide(c.box.x1 - c.box.x0);
    c.h = OutputSide(c.box.y1 - c.box.y0);
    c.clamp = Uniform(0, 3) != 0;
    c.mirror = Uniform(0, 1) == 1;
    return c;
  }

  // Pixels: noise, with runs of 0 and 255.
  void Fill(uint8_t* data, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) {
      const uint32_t v = Uniform(0, 299);
      data[i] = static_cast<uint8_t>(v < 256 ? v : (v < 278 ? 0 : 255));
    }
  }

 private:
  uint32_t Uniform(uint32_t lo, uint32_t hi) {
    return lo + static_cast<uint32_t>(rng_() % (uint64_t{hi} - lo + 1));
  }
  double Fraction() { return Uniform(0, 999999) / 1e6; }
  // A box start in [0, side), integral or not.
  double Below(uint32_t side, bool fractional) {
    const double x = Uniform(0, side - 1);
    return fractional ? x + Fraction() * 0.999 : x;
  }
  // A box end in (start, side].
  double Above(double start, uint32_t side, bool fractional) {
    const double room = side - start;
    if (!fractional) return std::min<double>(side, start + Uniform(1, uint32_t(std::ceil(room))));
    return std::min<double>(side, start + std::max(0.01, room * Fraction()));
  }
  uint32_t OutputSide(double extent) {
    const double factor = Uniform(0, 1) == 0 ? 1.0 / 8 + Fraction() * (1 - 1.0 / 8)
                                             : 1 + Fraction() * 3;
    return std::clamp(static_cast<uint32_t>(extent * factor), 1u, 500u);
  }

  std::mt19937 rng_;
};

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

// Case `c` of `src` resized with the paths up to `isa`; a failure if it
// wrote past its output.
std::vector<uint8_t> Resize(const Case& c, const uint8_t* src, ResizeIsa isa,
                            ResizeScratch* scratch) {
  const size_t bytes = size_t{c.w} * c.h * static_cast<size_t>(c.channels);
  std::vector<uint8_t> out(bytes + kGuard, kGuardByte);
  ResizeOptions options;
  options.clamp_to_box = c.clamp;
  options.mirror = c.mirror;
  options.max_isa = isa;
  ResizeBoxAA(PixelView{src, c.sw, c.sh, c.channels}, c.box, c.w, c.h, options, out.data(),
              scratch);
  for (size_t i = bytes; i < out.size(); ++i) {
    EXPECT_EQ(out[i], kGuardByte) << "wrote past the output at +" << i - bytes;
  }
  out.resize(bytes);
  return out;
}

// Every case through `isa` and the portable path: the same bytes.
void ExpectSameAsPortable(ResizeIsa isa, uint32_t seed, int count) {
  Cases cases(seed);
  ResizeScratch scratch, portable_scratch;
  for (int i = 0; i < count; ++i) {
    const Case c = cases.Next();
    const size_t bytes = size_t{c.sw} * c.sh * static_cast<size_t>(c.channels);
    GuardedBuffer src(bytes);
    ASSERT_NE(src.data(), nullptr);
    cases.Fill(src.data(), bytes);
    const std::vector<uint8_t> want = Resize(c, src.data(), ResizeIsa::kPortable, &portable_scratch);
    const std::vector<uint8_t> got = Resize(c, src.data(), isa, &scratch);
    ASSERT_EQ(got.size(), want.size());
    const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
    ASSERT_TRUE(diff.first == got.end())
        << "case " << i << ": " << Describe(c) << ": first difference at byte "
        << diff.first - got.begin() << " (" << int(*diff.first) << " vs " << int(*diff.second)
        << ")";
  }
}

TEST(ResizePathsTest, Avx2EqualsPortableByteForByte) {
  if (WidestResizeIsa() < ResizeIsa::kAvx2) GTEST_SKIP() << "this CPU has no AVX2";
  ExpectSameAsPortable(ResizeIsa::kAvx2, 1, 3000);
}

TEST(ResizePathsTest, Ssse3EqualsPortableByteForByte) {
  if (WidestResizeIsa() < ResizeIsa::kSsse3) GTEST_SKIP() << "no SSSE3 path here";
  ExpectSameAsPortable(ResizeIsa::kSsse3, 2, 1500);
}

TEST(ResizePathsTest, Sse2EqualsPortableByteForByte) {
  if (WidestResizeIsa() < ResizeIsa::kSse2) GTEST_SKIP() << "no SSE2 path here";
  ExpectSameAsPortable(ResizeIsa::kSse2, 3, 1500);
}

// ResizeYccToRgb of case `c` (its box and sizes for the luma plane, the
// channel count ignored) with chroma subsampled by `fx` x `fy`, samples
// drawn from `seed`, each plane ending at an unreadable page, through the
// paths up to `isa`; a failure if it wrote past its output.
std::vector<uint8_t> ResizeYcc(const Case& c, int fx, int fy, uint32_t seed, ResizeIsa isa,
                               ResizeScratch* scratch) {
  std::vector<std::unique_ptr<GuardedBuffer>> planes;
  SubsampledPlane views[3];
  Cases fill(seed);  // the same samples for every path
  for (int k = 0; k < 3; ++k) {
    const int f_x = k == 0 ? 1 : fx, f_y = k == 0 ? 1 : fy;
    const uint32_t w = (c.sw + uint32_t(f_x) - 1) / uint32_t(f_x);
    const uint32_t h = (c.sh + uint32_t(f_y) - 1) / uint32_t(f_y);
    planes.push_back(std::make_unique<GuardedBuffer>(size_t{w} * h));
    EXPECT_NE(planes.back()->data(), nullptr);
    if (planes.back()->data() == nullptr) return {};
    fill.Fill(planes.back()->data(), size_t{w} * h);
    views[k] = {PixelView{planes.back()->data(), w, h, 1}, f_x, f_y};
  }
  const size_t bytes = size_t{c.w} * c.h * 3;
  std::vector<uint8_t> out(bytes + kGuard, kGuardByte);
  ResizeOptions options;
  options.clamp_to_box = c.clamp;
  options.mirror = c.mirror;
  options.max_isa = isa;
  options.stream_output = seed % 2 == 1;  // the same bytes either way
  ResizeYccToRgb(views, c.box, c.w, c.h, options, out.data(), scratch);
  for (size_t i = bytes; i < out.size(); ++i) {
    EXPECT_EQ(out[i], kGuardByte) << "wrote past the output at +" << i - bytes;
  }
  out.resize(bytes);
  return out;
}

// The planar resize (two vertical passes around transposes, then the
// conversion) computes the same bytes on every path, for every chroma
// subsampling it takes.
TEST(ResizePathsTest, PlanarYccToRgbEveryPathEqualsPortable) {
  Cases cases(11);
  ResizeScratch scratch, portable_scratch;
  for (int i = 0; i < 1500; ++i) {
    const Case c = cases.Next();
    const int fx = 1 + i % 2, fy = 1 + (i / 2) % 2;
    const auto seed = static_cast<uint32_t>(1000 + i);
    const std::vector<uint8_t> want =
        ResizeYcc(c, fx, fy, seed, ResizeIsa::kPortable, &portable_scratch);
    for (ResizeIsa isa : {ResizeIsa::kSse2, ResizeIsa::kAvx2}) {
      if (isa > WidestResizeIsa()) continue;
      const std::vector<uint8_t> got = ResizeYcc(c, fx, fy, seed, isa, &scratch);
      ASSERT_EQ(got.size(), want.size());
      const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
      ASSERT_TRUE(diff.first == got.end())
          << "case " << i << " (isa " << int(isa) << ", chroma " << fx << "x" << fy
          << "): " << Describe(c) << ": first difference at byte " << diff.first - got.begin();
    }
  }
}

// YccToRgb's SIMD loop (with and without streaming stores) and the
// portable one give the same bytes for every (Cb, Cr) pair at several luma
// levels, and stay within one level of the exact JFIF conversion.
TEST(ResizePathsTest, YccToRgbEqualsPortableAndTheExactConversion) {
  constexpr size_t kPairs = 256 * 256;
  std::vector<uint8_t> cb(kPairs), cr(kPairs), y(kPairs);
  for (size_t i = 0; i < kPairs; ++i) {
    cb[i] = uint8_t(i & 255);
    cr[i] = uint8_t(i >> 8);
  }
  std::vector<uint8_t> simd(3 * kPairs), portable(3 * kPairs);
  for (int luma : {0, 1, 16, 77, 128, 200, 235, 254, 255}) {
    SCOPED_TRACE(luma);
    std::fill(y.begin(), y.end(), uint8_t(luma));
    YccToRgb(y.data(), cb.data(), cr.data(), kPairs, portable.data(), ResizeIsa::kPortable);
    YccToRgb(y.data(), cb.data(), cr.data(), kPairs, simd.data());
    ASSERT_TRUE(simd == portable);
    std::fill(simd.begin(), simd.end(), 0);
    YccToRgb(y.data(), cb.data(), cr.data(), kPairs, simd.data(), ResizeIsa::kBest, true);
    ASSERT_TRUE(simd == portable);
    int worst = 0;
    for (size_t i = 0; i < kPairs; ++i) {
      const double b = cb[i] - 128.0, r = cr[i] - 128.0;
      const double want[3] = {luma + 1.402 * r, luma - 0.344136 * b - 0.714136 * r,
                              luma + 1.772 * b};
      for (int ch = 0; ch < 3; ++ch) {
        const long v = std::lround(std::clamp(want[ch], 0.0, 255.0));
        worst = std::max(worst, int(std::labs(long(portable[3 * i + size_t(ch)]) - v)));
      }
    }
    EXPECT_LE(worst, 1);
  }
}

// FNV-1a of the outputs of 400 cases, as computed before the AVX2 path
// (and the taps' rewrite) came: no path changes a byte of any resize.
TEST(ResizePathsTest, OutputIsPinned) {
  constexpr uint64_t kPinned = 0x4b15b4339a58c20full;
  for (ResizeIsa isa : {ResizeIsa::kPortable, ResizeIsa::kSse2, ResizeIsa::kSsse3,
                        ResizeIsa::kAvx2}) {
    if (isa > WidestResizeIsa()) continue;
    SCOPED_TRACE(static_cast<int>(isa));
    Cases cases(7);
    ResizeScratch scratch;
    uint64_t hash = 14695981039346656037ull;
    for (int i = 0; i < 400; ++i) {
      const Case c = cases.Next();
      std::vector<uint8_t> src(size_t{c.sw} * c.sh * static_cast<size_t>(c.channels));
      cases.Fill(src.data(), src.size());
      for (uint8_t b : Resize(c, src.data(), isa, &scratch)) {
        hash = (hash ^ b) * 1099511628211ull;
      }
    }
    EXPECT_EQ(hash, kPinned);
  }
}

}  // namespace
}  // namespace shardpack::codec
