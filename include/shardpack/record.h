// The record model: one sample of a dataset.
//
// A Record is a set of views. It owns nothing: `key`, `payload` and `extra`
// point into memory that belongs to whoever produced the record (a block
// buffer of a shard reader, a source adapter, a test). Each producer documents
// how long its views stay valid. Labels are held inline, so a Record is cheap
// to copy and never allocates.
#ifndef SHARDPACK_RECORD_H_
#define SHARDPACK_RECORD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardpack {

using ByteSpan = std::span<const uint8_t>;

// How the image payload is stored. Values are part of the on-disk format.
enum class Encoding : uint8_t {
  kRaw = 0,   // uint8 pixels, height x width x channels in `layout` order
  kJpeg = 1,  // a JPEG file's bytes, unchanged
};

// Pixel order of raw payloads. Values are part of the on-disk format.
enum class Layout : uint8_t {
  kHWC = 0,  // interleaved: row, column, channel
  kCHW = 1,  // planar: channel, row, column (CIFAR's own order)
};

std::string_view EncodingName(Encoding e);  // "raw", "jpeg"
std::string_view LayoutName(Layout l);      // "hwc", "chw"
// The inverses: InvalidArgumentError listing the names for any other name.
absl::StatusOr<Encoding> ParseEncoding(std::string_view name);
absl::StatusOr<Layout> ParseLayout(std::string_view name);

// Most labels a record may carry (CIFAR-100 uses two: fine and coarse).
inline constexpr int kMaxLabels = 8;

// A short inline list of integer labels. Index i matches the i-th label field
// of the dataset schema.
class Labels {
 public:
  Labels() = default;
  Labels(std::initializer_list<int64_t> values) {
    for (int64_t v : values) push_back(v);
  }
  // Precondition: size() < kMaxLabels (checked by callers that take input).
  // Breaking it is a bug of the caller's: the process stops with a message
  // (in every build) rather than write past the array.
  void push_back(int64_t v) {
    if (size_ >= kMaxLabels) [[unlikely]] Full();
    values_[size_++] = v;
  }
  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](int i) const { return values_[i]; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + size_; }
  friend bool operator==(const Labels& a, const Labels& b) {
    if (a.size_ != b.size_) return false;
    for (int i = 0; i < a.size_; ++i) {
      if (a.values_[i] != b.values_[i]) return false;
    }
    return true;
  }

 private:
  [[noreturn]] static void Full();  // prints the broken precondition and aborts

  std::array<int64_t, kMaxLabels> values_{};
  uint8_t size_ = 0;
};

// Shape and encoding of an image payload. For JPEG payloads height, width and
// channels are taken from the JPEG header at pack time (channels is the
// number of components in the file: 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK).
struct ImageInfo {
  Encoding encoding = Encoding::kRaw;
  Layout layout = Layout::kHWC;
  uint32_t height = 0;
  uint32_t width = 0;
  uint8_t channels = 0;

  // Bytes of a raw payload of this shape; UINT64_MAX when the product does
  // not fit 64 bits (so it never matches a real payload size).
  uint64_t RawBytes() const {
    uint64_t pixels = uint64_t{height} * width;  // cannot overflow: 32 x 32 bits
    if (channels != 0 && pixels > UINT64_MAX / channels) return UINT64_MAX;
    return pixels * channels;
  }
  friend bool operator==(const ImageInfo&, const ImageInfo&) = default;
};

// One sample. All views are borrowed; see the file comment.
struct Record {
  std::string_view key;  // source name, e.g. "n01440764/n01440764_10026.JPEG"
  Labels labels;
  ImageInfo image;
  ByteSpan payload;  // the image bytes
  ByteSpan extra;    // optional user bytes, stored and returned unchanged
};

// Deep equality of two records' contents (not of their addresses).
bool SameContents(const Record& a, const Record& b);

}  // namespace shardpack

#endif  // SHARDPACK_RECORD_H_
