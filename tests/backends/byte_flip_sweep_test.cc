// Every byte of a small LMDB shard and a small HDF5 shard flipped, one at a
// time, and the file opened the ways a user opens it:
//  - as a shard of its dataset directory, and as a lone file with the
//    dataset's manifest.json beside it: the CRC gate must refuse every flip
//    (a CRC-32C catches every one-byte change) with an error naming the
//    file, before liblmdb or libhdf5 sees it;
//  - as a lone file nobody checksummed: vetted in a child process. The test
//    process must live (a signal in liblmdb or libhdf5 would kill it: that
//    is the containment failing), and each flip gives either an error naming
//    the file or records that decode, as many as the file had. A flipped
//    pixel in a file without checksums cannot be told from a real one: those
//    are counted, not failed (the risk docs/reliability.md states).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/shard_gate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backends/backend_fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::shardpack::testing::OwnedRecord;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A record as the comparison sees it.
std::string Flatten(const Record& r) {
  std::string s = absl::StrCat(absl::string_view(r.key.data(), r.key.size()), "|",
                               static_cast<int>(r.image.encoding), "|", r.image.height, "x",
                               r.image.width, "x", int{r.image.channels}, "|");
  for (int64_t l : r.labels) absl::StrAppend(&s, l, ",");
  s.append(r.payload.begin(), r.payload.end());
  s += "|";
  s.append(r.extra.begin(), r.extra.end());
  return s;
}

// A few flips make libhdf5 loop for tens of seconds (or for good): the
// default limit would make the sweep minutes long. What the limit is does
// not matter here, only that the child is stopped and the file refused.
constexpr backends::VetOptions kQuickVet{2, 20e6};

// The records of `path` through the gate, or the gate's or reader's error.
absl::StatusOr<std::vector<std::string>> ReadGated(const std::string& path, Backend backend,
                                                   const std::optional<ShardEntry>& expected) {
  SP_ASSIGN_OR_RETURN(auto scanner,
                      backends::OpenShardScanner(path, backend, expected, kQuickVet));
  std::vector<std::string> out;
  SP_RETURN_IF_ERROR(scanner->Scan(0, scanner->size(), [&](uint64_t, const Record& r) {
    out.push_back(Flatten(r));
    return absl::OkStatus();
  }));
  return out;
}

struct SweepCounts {
  int refused = 0;    // an error naming the file
  int contained = 0;  // of those: liblmdb or libhdf5 died or hung in the child
  int identical = 0;  // records as written
  int changed = 0;    // records that decode but differ (no checksum to tell)
};

// A backend and the part of the file's bytes a test sweeps: the HDF5
// sweep is cut in two so that ctest runs the halves side by side.
struct SweepPart {
  Backend backend;
  int part;
  int parts;
};

class ByteFlipSweep : public ::testing::TestWithParam<SweepPart> {
 protected:
  // A dataset of 6 small raw records (one label, keys) in one shard of
  // GetParam(), written with small HDF5 chunks so the file stays small.
  void SetUp() override {
    std::vector<OwnedRecord> records;
    for (int i = 0; i < 6; ++i) records.push_back(testing::RawRecord(i, 4, 4, 3));
    backends::BackendOptions bo;
    bo.hdf5.chunk_bytes = 256;
    bo.hdf5.row_chunk = 8;
    bo.lmdb.initial_map_bytes = 64 << 10;
    auto m = testing::WriteDataset(tmp_.path(), GetParam().backend, records,
                                   testing::RawSchema(4, 4, 3, Layout::kHWC, 1), 0, bo);
    ASSERT_TRUE(m.ok()) << m.status();
    manifest_ = *m;
    shard_ = tmp_.Join(manifest_.shards[0].path);
    original_ = ReadBytes(shard_);
    SP_ASSERT_OK_AND_ASSIGN(records_, ReadGated(shard_, GetParam().backend, manifest_.shards[0]));
    ASSERT_EQ(records_.size(), 6u);
    fs::create_directories(tmp_.path() / "lone");
  }

