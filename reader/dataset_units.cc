#include "reader/dataset_units.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "format/coding.h"
#include "shardpack/dataset.h"
#include "shardpack/status.h"

namespace shardpack::internal {

namespace fs = std::filesystem;

uint64_t UnitBytes(const BlockInfo& block) {
  return AlignUp(block.stored_size, kIoAlignment) + (block.compressed() ? block.raw_size : 0);
}

absl::StatusOr<StreamDataset> OpenStreamDataset(const std::string& path, IoEngine engine) {
  StreamDataset d;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    SP_ASSIGN_OR_RETURN(d.manifest, ReadManifest(path));
    if (d.manifest.backend != Backend::kShard) {
      return absl::UnimplementedError(absl::StrCat(
          path, ": reading ", std::string(BackendName(d.manifest.backend)),
          " datasets is not supported yet"));
    }
    for (const ShardEntry& s : d.manifest.shards) d.paths.push_back((fs::path(path) / s.path).string());
  } else {
    d.paths.push_back(path);
  }
  SP_ASSIGN_OR_RETURN(d.io, BlockIo::Open(engine, d.paths));
  for (size_t f = 0; f < d.paths.size(); ++f) {
    SP_ASSIGN_OR_RETURN(ShardIndex index, ShardIndex::Load(d.io->file(f)));
    if (!d.manifest.shards.empty() && index.num_records() != d.manifest.shards[f].records) {
      return absl::DataLossError(absl::StrCat(d.paths[f], ": holds ", index.num_records(),
                                              " records, the manifest says ",
                                              d.manifest.shards[f].records));
    }
    for (size_t b = 0; b < index.num_blocks(); ++b) {
      const BlockInfo& block = index.block(b);
      d.units.push_back({static_cast<uint32_t>(f), static_cast<uint32_t>(b),
                         d.records + block.first_record, block.record_count,
                         UnitBytes(block)});
    }
    d.records += index.num_records();
    d.indexes.push_back(std::move(index));
  }
  return d;
}

}  // namespace shardpack::internal
