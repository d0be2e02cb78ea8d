// What the command-line tools share: failure printing and exit codes, flag
// validators, human-readable sizes.
#ifndef SHARDPACK_TOOLS_COMMON_CLI_H_
#define SHARDPACK_TOOLS_COMMON_CLI_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/size.h"

namespace shardpack::cli {

// Exit codes: 0 success, 1 failure (bad data, I/O), 2 usage error (CLI11).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The most worker threads a --threads flag takes (0 means one per core):
// more would only exhaust memory and the process's thread limit.
inline constexpr uint64_t kMaxThreads = 1024;

// A tool's main, around everything it does after parsing:
// - SIGXFSZ is ignored first, so that a write past the file-size limit
//   (ulimit -f) fails with EFBIG, reported naming the file and the limit,
//   instead of the signal killing the process with its output half-written.
// - SIGPIPE is ignored too: a write to stdout whose reader has gone fails
//   with EPIPE, and the tool ends quietly with 0 (`sharddump ls | head`, as
//   `ls | head` does), after it has removed what it had half-written.
// - stdout is flushed after `body` returns 0: a failed write (a full disk
//   behind `> file`) is reported and gives kExitFailure.
// - std::bad_alloc or std::system_error that escapes `body` (memory or a
//   thread the system refused where no Status carries it) is printed as
//   "<tool>: out of memory: ..." or "<tool>: <what>" and gives kExitFailure,
//   after the stack has unwound, so that partial output is removed.
int RunMain(std::string_view tool, const std::function<int()>& body);

// A file a flag names for output (sharddump show -o, shardbench
// --save-batch): OK when nothing is at `path` or `overwrite` is set; else
// AlreadyExistsError "<path> already exists; use --overwrite to replace it".
// Checked before the work; the file is then written through an AtomicFile
// with Existing::kRefuse, which keeps a file that appeared meanwhile too.
absl::Status CheckOutputFile(const std::string& path, bool overwrite);

// Writes `line` to `out` escaped whole (EscapeText: one line, control
// characters, invalid UTF-8 and NUL bytes shown as escapes) and with every
// URL's secrets hidden (common::RedactUrls), then a newline.
// The way a tool prints a line to stderr that holds a path, a key, a class
// name or an error message: compose it raw, print it through here.
void PrintLine(std::FILE* out, std::string_view line);

// What a path flag names when it cannot be a URL: an output (what the tools
// write goes to a local file system) or an input that a command reads from
// a local file system only.
enum class LocalPath { kOutput, kInput };

// OK unless `path`, the value of `flag` ("-o", "DATASET"), looks like a URL
// (common::LooksLikeUrl: any scheme, so "gs://x" does not become a folder
// "gs:"). Else InvalidArgumentError, the URL redacted:
//   "-o s3://b/x: output to a URL is not supported; write to a local folder,
//   then upload it (aws s3 sync)"
//   "DATASET s3://b/x: <command> reads local files only; download them
//   first (aws s3 sync)".
// Checked before anything is read or created.
absl::Status CheckLocalPath(std::string_view flag, std::string_view path, LocalPath use,
                            std::string_view command = "");

// Prints "<tool>: <message>" on stderr (through PrintLine: one line however
// the message came) and returns kExitFailure. A status of a stdout whose
// reader has gone (IsStdoutClosed) prints nothing and returns 0: the reader
// chose to stop reading, nothing failed.
int Fail(std::string_view tool, const absl::Status& status);

// Writes `text` to stdout (buffered), or flushes stdout: an error "write to
// stdout: <why>" when stdout cannot take it. The one way a tool writes data
// to stdout. EPIPE (a reader that has gone) gives a status IsStdoutClosed
// recognizes, on which the caller stops writing and Fail ends quietly.
absl::Status WriteStdout(std::string_view text);
absl::Status FlushStdout();
bool IsStdoutClosed(const absl::Status& status);

// NotFoundError "<path>: no such file or directory" when nothing is at the
// local path `path` (a URL is the store's to answer): the one wording of a
// missing input in every tool, checked before the work.
absl::Status CheckInputExists(const std::string& path);

// Prints "<tool>: <message>" and CLI11's "Run with --help" hint on stderr
// and returns kExitUsage: for flag values or combinations that only make
// sense together, which the parser cannot check alone.
int UsageError(std::string_view tool, const absl::Status& status);

// Parses `tool`'s command line with CLI11. Returns -1 when the program
// should go on, otherwise the exit code: 0 after --help or --version (CLI11
// prints them), kExitUsage after a usage error (CLI11's own codes are not
// ours), printed as "<tool>: <message>" through PrintLine (it may quote what
// was typed), followed by the "Run with --help" hint. An option the command
// does not know is the error named, whatever else went wrong, with the
// nearest option (or command) that it does know: "shardpack: unknown option
// --sise; did you mean --size?". SIGPIPE is ignored from here on (RunMain).
int ParseCommandLine(std::string_view tool, CLI::App& app, int argc, char** argv);

// Gives `app` the --version flag every tool has, printing "<tool> <version>".
void AddVersionFlag(CLI::App& app, std::string_view tool);

// common::ParseWholeNumber (common/size.h) reads a number typed on a command
// line, also inside a flag's value ("64x64", "3/8").

// A CLI11 transform for a whole-number flag bound to any integer type: the
// value must be decimal digits alone, within [min, max] (max at most the
// bound variable's largest value). CLI11 2.1 by itself would read "-1" into
// an unsigned as 2^64-1, "010" as octal 8 and an overflow as the largest
// value. Leading zeros are dropped. A bad value is a usage error naming the
// flag and the range: "--seed: '-1' is not a whole number in 0..2^64-1".
CLI::Validator WholeNumberIn(uint64_t min, uint64_t max);

// A CLI11 check for a real-valued flag: a finite number in (min, max].
// Refuses nan, inf and anything outside: "--seconds: 'nan' is not a number
// in (0, 31536000]".
CLI::Validator RealAboveUpTo(double min, double max);

// A CLI11 check for a size flag ("256MiB", see ParseSize) in [min, max]:
// "--block-size: '2GiB' is not a size in 1 B..1.0 GiB (bytes, or ...)".
CLI::Validator SizeIn(uint64_t min, uint64_t max);

// common::ParseSize: "256MiB", "4M", "1.5GB", "4096" into bytes.
using common::ParseSize;

// "1.5 GiB", "312 KiB", "17 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace shardpack::cli

#endif  // SHARDPACK_TOOLS_COMMON_CLI_H_
