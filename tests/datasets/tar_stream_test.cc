// Tar members and WebDataset samples from archives built byte by byte here:
// ustar, GNU long names, pax headers, and the damage a tar can carry.
#include "datasets/tar_stream.h"

#include <cstdio>
#include <utility>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "datasets/npy.h"
#include "datasets/webdataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardpack/file.h"
#include "tests/testing/status_matchers.h"

namespace shardpack::datasets {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

// Writes tar archives the way tar and Python's tarfile do.
class TarBuilder {
 public:
  // A member of `type` ('0' a file, '5' a directory, 'L' a GNU long name,
  // 'x' a pax header, '2' a symlink).
  TarBuilder& Add(std::string name, std::string data, char type = '0', bool ustar_prefix = false) {
    std::string h(512, '\0');
    const size_t slash = name.rfind('/');
    if (ustar_prefix && slash != std::string::npos && slash <= 155) {
      std::memcpy(&h[345], name.data(), slash);
      name = name.substr(slash + 1);
    }
    std::memcpy(&h[0], name.data(), std::min<size_t>(name.size(), 100));
    std::snprintf(&h[100], 8, "%07o", 0644);
    std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(data.size()));
    h[156] = type;
    std::memcpy(&h[257], "ustar\0" "00", 8);
    Seal(h);
    bytes_ += h + data + std::string((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  TarBuilder& Raw(std::string block) {
    bytes_ += block;
    return *this;
  }
  std::string Finish() const { return bytes_ + std::string(1024, '\0'); }
  const std::string& bytes() const { return bytes_; }

  // Writes the checksum of the header at `at` of `tar`.
  static void Seal(std::string& tar, size_t at = 0) {
    std::memset(&tar[at + 148], ' ', 8);
    unsigned sum = 0;
    for (size_t i = at; i < at + 512; ++i) sum += static_cast<unsigned char>(tar[i]);
    std::snprintf(&tar[at + 148], 8, "%06o", sum);
  }

 private:
  std::string bytes_;
};

ByteSpan Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
std::string Text(ByteSpan b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

std::string Pax(std::string_view key, std::string_view value) {
  std::string record = std::string(" ") + std::string(key) + "=" + std::string(value) + "\n";
  size_t len = record.size() + 1;
  while (std::to_string(len).size() + record.size() != len) ++len;
  return std::to_string(len) + record;
}

// A file read only through ReadExact (data() null, as a pread file's), so
// that TarStream reads it through its window rather than viewing memory.
class PreadOnlyFile : public RandomAccessFile {
 public:
  explicit PreadOnlyFile(const std::string& bytes) : memory_(NewMemoryFile("t.tar", Bytes(bytes))) {}
  const std::string& name() const override { return memory_->name(); }
  uint64_t size() const override { return memory_->size(); }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    return memory_->ReadExact(offset, dst);
  }

 private:
  std::unique_ptr<RandomAccessFile> memory_;
};

// The file `tar` is read from: through a window of `window` bytes, or, for
// kInPlace, as memory (a mapped file's way: members viewed where they lie).
constexpr size_t kInPlace = 0;
std::unique_ptr<RandomAccessFile> TarFile(const std::string& tar, size_t window) {
  if (window == kInPlace) return NewMemoryFile("t.tar", Bytes(tar));
  return std::make_unique<PreadOnlyFile>(tar);
}

// Every member, name and bytes, read through a small window (or in place).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Members(const std::string& tar,
                                                                         size_t window = 512) {
  auto file = TarFile(tar, window);
  TarStream stream(*file, window);
  std::vector<std::pair<std::string, std::string>> out;
  TarMember m;
  while (true) {
    absl::StatusOr<bool> more = stream.Next(&m);
    if (!more.ok()) return more.status();
    if (!*more) return out;
    stream.KeepFrom(m.offset);
    out.emplace_back(m.name, Text(stream.Data(m)));
  }
}

TEST(TarStreamTest, MembersOfEveryHeaderKindReadAsTarWroteThem) {
  const std::string long_name = std::string(150, 'd') + "/0001.jpg";
  TarBuilder b;
  b.Add("dir", "", '5')
      .Add("dir/0001.txt", "a caption")
      .Add("././@LongLink", long_name + '\0', 'L')
      .Add("ignored", std::string(1000, 'x'))
      .Add("PaxHeader", Pax("path", "pax/0002.json") + Pax("size", "7"), 'x')
      .Add("short", "{\"a\":1}")
      .Add("deep/dir/0003.cls", "3", '0', /*ustar_prefix=*/true)
      .Add("link.jpg", "", '2');
  for (size_t window : {kInPlace, size_t{512}, size_t{4096}, size_t{1} << 20}) {
    SP_ASSERT_OK_AND_ASSIGN(auto members, Members(b.Finish(), window));
    ASSERT_EQ(members.size(), 4u) << window;
    EXPECT_EQ(members[0], std::make_pair(std::string("dir/0001.txt"), std::string("a caption")));
    EXPECT_EQ(members[1].first, long_name);
    EXPECT_EQ(members[1].second, std::string(1000, 'x'));
    EXPECT_EQ(members[2], std::make_pair(std::string("pax/0002.json"), std::string("{\"a\":1}")));
    EXPECT_EQ(members[3], std::make_pair(std::string("deep/dir/0003.cls"), std::string("3")));
  }
  // The file's end at a header boundary ends the archive as zero blocks do.
  for (size_t window : {kInPlace, size_t{512}}) {
    SP_ASSERT_OK_AND_ASSIGN(auto unterminated, Members(b.bytes(), window));
    EXPECT_EQ(unterminated.size(), 4u);
  }
}

// The same damage, the same error, whether the tar is read through the
// window or viewed in place.
class TarDamageTest : public ::testing::TestWithParam<size_t> {
 protected:
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Members(const std::string& tar) {
    return datasets::Members(tar, GetParam());
  }
};
INSTANTIATE_TEST_SUITE_P(ReadOrInPlace, TarDamageTest, ::testing::Values(size_t{512}, kInPlace));

TEST_P(TarDamageTest, DamageIsToldWithTheFileAndOffset) {
  const std::string good = TarBuilder().Add("a.txt", "hello").Add("b.txt", "world").Finish();
  std::string flipped = good;
  flipped[512 + 512 + 3] ^= 1;  // b.txt's header name
  EXPECT_THAT(Members(flipped).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("t.tar @1024: not a tar header (its checksum does not hold)")));
  SP_ASSERT_OK_AND_ASSIGN(auto whole, Members(good));
  EXPECT_EQ(whole.size(), 2u);
  std::string big = TarBuilder().Add("a.bin", std::string(5000, 'z')).bytes().substr(0, 3000);
  EXPECT_THAT(Members(big).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("t.tar @0: member 'a.bin' of 5000 bytes is cut short by the file's "
                                 "end (3000 bytes)")));
  std::string header_cut = good.substr(0, 1024 + 100);
  EXPECT_THAT(Members(header_cut).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("t.tar @1024: a tar header of 512")));
  std::string bad_size = good;
  bad_size[124] = '9';
  TarBuilder::Seal(bad_size);
  EXPECT_THAT(Members(bad_size).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("size is not a number")));
  for (std::string name : {"../etc/passwd.jpg", "/abs/0.jpg", "a/../../0.jpg"}) {
    EXPECT_THAT(Members(TarBuilder().Add(name, "x").Finish()).status(),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("leaves the archive's tree")))
        << name;
  }
  EXPECT_THAT(Members(TarBuilder().Add("p", "12 path=x\n3 ", 'x').Add("f", "").Finish()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("pax extended header")));
  EXPECT_THAT(Members(TarBuilder().Add("l", std::string(70000, 'n'), 'L').Finish()).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("an extended header of 70000 bytes")));
}

