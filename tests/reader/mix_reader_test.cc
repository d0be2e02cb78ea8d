// A mixture through the whole reader: each source's counts and per-batch
// share, the same stream for any thread count, exact and elastic resume,
// the label spaces, and the refusals of bad sources and counts.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/dataset.h"
#include "shardpack/reader.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardpack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

uint8_t Pixel(uint64_t salt, uint64_t i, size_t b) { return uint8_t(salt * 57 + i * 31 + b * 7); }

// `n` raw side x side x 3 records labelled i % classes; classes named
// "<names>0", "<names>1", ... unless `names` is empty.
std::string MakeDataset(const testing::TempDir& dir, const std::string& name, uint64_t n,
                        uint64_t salt, int classes = 10, const std::string& names = "c",
                        int side = 4) {
  const std::string path = dir.Join(name);
  fs::create_directories(path);
  DatasetWriterOptions o;
  o.directory = path;
  o.shard.block_size = 4 << 10;
  o.schema.image = {Encoding::kRaw, Layout::kHWC, uint32_t(side), uint32_t(side), 3};
  o.schema.labels = {{"label", {}}};
  if (!names.empty()) {
    for (int c = 0; c < classes; ++c) o.schema.labels[0].classes.push_back(absl::StrCat(names, c));
  }
  auto writer = DatasetWriter::Create(o);
  EXPECT_TRUE(writer.ok()) << writer.status();
  std::vector<uint8_t> pixels(size_t(side) * side * 3);
  for (uint64_t i = 0; i < n; ++i) {
    for (size_t b = 0; b < pixels.size(); ++b) pixels[b] = Pixel(salt, i, b);
    const std::string key = absl::StrCat(name, i);
    EXPECT_TRUE((*writer)->Add({key, {int64_t(i % classes)}, o.schema.image, pixels, {}}).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

struct Read {
  std::vector<uint64_t> records;
  std::vector<int64_t> labels;  // num_labels a sample
  std::vector<std::vector<uint64_t>> per_batch;  // samples of each source
  int num_labels = 0;
};

// Reads `batches` batches (all of the epoch when 0); `first` holds where
// each source's records start.
Read ReadBatches(Reader& r, const std::vector<uint64_t>& first, uint64_t batches = 0) {
  Read out;
  for (uint64_t b = 0; batches == 0 || b < batches; ++b) {
    absl::StatusOr<Batch> batch = r.Next();
    if (absl::IsOutOfRange(batch.status())) break;
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) break;
    out.num_labels = batch->num_labels();
    std::vector<uint64_t> counts(first.size(), 0);
    for (int i = 0; i < batch->size(); ++i) {
      const uint64_t rec = batch->record_index(i);
      out.records.push_back(rec);
      size_t s = first.size() - 1;
      while (rec < first[s]) --s;
      ++counts[s];
    }
    out.labels.insert(out.labels.end(), batch->labels(),
                      batch->labels() + batch->size() * batch->num_labels());
    out.per_batch.push_back(counts);
  }
  return out;
}

class MixReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = MakeDataset(dir_, "a", 300, 1);
    b_ = MakeDataset(dir_, "b", 100, 2);
  }
  ReaderOptions Mix(int batch = 20, int threads = 2) {
    ReaderOptions o;
    o.sources = {{a_, 0, 1.0, 0}, {b_, 0, 2.0, 0}};  // 300 + 200 an epoch
    o.batch_size = batch;
    o.threads = threads;
    o.rank = 0;
    o.world_size = 1;
    o.shuffle_bytes = 8 << 10;
    o.seed = 5;
    return o;
  }
  std::unique_ptr<Reader> Open(const ReaderOptions& o) {
    auto r = Reader::Open(o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(*r) : nullptr;
  }
  testing::TempDir dir_;
  std::string a_, b_;
};

TEST_F(MixReaderTest, EachSourceDrawsItsCountAndEveryBatchItsShare) {
  std::unique_ptr<Reader> r = Open(Mix());
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->sources().size(), 2u);
  EXPECT_EQ(r->sources()[0].per_epoch, 300u);
  EXPECT_EQ(r->sources()[1].per_epoch, 200u);
  EXPECT_EQ(r->batches_per_epoch(), 25u);
  EXPECT_EQ(r->records(), 400u);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const Read d = ReadBatches(*r, {0, 300});
    ASSERT_EQ(d.records.size(), 500u);
    std::map<uint64_t, int> times;
    for (uint64_t rec : d.records) ++times[rec];
    for (uint64_t rec = 0; rec < 300; ++rec) EXPECT_EQ(times[rec], 1) << "record " << rec;
    for (uint64_t rec = 300; rec < 400; ++rec) EXPECT_EQ(times[rec], 2) << "record " << rec;
    for (const std::vector<uint64_t>& c : d.per_batch) EXPECT_EQ(c, (std::vector<uint64_t>{12, 8}));
    // Labels as stored: the same class names, one label space.
    for (size_t i = 0; i < d.records.size(); ++i) {
      const uint64_t local = d.records[i] < 300 ? d.records[i] : d.records[i] - 300;
      EXPECT_EQ(d.labels[i], int64_t(local % 10));
    }
  }
  EXPECT_EQ(r->stats().source_samples, (std::vector<uint64_t>{600, 400}));
  // The plans stayed within the memory the reader reported for them.
  EXPECT_LE(r->stats().plan_peak_bytes, r->stats().plan_bytes);
  EXPECT_GT(r->stats().plan_peak_bytes, 0u);
}

