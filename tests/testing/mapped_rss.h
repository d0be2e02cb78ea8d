// What this process has mapped of a file: the Rss of its mappings of `path`
// in /proc/self/smaps (pages of the file present in this process's page
// tables), for tests of what a reader keeps mapped.
#ifndef SHARDPACK_TESTS_TESTING_MAPPED_RSS_H_
#define SHARDPACK_TESTS_TESTING_MAPPED_RSS_H_

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace shardpack::testing {

// Bytes; 0 when nothing of `path` is mapped (or /proc is missing).
inline uint64_t MappedRssBytes(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  uint64_t total = 0;
  bool mine = false;
  for (std::string line; std::getline(smaps, line);) {
    // A mapping's header, "start-end perms offset dev inode [path]", starts
    // with a lower-case hex digit; its fields, "Name:   value kB", with a
    // capital.
    const bool header = !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
                        !std::isupper(static_cast<unsigned char>(line[0]));
    if (header) {
      mine = line.size() >= path.size() &&
             line.compare(line.size() - path.size(), path.size(), path) == 0;
    } else if (mine && line.rfind("Rss:", 0) == 0) {
      uint64_t kb = 0;
      std::istringstream(line.substr(4)) >> kb;
      total += kb << 10;
    }
  }
  return total;
}

// MappedRssBytes while threads map and unmap pages of `path`: the least of
// `reads` reads in a row. One read walks the page tables while they change,
// so pages unmapped after the walk passed them and pages mapped before it
// reaches them both count: under CPU load a reader's window of 12 MiB read
// 15.6 MB, and 12.96 MB at once after, while the reader held no more than
// its budget. A mapping that truly keeps its pages reads high every time.
inline uint64_t SettledMappedRssBytes(const std::string& path, int reads = 3) {
  uint64_t least = MappedRssBytes(path);
  for (int i = 1; i < reads; ++i) least = std::min(least, MappedRssBytes(path));
  return least;
}

}  // namespace shardpack::testing

#endif  // SHARDPACK_TESTS_TESTING_MAPPED_RSS_H_
