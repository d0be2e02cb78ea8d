// Loads blocks of mapped files into the page cache ahead of the reader:
// each thread takes the oldest block queued and not yet taken and faults it
// in through its file's mapping, advised for huge pages (MADV_POPULATE_READ:
// the kernel reads it into 2 MiB folios, in any order of blocks), then
// unmaps its pages again. One fault-in reads one block at a time, so threads
// keep several in flight, as WILLNEED advice did for 4 KiB pages. A helper:
// the reader loads each block itself too when it gets to it (a no-op for one
// loaded, a wait on the folios of one being loaded), so a thread that falls
// behind, or that the system would not start, costs only the wait.
// Internal to the pread engine (reader/io_engine.cc): not installed.
#ifndef SHARDPACK_READER_LOAD_AHEAD_H_
#define SHARDPACK_READER_LOAD_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "common/threads.h"

namespace shardpack::reader {

// Thread-safe.
class LoadAhead {
 public:
  // Starts `threads` threads; without them (the system refused them) the
  // reader loads alone.
  explicit LoadAhead(int threads);
  ~LoadAhead() { Stop(); }
  LoadAhead(const LoadAhead&) = delete;
  LoadAhead& operator=(const LoadAhead&) = delete;

  // Queues [at, at + length) of a mapping that outlives this object.
  void Queue(const uint8_t* at, size_t length);
  // The reader is at the `n`th block queued (1, 2, ...): it and those
  // before it are no longer worth a thread's taking.
  void Reached(uint64_t n);
  // The reader has its first block: the threads begin. Until then the
  // first block, which the first batch waits for, has the disk alone.
  void FirstLoaded();

 private:
  struct Block {
    uint64_t n;
    const uint8_t* at;
    size_t length;
  };

  void Main();
  void Stop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Block> queue_;  // guarded by mu_, in the order queued
  uint64_t queued_ = 0;      // guarded by mu_
  bool go_ = false;          // guarded by mu_
  bool stop_ = false;        // guarded by mu_
  common::ThreadGroup threads_;
};

}  // namespace shardpack::reader

#endif  // SHARDPACK_READER_LOAD_AHEAD_H_
