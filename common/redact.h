// URLs as messages show them. A URL can carry a secret (a password in its
// userinfo, a presigned signature in its query, a token in its fragment);
// every message, log line and stat that shows a path shows it through
// RedactUrl, and the tools' and the Python module's last step before
// printing runs RedactUrls over the whole text, so that no secret reaches a
// terminal, a log or an exception, whichever path it took into the text.
#ifndef SHARDPACK_COMMON_REDACT_H_
#define SHARDPACK_COMMON_REDACT_H_

#include <string>
#include <string_view>

namespace shardpack::common {

// Whether `path` begins with a URL scheme and "://" ("s3://", "HTTPS://",
// "gs://": RFC 3986's scheme, any case). Such a path is never taken as a
// local one by a tool that writes (docs/cli.md).
bool LooksLikeUrl(std::string_view path);

// `path` as a message may show it: a URL keeps its scheme, host, port and
// path, and has its userinfo, each query value and its fragment replaced by
// "***", as the AWS CLI and curl print one:
//   "https://user:pw@host:8443/d/?X-Amz-Signature=abc#t"
//   -> "https://***@host:8443/d/?X-Amz-Signature=***#***".
// A port that is not a number is replaced too (it may be the start of a
// password holding '/', "https://user:pa/ss@host/", whose userinfo then
// runs to the last '@'). Any other path is returned as it is.
std::string RedactUrl(std::string_view path);

// `text` with every URL in it redacted by RedactUrl. A URL in free text runs
// from its scheme to the next whitespace or quote (less a final ':', the
// messages' "<url>: <why>"), so a query value also hides what follows it up
// to there ("?sig=x) failed" -> "?sig=*** failed").
std::string RedactUrls(std::string_view text);

}  // namespace shardpack::common

#endif  // SHARDPACK_COMMON_REDACT_H_
