// Progress of a long job on stderr: on a terminal one line redrawn in place;
// otherwise a plain line every few seconds, so logs stay readable.
#ifndef SHARDPACK_TOOLS_PACK_PROGRESS_H_
#define SHARDPACK_TOOLS_PACK_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace shardpack::pack {

class Progress {
 public:
  // `total` records expected; `enabled` false prints nothing.
  Progress(uint64_t total, bool enabled);

  // Cheap enough to call per record: prints only when a line is due.
  void Update(uint64_t done, uint64_t bytes) {
    if (enabled_ && (done & 63) == 0) MaybePrint(done, bytes);
  }
  // Clears a redrawn line.
  void Finish();
  double Seconds() const;

 private:
  void MaybePrint(uint64_t done, uint64_t bytes);
  using Clock = std::chrono::steady_clock;
  uint64_t total_;
  bool enabled_;
  bool terminal_;
  Clock::time_point start_;
  Clock::time_point last_;
  bool drawn_ = false;
};

}  // namespace shardpack::pack

#endif  // SHARDPACK_TOOLS_PACK_PROGRESS_H_
