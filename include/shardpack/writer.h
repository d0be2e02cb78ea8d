// Writing datasets: what a writer and the packer share (what to do with a
// bad sample or input, what was left out, the limits of blocks and parts).
// The Writer itself (samples of any fields into a dataset) comes next.
#ifndef SHARDPACK_WRITER_H_
#define SHARDPACK_WRITER_H_

#include <cstdint>
#include <string>

namespace shardpack {

// What a writer does with a bad sample (a value its field refuses, or one
// the caller could not make: Writer::Reject), and a packer with a bad input.
enum class OnError {
  kSkip,  // leave it out, list it (skipped.tsv, the on_skip callback), go on
  kFail,  // return the error
};

// A sample or input left out, and why. `path` is the input file for a
// packer, the sample's key for a Writer.
struct Skipped {
  std::string path;
  std::string reason;
};

// The largest block a `.shard` writer takes (ShardWriterOptions::block_size).
inline constexpr uint32_t kMaxBlockSize = uint32_t{1} << 30;

// The most parts a multi-machine write may have.
inline constexpr uint64_t kMaxParts = UINT32_MAX;

}  // namespace shardpack

#endif  // SHARDPACK_WRITER_H_