  // Flips byte `at` of the shard in place and (under a new name, so that no
  // library state of an earlier file is reused) as a lone file.
  std::string Flip(size_t at) {
    std::string bytes = original_;
    bytes[at] = static_cast<char>(bytes[at] ^ 0xff);
    WriteBytes(shard_, bytes);
    std::string lone = tmp_.Join(absl::StrCat("lone/flip-", at, fs::path(shard_).extension().string()));
    WriteBytes(lone, bytes);
    return lone;
  }

  testing::TempDir tmp_;
  Manifest manifest_;
  std::string shard_;
  std::string original_;
  std::vector<std::string> records_;
};

TEST_P(ByteFlipSweep, CrcGateRefusesEveryFlipAndVettingContainsTheRest) {
  const Backend backend = GetParam().backend;
  const size_t begin = original_.size() * GetParam().part / GetParam().parts;
  const size_t end = original_.size() * (GetParam().part + 1) / GetParam().parts;
  const auto start = std::chrono::steady_clock::now();
  SweepCounts vetted;
  for (size_t at = begin; at < end; ++at) {
    const std::string lone = Flip(at);
    // The dataset's manifest: refused by the CRC gate, whatever the byte.
    auto gated = ReadGated(shard_, backend, manifest_.shards[0]);
    ASSERT_THAT(gated, testing::StatusIs(absl::StatusCode::kDataLoss,
                                         ::testing::HasSubstr(shard_ + ": CRC-32C")))
        << "byte " << at;
    // A lone file with the manifest beside it that lists it: the same.
    auto beside = backends::OpenLoneShard(shard_, backend);
    ASSERT_THAT(beside, testing::StatusIs(absl::StatusCode::kDataLoss,
                                          ::testing::HasSubstr(shard_ + ": CRC-32C")))
        << "byte " << at;
    // Nobody's checksum: vetted; this process must live through it.
    auto read = ReadGated(lone, backend, std::nullopt);
    if (!read.ok()) {
      ASSERT_THAT(std::string(read.status().message()), ::testing::HasSubstr(lone))
          << "byte " << at;
      ++vetted.refused;
      if (absl::StrContains(read.status().message(), ": damaged: ")) {
        // The library died, hung or failed in the child: said in one line.
        ++vetted.contained;
        EXPECT_THAT(std::string(read.status().message()),
                    ::testing::MatchesRegex(
                        ".*: damaged: (lib(lmdb|hdf5) died with SIG[A-Z0-9]+ while checking it|"
                        "checking it with lib(lmdb|hdf5) (took over 2 s \\(stopped\\)|"
                        "ended without a result.*)) \\(the file was not checksummed by "
                        "shardpack\\)"))
            << "byte " << at;
      }
    } else {
      ASSERT_EQ(read->size(), records_.size()) << "byte " << at;
      ++(*read == records_ ? vetted.identical : vetted.changed);
    }
    fs::remove(lone);
  }
  WriteBytes(shard_, original_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: bytes [%zu, %zu) of %zu flipped in %.1f s; unchecksummed: %d refused (%d by "
              "containment), %d read as written, %d read changed\n",
              std::string(BackendName(backend)).c_str(), begin, end, original_.size(), seconds,
              vetted.refused, vetted.contained, vetted.identical, vetted.changed);
  EXPECT_EQ(vetted.refused + vetted.identical + vetted.changed, static_cast<int>(end - begin));
}

INSTANTIATE_TEST_SUITE_P(Backends, ByteFlipSweep,
                         ::testing::Values(SweepPart{Backend::kLmdb, 0, 1},
                                           SweepPart{Backend::kHdf5, 0, 2},
                                           SweepPart{Backend::kHdf5, 1, 2}),
                         [](const ::testing::TestParamInfo<SweepPart>& p) {
                           return absl::StrCat(std::string(BackendName(p.param.backend)), "_", p.param.part);
                         });

}  // namespace
}  // namespace shardpack
