// The interface every input adapter (CIFAR binaries, image folders, list
// files) offers to the packer.
//
// A Source is opened once: it lists its items (records to be) in their
// natural order and knows the schema. Items are prepared by SourceWorkers,
// one per packing thread, which keep their decoders and buffers for life.
#ifndef SHARDPACK_DATASETS_SOURCE_H_
#define SHARDPACK_DATASETS_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "shardpack/crc32c.h"
#include "shardpack/manifest.h"
#include "shardpack/record.h"
#include "shardpack/writer.h"

namespace shardpack::datasets {

// What to do with a bad input (kSkip: leave it out, list it in skipped.tsv,
// count it; the packer's default), and an input left out with the reason
// (`path` the input file; for CIFAR: the file, with the byte offset in
// `reason`): the writer's types (shardpack/writer.h).
using OnError = ::shardpack::OnError;
using Skipped = ::shardpack::Skipped;

// One item prepared for writing. Owns its bytes; a worker reuses the same
// PreparedRecord for many items, so buffers keep their capacity.
struct PreparedRecord {
  std::string key;
  Labels labels;
  ImageInfo image;
  std::vector<uint8_t> payload;
  // Set by Prepare for an input stored in another form than it came in for
  // its format's sake (a PNG stored as JPEG; any non-JPEG decoded into raw
  // pixels): the input format's name, a static string ("PNG"), counted in
  // the pack's summary. Empty otherwise.
  std::string_view converted_from;
  // Set by Prepare, with an OK status, for an input the user chose to leave
  // out (--non-jpeg skip): the reason, for skipped.tsv. Not bad input, so
  // --on-error fail does not stop for it; nothing else in the record is
  // meaningful then.
  std::string left_out;

  Record view() const { return Record{key, labels, image, payload, {}}; }
};

// Prepares items. Not thread-safe: one per thread.
class SourceWorker {
 public:
  virtual ~SourceWorker() = default;
  // Fills `out` with item i (0 <= i < Source::size()). A non-OK status means
  // item i is a bad input; its message names the input (and the offset where
  // one applies) and says what is wrong, in one line.
  virtual absl::Status Prepare(size_t i, PreparedRecord* out) = 0;
};

class Source {
 public:
  virtual ~Source() = default;

  // Number of items, in the source's natural order (sorted files; CIFAR
  // records in file order).
  virtual size_t size() const = 0;

  // Schema of the records: encoding, layout, fixed shape if any, label
  // fields with class names.
  virtual const Schema& schema() const = 0;

  // The input file behind item i (for skipped.tsv and messages).
  virtual std::string ItemPath(size_t i) const = 0;

  // Problems found while opening that skip mode reports and continues past
  // (an empty class folder, a truncated CIFAR tail, a bad list-file line).
  // In fail mode, opening returns the first such problem as its error.
  virtual const std::vector<Skipped>& open_problems() const = 0;

  // Total bytes of the input files (for the summary and MB/s).
  virtual uint64_t input_bytes() const = 0;

  // What the input is, computed once at open: "crc32c:" and 8 hex digits
  // (InputHasher) over what decides the records and their order (an image
  // folder or list: each item's relative path, label and file size, in item
  // order; CIFAR: each file's name, size and CRC-32C of its bytes). Parts
  // packed on many machines carry it, so that `merge` can tell the parts of
  // one pack from parts of another input.
  virtual const std::string& input_fingerprint() const = 0;

  // A description of the source and its options, as a JSON object text,
  // stored in the manifest's "pack" object under "source".
  virtual std::string ParamsJson() const = 0;

  virtual std::unique_ptr<SourceWorker> NewWorker() const = 0;

  // Hints from the packer, which reads the items window by window (see
  // tools/pack/pack.h, OrderShape): items [begin, end) are to be prepared
  // soon, so read them ahead in large sequential pieces; or are done with,
  // so the memory that holds their input may go. Only a source that reads
  // through memory acts on them (CIFAR maps its files); results never
  // depend on them. Thread-safe. Default: nothing.
  virtual void WillNeed(size_t /*begin*/, size_t /*end*/) const {}
  virtual void DoneWith(size_t /*begin*/, size_t /*end*/) const {}
};

// Builds an input fingerprint: CRC-32C over length-prefixed strings and
// little-endian integers, so that ("ab","c") and ("a","bc") differ. 32 bits
// tell inputs apart by accident, not against malice: whoever can write a
// part can write its manifest too.
class InputHasher {
 public:
  void Add(uint64_t v) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
    crc_ = Crc32cExtend(crc_, bytes, sizeof(bytes));
  }
  void Add(std::string_view s) {
    Add(uint64_t{s.size()});
    crc_ = Crc32cExtend(crc_, reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  std::string Text() const { return absl::StrFormat("crc32c:%08x", crc_); }

 private:
  uint32_t crc_ = 0;
};

}  // namespace shardpack::datasets

#endif  // SHARDPACK_DATASETS_SOURCE_H_
