// Reads a regular file as independent byte ranges, so that several threads
// read (and then scan) one file at once and a single huge file is not read by
// one thread. A range owns the lines whose first byte lies inside it: it looks
// one byte back to see whether a line starts at its first byte, and reads past
// its end to finish its last line. Every line belongs to exactly one range.
#pragma once

#include <cstdint>
#include <string>

#include "source/chunk.h"

namespace pipescope {

class RangeFile {
 public:
  /// Opens `path`. Throws std::system_error (path in the message) when it
  /// cannot be opened or is not a regular file (see readable_in_ranges).
  explicit RangeFile(std::string path);
  ~RangeFile();
  RangeFile(const RangeFile&) = delete;
  RangeFile& operator=(const RangeFile&) = delete;

  /// Size at open time. Bytes appended later are not read, so a log that is
  /// still being written is read up to the moment it was opened.
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  /// Fills `chunk` with the lines that begin in [begin, end) (end clamped to
  /// size()). Thread-safe: uses pread(2). A last line longer than
  /// limits.max_line_bytes that does not end inside the buffer is skipped
  /// (chunk.skipped_after) and read through only to measure it. Throws
  /// std::system_error on a read error.
  void read_lines(std::uint64_t begin, std::uint64_t end, const ReadLimits& limits,
                  ChunkBuffer& buffer, LineChunk& chunk) const;

 private:
  /// Reads up to `length` bytes at `offset`; fewer only at end of file.
  std::size_t read_at(char* destination, std::size_t length, std::uint64_t offset) const;

  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// True when `path` names a regular file, which RangeFile can read in
/// ranges; pipes, character devices and the like must be read in order.
/// (Not named is_regular_file, which a reader takes for std::filesystem's:
/// called with a std::filesystem::path, argument-dependent lookup picks that one.)
bool readable_in_ranges(const std::string& path);

}  // namespace pipescope
