// The flags of every command that writes a dataset (shardpack cifar, images,
// webdataset, coco): where, in which backend, cut how, what to do with bad
// input, and what to print. Added to a command in one place.
#ifndef SHARDPACK_TOOLS_PACK_OUTPUT_FLAGS_H_
#define SHARDPACK_TOOLS_PACK_OUTPUT_FLAGS_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"

namespace shardpack::pack {

// As typed; docs/cli.md gives each one's meaning and default.
struct OutputFlags {
  std::string output;
  std::string format = "shard";
  std::string shard_size = "256MiB";
  uint64_t shard_records = 0;
  std::string block_size = "4MiB";
  std::string compress = "none";
  bool overwrite = false;
  std::string on_error = "skip";
  bool quiet = false;
  bool verbose = false;
  bool json = false;
};

// -o, --format, --shard-size, --shard-records, --block-size, --compress,
// --overwrite, --on-error, -q, -v, --json.
void AddOutputFlags(CLI::App* app, OutputFlags* f);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_OUTPUT_FLAGS_H_
