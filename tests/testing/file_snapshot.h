// What a test reads back from the disk: a file's bytes, a folder's files.
#ifndef SHARDPACK_TESTS_TESTING_FILE_SNAPSHOT_H_
#define SHARDPACK_TESTS_TESTING_FILE_SNAPSHOT_H_

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace shardpack::testing {

// The bytes of the file at `p`; "" when it cannot be read.
inline std::string FileBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Every regular file under `dir`, by its path relative to `dir`, with its
// bytes: what must survive a refusal unchanged.
inline std::map<std::string, std::string> Snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files[std::filesystem::relative(e.path(), dir).string()] = FileBytes(e.path());
    }
  }
  return files;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_FILE_SNAPSHOT_H_
