#include "tools/bench/save_batch.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/contact_sheet.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "shardpack/file.h"

namespace shardpack::shardbench {

absl::Status SaveBatchSheet(const Batch& batch, const ReaderOptions& options, const Schema& schema,
                            const std::string& path, AtomicFile::Existing existing) {
  if (batch.images() == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("--save-batch ", path, ": the batch is not in host memory"));
  }
  const std::array<int64_t, 4> shape = batch.shape();
  if (batch.image_bytes() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--save-batch ", path, ": the batch has no images (no image field is transformed)"));
  }
  codec::BatchImages images;
  images.data = batch.images();
  images.is_float = options.dtype == DType::kFloat32;
  images.nchw = options.layout == OutputLayout::kNCHW;
  images.n = shape[0];
  images.h = images.nchw ? shape[2] : shape[1];
  images.w = images.nchw ? shape[3] : shape[2];
  images.c = images.nchw ? shape[1] : shape[3];
  images.mean = options.mean;
  images.std = options.std;
  std::vector<uint64_t> indexes(static_cast<size_t>(batch.size()));
  for (int i = 0; i < batch.size(); ++i) indexes[static_cast<size_t>(i)] = batch.record_index(i);
  std::vector<std::vector<std::string>> classes;
  for (const LabelField& field : schema.labels) classes.push_back(field.classes);
  codec::BatchCaptions captions{batch.labels(), batch.num_labels(), indexes, classes};
  absl::StatusOr<codec::ContactSheet> sheet = codec::BatchSheet(images, captions, {.tile = 0});
  absl::StatusOr<std::vector<uint8_t>> bytes =
      sheet.ok() ? codec::EncodeForPath(sheet->view(), path) : sheet.status();
  absl::Status s = bytes.status();
  if (s.ok()) {
    s = WriteFileAtomically(
        path, std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
        existing);
  }
  if (s.ok()) return s;
  return common::WithMessage(s, absl::StrCat("--save-batch ", path, ": ", s.message()));
}

}  // namespace shardpack::shardbench
