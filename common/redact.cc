#include "common/redact.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace shardpack::common {
namespace {

constexpr std::string_view kHidden = "***";

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSchemeChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '+' || c == '-' || c == '.'; }

// The length of the scheme that `s` begins with when "://" follows it, else 0.
size_t SchemeLength(std::string_view s) {
  if (s.empty() || !IsAlpha(s[0])) return 0;
  size_t n = 1;
  while (n < s.size() && IsSchemeChar(s[n])) ++n;
  return s.substr(n).starts_with("://") ? n : 0;
}

// Where the port of "host[:port]" begins (after the ':'), or npos; an IPv6
// host's colons are inside its brackets.
size_t PortStart(std::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) return colon;
  const size_t bracket = host_port.rfind(']');
  if (bracket != std::string_view::npos && bracket > colon) return std::string_view::npos;
  return colon + 1;
}

bool AllDigits(std::string_view s) {
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// "?k=v&w#f" -> "?k=***&***#***".
void AppendRedactedTail(std::string_view tail, std::string* out) {
  const size_t hash = tail.find('#');
  std::string_view query = tail.substr(0, hash);
  if (!query.empty()) {
    out->push_back('?');
    query.remove_prefix(1);
    for (bool first = true; first || !query.empty(); first = false) {
      const size_t amp = query.find('&');
      const std::string_view piece = query.substr(0, amp);
      query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
      if (!first) out->push_back('&');
      const size_t eq = piece.find('=');
      if (eq != std::string_view::npos) out->append(piece.substr(0, eq + 1));
      out->append(kHidden);
    }
  }
  if (hash != std::string_view::npos) {
    out->push_back('#');
    out->append(kHidden);
  }
}

}  // namespace

bool LooksLikeUrl(std::string_view path) { return SchemeLength(path) != 0; }

std::string RedactUrl(std::string_view path) {
  const size_t scheme = SchemeLength(path);
  if (scheme == 0) return std::string(path);
  std::string_view rest = path.substr(scheme + 3);
  const std::string_view head = rest.substr(0, rest.find_first_of("?#"));
  const std::string_view tail = rest.substr(head.size());
  const size_t authority_end = std::min(head.find_first_of("/\\"), head.size());
  size_t at = head.substr(0, authority_end).rfind('@');
  if (at == std::string_view::npos) {
    // "user:pa/ss@host": a password with a '/' reads as a port that is no
    // number; its userinfo runs to the last '@'.
    const std::string_view authority = head.substr(0, authority_end);
    const size_t port = PortStart(authority);
    if (port != std::string_view::npos && !AllDigits(authority.substr(port))) at = head.rfind('@');
  }
  std::string out(path.substr(0, scheme + 3));
  std::string_view after = head;
  if (at != std::string_view::npos) {
    out.append(kHidden);
    out.push_back('@');
    after = head.substr(at + 1);
  }
  const size_t host_end = std::min(after.find_first_of("/\\"), after.size());
  const std::string_view host_port = after.substr(0, host_end);
  const size_t port = PortStart(host_port);
  if (port != std::string_view::npos && !AllDigits(host_port.substr(port))) {
    out.append(host_port.substr(0, port));
    out.append(kHidden);
  } else {
    out.append(host_port);
  }
  out.append(after.substr(host_end));
  AppendRedactedTail(tail, &out);
  return out;
}

std::string RedactUrls(std::string_view text) {
  static constexpr std::string_view kEnd = " \t\r\n\v\f\"'`<>";
  std::string out;
  size_t copied = 0;
  for (size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    size_t start = sep;
    while (start > copied && IsSchemeChar(text[start - 1])) --start;
    while (start < sep && !IsAlpha(text[start])) ++start;
    if (start == sep) continue;
    size_t end = std::min(text.find_first_of(kEnd, sep), text.size());
    if (end > sep + 3 && text[end - 1] == ':') --end;
    out.append(text.substr(copied, start - copied));
    out.append(RedactUrl(text.substr(start, end - start)));
    copied = end;
    sep = end > 3 ? end - 3 : 0;
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace shardpack::common
