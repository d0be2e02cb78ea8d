#include "tools/pack/pack.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tools/common/progress_line.h"
#include "tools/pack/ordered_pipeline.h"
#include "writer/compression.h"
#include "writer/output_dir.h"
#include "writer/pack_identity.h"
#include "writer/skipped_list.h"

namespace shardpack::pack {
namespace {

writer::PackIdentity IdentityOf(const datasets::Source& source, const PackOptions& o) {
  writer::PackIdentity p;
  p.tool = "shardpack " SHARDPACK_VERSION;
  p.source = writer::PackJson::parse(source.ParamsJson(), nullptr, false);
  p.shuffle = o.shuffle;
  p.seed = o.seed;
  // What merge checks: which part of how many, and of which input.
  p.part = writer::PackPart{o.part_index + uint64_t{1}, o.part_count};
  p.input = writer::PackInput{source.size(), source.input_bytes(), source.input_fingerprint()};
  // The shape of the pack order: parts packed by a shardpack with another
  // order (an older one has no "order") must not be merged as one.
  p.order = writer::PackOrder{o.order_shape.chunk_items, o.order_shape.window_chunks};
  p.shard_max_bytes = o.writer.shard_max_bytes;
  p.shard_max_records = o.writer.shard_max_records;
  p.format = o.writer.backend;
  if (o.writer.backend == Backend::kShard) {
    p.block_size = o.writer.shard.block_size;
    p.compression = writer::CompressionName(o.writer.shard);
  }
  p.on_error = o.on_error;
  return p;
}

// The skipped.tsv entry for a bad item: the reason without the path that
// error messages start with, since the path has its own column.
datasets::Skipped SkippedItem(std::string path, const absl::Status& error) {
  std::string_view reason(error.message().data(), error.message().size());
  if (reason.starts_with(path) && reason.substr(path.size()).starts_with(": ")) {
    reason.remove_prefix(path.size() + 2);
  }
  return {std::move(path), std::string(reason)};
}

// Tells the source which windows of input are next and which are done, as
// the consumer moves through the part: at most the window being consumed
// and the one after it are wanted at any time, whatever the input's size.
class WindowHints {
 public:
  WindowHints(const datasets::Source& source, const std::vector<PartPlan::Window>& windows)
      : source_(source), windows_(windows) {
    Advise(0, true);
    Advise(1, true);
  }
  // Called with each position of the order as the consumer reaches it.
  void Consumed(size_t position) {
    if (current_ < windows_.size() && position + 1 == windows_[current_].end) {
      Advise(current_, false);
      Advise(current_ + 2, true);
      ++current_;
    }
  }

 private:
  void Advise(size_t w, bool need) {
    if (w >= windows_.size()) return;
    for (const auto& [first, last] : windows_[w].chunks) {
      if (need) {
        source_.WillNeed(first, last);
      } else {
        source_.DoneWith(first, last);
      }
    }
  }
  const datasets::Source& source_;
  const std::vector<PartPlan::Window>& windows_;
  size_t current_ = 0;
};

}  // namespace

absl::StatusOr<PackSummary> Pack(const datasets::Source& source, const PackOptions& o) {
  if (o.part_count == 0 || o.part_index >= o.part_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("part ", o.part_index + 1, "/", o.part_count, " does not exist"));
  }
  PackSummary summary;
  // Problems found at open concern the whole input: the first part reports
  // them, so a merge of the parts lists each once.
  if (o.part_index == 0) summary.skipped_inputs = source.open_problems();
  if (!source.schema().labels.empty()) summary.classes = source.schema().labels[0].classes.size();
  summary.bytes_in = source.input_bytes();

  const writer::PackIdentity identity = IdentityOf(source, o);
  SP_ASSIGN_OR_RETURN(auto out, writer::OutputDir::Create(o.output, o.overwrite,
                                                  o.retry_replaces ? &identity : nullptr));
  DatasetWriterOptions w = o.writer;
  w.directory = out->staging();
  w.schema = source.schema();
  w.pack_json = identity.ToJson();
  w.write_manifest = false;
  SP_ASSIGN_OR_RETURN(auto writer, DatasetWriter::Create(w));

  const PartPlan plan = PlanPart(source.size(), o.shuffle, o.seed, o.part_index, o.part_count,
                                 o.order_shape);
  const std::vector<size_t>& order = plan.order;
  WindowHints hints(source, plan.windows);
  summary.items = order.size();
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  cli::ProgressLine progress("pack", 0, order.size(), "records", !o.quiet,
                             /*log_when_piped=*/true);
  const auto start = std::chrono::steady_clock::now();
  absl::Status run = RunOrdered(
      source, order, threads,
      [&](size_t position, size_t item, const absl::Status& prepared,
          const datasets::PreparedRecord& record) -> absl::Status {
        hints.Consumed(position);
        if (!prepared.ok()) {
          if (o.on_error == datasets::OnError::kFail) return prepared;
          summary.skipped_inputs.push_back(SkippedItem(source.ItemPath(item), prepared));
          progress.Add(0, 1);
        } else if (!record.left_out.empty()) {
          summary.skipped_inputs.push_back({source.ItemPath(item), record.left_out});
          ++summary.left_out;
          progress.Add(0, 1);
        } else {
          if (!record.converted_from.empty()) {
            auto it = summary.converted.find(record.converted_from);
            if (it == summary.converted.end()) {
              it = summary.converted.emplace(std::string(record.converted_from), 0).first;
            }
            ++it->second;
          }
          SP_RETURN_IF_ERROR(writer->Add(record.view()));
          progress.Add(record.payload.size(), 1);
        }
        return absl::OkStatus();
      });
  progress.Finish();
  SP_RETURN_IF_ERROR(run);
  SP_ASSIGN_OR_RETURN(Manifest manifest, writer->Finish());
  SP_RETURN_IF_ERROR(writer::WriteSkippedList(out->staging(), summary.skipped_inputs));
  SP_RETURN_IF_ERROR(out->Publish(manifest));

  summary.records = manifest.records();
  summary.shards = manifest.shards.size();
  for (const ShardEntry& s : manifest.shards) summary.bytes_out += s.bytes;
  summary.skipped = summary.skipped_inputs.size();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace shardpack::pack
