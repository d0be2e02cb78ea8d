#include "remote/url.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/redact.h"
#include "common/status_macros.h"

namespace shardpack::remote {
namespace {

// The URL as messages show it: what it hides (userinfo, query, fragment) is
// what most of these errors refuse, and it may be a password or a signature.
absl::Status Bad(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      common::AsAbsl(common::Excerpt(common::RedactUrl(url), 256)), ": ", common::AsAbsl(why)));
}

bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

// What no URL of ours may hold anywhere: control characters, a query, a
// fragment; spaces only in an S3 key prefix (taken literally, as the AWS
// CLI takes it).
absl::Status CheckCharacters(std::string_view url, bool space_ok) {
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return Bad(url, "control character in the URL");
    if (c == ' ' && !space_ok) return Bad(url, "space in the URL (percent-encode it as %20)");
    if (c == '?' || c == '#') return Bad(url, "a query or fragment ('?', '#') is not allowed");
  }
  return absl::OkStatus();
}

// A path segment as a server would see it once percent-decoded: only
// "%2e" matters here, so that "%2e%2E" counts as "..".
bool IsDotSegment(std::string_view segment) {
  int dots = 0;
  for (size_t i = 0; i < segment.size(); ++dots) {
    if (segment[i] == '.') {
      i += 1;
    } else if (segment.substr(i, 3) == "%2e" || segment.substr(i, 3) == "%2E") {
      i += 3;
    } else {
      return false;
    }
  }
  return dots == 1 || dots == 2;
}

absl::Status CheckSegments(std::string_view url, std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (IsDotSegment(path.substr(start, end - start))) {
      return Bad(url, "'.' and '..' path segments are not allowed");
    }
    start = end + 1;
  }
  return absl::OkStatus();
}

// An http(s) path as sent: RFC 3986's pchar and '/', '%' only before two
// hex digits; no byte past ASCII (percent-encode it).
absl::Status CheckHttpPath(std::string_view url, std::string_view path) {
  static constexpr std::string_view kAllowed = "-._~!$&'()*+,;=:@/";
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size() || !IsHex(path[i + 1]) || !IsHex(path[i + 2])) {
        return Bad(url, "'%' not followed by two hex digits");
      }
    } else if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
               kAllowed.find(c) == std::string_view::npos) {
      return Bad(url, absl::StrCat("character '", std::string(1, c),
                                   "' in the path (percent-encode it)"));
    }
  }
  return CheckSegments(url, path);
}

absl::Status CheckBucket(std::string_view url, std::string_view bucket) {
  if (bucket.empty()) return Bad(url, "no bucket name after s3://");
  if (bucket.size() < 3 || bucket.size() > 63) {
    return Bad(url, "a bucket name has 3 to 63 characters");
  }
  for (char c : bucket) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      return Bad(url, "a bucket name holds only a-z, 0-9, '.' and '-'");
    }
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(bucket.front())) ||
      !absl::ascii_isalnum(static_cast<unsigned char>(bucket.back())) ||
      bucket.find("..") != std::string_view::npos) {
    return Bad(url, "a bucket name starts and ends with a letter or digit, no '..'");
  }
  return absl::OkStatus();
}

absl::StatusOr<DatasetUrl> ParseS3(std::string_view url, std::string_view rest) {
  DatasetUrl out;
  out.scheme = UrlScheme::kS3;
  const size_t slash = rest.find('/');
  out.bucket = std::string(rest.substr(0, slash));
  SP_RETURN_IF_ERROR(CheckBucket(url, out.bucket));
  if (slash != std::string_view::npos) out.prefix = std::string(rest.substr(slash + 1));
  if (!out.prefix.empty() && out.prefix.back() != '/') out.prefix += '/';
  if (out.prefix.starts_with('/')) return Bad(url, "the key prefix starts with '/'");
  SP_RETURN_IF_ERROR(CheckSegments(url, out.prefix));
  out.url = absl::StrCat("s3://", out.bucket, "/", out.prefix);
  return out;
}

// "host[:port]" of an http(s) URL, lower-cased, checked.
absl::StatusOr<std::string> ParseAuthority(std::string_view url, std::string_view authority) {
  if (authority.find('@') != std::string_view::npos) {
    return Bad(url, "credentials in the URL (user@host) are not allowed");
  }
  std::string_view host = authority;
  std::string_view port;
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return Bad(url, "no host");
  const bool ipv6 = host.front() == '[' && host.back() == ']' && host.size() > 2;
  for (char c : ipv6 ? host.substr(1, host.size() - 2) : host) {
    const bool ok = ipv6 ? (IsHex(c) || c == ':' || c == '.')
                         : (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                            c == '-');
    if (!ok) return Bad(url, absl::StrCat("character '", std::string(1, c), "' in the host"));
  }
  if (colon != std::string_view::npos && host.size() != authority.size()) {
    uint32_t value = 0;
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string_view::npos;
    if (digits) std::from_chars(port.data(), port.data() + port.size(), value);
    if (!digits || value < 1 || value > 65535) return Bad(url, "port outside 1..65535");
  }
  return absl::AsciiStrToLower(common::AsAbsl(authority));
}

absl::StatusOr<DatasetUrl> ParseHttp(std::string_view url, UrlScheme scheme,
                                     std::string_view rest) {
  DatasetUrl out;
  out.scheme = scheme;
  const size_t slash = rest.find('/');
  SP_ASSIGN_OR_RETURN(std::string authority, ParseAuthority(url, rest.substr(0, slash)));
  out.origin = absl::StrCat(scheme == UrlScheme::kHttps ? "https://" : "http://", authority);
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.path.back() != '/') out.path += '/';
  SP_RETURN_IF_ERROR(CheckHttpPath(url, out.path));
  out.url = out.origin + out.path;
  return out;
}

}  // namespace

absl::StatusOr<DatasetUrl> ParseDatasetUrl(std::string_view url) {
  const size_t sep = url.find("://");
  const std::string scheme = sep == std::string_view::npos
                                 ? ""
                                 : absl::AsciiStrToLower(common::AsAbsl(url.substr(0, sep)));
  SP_RETURN_IF_ERROR(CheckCharacters(url, scheme == "s3"));
  if (scheme == "s3") return ParseS3(url, url.substr(sep + 3));
  if (scheme == "https") return ParseHttp(url, UrlScheme::kHttps, url.substr(sep + 3));
  if (scheme == "http") return ParseHttp(url, UrlScheme::kHttp, url.substr(sep + 3));
  return Bad(url, "not a URL of s3://, https:// or http://");
}

absl::StatusOr<std::string> ParseEndpoint(std::string_view endpoint, std::string_view what) {
  auto parsed = ParseDatasetUrl(endpoint);
  if (parsed.ok() && parsed->scheme == UrlScheme::kS3) {
    parsed = Bad(endpoint, "an endpoint is an http:// or https:// URL");
  }
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(common::AsAbsl(what), ": ", parsed.status().message()));
  }
  std::string out = parsed->url;
  out.pop_back();
  return out;
}

absl::Status CheckObjectName(std::string_view name, std::string_view full_url) {
  if (name.empty()) return Bad(full_url, "an empty object name");
  if (name.front() == '/') return Bad(full_url, "an object name starting with '/'");
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return Bad(full_url, "control character in the object name");
  }
  return CheckSegments(full_url, name);
}

void AppendEncodedKey(std::string_view key, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out->push_back(c);
    } else {
      out->push_back('%');
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    }
  }
}

}  // namespace shardpack::remote
