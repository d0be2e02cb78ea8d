#include "datasets/demo.h"

#include <jpeglib.h>
#include <setjmp.h>
#include <stdio.h>  // jpeglib.h needs FILE
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/jpeg_error.h"
#include "codec/resize.h"
#include "codec/transcode.h"
#include "common/errors.h"
#include "common/posix_io.h"
#include "common/threads.h"
#include "shardpack/file.h"

namespace shardpack::datasets {
namespace {

using codec::PixelView;
using codec::ResizeBilinearAA;
using codec::ResizeScratch;

// The ten CIFAR-10 class names, in label order (batches.meta.txt).
constexpr const char* kCifar10Classes[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                             "dog",      "frog",       "horse", "ship", "truck"};

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return state_ = SplitMix64(state_); }
  // Uniform in [0, 1).
  float Unit() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  float Range(float lo, float hi) { return lo + (hi - lo) * Unit(); }
  int Int(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

struct Color {
  float r, g, b;
};

// HSV (h in turns) to RGB 0..255.
Color Hsv(float h, float s, float v) {
  h = (h - std::floor(h)) * 6.0f;
  const int i = static_cast<int>(h) % 6;
  const float f = h - std::floor(h);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  Color c{};
  switch (i) {
    case 0:
      c = {v, t, p};
      break;
    case 1:
      c = {q, v, p};
      break;
    case 2:
      c = {p, v, t};
      break;
    case 3:
      c = {p, q, v};
      break;
    case 4:
      c = {t, p, v};
      break;
    default:
      c = {v, p, q};
      break;
  }
  return {c.r * 255, c.g * 255, c.b * 255};
}

// The look, and the JPEG size, are set by these: with them a 500x375 q90
// image averages about 108 KB (80-140 KB over 5,000), like an ImageNet
// photo.
// Texture and clutter strength of the sky relative to the ground.
constexpr float kSkyDetail = 0.7f;
constexpr float kSkyClutter = 0.35f;
// Clutter blobs per tile pixel, their largest brightness change, their
// typical half-width in pixels and the ratio of the largest to the smallest.
constexpr float kClutterDensity = 0.5f;
constexpr float kClutterGain = 1.0f;
constexpr float kClutterBlobScale = 1.7f;
constexpr float kClutterSizeRange = 2.0f;

// Value noise of one period: random values on a lattice, interpolated with
// smoothstep weights. Row tables make each pixel a handful of multiply-adds.
class NoiseOctave {
 public:
  NoiseOctave(int width, int height, float period, float amplitude, Rng* rng)
      : amplitude_(amplitude) {
    grid_w_ = static_cast<int>(width / period) + 3;
    const int grid_h = static_cast<int>(height / period) + 3;
    lattice_.resize(static_cast<size_t>(grid_w_) * grid_h);
    for (float& v : lattice_) v = rng->Range(-1.0f, 1.0f);
    const float off_x = rng->Unit(), off_y = rng->Unit();
    Table(width, period, off_x, &cell_x_, &weight_x_);
    Table(height, period, off_y, &cell_y_, &weight_y_);
  }

  // Adds amplitude * noise(x, y) to out[x] for row y.
  void AddRow(int y, int width, float* out) const {
    const float* r0 = &lattice_[static_cast<size_t>(cell_y_[y]) * grid_w_];
    const float* r1 = r0 + grid_w_;
    const float wy = weight_y_[y];
    for (int x = 0; x < width; ++x) {
      const int cx = cell_x_[x];
      const float wx = weight_x_[x];
      const float top = r0[cx] + (r0[cx + 1] - r0[cx]) * wx;
      const float bottom = r1[cx] + (r1[cx + 1] - r1[cx]) * wx;
      out[x] += amplitude_ * (top + (bottom - top) * wy);
    }
  }

 private:
  static void Table(int n, float period, float offset, std::vector<int>* cell,
                    std::vector<float>* weight) {
    cell->resize(n);
    weight->resize(n);
    for (int i = 0; i < n; ++i) {
      const float t = i / period + offset;
      const int c = static_cast<int>(t);
      const float f = t - c;
      (*cell)[i] = c;
      (*weight)[i] = f * f * (3 - 2 * f);
    }
  }

  float amplitude_;
  int grid_w_ = 0;
  std::vector<float> lattice_;
  std::vector<int> cell_x_, cell_y_;
  std::vector<float> weight_x_, weight_y_;
};

// Clutter -- grass, gravel, foliage: small soft blobs, each lightening or
// darkening what is under it and hiding the blobs below (a "dead leaves"
// model, whose statistics are close to natural images'). Their small
// hard-ish edges give the broadband detail of real photos, and their JPEG
// sizes, without white noise. Stamping blobs per image is slow, so one
// periodic 512x512 gain map is stamped once per process and every image
// reads it at its own offset.
constexpr int kTileSide = 512;
constexpr int kTileMask = kTileSide - 1;

// The gain map as brightness change * 256 (-256..256).
std::vector<int16_t> BuildClutterTile(float blob_scale, uint64_t seed) {
  std::vector<float> factor(kTileSide * kTileSide, 0.0f);
  Rng rng(seed);
  const int count = static_cast<int>(kTileSide * kTileSide * kClutterDensity);
  for (int i = 0; i < count; ++i) {
    const float cx = rng.Unit() * kTileSide, cy = rng.Unit() * kTileSide;
    const float rx = blob_scale * 0.5f * std::pow(kClutterSizeRange, rng.Unit());
    const float ry = rx * rng.Range(1.0f, 3.0f);
    const float gain = rng.Range(-kClutterGain, kClutterGain);
    const float sharp = 1.5f * rx;
    for (int y = static_cast<int>(cy - ry); y <= static_cast<int>(cy + ry) + 1; ++y) {
      const float v = (y + 0.5f - cy) / ry;
      float* row = &factor[static_cast<size_t>(y & kTileMask) * kTileSide];
      for (int x = static_cast<int>(cx - rx); x <= static_cast<int>(cx + rx) + 1; ++x) {
        const float u = (x + 0.5f - cx) / rx;
        const float cover = std::min((1.0f - u * u - v * v) * sharp, 1.0f);
        if (cover > 0) row[x & kTileMask] += (gain - row[x & kTileMask]) * cover;
      }
    }
  }
  std::vector<int16_t> tile(factor.size());
  for (size_t i = 0; i < factor.size(); ++i) {
    tile[i] = static_cast<int16_t>(std::lround(factor[i] * 256));
  }
  return tile;
}

// Value-noise texture: octaves whose amplitudes fall with frequency
// roughly as in photographs (1/f), summed into one periodic tile (the noise
// lattice wraps), read at each image's own offset.
constexpr int kTextureSide = 1024;
constexpr int kTextureMask = kTextureSide - 1;

std::vector<float> BuildTextureTile(uint64_t seed) {
  constexpr int kPeriods[] = {32, 16, 8, 4, 2};  // powers of two: the lattice wraps
  constexpr float kAmplitudes[] = {26, 20, 16, 14, 12};
  std::vector<float> tile(kTextureSide * kTextureSide, 0.0f);
  Rng rng(seed);
  for (int o = 0; o < 5; ++o) {
    const int period = kPeriods[o], cells = kTextureSide / period;
    std::vector<float> lattice(static_cast<size_t>(cells) * cells);
    for (float& v : lattice) v = rng.Range(-kAmplitudes[o], kAmplitudes[o]);
    for (int y = 0; y < kTextureSide; ++y) {
      const int cy = y / period;
      const float fy = static_cast<float>(y % period) / period, wy = fy * fy * (3 - 2 * fy);
      const float* r0 = &lattice[static_cast<size_t>(cy) * cells];
      const float* r1 = &lattice[static_cast<size_t>((cy + 1) % cells) * cells];
      for (int x = 0; x < kTextureSide; ++x) {
        const int c0 = x / period, c1 = (c0 + 1) % cells;
        const float fx = static_cast<float>(x % period) / period, wx = fx * fx * (3 - 2 * fx);
        const float top = r0[c0] + (r0[c1] - r0[c0]) * wx;
        const float bottom = r1[c0] + (r1[c1] - r1[c0]) * wx;
        tile[static_cast<size_t>(y) * kTextureSide + x] += top + (bottom - top) * wy;
      }
    }
  }
  return tile;
}

struct Tiles {
  std::vector<int16_t> clutter;
  std::vector<float> texture;
};

// Built on first use (about a quarter second), shared by all threads.
const Tiles& SharedTiles() {
  static const Tiles* tiles =
      new Tiles{BuildClutterTile(kClutterBlobScale, 0xC1u), BuildTextureTile(0x7Eu)};
  return *tiles;
}

// A soft-edged ellipse or rectangle with a linear shade and its own texture
// strength.
struct Shape {
  bool ellipse;
  float cx, cy, rx, ry;
  Color color;
  float shade_x, shade_y;  // brightness change per radius
  float texture;
  int x0, x1, y0, y1;  // bounding box, clipped
};

struct Scene {
  int width, height;
  Color sky_top, sky_low, ground_top, ground_low;
  float horizon;
  std::vector<Shape> shapes;
  std::vector<NoiseOctave> clouds;   // low-frequency brightness
  std::vector<NoiseOctave> ridge;    // horizon line wobble (row 0 only)
  std::vector<NoiseOctave> patches;  // where clutter grows
  int tile_x, tile_y;                // this image's offsets into the shared tiles
  int texture_x, texture_y;
};

Shape MakeShape(int width, int height, float hue, Rng* rng) {
  Shape s{};
  s.ellipse = rng->Int(3) != 0;
  s.cx = rng->Range(0.05f, 0.95f) * width;
  s.cy = rng->Range(0.25f, 0.95f) * height;
  const float size = std::min(width, height) * rng->Range(0.06f, 0.3f);
  s.rx = size * rng->Range(0.6f, 1.6f);
  s.ry = size * rng->Range(0.6f, 1.6f);
  s.color = Hsv(hue + rng->Range(-0.12f, 0.12f), rng->Range(0.35f, 0.9f), rng->Range(0.3f, 0.95f));
  s.shade_x = rng->Range(-0.35f, 0.35f);
  s.shade_y = rng->Range(-0.45f, 0.15f);
  s.texture = rng->Range(0.3f, 1.3f);
  s.x0 = std::max(0, static_cast<int>(s.cx - s.rx - 2));
  s.x1 = std::min(width, static_cast<int>(s.cx + s.rx + 3));
  s.y0 = std::max(0, static_cast<int>(s.cy - s.ry - 2));
  s.y1 = std::min(height, static_cast<int>(s.cy + s.ry + 3));
  return s;
}

Scene MakeScene(int width, int height, int class_index, uint64_t seed) {
  Rng rng(SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(class_index) + 0x5EED)));
  // Each class has its own hue family, so classes are tellable apart.
  const float hue = std::fmod(class_index * 0.618034f, 1.0f);
  Scene s{width, height, {}, {}, {}, {}, 0, {}, {}, {}, {}, 0, 0, 0, 0};
  s.sky_top = Hsv(0.55f + rng.Range(-0.06f, 0.06f), rng.Range(0.3f, 0.7f), rng.Range(0.55f, 0.9f));
  s.sky_low = Hsv(0.55f + rng.Range(-0.1f, 0.1f), rng.Range(0.05f, 0.3f), rng.Range(0.8f, 1.0f));
  s.ground_top =
      Hsv(hue + 0.5f + rng.Range(-0.1f, 0.1f), rng.Range(0.3f, 0.7f), rng.Range(0.4f, 0.7f));
  s.ground_low =
      Hsv(hue + 0.5f + rng.Range(-0.1f, 0.1f), rng.Range(0.3f, 0.8f), rng.Range(0.15f, 0.45f));
  s.horizon = rng.Range(0.22f, 0.5f) * height;
  const int shapes = 3 + rng.Int(6);
  for (int i = 0; i < shapes; ++i) s.shapes.push_back(MakeShape(width, height, hue, &rng));
  s.clouds.emplace_back(width, height, std::max(width, height) / 3.0f, 0.25f, &rng);
  s.clouds.emplace_back(width, height, std::max(width, height) / 8.0f, 0.12f, &rng);
  s.ridge.emplace_back(width, 1, width / 5.0f, height * 0.06f, &rng);
  s.patches.emplace_back(width, height, std::max(width, height) / 5.0f, 0.9f, &rng);
  s.tile_x = rng.Int(kTileSide);
  s.tile_y = rng.Int(kTileSide);
  s.texture_x = rng.Int(kTextureSide);
  s.texture_y = rng.Int(kTextureSide);
  return s;
}

