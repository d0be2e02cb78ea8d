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
  ShardFile(std::shared_ptr<RemoteDataset> d, std::string object, size_t k, uint64_t size)
      : d_(std::move(d)), object_(std::move(object)), url_(d_->store().UrlOf(object_)),
        k_(k), size_(size) {}

  const std::string& name() const override { return url_; }
  uint64_t size() const override { return size_; }
  RemoteDataset& dataset() const override { return *d_; }
  const std::string& object() const override { return object_; }
  // Opening, in two steps so that many shards open in one round: the ends
  // from the cache, else the requests that fetch them; then the index.
  void TakeEnds(std::vector<RangeRequest>* requests);
  absl::Status Load();
  bool ServeLocally(RemoteRead& r, Need& need) const override;
  bool Check(const Need& need) const override;

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
  // The block holding [offset, offset + n), or null.
  const BlockInfo* BlockAt(uint64_t offset, uint64_t n) const;

  std::shared_ptr<RemoteDataset> d_;
  const std::string object_;
  const std::string url_;
  const size_t k_;
  const uint64_t size_;
  std::vector<uint8_t> head_, tail_;
  uint64_t tail_at_ = 0;            // the file offset of tail_[0]
  uint64_t head_end_ = UINT64_MAX;  // the ends serve [0, head_end_) and
  uint64_t tail_from_ = 0;          // [tail_from_, size_) (all while loading)
  std::vector<BlockInfo> blocks_;   // by offset; empty until loaded
  bool cached_ends_ = false;        // head_ and tail_ came from the cache
};

// The head and tail from the cache, else two requests for them.
void ShardFile::TakeEnds(std::vector<RangeRequest>* requests) {
  head_.resize(std::min(kHeadBytes, size_));
  tail_.resize(std::min(kTailBytes, size_));
  tail_at_ = tail_from_ = size_ - tail_.size();
  head_end_ = head_.size();
  cached_ends_ = d_->cache().Read(Entry("head"), head_) && d_->cache().Read(Entry("tail"), tail_);
  if (!cached_ends_) AddEndRequests(requests);
}

