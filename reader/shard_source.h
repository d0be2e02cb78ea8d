// The `.shard` backend of the reader: one read unit per block, read through
// a BlockIo engine and parsed in place.
#ifndef SHARDPACK_READER_SHARD_SOURCE_H_
#define SHARDPACK_READER_SHARD_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reader/unit_source.h"
#include "remote/storage.h"
#include "shardpack/manifest.h"

namespace shardpack::reader {

// Opens `paths` (the shards of `manifest`, or one lone shard when the
// manifest has no shards) with `engine`, loads every index and checks the
// record counts against the manifest. URL paths are read through `storage`.
absl::StatusOr<std::unique_ptr<UnitSource>> OpenShardSource(const std::vector<std::string>& paths,
                                                            const Manifest& manifest,
                                                            IoEngine engine,
                                                            remote::Storage* storage,
                                                            uint64_t window_bytes = UINT64_MAX);

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_SHARD_SOURCE_H_
