#include "tools/bench/reader_run.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "tools/bench/save_batch.h"
#include "tools/common/cli.h"

namespace shardpack::shardbench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double CpuSeconds() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// The consumer's result lands here, so the compiler must compute it.
volatile uint64_t g_sink = 0;

// "epoch batch slot record_index label" per sample, written per batch.
absl::Status WriteOrder(const Batch& batch, std::string* line_buffer, AtomicFile* out) {
  line_buffer->clear();
  const int64_t* labels = batch.labels();
  const int num_labels = batch.num_labels();
  for (int i = 0; i < batch.size(); ++i) {
    absl::StrAppend(line_buffer, batch.epoch(), " ", batch.index(), " ", i, " ",
                    batch.record_index(i), " ", labels[static_cast<size_t>(i) * num_labels], "\n");
  }
  absl::Status s = out->Append(
      {reinterpret_cast<const uint8_t*>(line_buffer->data()), line_buffer->size()});
  if (s.ok()) return s;
  return common::WithMessage(s, absl::StrCat("--order-out: ", s.message()));
}

// Bytes of a field's values: its elements times the element's size.
uint64_t ValueBytes(const BatchField& f) {
  uint64_t n = static_cast<uint64_t>(ArrayDTypeSize(f.dtype));
  for (int d = 0; d < f.rank; ++d) n *= static_cast<uint64_t>(f.shape[size_t(d)]);
  return n;
}

}  // namespace

// Every field's values (and offsets), as a training step would take them;
// images() is folded by the caller. Their bytes go to `*bytes`.
uint64_t FoldFields(const Batch& batch, uint64_t* bytes) {
  uint64_t fold = 0;
  for (int k = 0; k < batch.num_fields(); ++k) {
    const BatchField f = batch.field(k);
    if (f.values == nullptr || f.values == batch.images()) continue;
    const uint64_t n = ValueBytes(f);
    fold ^= FoldBytes(f.values, n);
    if (f.variable) fold ^= FoldBytes(f.offsets, sizeof(int64_t) * size_t(batch.size() + 1));
    *bytes += n;
  }
  return fold;
}

// AVX2's 32-byte loads where the CPU has them: the consumer shares the
// reader's cores here, where a training step's DMA would cost them nothing.
__attribute__((target_clones("avx2", "default"))) uint64_t FoldBytes(const void* p, size_t n) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  // Four independent accumulators keep the loop throughput-bound even where
  // the compiler does not vectorize it.
  uint64_t acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes + i + 8 * k, 8);
      acc[k] ^= w;
    }
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    acc[0] ^= w;
  }
  for (; i < n; ++i) acc[1] ^= bytes[i];
  return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

absl::StatusOr<ReaderRun> RunReader(const BenchOptions& options, AtomicFile* order_out) {
  const Clock::time_point open_start = Clock::now();
  SP_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, Reader::Open(options.reader));
  if (!reader->device_fallback().empty()) {
    cli::PrintLine(stderr, absl::StrCat("shardbench: ", reader->device_fallback()));
  }
  ReaderRun run;
  if (options.reader.device >= 0 && reader->device_fallback().empty()) {
    run.device = absl::StrCat("cuda:", options.reader.device);
  }
  run.open_s = SecondsSince(open_start);
  run.records = reader->records();
  run.batches_per_epoch = reader->batches_per_epoch();
  run.ring_slots = reader->ring_slots();
  run.io_engine = std::string(IoEngineName(reader->io_engine()));
  run.sources = reader->sources();
  const bool timed = options.seconds > 0;
  const uint64_t epochs = static_cast<uint64_t>(std::max(options.epochs, 0));

  std::string line_buffer;
  uint64_t fold = 0;
  double consume_s = 0;
  const double cpu_start = CpuSeconds();
  const Clock::time_point start = Clock::now();
  const uint64_t warmup = static_cast<uint64_t>(std::max(options.warmup_batches, 0));
  Clock::time_point steady_start = start;
  double steady_cpu_start = cpu_start;
  uint64_t warm_samples = 0;
  for (;;) {
    if (timed ? SecondsSince(start) >= options.seconds : run.epochs >= epochs) break;
    absl::StatusOr<Batch> batch = reader->Next();
    if (absl::IsOutOfRange(batch.status())) {
      ++run.epochs;
      continue;
    }
    if (!batch.ok()) return batch.status();
    if (run.batches == 0) {
      run.first_batch_s = SecondsSince(start);
      if (!options.save_batch.empty()) {
        SP_RETURN_IF_ERROR(SaveBatchSheet(
            *batch, options.reader, reader->schema(), options.save_batch,
            options.overwrite ? AtomicFile::Existing::kReplace : AtomicFile::Existing::kRefuse));
      }
    }
    const Clock::time_point consume_start = Clock::now();
    // On a device, Next() returned once the copy had completed: a training
    // loop's kernels would read the batch there, not on these cores.
    if (!batch->on_device()) fold ^= FoldBytes(batch->images(), batch->image_bytes());
    fold ^= FoldBytes(batch->labels(),
                      sizeof(int64_t) * static_cast<size_t>(batch->size()) * batch->num_labels());
    fold ^= FoldFields(*batch, &run.output_bytes);
    consume_s += SecondsSince(consume_start);
    ++run.batches;
    run.samples += static_cast<uint64_t>(batch->size());
    run.output_bytes += batch->image_bytes();
    if (order_out != nullptr) SP_RETURN_IF_ERROR(WriteOrder(*batch, &line_buffer, order_out));
    if (run.batches == warmup) {
      steady_start = Clock::now();
      steady_cpu_start = CpuSeconds();
      warm_samples = run.samples;
    }
  }
  run.seconds = SecondsSince(start);
  run.cpu_s = CpuSeconds() - cpu_start;
  if (run.batches > warmup) {
    run.steady_samples = run.samples - warm_samples;
    run.steady_seconds = SecondsSince(steady_start);
    run.steady_cpu_s = CpuSeconds() - steady_cpu_start;
  }
  run.consume_s = consume_s;
  g_sink = fold;
  run.fold = fold;
  run.stats = reader->stats();
  return run;
}

}  // namespace shardpack::shardbench
