// CIFAR-10 and CIFAR-100 binary files as a Source.
//
// CIFAR-10 record: 1 label byte + 3072 pixel bytes (CHW planar 32x32: all R,
// then G, then B). CIFAR-100 record: coarse byte, fine byte, 3072 pixel bytes.
// Pixels are stored raw (never re-encoded). CIFAR-10 records get one label
// field "label"; CIFAR-100 records get two: "fine" (first) and "coarse".
#ifndef SHARDPACK_DATASETS_CIFAR_H_
#define SHARDPACK_DATASETS_CIFAR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/source.h"

namespace shardpack::datasets {

struct CifarOptions {
  // Binary files, or the extracted folder (cifar-10-batches-bin/ or
  // cifar-100-binary/), in which case `split` picks the files:
  // CIFAR-10 train = data_batch_1..5.bin, test = test_batch.bin;
  // CIFAR-100 train = train.bin, test = test.bin.
  std::vector<std::string> inputs;
  // 10 or 100; 0 (default) detects from the folder or file names
  // (data_batch_*.bin / test_batch.bin -> 10, train.bin / test.bin -> 100)
  // and fails with a clear message when it cannot tell.
  int variant = 0;
  std::string split = "train";  // "train" or "test"; default "train"
  Layout layout = Layout::kHWC;  // stored pixel order; default HWC
  // Zero pixels added on every side, so the stored image is
  // (32 + 2 pad) square, ready for random-crop augmentation. Default 0.
  int pad = 0;
  OnError on_error = OnError::kSkip;
};

// Opens the inputs, reads class names from batches.meta.txt (CIFAR-10) or
// fine_label_names.txt / coarse_label_names.txt (CIFAR-100) found beside the
// files, and checks sizes. A file whose size is not a whole number of
// records is an error naming the file and the offset where the last whole
// record ends; with OnError::kSkip it is an open_problem instead and the
// whole records are kept. Keys are "<file name>/<record index in file>".
absl::StatusOr<std::unique_ptr<Source>> OpenCifar(const CifarOptions& options);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_CIFAR_H_
