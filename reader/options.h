// What ReaderOptions accepts, said the one way for Reader::Open and for the
// Python binding, whose arguments may not even fit an option's field.
#ifndef SHARDPACK_READER_OPTIONS_H_
#define SHARDPACK_READER_OPTIONS_H_

#include <string_view>

#include "absl/status/status.h"

namespace shardpack::reader {

// InvalidArgumentError "<option> <value> is out of range: <what is
// accepted>" for an integer option of ReaderOptions (batch_size,
// ring_slots, threads, device, device_buffers, rank, world_size, and
// "transform size", "transform pad"). `value` as the caller spells it,
// bounded in the message.
absl::Status OptionOutOfRange(std::string_view option, std::string_view value);

// InvalidArgumentError for a path option (`what`: "path", "cache_dir",
// "sources[1].path") that the system could not take whole: one holding a
// NUL byte (a C string would cut it short there) or PATH_MAX bytes or more.
// The one check of Reader::Open, RecordReader::Open and the Python module.
absl::Status CheckPathOption(std::string_view what, std::string_view path);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_OPTIONS_H_
