// libFuzzer target for the tar reader of `shardpack webdataset`
// (datasets/tar_stream.h) and the .npy parser its samples go through
// (datasets/npy.h), on arbitrary bytes as one tar file. TarStream::Next
// never crashes and fails only with DataLossError naming the file; every
// member it returns lies inside the file, after the one before, under a
// name that stays in the archive's tree; its Data() is exactly its bytes.
// ParseNpy on a member named *.npy fails only with InvalidArgumentError,
// and what it accepts is its shape's elements of its dtype, inside the
// member.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "datasets/npy.h"
#include "datasets/tar_stream.h"
#include "shardpack/file.h"

namespace {

using namespace shardpack;

constexpr char kName[] = "fuzz.tar";

void Expect(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "tar_fuzzer: invariant broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

bool InTree(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('/', start), name.size());
    if (name.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

void CheckNpy(const datasets::TarMember& m, ByteSpan bytes) {
  absl::StatusOr<datasets::NpyArray> a = datasets::ParseNpy(bytes, m.name);
  if (!a.ok()) {
    Expect(a.status().code() == absl::StatusCode::kInvalidArgument, "npy error code",
           a.status().ToString());
    return;
  }
  uint64_t elements = 1;
  for (uint64_t d : a->shape) elements *= d;
  Expect(a->data.size() == elements * static_cast<uint64_t>(ArrayDTypeSize(a->dtype)),
         "npy data is not its shape's elements");
  Expect(a->data.empty() || (a->data.data() >= bytes.data() &&
                             a->data.data() + a->data.size() <= bytes.data() + bytes.size()),
         "npy data outside the member");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<RandomAccessFile> file = NewMemoryFile(kName, {data, size});
  // A small window, so that members cross its edges.
  datasets::TarStream stream(*file, 1024);
  uint64_t last = 0;
  bool first = true;
  datasets::TarMember m;
  while (true) {
    absl::StatusOr<bool> more = stream.Next(&m);
    if (!more.ok()) {
      const std::string_view msg(more.status().message().data(), more.status().message().size());
      Expect(more.status().code() == absl::StatusCode::kDataLoss, "error code",
             more.status().ToString());
      Expect(msg.starts_with(kName), "error does not name the file", msg);
      break;
    }
    if (!*more) break;
    Expect(first || m.offset > last, "members out of order");
    first = false;
    last = m.offset;
    Expect(m.data_offset >= m.offset + 512 && m.data_offset <= size &&
               m.size <= size - m.data_offset,
           "member outside the file");
    Expect(InTree(m.name), "a name that leaves the tree", m.name);
    stream.KeepFrom(m.offset);
    const ByteSpan bytes = stream.Data(m);
    Expect(bytes.size() == m.size &&
               (m.size == 0 || std::equal(bytes.begin(), bytes.end(), data + m.data_offset)),
           "member bytes are not the file's");
    if (m.name.ends_with(".npy")) CheckNpy(m, bytes);
  }
  return 0;
}
