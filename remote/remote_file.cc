// The files of a remote dataset: a `.shard` object read by checked blocks,
// anything else read from its whole local copy; and ReadRemote, which
// fetches what a batch of reads lacks in one round.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "format/shard_layout.h"
#include "remote/remote_dataset.h"
#include "shardpack/crc32c.h"
#include "shardpack/shard.h"

namespace shardpack::remote {
namespace {

// The head (file header) and tail (footer, trailer) are fetched at open:
// this much of each end, so the footer of a shard of up to ~60,000 records
// comes in the same request as the trailer.
constexpr uint64_t kHeadBytes = 4096;
constexpr uint64_t kTailBytes = uint64_t{256} << 10;

// The ends' cache entry: the head, the tail, then this trailer, which binds
// them to the object (an entry of another dataset's object, or a torn one,
// fails it and is fetched again):
//   [0, 8)   "SPCENDS1"
//   [8, 16)  the object's size, as the manifest says (LE)
//   [16, 20) the object's CRC-32C, as the manifest says (LE)
//   [20, 24) the head's size (LE)
//   [24, 28) the tail's size (LE)
//   [28, 32) CRC-32C of every byte before these four (LE)
constexpr uint8_t kEndsMagic[8] = {'S', 'P', 'C', 'E', 'N', 'D', 'S', '1'};
constexpr size_t kEndsTrailerBytes = 32;
// A footer that starts before the tail (a shard of more than ~60,000
// records) has the rest fetched once at open and kept beside the ends, up to
// this much; beyond it (no shard the tools write comes near) ShardIndex::Load
// fetches it as it reads, as any read of the object.
constexpr uint64_t kMaxFooterBytes = uint64_t{64} << 20;

// A block as stored: header (magic, CRC) and payload (the footer's CRC).
bool BlockIntact(std::span<const uint8_t> b, const BlockInfo& info) {
  using format::kBlockHeaderCrcOffset;
  if (b.size() != info.stored_size || b.size() < format::kBlockHeaderSize) return false;
  return common::LoadLE<uint32_t>(b.data()) == format::kBlockMagic &&
         Crc32c(b.first(kBlockHeaderCrcOffset)) ==
             common::LoadLE<uint32_t>(b.data() + kBlockHeaderCrcOffset) &&
         Crc32c(b.subspan(format::kBlockHeaderSize)) == info.payload_crc32c;
}

class ShardFile final : public RemoteFile {
 public:
  ShardFile(std::shared_ptr<RemoteDataset> d, std::string object, size_t k,
            const ShardEntry& entry)
      : d_(std::move(d)), object_(std::move(object)), url_(d_->store().UrlOf(object_)),
        k_(k), size_(entry.bytes), crc32c_(entry.crc32c) {}

  const std::string& name() const override { return url_; }
  uint64_t size() const override { return size_; }
  RemoteDataset& dataset() const override { return *d_; }
  const std::string& object() const override { return object_; }
  // Opening, in two steps so that many shards open in one round: the ends
  // from the cache, else the requests that fetch them; then the index.
  void TakeEnds(std::vector<RangeRequest>* requests);
  absl::Status Load();
  bool ServeLocally(RemoteRead& r, Need& need) const override;
  absl::Status Check(const Need& need) const override;

