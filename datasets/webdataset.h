// WebDataset tar shards as samples: the members of one tar grouped as
// WebDataset groups them, so that a dataset a user has in that layout reads
// here sample for sample as it reads there.
//
// A member "dir/000123.seg.png" is the file "seg.png" of the sample whose
// key is "dir/000123": the key is the member's path up to the first '.' of
// its last part, the extension (lower-cased) what follows. Consecutive
// members with one key make one sample. A member whose last part has no '.'
// (or starts with one), and a top-level "__...__" member (WebDataset's
// metadata), belong to no sample and are passed over, as WebDataset passes
// them over.
#ifndef SHARDPACK_DATASETS_WEBDATASET_H_
#define SHARDPACK_DATASETS_WEBDATASET_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/tar_stream.h"

namespace shardpack::datasets {

// Splits a member's name as above; false when it belongs to no sample.
bool SplitSampleName(std::string_view name, std::string_view* key, std::string_view* ext);

struct SampleFile {
  std::string ext;  // lower-cased: "jpg", "seg.png", "cls"
  TarMember member;
};

struct TarSample {
  std::string key;
  // files[0, size): the sample's files in archive order. Entries past size
  // are kept, so that their strings' memory is reused by the next sample.
  std::vector<SampleFile> files;
  size_t size = 0;
};

// The samples of one tar, in order. Not thread-safe.
class TarSamples {
 public:
  // `tar` outlives this object.
  explicit TarSamples(TarStream* tar) : tar_(tar) {}

  // The next sample: true and `sample` filled, false at the end of the tar.
  // DataLossError for the tar's damage (TarStream) and for a sample holding
  // one extension twice: "<tar> @<offset>: sample '<key>' holds 'jpg' twice".
  absl::StatusOr<bool> Next(TarSample* sample);

  // A file's bytes: valid until the next call of Next.
  ByteSpan Data(const SampleFile& file) const { return tar_->Data(file.member); }

 private:
  // Reads the next member that belongs to a sample into pending_.
  absl::StatusOr<bool> ReadMember();

  TarStream* tar_;
  bool pending_ = false;
  TarMember member_;
  std::string key_, ext_;  // of member_
};

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_WEBDATASET_H_
