// WebDataset tar shards converted into a dataset of fields: each sample's
// files become the fields named by their extensions, written through a
// Writer (shardpack/writer.h). `shardpack webdataset` runs it.
//
// An extension's field and type are inferred from the first samples of the
// first tar (docs/cli.md, "shardpack webdataset"), by its last part:
//   jpg jpeg                                 "jpeg" (kept as they are)
//   png webp bmp ppm pgm pbm pnm tif tiff    "raw" (decoded, lossless)
//   cls cls2 index label target              "label" (a decimal integer)
//   txt text caption                         "string"
//   json                                     "json"
//   npy                                      an array of the file's dtype, and
//                                            its shape, or [n, ...] when the
//                                            first dimension varies
//   anything else                            "bytes"
// An extension missing from some of those samples makes an optional field.
// `--field EXT=NAME[:TYPE]` names an extension's field and may give its
// type (shardpack.Writer's type text); `--drop EXT` leaves it out.
#ifndef SHARDPACK_DATASETS_WEBDATASET_CONVERT_H_
#define SHARDPACK_DATASETS_WEBDATASET_CONVERT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/fields.h"
#include "shardpack/file.h"
#include "shardpack/writer.h"

namespace shardpack::datasets {

// Opens a tar by its name.
using TarOpener =
    std::function<absl::StatusOr<std::unique_ptr<RandomAccessFile>>(const std::string&)>;

struct WebDatasetOptions {
  std::vector<std::string> tars;     // tar files, in record order
  std::vector<std::string> fields;   // "EXT=NAME" or "EXT=NAME:TYPE"
  std::vector<std::string> drop;     // extensions left out
  uint64_t infer_samples = 1000;     // of the first tar, to infer the fields from
  // How a tar is opened (`shardpack webdataset` opens a URL through the
  // object store: remote/object_file.h); empty: a local file, mapped
  // (OpenMappedFile: the tar is read in place).
  TarOpener open;
  ImageConverterOptions images;
};

// An extension and the field it becomes.
struct WebDatasetColumn {
  std::string ext;
  Field field;
};

// The columns of the tars' samples, in the order their extensions first
// appear. InvalidArgumentError naming the tar and extension for an
// extension that is no field name (and has no --field), an .npy file that
// is not one, arrays of two dtypes, a --field or --drop of an extension no
// sample has; the tar's damage as TarStream tells it.
absl::StatusOr<std::vector<WebDatasetColumn>> InferWebDatasetColumns(
    const WebDatasetOptions& options);

// What a conversion did.
struct WebDatasetStats {
  uint64_t samples = 0;
  uint64_t bytes = 0;  // of the tars' members read
};

// Writes every sample of every tar, in order, through `writer` (made with
// the columns' fields, in order). A sample that holds an extension of no
// column, lacks one that is not optional, or has a value its field refuses
// (an .npy of another shape, a label that is not an integer, an image that
// does not decode, ...) is offered to the writer as a bad sample naming the
// sample and the field (Writer::Reject: an error, or skipped and listed
// with OnError::kSkip). A tar's damage (a header that does not check, a
// member cut short, a name that leaves the tree) is the error, naming the
// tar and offset, whatever on_error says: what follows it cannot be read.
// `progress` (may be empty) is called after each sample.
absl::Status ConvertWebDataset(const WebDatasetOptions& options,
                               const std::vector<WebDatasetColumn>& columns, Writer* writer,
                               WebDatasetStats* stats,
                               const std::function<void(const WebDatasetStats&)>& progress);

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_WEBDATASET_CONVERT_H_
