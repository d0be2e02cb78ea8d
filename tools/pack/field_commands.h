// The converters' commands, which write datasets of fields through
// shardpack::Writer: `shardpack webdataset` (WebDataset tars), `shardpack
// coco` (a COCO instances file and its images) and `shardpack parquet`
// (which runs in Python: shardpack/parquet.py). docs/cli.md, "Datasets of
// fields".
#ifndef SHARDPACK_TOOLS_PACK_FIELD_COMMANDS_H_
#define SHARDPACK_TOOLS_PACK_FIELD_COMMANDS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "datasets/webdataset_convert.h"
#include "tools/pack/output_flags.h"

namespace shardpack::pack {

// The flags of a converter: a dataset's output flags, and a part's.
struct WriteFlags : OutputFlags {
  std::string part;  // "" or "I/N"
  std::string job;
  int convert_quality = 100;
};

struct FieldCommands {
  CLI::App* webdataset = nullptr;
  CLI::App* coco = nullptr;
  CLI::App* parquet = nullptr;
  WriteFlags webdataset_flags, coco_flags;
  datasets::WebDatasetOptions wds;
  std::vector<std::string> tar_patterns;
  std::string annotations, image_dir;
  std::vector<std::string> parquet_args;
};

// Adds the commands to `app`, their flags into `c` (which outlives the parse).
void AddFieldCommands(CLI::App& app, FieldCommands* c);

// The exit code of the command that was parsed, or -1 when none of them was.
int RunFieldCommands(FieldCommands& c, bool verbose);

// A WebDataset shard pattern expanded as WebDataset's braceexpand does:
// "{000000..000099}" a zero-padded range, "{a,b}" a list, several in one
// pattern. InvalidArgumentError for an unclosed brace, a descending or
// malformed range, or more than 10^6 names.
absl::StatusOr<std::vector<std::string>> ExpandBraces(const std::string& pattern);

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_FIELD_COMMANDS_H_