// Base-256 sizes (GNU, for members of 8 GiB and more) are read; a negative
// one is damage.
// A file of 3 GiB as an object store may claim to be: its first block a
// tar header, zeros after it; nothing of it is held in memory.
class ClaimedSizeFile : public RandomAccessFile {
 public:
  explicit ClaimedSizeFile(std::string head) : head_(std::move(head)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return uint64_t{3} << 30; }
  absl::Status ReadExact(uint64_t offset, std::span<uint8_t> dst) const override {
    for (size_t i = 0; i < dst.size(); ++i) {
      dst[i] = offset + i < head_.size() ? static_cast<uint8_t>(head_[offset + i]) : 0;
    }
    return absl::OkStatus();
  }

 private:
  std::string head_;
  std::string name_ = "s3://b/huge.tar";
};

TEST(TarStreamTest, AMemberPastTheBufferBoundIsRefusedNotAllocated) {
  std::string head = TarBuilder().Add("big.bin", "").bytes();
  std::snprintf(&head[124], 12, "%011llo", static_cast<unsigned long long>(uint64_t{2} << 30));
  TarBuilder::Seal(head);
  ClaimedSizeFile file(head);
  TarStream stream(file, 512);
  TarMember m;
  EXPECT_THAT(stream.Next(&m),
              StatusIs(absl::StatusCode::kDataLoss,
                       ::testing::AllOf(HasSubstr("s3://b/huge.tar @512"),
                                        HasSubstr("2147483648 bytes is more than the 1073741824"))));
}

TEST(TarStreamTest, BaseTwoFiftySixSizes) {
  std::string tar = TarBuilder().Add("a.txt", "hello").Finish();
  std::memset(&tar[124], 0, 12);
  tar[124] = static_cast<char>(0x80);
  tar[135] = 5;
  TarBuilder::Seal(tar);
  SP_ASSERT_OK_AND_ASSIGN(auto members, Members(tar));
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].second, "hello");
  tar[124] = static_cast<char>(0xff);
  TarBuilder::Seal(tar);
  EXPECT_THAT(Members(tar).status(), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
}

