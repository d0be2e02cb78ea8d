#include "codec/jpeg_error.h"

namespace shardpack::codec {

bool IsBenignJpegWarning(std::string_view message) {
  return message.find("extraneous bytes before marker 0xd9") != std::string_view::npos ||
         message.find("unknown JFIF revision") != std::string_view::npos ||
         message.find("thumbnail image size does not match") != std::string_view::npos ||
         message.find("Unknown Adobe color transform code") != std::string_view::npos;
}

}  // namespace shardpack::codec
