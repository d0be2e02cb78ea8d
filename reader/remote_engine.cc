// The engine of a dataset in an object store: its shards are remote files
// (remote/remote_dataset.h). Fetch threads of its own each take every
// request queued and not yet taken, read them together (ReadRemote: the
// cache first, then one round of range requests in flight, each block
// checked and kept), and come back for more. Several threads, so that a
// request submitted while a round is in flight starts at once in another
// round instead of waiting for the slowest request of that one. So the
// loader's read-ahead is the fetch's parallelism, and the loader waits only
// when the block it needs next has not come: fetching, checking and
// writing the cache happen beside the loader and the workers. A block is
// handed on once it is checked and kept, not after its round's others.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status_macros.h"
#include "common/threads.h"
#include "reader/io_engine_base.h"
#include "remote/storage.h"

namespace shardpack::reader {
namespace {

// Reads queued at once (the store keeps at most 16 requests in flight), and
// fetch threads taking rounds of them.
constexpr size_t kRemoteInFlight = 16;
constexpr int kFetchThreads = 4;

class RemoteIo final : public EngineBase {
 public:
  explicit RemoteIo(std::vector<std::unique_ptr<RandomAccessFile>> files) {
    files_ = std::move(files);
  }
  ~RemoteIo() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();  // after its round: no write into a buffer later
    }
  }
  absl::Status Start() {
    threads_.resize(kFetchThreads);
    for (std::thread& t : threads_) {
      SP_RETURN_IF_ERROR(
          common::StartThread(&t, "a fetch thread of the remote engine", [this] { Main(); }));
    }
    return absl::OkStatus();
  }

  IoEngine engine() const override { return IoEngine::kRemote; }
  size_t max_in_flight() const override { return kRemoteInFlight; }
  bool zero_copy() const override { return false; }

  absl::Status Submit(const IoRequest& r) override {
    std::unique_lock<std::mutex> lock(mu_);
    SP_RETURN_IF_ERROR(CheckRequest(r, queue_.size()));
    queue_.push_back({r, CheckRange(r), false, false, false});
    if (queue_.back().status.ok() && r.length > 0) {
      ++waiting_;
      lock.unlock();
      wake_.notify_all();
    } else {
      queue_.back().done = true;
    }
    return absl::OkStatus();
  }

  IoCompletion Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    SP_CHECK(!queue_.empty());
    done_.wait(lock, [&] { return queue_.front().done; });
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    IoCompletion c = Complete(q.request, std::move(q.status), q.request.buffer);
    c.checked = c.status.ok() && q.checked;
    return c;
  }

 private:
  struct Queued {
    IoRequest request;
    absl::Status status;
    bool started;
    bool done;
    bool checked;  // ReadRemote checked every byte (RemoteRead::checked)
  };

  // A fetch thread: rounds of every request waiting, until stopped.
  void Main() {
    std::vector<Queued*> round;
    std::vector<remote::RemoteRead> reads;  // reused: no allocation per round
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || waiting_ > 0; });
      if (stop_) return;
      round.clear();
      reads.clear();
      for (Queued& q : queue_) {
        if (q.done || q.started) continue;
        q.started = true;
        const auto& file = static_cast<const remote::RemoteFile&>(*files_[q.request.file]);
        reads.push_back({&file, q.request.offset, {q.request.buffer, q.request.length},
                         AlignToIo(q.request.length), {}});
        round.push_back(&q);
      }
      waiting_ = 0;
      lock.unlock();
      // The loader submits and takes meanwhile: each read as soon as it is
      // final, while the round's others are still checked and kept.
      Round context{this, &round, &reads};
      remote::ReadRemote(reads, {&Round::Done, &context});
      lock.lock();
    }
  }

  // What a round's EachDone is told about.
  struct Round {
    RemoteIo* io;
    std::vector<Queued*>* queued;
    std::vector<remote::RemoteRead>* reads;
    static void Done(void* context, size_t i) {
      const Round& r = *static_cast<Round*>(context);
      {
        std::lock_guard<std::mutex> lock(r.io->mu_);
        Queued& q = *(*r.queued)[i];  // taken by Wait once done: not touched after
        q.status = std::move((*r.reads)[i].status);
        q.checked = (*r.reads)[i].checked;
        q.done = true;
      }
      r.io->done_.notify_all();
    }
  };

  std::mutex mu_;
  std::condition_variable wake_;  // the fetch threads: requests waiting, or stop
  std::condition_variable done_;  // the loader: a read is done
  std::deque<Queued> queue_;      // in submission order; a Queued stays put until taken
  size_t waiting_ = 0;            // submitted and not yet in a round
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockIo>> OpenRemote(const std::vector<std::string>& paths,
                                                    remote::Storage* storage) {
  for (const std::string& path : paths) {
    if (!remote::IsUrl(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the remote engine reads datasets in an object store only"));
    }
  }
  if (storage == nullptr) {
    return absl::NotFoundError(absl::StrCat(paths.empty() ? "" : paths[0],
                                            ": no dataset is open at this URL"));
  }
  SP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RandomAccessFile>> files,
                      storage->OpenFiles(paths));
  auto io = std::make_unique<RemoteIo>(std::move(files));
  SP_RETURN_IF_ERROR(io->Start());
  return io;
}

}  // namespace shardpack::reader
