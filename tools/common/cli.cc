#include "tools/common/cli.h"

#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"
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

}  // namespace

void PrintLine(std::FILE* out, std::string_view line) {
  // No URL's secret, whichever way it came into the line (common/redact.h).
  std::string text = EscapeText(common::RedactUrls(line));
  text.push_back('\n');
  std::fwrite(text.data(), 1, text.size(), out);
}

int RunMain(std::string_view tool, const std::function<int()>& body) {
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return body();
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
  struct stat st;
  if (overwrite || ::lstat(path.c_str(), &st) != 0) return absl::OkStatus();
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
  const absl::string_view message = status.message();
  PrintLine(stderr, absl::StrCat(absl::string_view(tool.data(), tool.size()), ": ", message));
  return kExitFailure;
}

int UsageError(std::string_view tool, const absl::Status& status) {
  Fail(tool, status);
  std::fputs(kHelpHint, stderr);
  return kExitUsage;
}

std::optional<uint64_t> ParseWholeNumber(std::string_view text, uint64_t min, uint64_t max) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  uint64_t value = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &value) || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

CLI::Validator WholeNumberIn(uint64_t min, uint64_t max) {
  const std::string range = RangeText(min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const std::optional<uint64_t> value = ParseWholeNumber(text, min, max);
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
  const std::string range = absl::StrCat(FormatBytes(min), "..", FormatBytes(max));
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        absl::StatusOr<uint64_t> size = common::ParseSize(text);
        if (size.ok() && *size >= min && *size <= max) return "";
        return absl::StrCat("'", text, "' is not a size in ", range,
                            " (bytes, or a number with KiB, MiB, GiB, K, M, G, kB, MB or GB)");
      },
      absl::StrCat("SIZE in ", range));
}

int ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // What CLI11's own failure message prints, with the message escaped: it
    // quotes what was typed, which may hold anything.
    PrintLine(stderr, e.what());
    std::fputs(kHelpHint, stderr);
    return kExitUsage;
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
