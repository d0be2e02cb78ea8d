// Encoding and decoding of one record inside a block's raw payload
// (layout in shard_layout.h).
#ifndef SHARDPACK_FORMAT_RECORD_CODEC_H_
#define SHARDPACK_FORMAT_RECORD_CODEC_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardpack/record.h"

namespace shardpack::format {

// Bytes the record takes in a block, padding included, or an
// InvalidArgumentError if the format cannot hold it.
absl::StatusOr<uint64_t> EncodedRecordSize(const Record& record);

// The most bytes a record's header and labels take.
inline constexpr size_t kMaxRecordHeadBytes = 24 + 8 * kMaxLabels;

// Writes the record's header and labels (section 5's first 24 + 8L bytes)
// at `dst`, which has kMaxRecordHeadBytes, and returns how many it wrote.
// Precondition: EncodedRecordSize(record) is OK.
size_t EncodeRecordHead(const Record& record, uint8_t* dst);

// Writes the record at `dst`, which has EncodedRecordSize() bytes.
void EncodeRecord(const Record& record, uint8_t* dst, uint64_t size);

// Parses the record occupying `bytes` exactly (from its offset to the next
// record's). `where()` is called only on error, to prefix the message
// (so the hot path builds no strings).
absl::StatusOr<Record> DecodeRecord(std::span<const uint8_t> bytes,
                                    absl::FunctionRef<std::string()> where);

}  // namespace shardpack::format

#endif  // SHARDPACK_FORMAT_RECORD_CODEC_H_
