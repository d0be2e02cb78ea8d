// libFuzzer targets for the LMDB and HDF5 shard openers, built from this file
// twice (SHARDPACK_FUZZ_BACKEND 1: lmdb_shard_fuzzer, 2: hdf5_shard_fuzzer).
//
// The input is written to a file and opened the way a lone file nobody
// checksummed is opened: through the gate (backends/shard_gate.h), which
// vets it in a forked child before this process hands it to liblmdb or
// libhdf5; then every record is scanned here, in process. So a crash or hang
// of liblmdb or libhdf5 on the input is contained (an error naming the
// file), and this fuzzer dies only when containment fails: a signal reaches
// this process, or the child's scan passed and the same scan here does not
// (the child and the parent ran the same code on the same bytes). Checked:
//   - an error is a DataLossError (or FailedPrecondition / InvalidArgument
//     for what is not a file of this kind) naming the file;
//   - a child that ended without a result (a sanitizer report from our own
//     code in it, which the child's stderr shows) is a finding: abort();
//   - a scan that succeeds visits size() records, in order.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "backends/shard_gate.h"

#ifndef SHARDPACK_FUZZ_BACKEND
#error "define SHARDPACK_FUZZ_BACKEND (1: lmdb, 2: hdf5)"
#endif

namespace shardpack {
namespace {

constexpr Backend kBackend = static_cast<Backend>(SHARDPACK_FUZZ_BACKEND);
// libFuzzer stops an input at -timeout (25 s in scripts/fuzz): the child
// must be stopped well before.
constexpr backends::VetOptions kVet{5, 20e6};

// One file per fuzzer process, removed when libFuzzer exits normally (a
// crash leaves it, beside the artifact).
const std::string& InputPath() {
  static const std::string* path = [] {
    auto* p = new std::string("/tmp/shardpack-fuzz-" + std::to_string(getpid()) +
                              (kBackend == Backend::kLmdb ? ".lmdb" : ".h5"));
    std::atexit([] { unlink(InputPath().c_str()); });
    return p;
  }();
  return *path;
}

[[noreturn]] void Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "invariant broken: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::abort();
}

void CheckError(const absl::Status& s, const std::string& path) {
  if (s.ok()) return;
  const bool expected_code = absl::IsDataLoss(s) || absl::IsFailedPrecondition(s) ||
                             absl::IsInvalidArgument(s);
  if (!expected_code || !absl::StrContains(s.message(), path)) Fail("error", s);
  if (absl::StrContains(s.message(), "ended without a result")) Fail("vetting child", s);
}

}  // namespace
}  // namespace shardpack

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardpack;
  const std::string& path = InputPath();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto scanner = backends::OpenShardScanner(path, kBackend, std::nullopt, kVet);
  if (!scanner.ok()) {
    CheckError(scanner.status(), path);
    return 0;
  }
  uint64_t next = 0;
  absl::Status s = (*scanner)->Scan(0, (*scanner)->size(), [&](uint64_t i, const Record&) {
    if (i != next) return absl::InternalError("records out of order");
    ++next;
    return absl::OkStatus();
  });
  // The child scanned the same bytes with the same code and passed.
  if (!s.ok()) Fail("scan after vetting passed", s);
  if (next != (*scanner)->size()) Fail("scan", absl::InternalError("records missing"));
  return 0;
}
