// CheckRecordAgainstSchema: one test shared by `sharddump verify` and the
// reader, so that what verify passes the reader reads.
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "common/status_macros.h"

namespace shardpack {
namespace {

using common::AsAbsl;

std::string ShapeText(const ImageInfo& i) {
  return absl::StrCat(AsAbsl(EncodingName(i.encoding)), " ", i.height, "x", i.width, "x",
                      i.channels, " ", AsAbsl(LayoutName(i.layout)));
}

bool FixedShape(const ImageInfo& i) { return i.height != 0 && i.width != 0 && i.channels != 0; }

absl::Status CheckImage(const ImageInfo& image, const Schema& schema) {
  const ImageInfo& want = schema.image;
  if (image.encoding != want.encoding) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: a ",
                                            AsAbsl(EncodingName(image.encoding)),
                                            " image in a dataset of ",
                                            AsAbsl(EncodingName(want.encoding)), " images"));
  }
  if (image.encoding != Encoding::kRaw) return absl::OkStatus();
  if (image.layout != want.layout || (FixedShape(want) && image != want)) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: image ", ShapeText(image),
                                            ", the schema says ", ShapeText(want)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRecordAgainstSchema(const Record& record, const Schema& schema) {
  SP_RETURN_IF_ERROR(CheckImage(record.image, schema));
  const size_t fields = schema.labels.size();
  if (static_cast<size_t>(record.labels.size()) != fields) {
    return absl::DataLossError(absl::StrCat("disagrees with the schema: ", record.labels.size(),
                                            " labels, the schema has ", fields));
  }
  for (size_t k = 0; k < fields; ++k) {
    const LabelField& field = schema.labels[k];
    const int64_t label = record.labels[static_cast<int>(k)];
    if (field.classes.empty()) continue;  // a field without class names: any value
    if (label < 0 || static_cast<uint64_t>(label) >= field.classes.size()) {
      return absl::DataLossError(absl::StrCat("disagrees with the schema: label '", field.name,
                                              "' is ", label, ", outside its ",
                                              field.classes.size(), " classes (0..",
                                              field.classes.size() - 1, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shardpack
