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

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_OPTIONS_H_