 private:
  std::string Entry(std::string_view what) const {
    return absl::StrCat(k_, "-", common::AsAbsl(what));
  }
  std::string BlockEntry(const BlockInfo& b) const {
    return absl::StrFormat("%d-%x", k_, b.offset);
  }
  void AddEndRequests(std::vector<RangeRequest>* requests) {
    requests->push_back({object_, 0, head_, {}});
    requests->push_back({object_, tail_at_, tail_, {}});
  }
  absl::Status FetchEnds() {
    std::vector<RangeRequest> ends;
    AddEndRequests(&ends);
    d_->store().Fetch(ends);
    for (const RangeRequest& r : ends) SP_RETURN_IF_ERROR(r.status);
    return absl::OkStatus();
  }
  // Serves a read from the head or tail in memory: true when it did.
  bool FromEnds(const RemoteRead& r) const;
  // The blocks [first, last) that [offset, offset + n) overlaps.
  std::pair<size_t, size_t> BlocksOver(uint64_t offset, uint64_t n) const;
  // A cache entry of parts of the object (kEndsMagic): `head` and `tail`
  // bytes and the trailer binding them to the object. Read into `entry`
  // (head + tail + trailer bytes) when the cache holds it intact, else
  // dropped: false.
  bool ReadCachedPart(std::string_view what, std::span<uint8_t> entry, size_t head, size_t tail);
  void PutCachedPart(std::string_view what, std::span<const uint8_t> head,
                     std::span<const uint8_t> tail);
  // The ends' entry ("ends"): into head_ and tail_ if it is theirs.
  bool ReadCachedEnds();
  // The footer's part before the tail, where the trailer places the footer
  // there: from the cache, else fetched (one request), then prepended to
  // tail_, so that every read of the footer is served from memory.
  absl::Status TakeFooter();
  // Bytes of tail_ that the ends' entry holds (the rest, before them, is the
  // footer's entry).
  size_t TailBytes() const { return static_cast<size_t>(std::min(kTailBytes, size_)); }

