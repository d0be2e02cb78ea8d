#include "remote/object_file.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace shardpack::remote {
namespace {

class ObjectFile final : public RandomAccessFile {
 public:
  ObjectFile(std::shared_ptr<ObjectStore> store, std::string object, uint64_t size,
             uint64_t piece_bytes)
      : store_(std::move(store)), object_(std::move(object)), name_(store_->UrlOf(object_)),
        size_(size), piece_bytes_(std::max<uint64_t>(1, piece_bytes)) {}

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    if (offset > size_ || dst.size() > size_ - offset) {
      return absl::DataLossError(absl::StrCat(name_, " @", offset, ": a read of ", dst.size(),
                                              " bytes passes the end of the object (",
                                              size_, " bytes)"));
    }
    std::vector<RangeRequest> pieces;
    pieces.reserve((dst.size() + piece_bytes_ - 1) / piece_bytes_);
    for (uint64_t at = 0; at < dst.size(); at += piece_bytes_) {
      const uint64_t n = std::min<uint64_t>(piece_bytes_, dst.size() - at);
      pieces.push_back({.object = object_, .offset = offset + at, .dst = dst.subspan(at, n), .status = {}});
    }
    store_->Fetch(pieces);
    for (const RangeRequest& p : pieces) SP_RETURN_IF_ERROR(p.status);
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<ObjectStore> store_;
  std::string object_;
  std::string name_;
  uint64_t size_;
  uint64_t piece_bytes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenObjectFile(
    std::shared_ptr<ObjectStore> store, std::string object, uint64_t piece_bytes) {
  uint8_t first = 0;
  RangeRequest probe{.object = object, .offset = 0, .dst = std::span<uint8_t>(&first, 1), .status = {}};
  store->Fetch(std::span<RangeRequest>(&probe, 1));
  SP_RETURN_IF_ERROR(probe.status);
  if (probe.object_size < 1) {
    return absl::DataLossError(absl::StrCat(store->UrlOf(object),
                                            ": the store did not say the object's size"));
  }
  const auto size = static_cast<uint64_t>(probe.object_size);
  return std::make_unique<ObjectFile>(std::move(store), std::move(object), size, piece_bytes);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> OpenObjectUrl(std::string_view url,
                                                                const FetchOptions& options) {
  const size_t slash = url.rfind('/');
  if (slash == std::string_view::npos || slash + 1 == url.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(common::Excerpt(url), ": names a folder, not an object"));
  }
  SP_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store,
                      OpenObjectStore(url.substr(0, slash + 1), options));
  return OpenObjectFile(std::move(store), std::string(url.substr(slash + 1)));
}

}  // namespace shardpack::remote
