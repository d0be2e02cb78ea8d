// Labels (shardpack/record.h): up to kMaxLabels values; one more is a bug of
// the caller's that stops the process instead of writing past the array.
#include "gtest/gtest.h"
#include "shardpack/record.h"

namespace shardpack {
namespace {

TEST(LabelsTest, HoldsUpToTheMost) {
  Labels labels;
  for (int i = 0; i < kMaxLabels; ++i) labels.push_back(i * 10);
  ASSERT_EQ(labels.size(), kMaxLabels);
  EXPECT_EQ(labels[kMaxLabels - 1], (kMaxLabels - 1) * 10);
}

TEST(LabelsDeathTest, OneMoreStopsTheProcessWithAMessage) {
  Labels labels;
  for (int i = 0; i < kMaxLabels; ++i) labels.push_back(i);
  EXPECT_DEATH(labels.push_back(99), "push_back on a full Labels \\(kMaxLabels = 8\\)");
}

}  // namespace
}  // namespace shardpack