  std::shared_ptr<RemoteDataset> d_;
  const std::string object_;
  const std::string url_;
  const size_t k_;
  const uint64_t size_;
  const uint32_t crc32c_;  // the manifest's, of the whole object
  std::vector<uint8_t> head_, tail_;
  uint64_t tail_at_ = 0;            // the file offset of tail_[0]
  uint64_t head_end_ = UINT64_MAX;  // the ends serve [0, head_end_) and
  uint64_t tail_from_ = 0;          // [tail_from_, size_) (all while loading)
  std::vector<BlockInfo> blocks_;   // by offset; empty until loaded
  bool cached_ends_ = false;        // head_ and tail_ came from the cache
  bool footer_fetched_ = false;     // TakeFooter fetched the footer's part
};

// The head and tail from the cache, else two requests for them.
void ShardFile::TakeEnds(std::vector<RangeRequest>* requests) {
  head_.resize(std::min(kHeadBytes, size_));
  tail_.resize(std::min(kTailBytes, size_));
  tail_at_ = tail_from_ = size_ - tail_.size();
  head_end_ = head_.size();
  cached_ends_ = ReadCachedEnds();
  if (!cached_ends_) AddEndRequests(requests);
}

// The ends' entry with its trailer filled in (or checked, when reading).
void EndsTrailer(std::span<uint8_t> entry, uint64_t size, uint32_t crc, size_t head,
                 size_t tail) {
  uint8_t* t = entry.data() + head + tail;
  std::copy_n(kEndsMagic, 8, t);
  common::StoreLE<uint64_t>(t + 8, size);
  common::StoreLE<uint32_t>(t + 16, crc);
  common::StoreLE<uint32_t>(t + 20, static_cast<uint32_t>(head));
  common::StoreLE<uint32_t>(t + 24, static_cast<uint32_t>(tail));
  common::StoreLE<uint32_t>(t + 28, Crc32c(entry.first(entry.size() - 4)));
}

bool ShardFile::ReadCachedPart(std::string_view what, std::span<uint8_t> entry, size_t head,
                               size_t tail) {
  if (!d_->cache().Read(Entry(what), entry)) return false;
  std::vector<uint8_t> expected(entry.begin(), entry.end());
  EndsTrailer(expected, size_, crc32c_, head, tail);
  if (!std::equal(entry.end() - kEndsTrailerBytes, entry.end(),
                  expected.end() - kEndsTrailerBytes)) {
    d_->cache().Drop(Entry(what));  // torn, damaged, or another object's
    return false;
  }
  return true;
}

void ShardFile::PutCachedPart(std::string_view what, std::span<const uint8_t> head,
                              std::span<const uint8_t> tail) {
  std::vector<uint8_t> entry(head.size() + tail.size() + kEndsTrailerBytes);
  std::copy(head.begin(), head.end(), entry.begin());
  std::copy(tail.begin(), tail.end(), entry.begin() + head.size());
  EndsTrailer(entry, size_, crc32c_, head.size(), tail.size());
  d_->cache().Put(Entry(what), entry);
}

bool ShardFile::ReadCachedEnds() {
  std::vector<uint8_t> entry(head_.size() + TailBytes() + kEndsTrailerBytes);
  if (!ReadCachedPart("ends", entry, head_.size(), TailBytes())) return false;
  std::copy_n(entry.begin(), head_.size(), head_.begin());
  std::copy_n(entry.begin() + head_.size(), tail_.size(), tail_.begin());
  return true;
}

absl::Status ShardFile::TakeFooter() {
  if (tail_.size() < format::kTrailerSize) return absl::OkStatus();
  const uint8_t* t = tail_.data() + tail_.size() - format::kTrailerSize;
  // Only a trailer that checks out places the footer; any other is
  // ShardIndex::Load's to report.
  if (common::LoadLE<uint32_t>(t + format::kTrailerCrcOffset) !=
      Crc32c({t, format::kTrailerCrcOffset})) {
    return absl::OkStatus();
  }
  const uint64_t footer = common::LoadLE<uint64_t>(t);
  if (footer >= tail_at_ || footer < head_.size() || tail_at_ - footer > kMaxFooterBytes) {
    return absl::OkStatus();
  }
  const size_t missing = static_cast<size_t>(tail_at_ - footer);
  std::vector<uint8_t> part(missing + kEndsTrailerBytes);
  if (!ReadCachedPart("footer", part, 0, missing)) {
    std::vector<RangeRequest> request = {{object_, footer, {part.data(), missing}, {}}};
    d_->store().Fetch(request);
    SP_RETURN_IF_ERROR(request[0].status);
    footer_fetched_ = true;  // kept once the index checks out
  }
  tail_.insert(tail_.begin(), part.begin(), part.begin() + static_cast<ptrdiff_t>(missing));
  tail_at_ = tail_from_ = footer;
  return absl::OkStatus();
}

// The index from the ends (fetched again when cached ones fail it).
absl::Status ShardFile::Load() {
  SP_RETURN_IF_ERROR(TakeFooter());
  absl::StatusOr<ShardIndex> index = ShardIndex::Load(*this);
  if (!index.ok() && cached_ends_) {  // a damaged cache entry: dropped, never used
    d_->cache().Drop(Entry("ends"));
    d_->cache().Drop(Entry("footer"));
    tail_.erase(tail_.begin(), tail_.end() - TailBytes());
    tail_at_ = tail_from_ = size_ - tail_.size();
    SP_RETURN_IF_ERROR(FetchEnds());
    cached_ends_ = false;
    SP_RETURN_IF_ERROR(TakeFooter());
    index = ShardIndex::Load(*this);
  }
  if (!index.ok()) return index.status();
  blocks_ = index->blocks();
  // From now on the ends serve only what ShardIndex::Load checked: the
  // header and the footer and trailer. Blocks within them (a small shard's
  // tail holds them all) are read and checked as blocks.
  head_end_ = blocks_.empty() ? head_.size() : std::min<uint64_t>(head_.size(), blocks_[0].offset);
  tail_from_ = std::max(tail_at_, index->footer_offset());
  // The ends' entry holds the head and the last TailBytes() of tail_; the
  // footer's, what TakeFooter put before them.
  const std::span<const uint8_t> tail(tail_);
  const size_t footer = tail_.size() - TailBytes();
  if (!cached_ends_) PutCachedPart("ends", head_, tail.subspan(footer));
  if (footer_fetched_) PutCachedPart("footer", {}, tail.first(footer));
  return absl::OkStatus();
}

bool ShardFile::FromEnds(const RemoteRead& r) const {
  const uint64_t n = r.dst.size();
  if (r.offset + n <= head_end_) {
    std::copy_n(head_.data() + r.offset, n, r.dst.data());
    return true;
  }
  if (r.offset >= tail_from_ && r.offset + n <= size_) {
    std::copy_n(tail_.data() + (r.offset - tail_at_), n, r.dst.data());
    return true;
  }
  return false;
}

std::pair<size_t, size_t> ShardFile::BlocksOver(uint64_t offset, uint64_t n) const {
  auto first = std::upper_bound(blocks_.begin(), blocks_.end(), offset,
                                [](uint64_t o, const BlockInfo& b) { return o < b.offset; });
  if (first != blocks_.begin() && std::prev(first)->offset + std::prev(first)->stored_size > offset) {
    --first;
  }
  auto last = std::lower_bound(first, blocks_.end(), offset + n,
                               [](const BlockInfo& b, uint64_t end) { return b.offset < end; });
  return {static_cast<size_t>(first - blocks_.begin()), static_cast<size_t>(last - blocks_.begin())};
}

bool ShardFile::ServeLocally(RemoteRead& r, Need& need) const {
  const uint64_t n = r.dst.size();
  if (r.offset > size_ || n > size_ - r.offset) {
    r.status = absl::DataLossError(absl::StrFormat(
        "%s: a read of %d bytes at offset %d passes its end (%d bytes)", url_, n, r.offset,
        size_));
    return true;
  }
  if (FromEnds(r)) return true;
  need.at = r.offset;
  need.bytes = r.dst;
  // No block (the footer of a shard still loading): fetched as it is, for
  // ShardIndex::Load's own checks.
  const auto [first, last] = BlocksOver(r.offset, n);
  if (first == last) return false;
  // Whole blocks, each checked: a read of part of one (or of several) gets
  // them whole, then its part.
  const BlockInfo& lo = blocks_[first];
  const BlockInfo& hi = blocks_[last - 1];
  need.block = &lo;
  need.blocks = last - first;
  need.at = std::min(r.offset, lo.offset);
  const uint64_t end = std::max(r.offset + n, hi.offset + hi.stored_size);
  if (need.at != r.offset || end != r.offset + n) {
    need.whole.resize(end - need.at);
    need.bytes = need.whole;
  }
  if (need.blocks != 1 || need.at != lo.offset || end != lo.offset + lo.stored_size) return false;
  // One block within the tail fetched at open (a small shard's last
  // blocks): checked there, not fetched again.
  if (lo.offset >= tail_at_ && BlockIntact({tail_.data() + (lo.offset - tail_at_),
                                             lo.stored_size}, lo)) {
    std::copy_n(tail_.data() + (lo.offset - tail_at_), lo.stored_size, need.bytes.data());
    r.checked = need.whole.empty();  // dst is the block, not a part of it
    return true;
  }
  if (!d_->cache().Read(BlockEntry(lo), need.bytes)) return false;
  if (!BlockIntact(need.bytes, lo)) {  // damaged on local disk: fetched again
    d_->cache().Drop(BlockEntry(lo));
    return false;
  }
  r.checked = need.whole.empty();  // a partial read's part is copied out by ReadRemote
  return true;
}

absl::Status ShardFile::Check(const Need& need) const {
  const auto* first = static_cast<const BlockInfo*>(need.block);
  // Bytes outside the blocks (a read reaching into the header or footer)
  // must be the ends' checked ones, where the ends hold them.
  for (uint64_t at = need.at, end = need.at + need.bytes.size(); at < end;) {
    const BlockInfo* b = nullptr;
    for (size_t i = 0; i < need.blocks && b == nullptr; ++i) {
      if (first[i].offset <= at && at < first[i].offset + first[i].stored_size) b = &first[i];
    }
    if (b != nullptr) {
      at = b->offset + b->stored_size;
      continue;
    }
    const uint8_t got = need.bytes[at - need.at];
    if ((at < head_.size() && got != head_[at]) || (at >= tail_at_ && got != tail_[at - tail_at_])) {
      return absl::DataLossError(absl::StrFormat(
          "%s @%d: bytes differ from the shard's checked header or footer", url_, at));
    }
    ++at;
  }
  for (size_t i = 0; i < need.blocks; ++i) {
    const BlockInfo& b = first[i];
    const std::span<const uint8_t> bytes(need.bytes.data() + (b.offset - need.at), b.stored_size);
    if (!BlockIntact(bytes, b)) {
      return absl::DataLossError(absl::StrFormat(
          "%s @%d: block failed its CRC-32C check on two fetches", url_, b.offset));
    }
  }
  // Every byte of dst checked (not a part of a block): the reader's decoder
  // need not check its blocks again.
  need.read->checked = need.whole.empty();
  for (size_t i = 0; i < need.blocks; ++i) {
    const BlockInfo& b = first[i];
    const bool in_dst = need.blocks == 1 && need.bytes.data() == need.read->dst.data();
    d_->cache().Put(BlockEntry(b), {need.bytes.data() + (b.offset - need.at), b.stored_size},
                    in_dst ? need.read->capacity : 0);
  }
  return absl::OkStatus();
}

// Any other object: its whole local copy, read with pread.
class LocalCopyFile final : public RemoteFile {
 public:
  LocalCopyFile(std::shared_ptr<RemoteDataset> d, std::string object,
                std::unique_ptr<RandomAccessFile> file)
      : d_(std::move(d)), object_(std::move(object)), url_(d_->store().UrlOf(object_)),
        file_(std::move(file)) {}
  const std::string& name() const override { return url_; }
  uint64_t size() const override { return file_->size(); }
  RemoteDataset& dataset() const override { return *d_; }
  const std::string& object() const override { return object_; }
  bool ServeLocally(RemoteRead& r, Need&) const override {
    r.status = file_->ReadExact(r.offset, r.dst);
    return true;
  }
  // Checked whole against the manifest before it was opened (LocalCopy).
  absl::Status Check(const Need&) const override { return absl::OkStatus(); }

