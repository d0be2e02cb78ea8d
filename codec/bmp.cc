#include "codec/decode.h"

#include "absl/strings/str_cat.h"
#include "format/errors.h"

namespace shardpack::codec {

// Not written yet: a helper fills this in.
absl::StatusOr<PixelView> DecodeBmp(ByteSpan, std::string_view name, const DecodeSpec&,
                                    DecodeBuffers*) {
  return absl::UnimplementedError(absl::StrCat(internal::AsAbsl(name), ": no Bmp decoder yet"));
}

}  // namespace shardpack::codec
