// The members of a tar file, read in order from a RandomAccessFile through
// one buffer (so a member costs no system call of its own: the file is read
// in large sequential pieces), or, when the file is memory (a mapped file,
// RandomAccessFile::data()), viewed where they lie, copied nowhere. POSIX ustar, GNU long names ('L') and pax
// extended headers ('x': path, size) are understood, as Python's tarfile and
// GNU tar write them, so every tar WebDataset reads is read here.
//
// Every header is checked before it is believed: its checksum, its octal or
// base-256 size, that the member's bytes are in the file. A member whose
// name leaves the archive's tree (absolute, or a ".." part) is refused: a
// converter never writes files from names, but a name is a record's key,
// and a key that climbs out of its tar is a damaged or hostile archive.
// Members that are not regular files (directories, links, devices) are
// passed over, as WebDataset passes them over.
#ifndef SHARDPACK_DATASETS_TAR_STREAM_H_
#define SHARDPACK_DATASETS_TAR_STREAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/posix_open.h"
#include "shardpack/file.h"
#include "shardpack/record.h"

namespace shardpack::datasets {

// One regular file of the archive.
struct TarMember {
  std::string name;      // its path in the archive, long names applied
  uint64_t offset = 0;   // of its (first) header in the file
  uint64_t data_offset = 0;
  uint64_t size = 0;
};

// A file read through the buffer (data() null: an object in a store) keeps
// at most this much of itself resident at once: a member, or a run of kept
// members, larger than this is refused (DataLossError naming the file and
// offset) rather than allocated, whatever size the file claims. A mapped
// file's members are viewed in place and take no buffer. The bound is the
// largest input file the converters take (a member is one).
inline constexpr uint64_t kMaxTarBufferBytes = common::kMaxInputFileBytes;

// Not thread-safe. The file must outlive the stream.
class TarStream {
 public:
  // `window` bytes are read at a time (the buffer grows for a member, or a
  // marked run of members, that does not fit); unused for a file that is
  // memory.
  explicit TarStream(const RandomAccessFile& file, size_t window = size_t{8} << 20);

  const std::string& name() const { return file_.name(); }

  // The next regular file: true and `member` filled, or false at the end of
  // the archive (a zero block, or the file's end at a header boundary).
  // DataLossError "<file> @<offset>: ..." for a header whose checksum,
  // size or name is wrong, a member cut short by the file's end, an
  // extended header that does not parse.
  absl::StatusOr<bool> Next(TarMember* member);

  // The bytes of a member returned by Next at or after the KeepFrom offset:
  // valid until the next call of Next or KeepFrom (of a file that is memory:
  // as long as the file). Of a mapped file, the caller checks the file's
  // CheckIntact() after using them.
  ByteSpan Data(const TarMember& member) const;

  // Keeps the bytes of the file from `offset` (a member's header, at or
  // after the last KeepFrom) resident from now on, so that the members of
  // one sample, read one by one, are viewed together. Default: from 0, so
  // a caller that never calls it keeps the whole file.
  void KeepFrom(uint64_t offset) { keep_from_ = offset; }

 private:
  // Makes [offset, offset + n) of the file resident; DataLoss past the end.
  absl::StatusOr<const uint8_t*> Bytes(uint64_t offset, uint64_t n, std::string_view what);

  const RandomAccessFile& file_;
  size_t window_;
  std::vector<uint8_t> buffer_;
  uint64_t buffer_start_ = 0;   // file offset of buffer_[0]
  uint64_t buffer_end_ = 0;     // file offset past the resident bytes
  uint64_t keep_from_ = 0;      // file offset the caller still views from
  uint64_t next_ = 0;           // offset of the next header
  bool ended_ = false;
};

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_TAR_STREAM_H_