 private:
  std::shared_ptr<RemoteDataset> d_;
  std::string object_;
  std::string url_;
  std::unique_ptr<RandomAccessFile> file_;
};

// A read is final: a partial read gets its part of the whole blocks
// fetched for it, then `done` is told.
struct Finisher {
  const RemoteRead* first;  // reads[0], to number them
  EachDone done;
  void operator()(RemoteFile::Need& n) const {
    if (n.read->status.ok() && !n.whole.empty()) {
      std::copy_n(n.whole.data() + (n.read->offset - n.at), n.read->dst.size(),
                  n.read->dst.data());
    }
    done(static_cast<size_t>(n.read - first));
  }
};

// One round of fetches, each checked (and kept) as its request ends, on
// the fetching thread, while the others are still in flight.
struct Round {
  std::span<RemoteFile::Need*> needs;
  std::span<RangeRequest> requests;
  const Finisher& finish;
  std::vector<RemoteFile::Need*> failed;  // fetched, and failed their check

  static void Ended(void* context, size_t i) {
    Round& r = *static_cast<Round*>(context);
    RemoteFile::Need& n = *r.needs[i];
    n.read->status = r.requests[i].status;
    if (!n.read->status.ok()) return r.finish(n);  // not fetched: final
    n.read->status = n.read->file->Check(n);
    if (n.read->status.ok()) return r.finish(n);
    r.failed.push_back(&n);
  }
};

// Fetches `needs` (all of one store) together, finishing each read that
// passes its check (or fails to fetch) as its request ends; returns those
// whose bytes failed their check, each with its read's status saying so,
// not finished.
std::vector<RemoteFile::Need*> FetchRound(ObjectStore& store, std::span<RemoteFile::Need*> needs,
                                          const Finisher& finish) {
  std::vector<RangeRequest> requests;
  requests.reserve(needs.size());
  for (RemoteFile::Need* n : needs) {
    requests.push_back({n->read->file->object(), n->at, n->bytes, {}});
  }
  Round round{needs, requests, finish, {}};
  store.Fetch(requests, {&Round::Ended, &round});
  return std::move(round.failed);
}

}  // namespace

absl::Status RemoteFile::ReadExact(uint64_t offset, std::span<uint8_t> dst) const {
  RemoteRead read{this, offset, dst, 0, {}};
  ReadRemote({&read, 1});
  return read.status;
}

void ReadRemote(std::span<RemoteRead> reads, EachDone done) {
  if (reads.empty()) return;
  const Finisher finish{reads.data(), done};
  std::vector<RemoteFile::Need> needs(reads.size());
  std::vector<RemoteFile::Need*> todo;
  for (size_t i = 0; i < reads.size(); ++i) {
    reads[i].status = absl::OkStatus();
    reads[i].checked = false;
    needs[i].read = &reads[i];
    if (reads[i].file->ServeLocally(reads[i], needs[i])) {
      finish(needs[i]);
    } else {
      todo.push_back(&needs[i]);
    }
  }
  // One round per store (a mixture may read several datasets), then one more
  // for the blocks that failed their check. A block failing twice is a
  // DataLossError naming the URL and its offset (Check's): its bytes are
  // never handed out; the reader's damage policy decides what follows.
  while (!todo.empty()) {
    RemoteDataset& d = todo.front()->read->file->dataset();
    auto mine = std::stable_partition(todo.begin(), todo.end(), [&](RemoteFile::Need* n) {
      return &n->read->file->dataset() == &d;
    });
    std::span<RemoteFile::Need*> group(todo.begin(), mine);
    std::vector<RemoteFile::Need*> failed = FetchRound(d.store(), group, finish);
    d.CountRefetch(failed.size());
    if (!failed.empty()) {
      std::vector<RemoteFile::Need*> damaged = FetchRound(d.store(), failed, finish);
      d.CountDamage(damaged.size());
      for (RemoteFile::Need* n : damaged) finish(*n);  // final: their DataLossError
    }
    todo.erase(todo.begin(), mine);
  }
}

absl::StatusOr<std::unique_ptr<RemoteFile>> RemoteDataset::OpenFile(std::string_view name) {
  SP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RemoteFile>> files,
                      OpenFiles(std::span<const std::string_view>(&name, 1)));
  return std::move(files[0]);
}

