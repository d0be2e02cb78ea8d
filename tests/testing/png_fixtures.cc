#include "tests/testing/png_fixtures.h"

#include <png.h>

#include "gtest/gtest.h"

namespace shardpack::testing {

std::vector<uint8_t> EncodePng(const std::vector<uint8_t>& pixels, uint32_t width,
                               uint32_t height, int channels) {
  EXPECT_EQ(pixels.size(), size_t{width} * height * static_cast<size_t>(channels));
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = channels == 1   ? PNG_FORMAT_GRAY
                 : channels == 3 ? PNG_FORMAT_RGB
                                 : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr));
  std::vector<uint8_t> png(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, png.data(), &size, 0, pixels.data(), 0, nullptr));
  png.resize(size);
  return png;
}

}  // namespace shardpack::testing