TEST_F(MixReaderTest, TheStreamIsTheSameForAnyThreadCountAndPixelsAreTheRecords) {
  std::vector<std::vector<uint64_t>> streams;
  for (int threads : {1, 3}) {
    std::unique_ptr<Reader> r = Open(Mix(16, threads));
    ASSERT_NE(r, nullptr);
    std::vector<uint64_t> all;
    for (;;) {
      absl::StatusOr<Batch> batch = r->Next();
      if (absl::IsOutOfRange(batch.status())) break;
      ASSERT_TRUE(batch.ok()) << batch.status();
      const uint8_t* px = static_cast<const uint8_t*>(batch->images());
      for (int i = 0; i < batch->size(); ++i) {
        const uint64_t rec = batch->record_index(i);
        all.push_back(rec);
        const uint64_t salt = rec < 300 ? 1 : 2, local = rec < 300 ? rec : rec - 300;
        for (size_t b = 0; b < 48; ++b) ASSERT_EQ(px[i * 48 + b], Pixel(salt, local, b));
      }
    }
    streams.push_back(all);
  }
  EXPECT_EQ(streams[0], streams[1]);
}

TEST_F(MixReaderTest, ExactResumeContinuesTheSameStream) {
  std::unique_ptr<Reader> whole = Open(Mix());
  const Read all = ReadBatches(*whole, {0, 300});
  std::unique_ptr<Reader> first = Open(Mix());
  const Read head = ReadBatches(*first, {0, 300}, 9);
  const ReaderState state = first->state();
  auto saved = ReaderState::FromJson(state.ToJson());
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::unique_ptr<Reader> second = Open(Mix());
  ASSERT_TRUE(second->Restore(*saved).ok());
  const Read tail = ReadBatches(*second, {0, 300});
  std::vector<uint64_t> joined = head.records;
  joined.insert(joined.end(), tail.records.begin(), tail.records.end());
  EXPECT_EQ(joined, all.records);
}

TEST_F(MixReaderTest, ElasticResumeOntoAnotherWorldSizeDeliversTheRestOnce) {
  ReaderState state;
  std::multiset<uint64_t> seen;
  for (int rank = 0; rank < 2; ++rank) {
    ReaderOptions o = Mix(10);
    o.rank = rank;
    o.world_size = 2;
    std::unique_ptr<Reader> r = Open(o);
    const Read d = ReadBatches(*r, {0, 300}, 7);
    seen.insert(d.records.begin(), d.records.end());
    state = r->state();
  }
  std::vector<uint64_t> batches;
  for (int rank = 0; rank < 3; ++rank) {
    ReaderOptions o = Mix(8);
    o.rank = rank;
    o.world_size = 3;
    o.remainder = Remainder::kPartial;
    std::unique_ptr<Reader> r = Open(o);
    ASSERT_TRUE(r->Restore(state).ok());
    batches.push_back(r->batches_in_epoch());
    const Read d = ReadBatches(*r, {0, 300});
    seen.insert(d.records.begin(), d.records.end());
  }
  EXPECT_EQ(batches[0], batches[2]);
  // Source 0's records once each, source 1's at most twice; all but the
  // few each split leaves over (world size - 1 per source and segment).
  uint64_t from_a = 0, from_b = 0;
  for (uint64_t rec = 0; rec < 300; ++rec) {
    EXPECT_LE(seen.count(rec), 1u) << rec;
    from_a += seen.count(rec);
  }
  for (uint64_t rec = 300; rec < 400; ++rec) {
    EXPECT_LE(seen.count(rec), 2u) << rec;
    from_b += seen.count(rec);
  }
  EXPECT_GE(from_a, 300u - 3);
  EXPECT_GE(from_b, 200u - 3);
  EXPECT_LE(from_b, 200u);
}

