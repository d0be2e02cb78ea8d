#include "tools/common/cli.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"
#include "common/os.h"
#include "common/posix_io.h"
#include "common/redact.h"
#include "common/size.h"
#include "tools/common/escape.h"

namespace shardpack::cli {

namespace {

constexpr char kHelpHint[] = "Run with --help for more information.\n";

// "0..2^64-1", "1..1024": [min, max] as the messages write it (2^64-1
// spelled out would read like the wrapped value of a negative).
std::string RangeText(uint64_t min, uint64_t max) {
  return absl::StrCat(min, "..", max == std::numeric_limits<uint64_t>::max() ? "2^64-1"
                                                                           : absl::StrCat(max));
}

// The payload that marks a write to a stdout whose reader has gone.
constexpr char kStdoutClosedPayload[] = "shardpack.tools/stdout-closed";

// Once a write met EPIPE, stdout stays closed: a later flush reports that
// again, rather than the error flag the failed write left.
bool stdout_closed = false;

absl::Status StdoutError(int err) {
  absl::Status status =
      absl::UnknownError(absl::StrCat("write to stdout: ", std::strerror(err)));
  if (err == EPIPE) {
    stdout_closed = true;
    status.SetPayload(kStdoutClosedPayload, absl::Cord("1"));
  }
  return status;
}

// Levenshtein distance of `a` and `b`, which are short (option names).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The options (as typed: "--size", "-o") that the command line as parsed
// could take: those of `app`, of its option groups and of the commands
// given; and the commands not given.
void CollectNames(const CLI::App& app, std::vector<std::string>* options,
                  std::vector<std::string>* commands) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) options->push_back("--" + n);
    for (const std::string& n : o->get_snames()) options->push_back("-" + n);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name().empty()) {
      CollectNames(*sub, options, commands);  // an option group
    } else if (sub->parsed()) {
      CollectNames(*sub, options, commands);
    } else {
      commands->push_back(sub->get_name());
    }
  }
}

// The one of `names` nearest to `typed`, when it is near enough to be what
// was meant (a typo of two letters, or a unique prefix); else "".
std::string Nearest(std::string_view typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  std::vector<std::string> prefixed;
  for (const std::string& name : names) {
    if (typed.size() >= 4 && name.size() > typed.size() &&
        name.compare(0, typed.size(), typed) == 0) {
      prefixed.push_back(name);
    }
    const size_t d = EditDistance(typed, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  if (best_distance <= 2 && best_distance * 3 <= best.size()) return best;
  return prefixed.size() == 1 ? prefixed[0] : "";
}

// For the first word of the command line that no option took (CLI11's
// extras) and that looks like an option: "unknown option --sise; did you
// mean --size?"; or, while no command is given, that is near one: "unknown
// command cifr; did you mean cifar?" (CLI11 would say only that a command
// is required). "" when there is none.
std::string UnknownOption(const CLI::App& app) {
  std::vector<std::string> options, commands;
  CollectNames(app, &options, &commands);
  const bool command_given = app.get_subcommands().size() > 0;
  for (const std::string& extra : app.remaining(true)) {
    // "-1" and "-" are values, not options.
    if (extra.size() >= 2 && extra[0] == '-' && !absl::ascii_isdigit(extra[1])) {
      const std::string name = extra.substr(0, extra.find('='));
      std::string message = absl::StrCat("unknown option ", name);
      if (std::string near = Nearest(name, options); !near.empty()) {
        absl::StrAppend(&message, "; did you mean ", near, "?");
      }
      return message;
    }
    if (std::string near = Nearest(extra, commands); !command_given && !near.empty()) {
      return absl::StrCat("unknown command ", extra, "; did you mean ", near, "?");
    }
  }
  return "";
}

}  // namespace

void PrintLine(std::FILE* out, std::string_view line) {
  // No URL's secret, whichever way it came into the line (common/redact.h).
  std::string text = EscapeText(common::RedactUrls(line));
  text.push_back('\n');
  std::fwrite(text.data(), 1, text.size(), out);
}

int RunMain(std::string_view tool, const std::function<int()>& body) {
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const int code = body();
    if (code != 0) return code;
    const absl::Status flushed = FlushStdout();
    return flushed.ok() ? 0 : Fail(tool, flushed);
  } catch (const std::bad_alloc&) {
    return Fail(tool, absl::ResourceExhaustedError(
                          "out of memory: the system refused an allocation (a memory cgroup, "
                          "ulimit -v, or the machine's memory is used up)"));
  } catch (const std::system_error& e) {
    return Fail(tool, absl::ResourceExhaustedError(absl::StrCat(
                          e.what(), " (a limit of the system's was reached: a pids or memory "
                                    "cgroup, ulimit -u or ulimit -v)")));
  }
}