absl::StatusOr<std::vector<std::unique_ptr<RemoteFile>>> RemoteDataset::OpenFiles(
    std::span<const std::string_view> names) {
  std::vector<std::unique_ptr<RemoteFile>> files(names.size());
  std::vector<ShardFile*> shards;
  std::vector<RangeRequest> ends;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool table = manifest_.record_table && manifest_.record_table->path == names[i];
    if (manifest_.backend != Backend::kShard || table) {
      SP_ASSIGN_OR_RETURN(std::string local, LocalCopy(names[i]));
      SP_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, OpenPosixFile(local));
      files[i] = std::make_unique<LocalCopyFile>(shared_from_this(), std::string(names[i]),
                                                 std::move(file));
      continue;
    }
    SP_ASSIGN_OR_RETURN(auto found, EntryOf(names[i]));
    auto file = std::make_unique<ShardFile>(shared_from_this(), std::string(names[i]),
                                            found.second, *found.first);
    file->TakeEnds(&ends);
    shards.push_back(file.get());
    files[i] = std::move(file);
  }
  // Every shard's ends in one round, then each index.
  store_->Fetch(ends);
  for (const RangeRequest& r : ends) SP_RETURN_IF_ERROR(r.status);
  for (ShardFile* shard : shards) SP_RETURN_IF_ERROR(shard->Load());
  return files;
}

}  // namespace shardpack::remote