TEST_F(MixReaderTest, LabelSpacesShareOffsetOrTellTheSource) {
  const std::string other = MakeDataset(dir_, "other", 50, 3, 5, "d");
  ReaderOptions o = Mix();
  o.sources[1].path = other;
  auto refused = Reader::Open(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("sources[1]"), HasSubstr("labels otherwise than sources[0]"),
                    HasSubstr("label_space")));
  o.label_space = LabelSpace::kOffset;
  std::unique_ptr<Reader> r = Open(o);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->schema().labels[0].classes.size(), 15u);
  EXPECT_EQ(r->schema().labels[0].classes[10], "d0");
  Read d = ReadBatches(*r, {0, 300});
  for (size_t i = 0; i < d.records.size(); ++i) {
    const uint64_t rec = d.records[i];
    EXPECT_EQ(d.labels[i], rec < 300 ? int64_t(rec % 10) : int64_t(10 + (rec - 300) % 5));
  }
  o.label_space = LabelSpace::kSource;
  r = Open(o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->schema().labels.back().name, "source");
  d = ReadBatches(*r, {0, 300});
  ASSERT_EQ(d.num_labels, 2);
  for (size_t i = 0; i < d.records.size(); ++i) {
    const uint64_t rec = d.records[i];
    EXPECT_EQ(d.labels[2 * i], rec < 300 ? int64_t(rec % 10) : int64_t((rec - 300) % 5));
    EXPECT_EQ(d.labels[2 * i + 1], rec < 300 ? 0 : 1);
  }
}

TEST_F(MixReaderTest, WeightsShareWhatEpochSamplesLeave) {
  ReaderOptions o = Mix();
  o.sources = {{a_, 3.0, 0, 0}, {b_, 1.0, 0, 0}, {a_, 0, 0, 40}};
  o.epoch_samples = 440;  // 40 fixed, 400 shared 3:1
  std::unique_ptr<Reader> r = Open(o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sources()[0].per_epoch, 300u);
  EXPECT_EQ(r->sources()[1].per_epoch, 100u);
  EXPECT_EQ(r->sources()[2].per_epoch, 40u);
}

TEST_F(MixReaderTest, BadSourcesAndCountsAreRefusedByName) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::function<void(ReaderOptions&)> change;
    std::string needle;
  };
  const std::string small = MakeDataset(dir_, "small", 30, 4, 10, "c", 8);
  const std::vector<Case> cases = {
      {[](ReaderOptions& o) { o.sources[1].repeat = 0; }, "set exactly one of weight, repeat"},
      {[](ReaderOptions& o) { o.sources[1].weight = 1; }, "(2 are set)"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, nan, 0, 0}; }, "weight nan is not a positive"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, -2, 0, 0}; }, "weight -2 is not a positive"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, inf, 0, 0}; }, "weight inf is not a positive"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, 0, 2000, 0}; }, "repeat 2000 is more than 1024"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, 0, 0.001, 0}; }, "draws no sample an epoch"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, 0, 0, 102401}; }, "choose 102401 is more than"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, 1e-300, 0, 0}; o.sources[0] = {a_, 1e300, 0, 0}; },
       "gives it no sample"},
      {[](ReaderOptions& o) { o.epoch_samples = 7; }, "epoch_samples 7, but the sources draw 500"},
      {[&](ReaderOptions& o) { o.sources[1] = {b_, 1, 0, 0}; o.epoch_samples = 300; },
       "leaves no sample for the weighted sources"},
      {[&](ReaderOptions& o) { o.sources[1].path = small; }, "holds images of another kind"},
      {[&](ReaderOptions& o) { o.path = a_; }, "not both"},
      {[&](ReaderOptions& o) { o.sources[1].path = dir_.Join("missing"); }, "missing"},
      {[&](ReaderOptions& o) { o.sources.assign(65, {a_, 0, 1, 0}); }, "65 sources: at most 64"},
      {[](ReaderOptions& o) { o.label_space = static_cast<LabelSpace>(9); }, "label_space 9"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ReaderOptions o = Mix();
    cases[i].change(o);
    auto r = Reader::Open(o);
    ASSERT_FALSE(r.ok()) << "case " << i;
    EXPECT_THAT(r.status().message(), HasSubstr(cases[i].needle)) << "case " << i;
  }
}

