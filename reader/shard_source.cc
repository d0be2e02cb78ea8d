#include "reader/shard_source.h"

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/mapping_guard.h"
#include "common/status_macros.h"
#include "reader/io_engine.h"

namespace shardpack::reader {
namespace {

// Memory a unit holds while loaded: its stored bytes (rounded to the I/O
// alignment) plus its decompressed payload when compressed. The same for
// every engine (mapped pages count in RSS too), so the plan, which budgets
// with it, and so the sample order never depend on the engine.
uint64_t UnitBytes(const BlockInfo& block) {
  return common::AlignUp(block.stored_size, kIoAlignment) +
         (block.compressed() ? block.raw_size : 0);
}

class ShardSource final : public UnitSource {
 public:
  ShardSource(std::vector<std::string> paths, std::unique_ptr<BlockIo> io)
      : paths_(std::move(paths)), io_(std::move(io)) {}

  // Loads the indexes and cuts the units.
  absl::Status Init(const Manifest& manifest) {
    uint64_t records = 0;
    for (size_t f = 0; f < paths_.size(); ++f) {
      SP_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Load(io_->file(f)));
      if (!manifest.shards.empty()) {
        SP_RETURN_IF_ERROR(common::CheckManifestRecords(paths_[f], index.num_records(),
                                                        manifest.shards[f].records));
      }
      for (size_t b = 0; b < index.num_blocks(); ++b) {
        const BlockInfo& block = index.block(b);
        units_.push_back({static_cast<uint32_t>(f), static_cast<uint32_t>(b),
                          records + block.first_record, block.record_count, UnitBytes(block)});
      }
      records += index.num_records();
      indexes_.push_back(std::move(index));
    }
    buffers_.resize(units_.size());
    image_ = manifest.schema.image;
    if (manifest.shards.empty() && records > 0) {  // a lone shard: its first record tells
      SP_ASSIGN_OR_RETURN(auto reader, ShardReader::Open(&io_->file(0)));
      SP_ASSIGN_OR_RETURN(Record first, reader->ReadRecord(0));
      image_ = first.image;
    }
    return absl::OkStatus();
  }

  const std::vector<ReadUnit>& units() const override { return units_; }
  ImageInfo image() const override { return image_; }
  IoEngine engine() const override { return io_->engine(); }
  size_t max_in_flight() const override { return io_->max_in_flight(); }
  uint64_t bytes_read() const override { return io_->bytes_read(); }
  uint64_t IndexBytes() const override {
    uint64_t bytes = units_.capacity() * sizeof(ReadUnit) + buffers_.capacity() * sizeof(uint8_t*);
    for (const ShardIndex& index : indexes_) {
      bytes += index.num_blocks() * sizeof(BlockInfo) + index.num_records() * sizeof(uint32_t);
    }
    return bytes;
  }
  absl::Status CheckIntact() const override {
    if (common::ContainedMappingFaults() == 0) return absl::OkStatus();
    for (size_t f = 0; f < paths_.size(); ++f) SP_RETURN_IF_ERROR(io_->file(f).CheckIntact());
    return absl::OkStatus();
  }

  size_t BufferBytes(uint32_t u) const override {
    const BlockInfo& block = BlockOf(u);
    return RawOffset(block) + (block.compressed() ? block.raw_size : 0);
  }

  absl::Status Submit(uint32_t u, uint8_t* buffer) override {
    const BlockInfo& block = BlockOf(u);
    buffers_[u] = buffer;
    return io_->Submit({units_[u].file, block.offset, block.stored_size, buffer, u});
  }

  void Release(uint32_t u) override {
    const BlockInfo& block = BlockOf(u);
    io_->Release(units_[u].file, block.offset, block.stored_size);
  }

  UnitLoad Wait() override {
    IoCompletion done = io_->Wait();
    const auto u = static_cast<uint32_t>(done.tag);
    if (!done.status.ok()) return {u, std::move(done.status)};
    const ReadUnit& ru = units_[u];
    // Stored bytes first (none when the engine hands out views), then room
    // for the decompressed payload.
    auto view = decoder_.DecodeInto(indexes_[ru.file], ru.block, done.bytes,
                                    buffers_[u] + RawOffset(BlockOf(u)), done.checked);
    if (absl::Status intact = io_->file(ru.file).CheckIntact(); !intact.ok()) return {u, intact};
    if (!view.ok()) return {u, view.status()};
    return {u, UnitView(*view)};
  }

 private:
  const BlockInfo& BlockOf(uint32_t u) const {
    return indexes_[units_[u].file].block(units_[u].block);
  }
  size_t RawOffset(const BlockInfo& block) const {
    return io_->zero_copy() ? 0 : common::AlignUp(block.stored_size, kIoAlignment);
  }

  std::vector<std::string> paths_;
  std::unique_ptr<BlockIo> io_;
  std::vector<ShardIndex> indexes_;
  std::vector<ReadUnit> units_;
  std::vector<uint8_t*> buffers_;  // per unit: where its load goes
  ImageInfo image_;
  BlockDecoder decoder_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UnitSource>> OpenShardSource(const std::vector<std::string>& paths,
                                                            const Manifest& manifest,
                                                            IoEngine engine,
                                                            remote::Storage* storage,
                                                            uint64_t window_bytes) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io,
                      BlockIo::Open(engine, paths, storage, window_bytes));
  auto source = std::make_unique<ShardSource>(paths, std::move(io));
  SP_RETURN_IF_ERROR(source->Init(manifest));
  return source;
}

}  // namespace shardpack::reader
