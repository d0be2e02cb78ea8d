#include "remote/object_store.h"

#include <cstdlib>

#include "common/posix_io.h"
#include "remote/http_store.h"

namespace shardpack::remote {

bool IsUrl(std::string_view path) { return common::IsUrlPath(path); }

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url,
                                                             const FetchOptions& options) {
  return OpenHttpStore(url, options,
                       [](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace shardpack::remote
