#include "remote/object_store.h"

#include <cstdlib>

#include "remote/http_store.h"

namespace shardpack::remote {

bool IsUrl(std::string_view path) {
  return path.starts_with("s3://") || path.starts_with("https://") || path.starts_with("http://");
}

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url,
                                                             const FetchOptions& options) {
  return OpenHttpStore(url, options,
                       [](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace shardpack::remote
