#include "reader/load_ahead.h"

#include "common/os.h"

namespace shardpack::reader {

LoadAhead::LoadAhead(int threads) {
  if (!threads_.Start(threads, "a page-cache loader of the pread engine", [this](int) {
                 Main();
               }).ok()) {
    Stop();
  }
}

void LoadAhead::Queue(const uint8_t* at, size_t length) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    queue_.push_back({++queued_, at, length});
  }
  wake_.notify_one();
}

void LoadAhead::Reached(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!queue_.empty() && queue_.front().n <= n) queue_.pop_front();
}

void LoadAhead::FirstLoaded() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    go_ = true;
  }
  wake_.notify_all();
}

void LoadAhead::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || (go_ && !queue_.empty()); });
    if (stop_) return;
    const Block b = queue_.front();
    queue_.pop_front();
    lock.unlock();
    // Past a file that shrank, the advice fails (no signal); the reader's
    // own pread says so.
    common::AdviseMemory(b.at, b.length, common::MemoryAdvice::kPopulateRead);
    common::AdviseMemory(b.at, b.length, common::MemoryAdvice::kDontNeed);
    lock.lock();
  }
}

void LoadAhead::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  (void)threads_.JoinAll();
}

}  // namespace shardpack::reader
