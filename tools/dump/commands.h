// sharddump's commands. Each takes its parsed options, writes its data to
// stdout (progress and logs to stderr) and returns OK or the one-line error
// that main prints as "sharddump: <message>" with exit status 1.
// docs/cli.md documents every flag, column and JSON field.
#ifndef SHARDPACK_TOOLS_DUMP_COMMANDS_H_
#define SHARDPACK_TOOLS_DUMP_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardpack::dump {

// Flags every command takes.
struct CommonOptions {
  bool json = false;   // --json: machine-readable output
  bool quiet = false;  // -q: no progress line, no summary
  int verbose = 0;     // -v: more detail on stderr
};

struct InfoOptions {
  std::string path;
  CommonOptions common;
};
absl::Status RunInfo(const InfoOptions& options);

struct LsOptions {
  std::string path;
  std::optional<std::string> range;  // --range A:B
  std::optional<uint64_t> shard;     // --shard K
  CommonOptions common;
};
absl::Status RunLs(const LsOptions& options);

struct VerifyOptions {
  std::string path;
  bool decode = false;  // --decode: also decode every JPEG
  int threads = 0;      // --threads N; 0: one per core
  CommonOptions common;
};
// DataLossError "<path>: N problems found" when anything is wrong (after
// the report is printed).
absl::Status RunVerify(const VerifyOptions& options);

struct ExtractOptions {
  std::string path;
  std::vector<uint64_t> indexes;     // --index I[,J...]
  std::optional<std::string> range;  // --range A:B
  std::optional<std::string> key;    // --key K
  std::string output;                // -o DIR
  bool overwrite = false;            // --overwrite: replace files already at the names
  CommonOptions common;
};
absl::Status RunExtract(const ExtractOptions& options);

// Records `show` draws when neither --range nor --random is given: the first.
inline constexpr uint64_t kDefaultShown = 64;

struct ShowOptions {
  std::string path;
  std::optional<std::string> range;  // --range A:B
  std::optional<uint64_t> random;    // --random N: N distinct records drawn with `seed`
  uint64_t seed = 0;                 // --seed S
  uint32_t columns = 0;              // --columns C; 0: about square
  uint32_t tile = 96;                // --tile PX
  std::string output;                // -o FILE.png|FILE.jpg
  bool overwrite = false;            // --overwrite: replace a file already at `output`
  CommonOptions common;
};
// Writes a contact sheet (codec/contact_sheet.h) of the selected records.
absl::Status RunShow(const ShowOptions& options);

}  // namespace shardpack::dump

#endif  // SHARDPACK_TOOLS_DUMP_COMMANDS_H_