Color Mix(const Color& a, const Color& b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

// One row being rendered: color, texture strength and clutter strength
// per pixel, plus the row's lighting, horizon wobble and clutter patches.
struct RowBuffers {
  explicit RowBuffers(int width)
      : r(width),
        g(width),
        b(width),
        detail(width),
        clutter(width),
        light(width),
        ridge(width, 0.0f),
        patch(width) {}
  std::vector<float> r, g, b, detail, clutter, light, ridge, patch;
};

// Sky above the (wavy) horizon, ground below it.
void PaintBackground(const Scene& s, int y, RowBuffers* row) {
  const float fy = static_cast<float>(y);
  for (int x = 0; x < s.width; ++x) {
    const float horizon = s.horizon + row->ridge[x];
    Color c;
    if (fy < horizon) {
      c = Mix(s.sky_top, s.sky_low, fy / std::max(horizon, 1.0f));
      row->detail[x] = kSkyDetail;
      row->clutter[x] = kSkyClutter;
    } else {
      c = Mix(s.ground_top, s.ground_low, (fy - horizon) / std::max(s.height - horizon, 1.0f));
      row->detail[x] = 1.0f;
      row->clutter[x] = 1.0f;
    }
    row->r[x] = c.r;
    row->g[x] = c.g;
    row->b[x] = c.b;
  }
}

// Blends one shape into the row, with a soft edge about 1.5 px wide.
void PaintShape(const Shape& sh, int y, RowBuffers* row) {
  if (y < sh.y0 || y >= sh.y1) return;
  const float v = (y + 0.5f - sh.cy) / sh.ry;
  const float min_r = std::min(sh.rx, sh.ry);
  for (int x = sh.x0; x < sh.x1; ++x) {
    const float u = (x + 0.5f - sh.cx) / sh.rx;
    float edge;  // distance outside the boundary, in pixels (negative inside)
    if (sh.ellipse) {
      edge = (std::sqrt(u * u + v * v) - 1.0f) * min_r;
    } else {
      edge = std::max((std::fabs(u) - 1.0f) * sh.rx, (std::fabs(v) - 1.0f) * sh.ry);
    }
    const float a = std::clamp(0.5f - edge * (1.0f / 1.5f), 0.0f, 1.0f);
    if (a <= 0) continue;
    const float shade = 1.0f + sh.shade_x * u + sh.shade_y * v;
    row->r[x] += (sh.color.r * shade - row->r[x]) * a;
    row->g[x] += (sh.color.g * shade - row->g[x]) * a;
    row->b[x] += (sh.color.b * shade - row->b[x]) * a;
    row->detail[x] += (sh.texture - row->detail[x]) * a;
    row->clutter[x] += (sh.texture - row->clutter[x]) * a;
  }
}

// Lighting, clutter and texture on top; to 8 bits.
void FinishRow(const Scene& s, int y, const RowBuffers& row, uint8_t* out) {
  const Tiles& tiles = SharedTiles();
  const size_t tile_row = static_cast<size_t>((y + s.tile_y) & kTileMask) * kTileSide;
  const int16_t* clutter = &tiles.clutter[tile_row];
  const float* texture =
      &tiles.texture[static_cast<size_t>((y + s.texture_y) & kTextureMask) * kTextureSide];
  for (int x = 0; x < s.width; ++x) {
    const float gain = clutter[(x + s.tile_x) & kTileMask] * (1.0f / 256);
    const float patch = std::clamp(row.patch[x], 0.0f, 1.0f);
    const float light = row.light[x] * (1.0f + gain * row.clutter[x] * patch);
    const float t = texture[(x + s.texture_x) & kTextureMask] * row.detail[x];
    out[3 * x] = static_cast<uint8_t>(std::clamp(row.r[x] * light + t, 0.0f, 255.0f));
    out[3 * x + 1] = static_cast<uint8_t>(std::clamp(row.g[x] * light + t * 0.9f, 0.0f, 255.0f));
    out[3 * x + 2] = static_cast<uint8_t>(std::clamp(row.b[x] * light + t * 0.8f, 0.0f, 255.0f));
  }
}

absl::Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return common::ErrnoError("create directory", dir, ec.value());
  return absl::OkStatus();
}