TEST(WebDatasetTest, NamesSplitAsWebDatasetSplitsThem) {
  std::string_view key, ext;
  ASSERT_TRUE(SplitSampleName("dir.v1/000123.seg.png", &key, &ext));
  EXPECT_EQ(key, "dir.v1/000123");
  EXPECT_EQ(ext, "seg.png");
  ASSERT_TRUE(SplitSampleName("a.", &key, &ext));
  EXPECT_EQ(key, "a");
  EXPECT_EQ(ext, "");
  EXPECT_FALSE(SplitSampleName("README", &key, &ext));
  EXPECT_FALSE(SplitSampleName("dir/.hidden", &key, &ext));
  EXPECT_FALSE(SplitSampleName("__meta__", &key, &ext));
}

TEST(WebDatasetTest, ConsecutiveMembersOfOneKeyMakeASample) {
  TarBuilder b;
  b.Add("s/0001.jpg", "J1").Add("s/0001.TXT", "caption 1").Add("s/0001.cls", "3");
  b.Add("README", "not a sample").Add("s/0002.jpg", std::string(3000, 'j'));
  b.Add("s/0002.txt", "caption 2").Add("s/0003.jpg", "J3");
  const std::string tar = b.Finish();
  for (size_t window : {size_t{1024}, kInPlace}) {
    auto file = TarFile(tar, window);
    TarStream stream(*file, window);
    TarSamples samples(&stream);
    TarSample s;
    std::vector<std::string> seen;
    while (true) {
      SP_ASSERT_OK_AND_ASSIGN(bool more, samples.Next(&s));
      if (!more) break;
      std::string line = s.key + ":";
      for (size_t i = 0; i < s.size; ++i) {
        line += " " + s.files[i].ext + "=" + Text(samples.Data(s.files[i])).substr(0, 9);
      }
      seen.push_back(line);
    }
    EXPECT_THAT(seen, ::testing::ElementsAre("s/0001: jpg=J1 txt=caption 1 cls=3",
                                             "s/0002: jpg=jjjjjjjjj txt=caption 2",
                                             "s/0003: jpg=J3"))
        << window;
  }
  TarSample s;
  const std::string twice = TarBuilder().Add("k.jpg", "a").Add("k.JPG", "b").Finish();
  auto file2 = NewMemoryFile("t.tar", Bytes(twice));
  TarStream stream2(*file2);
  TarSamples samples2(&stream2);
  EXPECT_THAT(samples2.Next(&s),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("t.tar @1024: sample 'k' holds 'jpg' twice")));
}

std::string Npy(std::string header, std::string data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  header += "\n";
  if (major == 1) {
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  }
  return out + header + data;
}

TEST(NpyTest, ArraysAsNumpySavesThem) {
  const std::string boxes(2 * 4 * 4, 'b');
  const std::string file = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", boxes);
  SP_ASSERT_OK_AND_ASSIGN(NpyArray a, ParseNpy(Bytes(file), "x.npy"));
  EXPECT_EQ(a.dtype, ArrayDType::kF32);
  EXPECT_EQ(a.shape, (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(Text(a.data), boxes);
  SP_ASSERT_OK_AND_ASSIGN(NpyArray scalar,
                          ParseNpy(Bytes(Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                                             std::string(8, 'i'), 2)), "s.npy"));
  EXPECT_TRUE(scalar.shape.empty());
  SP_ASSERT_OK_AND_ASSIGN(NpyArray one, ParseNpy(Bytes(Npy("{'descr': '|u1', 'fortran_order': "
                                                           "False, 'shape': (3,), }", "abc")), "o"));
  EXPECT_EQ(one.shape, (std::vector<uint64_t>{3}));
}

TEST(NpyTest, WhatAFieldCannotHoldIsRefusedNamingTheFile) {
  auto refused = [](std::string file) { return ParseNpy(Bytes(file), "s/1.npy").status(); };
  EXPECT_THAT(refused("not numpy"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("s/1.npy: not a .npy file")));
  EXPECT_THAT(refused(Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "1234")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype '>f4'")));
  EXPECT_THAT(refused(Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "12345678")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype '<c8'")));
  EXPECT_THAT(refused(Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }", "1234")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Fortran order")));
  EXPECT_THAT(refused(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "1234")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 bytes of data for a shape of 2")));
  EXPECT_THAT(refused(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
                          "1234")),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(refused(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999,), }",
                          "")),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(refused(Npy("{'descr': '<f4'}", "", 4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version 4")));
  std::string cut = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "1234");
  EXPECT_THAT(refused(cut.substr(0, 20)), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("header cut short")));
}

}  // namespace
}  // namespace shardpack::datasets
