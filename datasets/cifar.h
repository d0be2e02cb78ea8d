// CIFAR-10 and CIFAR-100 binary files as a Source.
//
// CIFAR-10 record: 1 label byte + 3072 pixel bytes (CHW planar 32x32: all R,
// then G, then B). CIFAR-100 record: coarse byte, fine byte, 3072 pixel bytes.
// Pixels are stored raw (never re-encoded). CIFAR-10 records get one label
// field "label"; CIFAR-100 records get two: "fine" (first) and "coarse".
#ifndef SHARDPACK_DATASETS_CIFAR_H_
#define SHARDPACK_DATASETS_CIFAR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/source.h"

namespace shardpack::datasets {

// Byte layout of a CIFAR record (from the CIFAR page,
// https://www.cs.toronto.edu/~kriz/cifar.html, "Binary version"): no file
// header, no padding; label byte(s) then 3 planes of 32x32 pixels.
inline constexpr int kCifarSide = 32;
inline constexpr int kCifarChannels = 3;
inline constexpr uint64_t kCifarPixelBytes = uint64_t{kCifarSide} * kCifarSide * kCifarChannels;
inline constexpr uint64_t kCifar10RecordBytes = 1 + kCifarPixelBytes;   // label
inline constexpr uint64_t kCifar100RecordBytes = 2 + kCifarPixelBytes;  // coarse, fine
static_assert(kCifarPixelBytes == 3072);
static_assert(kCifar10RecordBytes == 3073 && kCifar100RecordBytes == 3074);

// Largest CifarOptions::pad accepted (a 160x160 stored image).
inline constexpr int kCifarMaxPad = 64;

// Digits of the zero-padded record index in keys: "data_batch_1.bin/00042".
// Five digits cover every official file (at most 50,000 records); a larger
// index simply gets more digits, so keys stay unique and sort by index
// within a file as long as files hold fewer than 100,000 records.
inline constexpr int kCifarKeyDigits = 5;

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
  // (32 + 2 pad) square, ready for random-crop augmentation. Default 0;
  // 0..kCifarMaxPad.
  int pad = 0;
  OnError on_error = OnError::kSkip;
};

// Opens the inputs, reads class names from batches.meta.txt (CIFAR-10) or
// fine_label_names.txt / coarse_label_names.txt (CIFAR-100) found beside the
// files, and checks sizes. A file whose size is not a whole number of
// records is an error naming the file and the offset where the last whole
// record ends; with OnError::kSkip it is an open_problem instead and the
// whole records are kept. Keys are "<file name>/<record index in file>".
//
// Details of the contract:
// - Items are the records of all files in input order (a folder expands to
//   its split's files in the order listed on CifarOptions::inputs).
// - Files are memory-mapped once and shared, read-only, by the Source and
//   its workers; a worker keeps them alive, so it may outlive its Source.
//   Source and workers are immutable after opening except for the worker's
//   own buffers: NewWorker() and the const accessors are thread-safe.
//   WillNeed / DoneWith (source.h) advise the mapping (MADV_WILLNEED,
//   MADV_DONTNEED) on the items' bytes, so that a pack reading window by
//   window holds about two windows of input in its RSS, not the input.
// - Keys: "<file name>/<index>" with the index zero-padded to
//   kCifarKeyDigits digits, e.g. "data_batch_1.bin/00042".
// - Labels: CIFAR-10 {label}; CIFAR-100 {fine, coarse} (the file stores
//   coarse first; the record and schema order is fine, coarse).
// - Payload: raw uint8, (32 + 2 pad) square, 3 channels (R, G, B), in
//   `layout`; the pad border is zero.
// - SourceWorker::Prepare(i) checks the label byte(s) against the class
//   count (10; 100 fine, 20 coarse) and returns DataLossError
//   "<file> @<record offset>: ..." for a byte out of range. Prepare reuses
//   the PreparedRecord's buffers: no allocation once they have grown.
// - Class names: a names file that is absent leaves that field's class list
//   empty (no canonical names are made up); one whose count of non-empty
//   lines differs from the class count is an open_problem (skip; the list
//   stays empty) or the error (fail). Trailing empty lines and surrounding
//   whitespace are ignored. Looked for in the folders of the data files, in
//   input order; the first folder that has the file wins.
// - Errors: no inputs, a bad variant, split, or pad: InvalidArgumentError.
//   A missing input or split file: NotFoundError naming the path. Names
//   that do not tell the variant (when variant is 0), or inputs that mix
//   CIFAR-10 and CIFAR-100: InvalidArgumentError asking for the variant.
//   A file whose size is a whole number of the other variant's records but
//   not of this one's (e.g. --cifar 100 given a CIFAR-10 batch):
//   InvalidArgumentError in both modes, since keeping its "whole records"
//   would be silently wrong. An empty file: DataLossError (fail) or an
//   open_problem (skip). No whole records in any input: DataLossError.
// - `split` is used only to expand folders; for files given directly,
//   ParamsJson() reports the split their names imply (or null).
// - ParamsJson(): {"kind":"cifar","variant":10,"split":"train",
//   "layout":"hwc","pad":0,"files":["data_batch_1.bin", ...]}.
absl::StatusOr<std::unique_ptr<Source>> OpenCifar(const CifarOptions& options);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_CIFAR_H_
