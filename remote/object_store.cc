#include "remote/object_store.h"

namespace shardpack::remote {

bool IsUrl(std::string_view path) {
  return path.starts_with("s3://") || path.starts_with("https://") || path.starts_with("http://");
}

}  // namespace shardpack::remote
