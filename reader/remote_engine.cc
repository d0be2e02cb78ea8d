// The engine of a dataset in an object store: its shards are remote files
// (remote/remote_dataset.h). Requests queue at Submit; the first Wait that
// finds its request not yet read reads every queued request together
// (ReadRemote: the cache first, then one round of range requests in
// flight), so the loader's read-ahead is the fetch's parallelism.
#include <cassert>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "reader/io_engine_base.h"
#include "remote/remote_dataset.h"

namespace shardpack::reader {
namespace {

// Reads in flight: as many as the store keeps in flight.
constexpr size_t kRemoteInFlight = 16;

class RemoteIo final : public EngineBase {
 public:
  explicit RemoteIo(std::vector<std::unique_ptr<RandomAccessFile>> files) {
    files_ = std::move(files);
  }
  IoEngine engine() const override { return IoEngine::kRemote; }
  size_t max_in_flight() const override { return kRemoteInFlight; }
  bool zero_copy() const override { return false; }

  absl::Status Submit(const IoRequest& r) override {
    SP_RETURN_IF_ERROR(CheckRequest(r, queue_.size()));
    queue_.push_back({r, {}, false});
    return absl::OkStatus();
  }

  IoCompletion Wait() override {
    assert(!queue_.empty());
    if (!queue_.front().done) ReadQueued();
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    return Complete(q.request, std::move(q.status), q.request.buffer);
  }

 private:
  struct Queued {
    IoRequest request;
    absl::Status status;
    bool done;
  };

  void ReadQueued() {
    reads_.clear();
    queued_.clear();
    for (Queued& q : queue_) {
      if (q.done) continue;
      q.done = true;
      q.status = CheckRange(q.request);
      if (!q.status.ok() || q.request.length == 0) continue;
      const auto& file = static_cast<const remote::RemoteFile&>(*files_[q.request.file]);
      reads_.push_back({&file, q.request.offset, {q.request.buffer, q.request.length}, {}});
      queued_.push_back(&q);
    }
    remote::ReadRemote(reads_);
    for (size_t i = 0; i < reads_.size(); ++i) queued_[i]->status = std::move(reads_[i].status);
  }

  std::deque<Queued> queue_;
  std::vector<remote::RemoteRead> reads_;  // reused: no allocation per round
  std::vector<Queued*> queued_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockIo>> OpenRemote(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (const std::string& path : paths) {
    if (!remote::IsUrl(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the remote engine reads datasets in an object store only"));
    }
    SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(path));
    files.push_back(std::move(file));
  }
  return std::make_unique<RemoteIo>(std::move(files));
}

}  // namespace shardpack::reader