absl::Status CheckOutputFile(const std::string& path, bool overwrite) {
  if (overwrite || !common::Lstat(path).ok()) return absl::OkStatus();
  return absl::AlreadyExistsError(
      absl::StrCat(path, " already exists; use --overwrite to replace it"));
}

absl::Status CheckLocalPath(std::string_view flag, std::string_view path, LocalPath use,
                            std::string_view command) {
  if (!common::LooksLikeUrl(path)) return absl::OkStatus();
  const std::string what = absl::StrCat(common::AsAbsl(flag), " ",
                                        common::AsAbsl(common::RedactUrl(path)), ": ");
  if (use == LocalPath::kOutput) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, "output to a URL is not supported; write to a local folder, then upload it "
              "(aws s3 sync)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(what, common::AsAbsl(command),
                                                 " reads local files only; download them first "
                                                 "(aws s3 sync)"));
}

int Fail(std::string_view tool, const absl::Status& status) {
  if (IsStdoutClosed(status)) return 0;
  const absl::string_view message = status.message();
  PrintLine(stderr, absl::StrCat(absl::string_view(tool.data(), tool.size()), ": ", message));
  return kExitFailure;
}

absl::Status WriteStdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return StdoutError(errno);
  return absl::OkStatus();
}

absl::Status FlushStdout() {
  if (stdout_closed) return StdoutError(EPIPE);
  if (std::fflush(stdout) != 0) return StdoutError(errno);
  // A write that failed earlier, unchecked, leaves the error flag set.
  if (std::ferror(stdout)) return StdoutError(EIO);
  return absl::OkStatus();
}

bool IsStdoutClosed(const absl::Status& status) {
  return status.GetPayload(kStdoutClosedPayload).has_value();
}

absl::Status CheckInputExists(const std::string& path) {
  // ENOENT and ENOTDIR are NotFoundError.
  if (common::IsUrlPath(path) || !absl::IsNotFound(common::Stat(path).status())) {
    return absl::OkStatus();  // what is there, or why it cannot be seen, is the opener's to say
  }
  return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
}

void AddVersionFlag(CLI::App& app, std::string_view tool) {
  app.set_version_flag("--version", absl::StrCat(absl::string_view(tool.data(), tool.size()),
                                                 " " SHARDPACK_VERSION));
}

int UsageError(std::string_view tool, const absl::Status& status) {
  Fail(tool, status);
  std::fputs(kHelpHint, stderr);
  return kExitUsage;
}

CLI::Validator WholeNumberIn(uint64_t min, uint64_t max) {
  const std::string range = RangeText(min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const std::optional<uint64_t> value = common::ParseWholeNumber(text, min, max);
        if (!value) return absl::StrCat("'", text, "' is not a whole number in ", range);
        text = absl::StrCat(*value);  // decimal, so that CLI11 cannot read it as octal
        return "";
      },
      absl::StrCat("in ", range));
}

CLI::Validator RealAboveUpTo(double min, double max) {
  const std::string range = absl::StrFormat("(%.15g, %.15g]", min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double value = 0;
        if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value <= min ||
            value > max) {
          return absl::StrCat("'", text, "' is not a number in ", range);
        }
        text = absl::StrFormat("%.17g", value);  // what CLI11 then reads is what was checked
        return "";
      },
      absl::StrCat("in ", range));
}

CLI::Validator SizeIn(uint64_t min, uint64_t max) {
  const std::string range = max == std::numeric_limits<uint64_t>::max()
                                ? absl::StrCat(FormatBytes(min), " or more")
                                : absl::StrCat(FormatBytes(min), "..", FormatBytes(max));
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        absl::StatusOr<uint64_t> size = common::ParseSize(text);
        if (size.ok() && *size >= min && *size <= max) return "";
        return absl::StrCat("'", text, "' is not a size in ", range,
                            " (bytes, or a number with KiB, MiB, GiB, K, M, G, kB, MB or GB)");
      },
      absl::StrCat("SIZE in ", range));
}

int ParseCommandLine(std::string_view tool, CLI::App& app, int argc, char** argv) {
  // `tool --help | head -1`: help to a reader that has gone ends quietly too.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // CLI11 checks required options before it reports what it did not take:
    // `--outptu x` would read "--output is required".
    std::string message = UnknownOption(app);
    if (message.empty()) message = e.what();
    // Escaped (PrintLine): CLI11's message quotes what was typed, which may
    // hold anything.
    return UsageError(tool, absl::InvalidArgumentError(message));
  }
  return -1;
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

}  // namespace shardpack::cli
