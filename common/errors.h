// Errors that say where: "<file> @<offset>: <what>", with the offset also
// attached to the status so tools can report it as a field.
#ifndef SHARDPACK_COMMON_ERRORS_H_
#define SHARDPACK_COMMON_ERRORS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shardpack::common {

// Debian's Abseil has its own string_view; this is the one crossing point.
inline absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

// DataLossError "<name> @<offset>: <what>" carrying `offset`.
absl::Status DataLossAt(std::string_view name, uint64_t offset,
                        std::string_view what);

// OK when a shard holds the records its manifest entry says; else
// DataLossError "<path>: holds <held> records, the manifest says <says>".
absl::Status CheckManifestRecords(std::string_view path, uint64_t held, uint64_t says);

// strerror(err), with the value of the limit that the error hits when one
// does: "File too large (the file-size limit, ulimit -f, is N bytes)",
// "Too many open files (the limit on open files, ulimit -n, is N)".
std::string ErrnoText(int err);

// "<what> <path>: <ErrnoText(err)>", with a code that matches errno
// (NotFound for ENOENT, PermissionDenied for EACCES, ...).
absl::Status ErrnoError(std::string_view what, std::string_view path, int err);

// Text from a user or a file, bounded for a message: `text` itself when it
// has at most `max` bytes, else its first `max` bytes (cut back to a UTF-8
// character's start) and "... (N bytes)". Bytes go in as they are, NULs
// too: whoever prints a message escapes it.
std::string Excerpt(std::string_view text, size_t max = 64);

// A message on one line, whatever a file or server put in it: newlines,
// tabs and the other control bytes escaped ("\\n", "\\t", "\\x1b"), every
// other byte kept (a reader that prints no escapes of its own, such as a
// Python exception, still shows one line).
std::string OneLine(std::string_view message);

// `status` with `message` in place of its own: its code and its payloads
// (the offset DataLossAt attached) kept, so that a caller that says where
// an error happened ("<file>: record 12: <message>") loses nothing the error
// carried. OK stays OK.
absl::Status WithMessage(const absl::Status& status, std::string_view message);

// The offset attached by DataLossAt, if any.
std::optional<uint64_t> ErrorOffset(const absl::Status& status);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_ERRORS_H_
