#include "bench/bench_common.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shardpack::bench {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Undoes the octal escapes (\040 for a space) that /proc/self/mounts uses.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Three significant digits or so, enough for figures this noisy.
std::string Rate(double v) { return Fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); }

void PrintSamples(std::FILE* out, const Series& s, uint64_t bytes, double unit_bytes) {
  std::fprintf(out, "[");
  for (size_t i = 0; i < s.seconds.size(); ++i) {
    std::fprintf(out, "%s%.4f", i == 0 ? "" : ", ", bytes / s.seconds[i] / unit_bytes);
  }
  std::fprintf(out, "]");
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Series::MedianSeconds() const { return Median(seconds); }

double Series::BestRate(uint64_t bytes) const {
  return bytes / *std::min_element(seconds.begin(), seconds.end());
}

double Series::WorstRate(uint64_t bytes) const {
  return bytes / *std::max_element(seconds.begin(), seconds.end());
}

double Row::Ratio() const {
  return measured.MedianRate(bytes) / reference_runs.MedianRate(reference_bytes);
}

void SideBySide(int repeats, const std::function<double()>& measured,
                const std::function<double()>& reference, Series* measured_runs,
                Series* reference_runs) {
  for (int i = 0; i < repeats; ++i) {
    if (i % 2 == 0) {
      reference_runs->seconds.push_back(reference());
      measured_runs->seconds.push_back(measured());
    } else {
      measured_runs->seconds.push_back(measured());
      reference_runs->seconds.push_back(reference());
    }
  }
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

MountInfo MountOf(const std::string& path) {
  MountInfo best{"unknown", "unknown", "unknown"};
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return best;
  std::ifstream in("/proc/self/mounts");
  std::string line;
  size_t best_length = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string source, point, type;
    if (!(fields >> source >> point >> type)) continue;
    point = Unescape(point);
    // Later mounts hide earlier ones on the same point, so ties go to the later.
    if (IsUnder(resolved, point) && point.size() >= best_length) {
      best = {type, Unescape(source), point};
      best_length = point.size();
    }
  }
  return best;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void PrintTable(std::FILE* out, const std::vector<Fact>& facts, const std::vector<Row>& rows) {
  for (const Fact& f : facts) {
    std::fprintf(out, "%-26s %s\n", (f.label + ":").c_str(), f.value.c_str());
  }
  std::fprintf(out, "\n%-16s %-24s %13s %-15s %-7s %13s %6s\n", "case", "measurement", "median",
               "(min..max)", "vs", "median", "ratio");
  for (const Row& r : rows) {
    auto rate = [&r](double bytes_per_second) { return Rate(bytes_per_second / r.unit_bytes); };
    char spread[48];
    std::snprintf(spread, sizeof(spread), "(%s..%s)", rate(r.measured.WorstRate(r.bytes)).c_str(),
                  rate(r.measured.BestRate(r.bytes)).c_str());
    std::fprintf(out, "%-16s %-24s %8s %-4s %-15s %-7s %8s %-4s %6.2f\n", r.case_name.c_str(),
                 r.measurement.c_str(), rate(r.measured.MedianRate(r.bytes)).c_str(),
                 r.unit.c_str(), spread, r.reference.c_str(),
                 rate(r.reference_runs.MedianRate(r.reference_bytes)).c_str(), r.unit.c_str(),
                 r.Ratio());
  }
}

void PrintJson(std::FILE* out, const std::vector<Fact>& facts, const std::vector<Row>& rows) {
  std::fprintf(out, "{\n  \"facts\": {");
  for (size_t i = 0; i < facts.size(); ++i) {
    const Fact& f = facts[i];
    std::fprintf(out, "%s\n    %s: %s", i == 0 ? "" : ",", JsonString(f.key).c_str(),
                 f.is_number ? f.value.c_str() : JsonString(f.value).c_str());
  }
  std::fprintf(out, "\n  },\n  \"rows\": [");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(out, "%s\n    {\"case\": %s, \"measurement\": %s, \"unit\": %s,\n",
                 i == 0 ? "" : ",", JsonString(r.case_name).c_str(),
                 JsonString(r.measurement).c_str(), JsonString(r.unit).c_str());
    std::fprintf(out, "     \"bytes\": %llu, \"median\": %.4f, \"samples\": ",
                 static_cast<unsigned long long>(r.bytes),
                 r.measured.MedianRate(r.bytes) / r.unit_bytes);
    PrintSamples(out, r.measured, r.bytes, r.unit_bytes);
    std::fprintf(out, ",\n     \"reference\": %s, \"reference_bytes\": %llu, ",
                 JsonString(r.reference).c_str(),
                 static_cast<unsigned long long>(r.reference_bytes));
    std::fprintf(out, "\"reference_median\": %.4f, \"reference_samples\": ",
                 r.reference_runs.MedianRate(r.reference_bytes) / r.unit_bytes);
    PrintSamples(out, r.reference_runs, r.reference_bytes, r.unit_bytes);
    std::fprintf(out, ",\n     \"ratio\": %.4f}", r.Ratio());
  }
  std::fprintf(out, "\n  ]\n}\n");
}

}  // namespace shardpack::bench
