// shardbench --save-batch: the first batch as the training loop gets it
// (after the transform) as a contact sheet (codec/contact_sheet.h). Float32
// batches are shown with the normalization undone.
#ifndef SHARDPACK_TOOLS_BENCH_SAVE_BATCH_H_
#define SHARDPACK_TOOLS_BENCH_SAVE_BATCH_H_

#include <string>

#include "absl/status/status.h"
#include "shardpack/file.h"
#include "shardpack/reader.h"

namespace shardpack::shardbench {

// Writes `batch` (host memory) as a sheet to `path` (.png or .jpg), each
// tile captioned with the sample's record index, labels and class names
// from `schema`. Errors name `path`.
absl::Status SaveBatchSheet(const Batch& batch, const ReaderOptions& options, const Schema& schema,
                            const std::string& path, AtomicFile::Existing existing);

}  // namespace shardpack::shardbench

#endif  // SHARDPACK_TOOLS_BENCH_SAVE_BATCH_H_