TEST_F(MixReaderTest, AStateOfOneMixtureDoesNotLoadIntoAnother) {
  std::unique_ptr<Reader> r = Open(Mix());
  ReadBatches(*r, {0, 300}, 3);
  const ReaderState state = r->state();
  ReaderOptions other = Mix();
  other.sources[1].repeat = 3;
  std::unique_ptr<Reader> o = Open(other);
  absl::Status s = o->Restore(state);
  EXPECT_THAT(s.message(), HasSubstr("a view or mixture that selects otherwise"));
  ReaderOptions plain = Mix();
  plain.sources.clear();
  plain.path = a_;
  std::unique_ptr<Reader> p = Open(plain);
  EXPECT_FALSE(p->Restore(state).ok());
}

// A view file over `datasets` (relative to the temp dir) with `selection`
// (JSON members after "datasets").
std::string WriteView(const testing::TempDir& dir, const std::string& name,
                      const std::string& datasets, const std::string& selection) {
  const std::string path = dir.Join(name);
  std::ofstream(path) << "{\"shardpack_view\": 1, \"datasets\": [" << datasets << "]"
                      << (selection.empty() ? "" : ", ") << selection << "}\n";
  return path;
}

TEST_F(MixReaderTest, AViewIsReadAsItsSelectionRelabelled) {
  const std::string view = WriteView(dir_, "v.view.json", "\"a\", \"a\"",
                                     "\"classes\": {\"names\": [\"c7\", \"c2\"]}");
  ReaderOptions o = Mix(10);
  o.sources.clear();
  o.path = view;
  std::unique_ptr<Reader> r = Open(o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->records(), 120u);  // 30 of each class, twice
  ASSERT_EQ(r->schema().labels[0].classes, (std::vector<std::string>{"c7", "c2"}));
  const Read d = ReadBatches(*r, {0});
  ASSERT_EQ(d.records.size(), 120u);
  std::set<uint64_t> distinct(d.records.begin(), d.records.end());
  EXPECT_EQ(distinct.size(), 120u);
  for (size_t i = 0; i < d.records.size(); ++i) {
    const int64_t stored = int64_t(d.records[i] % 300 % 10);
    ASSERT_TRUE(stored == 7 || stored == 2) << d.records[i];
    EXPECT_EQ(d.labels[i], stored == 7 ? 0 : 1);
  }
  // A state on this view refuses another view of the same datasets.
  const std::string other = WriteView(dir_, "w.view.json", "\"a\", \"a\"",
                                      "\"classes\": {\"names\": [\"c7\", \"c3\"]}");
  std::unique_ptr<Reader> first = Open(o);
  ReadBatches(*first, {0}, 2);
  o.path = other;
  std::unique_ptr<Reader> second = Open(o);
  EXPECT_THAT(second->Restore(first->state()).message(), HasSubstr("selects otherwise"));
}

TEST_F(MixReaderTest, AViewMixesWithADatasetAndSplitsAreDisjoint) {
  const std::string held = WriteView(dir_, "held.json", "\"a\"",
                                     "\"split\": {\"seed\": 3, \"fraction\": 0.1, "
                                     "\"take\": \"held_out\"}");
  const std::string rest = WriteView(dir_, "rest.json", "\"a\"",
                                     "\"split\": {\"seed\": 3, \"fraction\": 0.1, "
                                     "\"take\": \"rest\"}");
  ReaderOptions o = Mix(10);
  o.sources = {{held, 0, 1.0, 0}, {rest, 0, 1.0, 0}, {b_, 0, 0, 30}};
  std::unique_ptr<Reader> r = Open(o);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sources()[0].records, 30u);
  EXPECT_EQ(r->sources()[1].records, 270u);
  const Read d = ReadBatches(*r, {0, 300, 600});
  std::set<uint64_t> held_out, kept;
  for (uint64_t rec : d.records) {
    if (rec < 300) held_out.insert(rec);
    else if (rec < 600) kept.insert(rec - 300);
  }
  EXPECT_EQ(held_out.size(), 30u);
  EXPECT_EQ(kept.size(), 270u);
  for (uint64_t rec : held_out) EXPECT_EQ(kept.count(rec), 0u) << rec;
}

}  // namespace
}  // namespace shardpack