// The index from the ends (fetched again when cached ones fail it).
absl::Status ShardFile::Load() {
  absl::StatusOr<ShardIndex> index = ShardIndex::Load(*this);
  if (!index.ok() && cached_ends_) {  // a damaged cache entry: dropped, never used
    d_->cache().Drop(Entry("head"));
    d_->cache().Drop(Entry("tail"));
    SP_RETURN_IF_ERROR(FetchEnds());
    cached_ends_ = false;
    index = ShardIndex::Load(*this);
  }
  if (!index.ok()) return index.status();
  blocks_ = index->blocks();
  // From now on the ends serve only what ShardIndex::Load checked: the
  // header and the footer and trailer. Blocks within them (a small shard's
  // tail holds them all) are read and checked as blocks.
  head_end_ = blocks_.empty() ? head_.size() : std::min<uint64_t>(head_.size(), blocks_[0].offset);
  tail_from_ = std::max(tail_at_, index->footer_offset());
  if (!cached_ends_) {
    d_->cache().Put(Entry("head"), head_);
    d_->cache().Put(Entry("tail"), tail_);
  }
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

const BlockInfo* ShardFile::BlockAt(uint64_t offset, uint64_t n) const {
  auto it = std::upper_bound(blocks_.begin(), blocks_.end(), offset,
                             [](uint64_t o, const BlockInfo& b) { return o < b.offset; });
  if (it == blocks_.begin()) return nullptr;
  --it;
  return offset + n <= it->offset + it->stored_size ? &*it : nullptr;
}

bool ShardFile::ServeLocally(RemoteRead& r, Need& need) const {
  if (r.offset > size_ || r.dst.size() > size_ - r.offset) {
    r.status = absl::DataLossError(absl::StrFormat(
        "%s: a read of %d bytes at offset %d passes its end (%d bytes)", url_, r.dst.size(),
        r.offset, size_));
    return true;
  }
  if (FromEnds(r)) return true;
  const BlockInfo* b = BlockAt(r.offset, r.dst.size());
  need.block = b;
  need.at = r.offset;
  need.bytes = r.dst;
  if (b == nullptr) return false;  // not within one block: fetched as it is, not kept
  need.at = b->offset;
  if (r.offset != b->offset || r.dst.size() != b->stored_size) {
    need.whole.resize(b->stored_size);
    need.bytes = need.whole;
  }
  // A block within the tail fetched at open (a small shard's last blocks):
  // checked there, not fetched again.
  if (b->offset >= tail_at_ && BlockIntact({tail_.data() + (b->offset - tail_at_),
                                            b->stored_size}, *b)) {
    std::copy_n(tail_.data() + (b->offset - tail_at_), b->stored_size, need.bytes.data());
    return true;
  }
  if (!d_->cache().Read(BlockEntry(*b), need.bytes)) return false;
  if (!BlockIntact(need.bytes, *b)) {  // damaged on local disk: fetched again
    d_->cache().Drop(BlockEntry(*b));
    return false;
  }
  return true;  // a partial read's part is copied out by ReadRemote
}

bool ShardFile::Check(const Need& need) const {
  if (need.block == nullptr) return true;
  const BlockInfo& b = *static_cast<const BlockInfo*>(need.block);
  if (!BlockIntact(need.bytes, b)) return false;
  const bool in_dst = need.bytes.data() == need.read->dst.data();
  d_->cache().Put(BlockEntry(b), need.bytes, in_dst ? need.read->capacity : 0);
  return true;
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
  bool Check(const Need&) const override { return true; }

 private:
  std::shared_ptr<RemoteDataset> d_;
  std::string object_;
  std::string url_;
  std::unique_ptr<RandomAccessFile> file_;
};

// Fetches `needs` (all of one store) together; returns those whose bytes
// failed their check.
std::vector<RemoteFile::Need*> FetchRound(ObjectStore& store,
                                          std::span<RemoteFile::Need*> needs) {
  std::vector<RangeRequest> requests;
  requests.reserve(needs.size());
  for (RemoteFile::Need* n : needs) {
    requests.push_back({n->read->file->object(), n->at, n->bytes, {}});
  }
  store.Fetch(requests);
  std::vector<RemoteFile::Need*> failed;
  for (size_t i = 0; i < needs.size(); ++i) {
    RemoteFile::Need& n = *needs[i];
    n.read->status = requests[i].status;
    if (n.read->status.ok() && !n.read->file->Check(n)) failed.push_back(&n);
  }
  return failed;
}

}  // namespace

absl::Status RemoteFile::ReadExact(uint64_t offset, std::span<uint8_t> dst) const {
  RemoteRead read{this, offset, dst, 0, {}};
  ReadRemote({&read, 1});
  return read.status;
}

void ReadRemote(std::span<RemoteRead> reads) {
  std::vector<RemoteFile::Need> needs(reads.size());
  std::vector<RemoteFile::Need*> todo;
  for (size_t i = 0; i < reads.size(); ++i) {
    reads[i].status = absl::OkStatus();
    needs[i].read = &reads[i];
    if (!reads[i].file->ServeLocally(reads[i], needs[i])) todo.push_back(&needs[i]);
  }
  // One round per store (a mixture may read several datasets), then one more
  // for the blocks that failed their check; a block failing twice is handed
  // on as fetched, for the reader's checks and damage policy.
  while (!todo.empty()) {
    RemoteDataset& d = todo.front()->read->file->dataset();
    auto mine = std::stable_partition(todo.begin(), todo.end(), [&](RemoteFile::Need* n) {
      return &n->read->file->dataset() == &d;
    });
    std::span<RemoteFile::Need*> group(todo.begin(), mine);
    std::vector<RemoteFile::Need*> failed = FetchRound(d.store(), group);
    d.CountRefetch(failed.size());
    if (!failed.empty()) d.CountDamage(FetchRound(d.store(), failed).size());
    todo.erase(todo.begin(), mine);
  }
  // A partial read fetched its whole block: its part, now.
  for (RemoteFile::Need& n : needs) {
    if (n.read->status.ok() && !n.whole.empty()) {
      std::copy_n(n.whole.data() + (n.read->offset - n.at), n.read->dst.size(),
                  n.read->dst.data());
    }
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
                                            found.second, found.first->bytes);
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
