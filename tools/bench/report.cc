#include "tools/bench/report.h"

#include <string>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tools/common/cli.h"
#include "tools/common/escape.h"

namespace shardpack::shardbench {
namespace {

double PerSecond(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

// --compare-raw's fields (docs/cli.md).
void AddRawJson(const Report& r, nlohmann::ordered_json* j) {
  (*j)["raw_mb_per_s"] = r.raw_mb_per_s();
  (*j)["raw_ratio"] = r.raw_ratio();
  (*j)["raw_bytes"] = r.raw->bytes;
  (*j)["raw_seconds"] = r.raw->seconds;
  (*j)["raw_passes"] = r.raw->passes;
  (*j)["raw_direct"] = r.raw->direct;
}

// --compare-memcpy's fields (docs/cli.md).
void AddMemcpyJson(const Report& r, nlohmann::ordered_json* j) {
  const MemcpyRun& m = *r.memcpy;
  (*j)["memcpy_images"] = m.images;
  (*j)["memcpy_image_bytes"] = m.image_bytes;
  (*j)["memcpy_order"] = "reader epoch plan";
  (*j)["memcpy_seconds"] = m.seconds;
  (*j)["memcpy_ns_per_image"] = m.ns_per_image();
  (*j)["memcpy_gb_per_s"] = m.gb_per_s();
  (*j)["memcpy_threads"] = m.threads;
  (*j)["memcpy_threads_seconds"] = m.threads_seconds;
  (*j)["memcpy_threads_ns_per_image"] = m.threads_ns_per_image();
  (*j)["memcpy_cpu_ratio"] = r.memcpy_cpu_ratio();
  (*j)["memcpy_xor_fold"] = absl::StrFormat("%016x", m.fold);
}

// A mixture's sources: what each draws an epoch beside what it delivered.
void AddRemoteJson(const ReaderStats::Remote& m, nlohmann::ordered_json* j) {
  (*j)["remote"] = {{"requests", m.requests},         {"bytes", m.bytes},
                    {"retries", m.retries},           {"cache_hits", m.cache_hits},
                    {"cache_misses", m.cache_misses}, {"cache_kept", m.cache_kept},
                    {"cache_evicted", m.cache_evicted}, {"refetched", m.refetched},
                    {"damaged", m.damaged}};
}

void AddSourcesJson(const Report& r, nlohmann::ordered_json* j) {
  const ReaderRun& run = r.reader;
  (*j)["epoch_samples"] = r.epoch_samples;
  (*j)["label_space"] = r.label_space;
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (size_t i = 0; i < run.sources.size(); ++i) {
    const SourceInfo& s = run.sources[i];
    const uint64_t samples =
        i < run.stats.source_samples.size() ? run.stats.source_samples[i] : 0;
    sources.push_back({{"path", s.path},
                       {"records", s.records},
                       {"per_epoch", s.per_epoch},
                       {"per_rank", s.per_rank},
                       {"samples", samples}});
  }
  (*j)["sources"] = std::move(sources);
}

// The dataset line; a mixture's sources, each with what it drew and delivered.
void PrintDatasetText(std::FILE* out, const Report& r) {
  const ReaderRun& run = r.reader;
  if (const ReaderStats::Remote& m = run.stats.remote; m.requests > 0 || m.cache_hits > 0) {
    absl::FPrintF(out,
                  "remote         %d requests (%d retries), %s received; cache: %d hits, %d "
                  "misses, %d kept, %d evicted; %d blocks fetched again, %d damaged\n",
                  m.requests, m.retries, cli::FormatBytes(m.bytes), m.cache_hits, m.cache_misses,
                  m.cache_kept, m.cache_evicted, m.refetched, m.damaged);
  }
  if (!r.mixture) {
    absl::FPrintF(out, "dataset        %s  (%d shards, %s, %d records)\n",
                  cli::EscapeText(r.path), r.shards, cli::FormatBytes(r.dataset_bytes),
                  run.records);
    return;
  }
  absl::FPrintF(out,
                "dataset        a mixture of %d sources  (%d shards, %s, %d records), label "
                "space %s\n",
                run.sources.size(), r.shards, cli::FormatBytes(r.dataset_bytes), run.records,
                r.label_space);
  for (size_t i = 0; i < run.sources.size(); ++i) {
    const SourceInfo& s = run.sources[i];
    const uint64_t samples =
        i < run.stats.source_samples.size() ? run.stats.source_samples[i] : 0;
    absl::FPrintF(out,
                  "source %-7d %s: %d records, %d an epoch (%d a rank), %d delivered "
                  "(%.2f epochs of it)\n",
                  i, cli::EscapeText(s.path), s.records, s.per_epoch, s.per_rank, samples,
                  s.per_rank > 0 ? static_cast<double>(samples) / s.per_rank : 0.0);
  }
}

}  // namespace

double Report::images_per_s() const {
  return PerSecond(static_cast<double>(reader.samples), reader.seconds);
}

double Report::mb_per_s() const {
  return PerSecond(static_cast<double>(reader.output_bytes) / 1e6, reader.seconds);
}

double Report::read_mb_per_s() const {
  return PerSecond(static_cast<double>(reader.stats.bytes_read) / 1e6, reader.seconds);
}

double Report::stream_mb_per_s() const {
  if (reader.records == 0) return 0;
  double bytes = static_cast<double>(reader.samples) / static_cast<double>(reader.records) *
                 static_cast<double>(dataset_bytes);
  return PerSecond(bytes / 1e6, reader.seconds);
}

double Report::raw_mb_per_s() const {
  return raw ? PerSecond(static_cast<double>(raw->bytes) / 1e6, raw->seconds) : 0;
}

double Report::raw_ratio() const {
  double r = raw_mb_per_s();
  return r > 0 ? stream_mb_per_s() / r : 0;
}

double Report::cpu_us_per_image() const {
  return reader.samples > 0 ? reader.cpu_s / static_cast<double>(reader.samples) * 1e6 : 0;
}

double Report::cores_used() const { return PerSecond(reader.cpu_s, reader.seconds); }

double Report::steady_images_per_s() const {
  return PerSecond(static_cast<double>(reader.steady_samples), reader.steady_seconds);
}

double Report::steady_cpu_us_per_image() const {
  return PerSecond(reader.steady_cpu_s, static_cast<double>(reader.steady_samples)) * 1e6;
}

double Report::steady_cores_used() const {
  return PerSecond(reader.steady_cpu_s, reader.steady_seconds);
}

double Report::memcpy_cpu_ratio() const {
  const double ns = memcpy ? memcpy->ns_per_image() : 0;
  return ns > 0 ? steady_cpu_us_per_image() * 1000 / ns : 0;
}

void PrintText(std::FILE* out, const Report& r) {
  const ReaderRun& run = r.reader;
  const ReaderStats& s = run.stats;
  PrintDatasetText(out, r);
  absl::FPrintF(out,
                "run            transform %s, io %s%s, threads %d, batch %d, shuffle %s, "
                "ring %d, to %s, %d cpus, load %.2f\n",
                r.transform, r.io, r.io == run.io_engine ? "" : " (" + run.io_engine + ")", r.threads, r.batch_size, r.shuffle ? "on" : "off",
                run.ring_slots, run.device, r.cpus, r.load_avg_1m);
  absl::FPrintF(out, "images/s       %.0f\n", r.images_per_s());
  absl::FPrintF(out,
                "MB/s           %.1f batch output, %.1f read from storage, %.1f of the files\n",
                r.mb_per_s(), r.read_mb_per_s(), r.stream_mb_per_s());
  absl::FPrintF(out, "batches        %d (%d per epoch), %d samples\n", run.batches,
                run.batches_per_epoch, run.samples);
  absl::FPrintF(out, "epochs         %d\n", run.epochs);
  absl::FPrintF(out,
                "time           %.3f s (Open %.3f s, then first batch after %.3f s), consumer "
                "busy %.3f s\n",
                run.seconds, run.open_s, run.first_batch_s, run.consume_s);
  absl::FPrintF(out, "cpu            %.3f s: %.2f us per image, %.2f cores busy\n", run.cpu_s,
                r.cpu_us_per_image(), r.cores_used());
  if (run.steady_samples > 0 && run.steady_seconds < kStableSeconds) {
    absl::FPrintF(out,
                  "steady         %d samples in %.3f s after the first %d batches: too short "
                  "to measure; use more --epochs or --seconds\n",
                  run.steady_samples, run.steady_seconds, r.warmup_batches);
  } else if (run.steady_samples > 0) {
    absl::FPrintF(out,
                  "steady         %.0f images/s after the first %d batches: %.2f us CPU per "
                  "image, %.2f cores busy\n",
                  r.steady_images_per_s(), r.warmup_batches,
                  r.steady_cpu_us_per_image(), r.steady_cores_used());
  }
  absl::FPrintF(out, "wait (s)       io %.3f  transform %.3f  consumer %.3f\n", s.io_wait_s,
                s.transform_wait_s, s.consumer_wait_s);
  absl::FPrintF(out,
                "peak RSS       %.1f MB (reader budget %.1f MB: index %.1f MB, plans %.1f MB)\n",
                r.peak_rss_mb, static_cast<double>(s.memory_budget_bytes) / 1e6,
                static_cast<double>(s.index_bytes) / 1e6, static_cast<double>(s.plan_bytes) / 1e6);
  if (s.skipped > 0) absl::FPrintF(out, "skipped        %d damaged samples\n", s.skipped);
  if (r.raw) {
    absl::FPrintF(out, "raw read       %.1f MB/s (pread%s 4 MiB, %d pass%s, %.3f s)\n",
                  r.raw_mb_per_s(), r.raw->direct ? " O_DIRECT" : "", r.raw->passes,
                  r.raw->passes == 1 ? "" : "es", r.raw->seconds);
    absl::FPrintF(out, "reader/raw     %.3f\n", r.raw_ratio());
  }
  if (r.memcpy) {
    const MemcpyRun& m = *r.memcpy;
    absl::FPrintF(out,
                  "memcpy         %.1f ns per image on 1 thread (%.2f GB/s, %d images of %d "
                  "bytes, %.3f s); %.1f ns per image of wall time on %d threads\n",
                  m.ns_per_image(), m.gb_per_s(), m.images, m.image_bytes, m.seconds,
                  m.threads_ns_per_image(), m.threads);
    absl::FPrintF(out, "reader/memcpy  %.2f (steady reader CPU per image / 1-thread memcpy per image)\n",
                  r.memcpy_cpu_ratio());
  }
}

void PrintJson(std::FILE* out, const Report& r) {
  const ReaderRun& run = r.reader;
  const ReaderStats& s = run.stats;
  nlohmann::ordered_json j;
  j["path"] = r.mixture ? nlohmann::ordered_json() : nlohmann::ordered_json(r.path);
  j["shards"] = r.shards;
  j["dataset_bytes"] = r.dataset_bytes;
  j["records"] = run.records;
  j["transform"] = r.transform;
  j["io"] = r.io;
  j["threads"] = r.threads;
  j["batch_size"] = r.batch_size;
  j["device"] = run.device;
  j["shuffle"] = r.shuffle;
  j["drop_caches"] = r.drop_caches;
  j["cpus"] = r.cpus;
  j["load_avg_1m"] = r.load_avg_1m;
  j["images_per_s"] = r.images_per_s();
  j["mb_per_s"] = r.mb_per_s();
  j["read_mb_per_s"] = r.read_mb_per_s();
  j["stream_mb_per_s"] = r.stream_mb_per_s();
  j["batches"] = run.batches;
  j["batches_per_epoch"] = run.batches_per_epoch;
  j["samples"] = run.samples;
  j["epochs"] = run.epochs;
  j["seconds"] = run.seconds;
  j["open_s"] = run.open_s;
  j["first_batch_s"] = run.first_batch_s;
  j["cpu_s"] = run.cpu_s;
  j["cpu_us_per_image"] = r.cpu_us_per_image();
  j["cores_used"] = r.cores_used();
  j["warmup_batches"] = r.warmup_batches;
  j["steady_samples"] = run.steady_samples;
  j["steady_images_per_s"] = r.steady_images_per_s();
  j["steady_cpu_us_per_image"] = r.steady_cpu_us_per_image();
  j["steady_cores_used"] = r.steady_cores_used();
  j["ring_slots"] = run.ring_slots;
  j["io_engine"] = run.io_engine;
  j["consumer_busy_s"] = run.consume_s;
  j["output_bytes"] = run.output_bytes;
  j["bytes_read"] = s.bytes_read;
  j["skipped"] = s.skipped;
  j["wait_s"] = {
      {"io", s.io_wait_s}, {"transform", s.transform_wait_s}, {"consumer", s.consumer_wait_s}};
  j["peak_rss_mb"] = r.peak_rss_mb;
  j["memory_budget_mb"] = static_cast<double>(s.memory_budget_bytes) / 1e6;
  j["index_mb"] = static_cast<double>(s.index_bytes) / 1e6;
  j["plan_mb"] = static_cast<double>(s.plan_bytes) / 1e6;
  j["plan_peak_mb"] = static_cast<double>(s.plan_peak_bytes) / 1e6;
  j["xor_fold"] = absl::StrFormat("%016x", run.fold);
  if (r.raw) AddRawJson(r, &j);
  if (r.memcpy) AddMemcpyJson(r, &j);
  if (r.mixture) AddSourcesJson(r, &j);
  AddRemoteJson(r.reader.stats.remote, &j);
  // The path may be any bytes: invalid UTF-8 becomes U+FFFD.
  std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::fprintf(out, "%s\n", text.c_str());
}

}  // namespace shardpack::shardbench
