#include "datasets/tar_stream.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::datasets {
namespace {

using common::AsAbsl;

// ustar header layout (POSIX.1-1988), 512 bytes.
constexpr size_t kBlock = 512;
constexpr size_t kNameAt = 0, kNameSize = 100;
constexpr size_t kSizeAt = 124, kSizeSize = 12;
constexpr size_t kChecksumAt = 148, kChecksumSize = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kMagicAt = 257;  // "ustar\0" (POSIX) or "ustar " (GNU)
constexpr size_t kPrefixAt = 345, kPrefixSize = 155;
// The longest name (GNU 'L', pax path) and extended header believed: a
// record key is at most 65535 bytes anyway.
constexpr uint64_t kMaxLongName = 65535;
constexpr uint64_t kMaxPaxHeader = uint64_t{1} << 20;

std::string_view Field(const uint8_t* h, size_t at, size_t size) {
  const char* p = reinterpret_cast<const char*>(h + at);
  return std::string_view(p, strnlen(p, size));
}

// An octal number (spaces or NULs around it), or GNU's base-256 form (the
// first byte's top bit set, then big-endian binary). False when neither.
bool ParseNumber(const uint8_t* p, size_t size, uint64_t* out) {
  if (p[0] & 0x80) {
    if (p[0] != 0x80) return false;  // negative, or more than 88 bits
    uint64_t v = 0;
    for (size_t i = 1; i < size; ++i) {
      if (v >> 56) return false;
      v = (v << 8) | p[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < size && p[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < size && p[i] >= '0' && p[i] <= '7'; ++i, ++digits) {
    if (v >> 61) return false;
    v = v * 8 + (p[i] - '0');
  }
  for (; i < size; ++i) {
    if (p[i] != ' ' && p[i] != 0) return false;
  }
  *out = v;
  return digits > 0;
}

// The header's checksum holds as tar writes it: the sum of its bytes with
// the checksum field taken as spaces, unsigned (POSIX) or signed (old
// tars; Python's tarfile accepts both).
bool ChecksumHolds(const uint8_t* h) {
  uint64_t stored = 0;
  if (!ParseNumber(h + kChecksumAt, kChecksumSize, &stored)) return false;
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumSize;
    unsigned_sum += in_field ? ' ' : h[i];
    signed_sum += in_field ? ' ' : static_cast<int8_t>(h[i]);
  }
  return static_cast<int64_t>(stored) == unsigned_sum ||
         static_cast<int64_t>(stored) == signed_sum;
}

// Whether a member name stays inside the archive's tree: relative, no ".."
// part, no NUL.
bool InsideTree(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

// A pax extended header's records, "LEN key=value\n" each: its path and
// size, when it gives them. False when a record does not parse.
bool ParsePax(std::string_view text, std::string* path, bool* has_path, uint64_t* size,
              bool* has_size) {
  while (!text.empty()) {
    size_t space = text.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 20) return false;
    uint64_t len = 0;
    for (char c : text.substr(0, space)) {
      if (c < '0' || c > '9') return false;
      len = len * 10 + static_cast<uint64_t>(c - '0');
    }
    if (len <= space + 1 || len > text.size() || text[len - 1] != '\n') return false;
    std::string_view record = text.substr(space + 1, len - space - 2);
    text.remove_prefix(len);
    size_t eq = record.find('=');
    if (eq == std::string_view::npos) return false;
    std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") {
      *path = std::string(value);
      *has_path = true;
    } else if (key == "size") {
      uint64_t v = 0;
      if (value.empty() || value.size() > 19) return false;
      for (char c : value) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      *size = v;
      *has_size = true;
    }
  }
  return true;
}

}  // namespace

TarStream::TarStream(const RandomAccessFile& file, size_t window)
    : file_(file), window_(std::max<size_t>(window, kBlock)) {}

absl::StatusOr<const uint8_t*> TarStream::Bytes(uint64_t offset, uint64_t n,
                                                std::string_view what) {
  if (offset >= buffer_start_ && n <= buffer_end_ - buffer_start_ &&
      offset - buffer_start_ <= buffer_end_ - buffer_start_ - n) {
    return buffer_.data() + (offset - buffer_start_);
  }
  const uint64_t file_size = file_.size();
  if (offset > file_size || n > file_size - offset) {
    return common::DataLossAt(file_.name(), offset,
                              absl::StrCat(AsAbsl(what), " of ", n,
                                           " bytes is cut short by the file's end (", file_size,
                                           " bytes)"));
  }
  // A mapped file is viewed in place: copying it into the buffer cost a
  // fifth of `shardpack webdataset`'s time (docs/benchmarks.md).
  if (const uint8_t* base = file_.data()) return base + offset;
  const uint64_t start = std::min(keep_from_, offset);
  if (offset + n - start > kMaxTarBufferBytes) {
    return common::DataLossAt(
        file_.name(), offset,
        absl::StrCat(AsAbsl(what), " of ", n, " bytes is more than the ", kMaxTarBufferBytes,
                     " bytes a tar read through a buffer may hold at once"));
  }
  const uint64_t end = std::min(file_size, std::max(offset + n, offset + window_));
  uint64_t kept = 0;
  if (start >= buffer_start_ && start < buffer_end_) {
    kept = buffer_end_ - start;
    std::memmove(buffer_.data(), buffer_.data() + (start - buffer_start_), kept);
  }
  if (buffer_.size() < end - start) buffer_.resize(end - start);
  SP_RETURN_IF_ERROR(file_.ReadExact(start + kept, std::span(buffer_.data() + kept, end - start - kept)));
  buffer_start_ = start;
  buffer_end_ = end;
  return buffer_.data() + (offset - start);
}

ByteSpan TarStream::Data(const TarMember& m) const {
  if (const uint8_t* base = file_.data()) return ByteSpan(base + m.data_offset, m.size);
  return ByteSpan(buffer_.data() + (m.data_offset - buffer_start_), m.size);
}

absl::StatusOr<bool> TarStream::Next(TarMember* member) {
  std::string long_name;
  bool has_long_name = false, has_size = false;
  uint64_t pax_size = 0;
  uint64_t first = next_;  // of the member's first header (an extended one's)
  while (!ended_) {
    if (next_ >= file_.size()) break;
    const uint64_t at = next_;
    if (!has_long_name && !has_size) first = at;
    SP_ASSIGN_OR_RETURN(const uint8_t* h, Bytes(at, kBlock, "a tar header"));
    if (std::all_of(h, h + kBlock, [](uint8_t b) { return b == 0; })) break;
    if (!ChecksumHolds(h)) {
      return common::DataLossAt(file_.name(), at, "not a tar header (its checksum does not hold)");
    }
    uint64_t size = 0;
    if (!ParseNumber(h + kSizeAt, kSizeSize, &size)) {
      return common::DataLossAt(file_.name(), at, "a tar header whose size is not a number");
    }
    const char type = static_cast<char>(h[kTypeAt]);
    if (has_size && (type == '0' || type == '\0' || type == '7')) size = pax_size;
    // Built in member->name, whose capacity is reused from member to member.
    std::string& name = member->name;
    if (has_long_name) {
      name.assign(long_name);
    } else {
      name.clear();
      if (std::memcmp(h + kMagicAt, "ustar\0", 6) == 0) {
        std::string_view prefix = Field(h, kPrefixAt, kPrefixSize);
        if (!prefix.empty()) name.append(prefix).append("/");
      }
      name.append(Field(h, kNameAt, kNameSize));
    }
    const uint64_t data = at + kBlock;
    if (size > file_.size() - std::min(file_.size(), data)) {
      return common::DataLossAt(
          file_.name(), at,
          absl::StrCat("member '", common::Excerpt(name), "' of ", size,
                       " bytes is cut short by the file's end (", file_.size(), " bytes)"));
    }
    next_ = data + common::AlignUp(size, kBlock);
    if (type == 'L' || type == 'x') {
      const uint64_t limit = type == 'L' ? kMaxLongName : kMaxPaxHeader;
      if (size > limit) {
        return common::DataLossAt(file_.name(), at,
                                  absl::StrCat("an extended header of ", size, " bytes (at most ",
                                               limit, ")"));
      }
      SP_ASSIGN_OR_RETURN(const uint8_t* p, Bytes(data, size, "an extended header"));
      std::string_view text(reinterpret_cast<const char*>(p), size);
      if (type == 'L') {
        long_name = std::string(text.substr(0, text.find('\0')));
        has_long_name = true;
      } else if (!ParsePax(text, &long_name, &has_long_name, &pax_size, &has_size)) {
        return common::DataLossAt(file_.name(), at, "a pax extended header that does not parse");
      }
      continue;
    }
    if (type != '0' && type != '\0' && type != '7') {  // not a regular file: passed over
      has_long_name = has_size = false;
      continue;
    }
    if (!InsideTree(name)) {
      return common::DataLossAt(file_.name(), at,
                                absl::StrCat("member '", common::Excerpt(name),
                                             "' leaves the archive's tree"));
    }
    SP_RETURN_IF_ERROR(Bytes(data, size, "a tar member").status());
    member->offset = first;
    member->data_offset = data;
    member->size = size;
    return true;
  }
  ended_ = true;
  return false;
}

}  // namespace shardpack::datasets