// Renders, encodes and writes one image; `encoder` and `rgb` belong to the
// calling thread.
absl::Status WriteOneImage(const std::string& path, const DemoImagesOptions& o, int class_index,
                           uint64_t image_seed, tjhandle encoder, std::vector<uint8_t>* rgb) {
  rgb->resize(static_cast<size_t>(o.width) * o.height * 3);
  RenderDemoScene(o.width, o.height, class_index, image_seed, rgb->data());
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(encoder, rgb->data(), o.width, 0, o.height, TJPF_RGB, &jpeg, &size, TJSAMP_420,
                  o.quality, 0) != 0) {
    return absl::InternalError(absl::StrCat("JPEG encode failed: ", tjGetErrorStr2(encoder)));
  }
  absl::Status s = common::WriteWholeFile(path, {jpeg, size});
  tjFree(jpeg);
  return s;
}

// C-style on purpose: nothing with a destructor lives across setjmp.
bool EncodeCmykInto(const uint8_t* cmyk, int width, int height, int quality, CmykJpegKind kind,
                    unsigned char** out, unsigned long* size, char* message) {
  jpeg_compress_struct cinfo;
  codec::JpegErrorManager err;
  codec::UseJpegErrorManager(&cinfo, &err);
  if (setjmp(err.jump) != 0) {
    std::memcpy(message, err.message, sizeof(err.message));
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, out, size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 4;
  cinfo.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, kind == CmykJpegKind::kAdobeYcck ? JCS_YCCK : JCS_CMYK);
  if (kind == CmykJpegKind::kPlainCmyk) cinfo.write_Adobe_marker = FALSE;
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        const_cast<JSAMPROW>(cmyk + static_cast<size_t>(cinfo.next_scanline) * width * 4);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeCmykJpeg(const uint8_t* cmyk, int width, int height,
                                                    int quality, CmykJpegKind kind) {
  if (width < 1 || height < 1 || quality < 1 || quality > 100) {
    return absl::InvalidArgumentError("EncodeCmykJpeg: bad size or quality");
  }
  unsigned char* out = nullptr;
  unsigned long size = 0;
  char message[JMSG_LENGTH_MAX] = {};
  const bool ok = EncodeCmykInto(cmyk, width, height, quality, kind, &out, &size, message);
  std::vector<uint8_t> jpeg;
  if (ok) jpeg.assign(out, out + size);
  free(out);  // jpeg_mem_dest's buffer comes from malloc
  if (!ok) return absl::InternalError(absl::StrCat("CMYK JPEG encode failed: ", message));
  return jpeg;
}

void RenderDemoScene(int width, int height, int class_index, uint64_t seed, uint8_t* rgb) {
  const Scene scene = MakeScene(width, height, class_index, seed);
  RowBuffers row(width);
  scene.ridge[0].AddRow(0, width, row.ridge.data());
  for (int y = 0; y < height; ++y) {
    std::fill(row.light.begin(), row.light.end(), 1.0f);
    for (const NoiseOctave& o : scene.clouds) o.AddRow(y, width, row.light.data());
    std::fill(row.patch.begin(), row.patch.end(), 1.0f);
    scene.patches[0].AddRow(y, width, row.patch.data());
    PaintBackground(scene, y, &row);
    for (const Shape& shape : scene.shapes) PaintShape(shape, y, &row);
    FinishRow(scene, y, row, rgb + static_cast<size_t>(y) * width * 3);
  }
}

absl::Status WriteDemoCifar10(const std::string& path, int records, uint64_t seed) {
  if (records < 0) return absl::InvalidArgumentError("demo cifar: records must be >= 0");
  constexpr int kSide = 32, kPlane = kSide * kSide;
  std::string data;
  data.reserve(static_cast<size_t>(records) * (1 + 3 * kPlane));
  // Scenes are rendered 3x larger and shrunk, as CIFAR's photos were.
  constexpr int kRender = 3 * kSide;
  std::vector<uint8_t> big(3 * kRender * kRender), rgb(3 * kPlane);
  ResizeScratch scratch;
  for (int i = 0; i < records; ++i) {
    const int label = i % 10;
    RenderDemoScene(kRender, kRender, label, SplitMix64(seed * 1000003 + static_cast<uint64_t>(i)),
                    big.data());
    ResizeBilinearAA(PixelView{big.data(), kRender, kRender, 3}, kSide, kSide, rgb.data(),
                     &scratch);
    data.push_back(static_cast<char>(label));
    for (int c = 0; c < 3; ++c) {  // CIFAR stores planes: all R, then G, then B
      for (int p = 0; p < kPlane; ++p) data.push_back(static_cast<char>(rgb[3 * p + c]));
    }
  }
  const std::filesystem::path file(path);
  if (file.has_parent_path()) {
    absl::Status s = MakeDirs(file.parent_path().string());
    if (!s.ok()) return s;
  }
  absl::Status s = WriteFileAtomically(path, data);
  if (!s.ok()) return s;
  std::string meta;
  for (const char* name : kCifar10Classes) absl::StrAppend(&meta, name, "\n");
  return WriteFileAtomically((file.parent_path() / "batches.meta.txt").string(), meta);
}

absl::Status WriteDemoImageFolder(const std::string& root, const DemoImagesOptions& options) {
  const DemoImagesOptions& o = options;
  if (o.classes < 1 || o.images_per_class < 0 || o.width < 1 || o.height < 1 || o.quality < 1 ||
      o.quality > 100) {
    return absl::InvalidArgumentError("demo images: bad options");
  }
  // Zero-padded wide enough that names sort in index order.
  const int class_digits = std::max(2, static_cast<int>(std::to_string(o.classes - 1).size()));
  const int image_digits =
      std::max(4, static_cast<int>(std::to_string(std::max(0, o.images_per_class - 1)).size()));
  for (int c = 0; c < o.classes; ++c) {
    absl::Status s = MakeDirs(absl::StrFormat("%s/class_%0*d", root, class_digits, c));
    if (!s.ok()) return s;
  }
  const int total = o.classes * o.images_per_class;
  std::atomic<int> next{0};
  std::mutex mu;
  absl::Status first_error;
  auto work = [&] {
    tjhandle encoder = tjInitCompress();
    std::vector<uint8_t> rgb;
    for (int i = next++; i < total && encoder != nullptr; i = next++) {
      const int c = i / o.images_per_class, k = i % o.images_per_class;
      const std::string path =
          absl::StrFormat("%s/class_%0*d/img_%0*d.JPEG", root, class_digits, c, image_digits, k);
      const uint64_t image_seed = SplitMix64(o.seed ^ SplitMix64(static_cast<uint64_t>(i)));
      absl::Status s = WriteOneImage(path, o, c, image_seed, encoder, &rgb);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
        next = total;
      }
    }
    if (encoder == nullptr) {
      std::lock_guard<std::mutex> lock(mu);
      first_error = absl::InternalError("cannot start TurboJPEG");
    } else {
      tjDestroy(encoder);
    }
  };
  const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                                 std::max(1, std::min(total, 8)));
  // A failure stops the others after their image.
  const auto stop_all = [&] { next = total; };
  common::ThreadGroup pool;
  absl::Status s = pool.Start(threads - 1, "the demo's encoder threads", [&](int) { work(); },
                              stop_all);
  if (!s.ok()) stop_all();
  if (s.ok()) work();
  s.Update(pool.JoinAll());
  s.Update(first_error);
  return s;
}

}  // namespace shardpack::datasets
