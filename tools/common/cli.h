// What the command-line tools share: failure printing and exit codes,
// human-readable sizes.
#ifndef SHARDPACK_TOOLS_COMMON_CLI_H_
#define SHARDPACK_TOOLS_COMMON_CLI_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "CLI/CLI.hpp"

namespace shardpack::cli {

// Exit codes: 0 success, 1 failure (bad data, I/O), 2 usage error (CLI11).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "<tool>: <message>" on stderr and returns kExitFailure.
int Fail(std::string_view tool, const absl::Status& status);

// Parses the command line with CLI11. Returns -1 when the program should
// go on, otherwise the exit code: 0 after --help or --version, kExitUsage
// after a usage error (CLI11's own codes are not ours), with CLI11's message
// printed either way.
int ParseCommandLine(CLI::App& app, int argc, char** argv);

// Parses "256MiB", "4M", "1.5GB", "4096" into bytes. Binary (KiB, MiB, GiB,
// K, M, G) and decimal (kB, MB, GB) suffixes; no suffix means bytes.
absl::StatusOr<uint64_t> ParseSize(std::string_view text);

// "1.5 GiB", "312 KiB", "17 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace shardpack::cli

#endif  // SHARDPACK_TOOLS_COMMON_CLI_H_
