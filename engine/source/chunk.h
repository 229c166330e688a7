// What every line reader hands to the scanner: runs of complete lines in a
// reusable, aligned buffer, plus the over-long lines it had to skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace pipescope {

struct ReadLimits {
  /// Bytes read per chunk (rounded up to 4 KiB for the buffer).
  std::size_t chunk_bytes = std::size_t{8} << 20;
  /// Longest line kept; longer lines are skipped and reported.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  /// Bytes read at a time inside one range of a regular file: a range is read
  /// and scanned as consecutive sub-ranges of this size, all read into the
  /// start of the same buffer, so that each block is scanned while it is still
  /// in the cache it was copied into. 0 (or a block no smaller than the chunk)
  /// reads each range whole.
  std::size_t block_bytes = std::size_t{256} << 10;
  /// Bytes whose presence in a skipped over-long line is reported
  /// (SkippedLine::held_watched): the job line's literal, so that a job line
  /// behind a progress bar's carriage returns is not lost unsaid. Empty: none.
  std::string_view watched;
};

/// A reusable read buffer: [front | read area | tail], each a multiple of
/// 4 KiB, the read area 4 KiB-aligned so that reads always copy into aligned
/// memory (unaligned destinations were measured several times slower).
/// Sequential reading puts the carried-over partial line in the front region,
/// just before the read area; range reading puts the page before its range
/// there, and the end of its last line in the tail. Pages a reader never
/// uses are never touched, so they cost no memory.
class ChunkBuffer {
 public:
  explicit ChunkBuffer(const ReadLimits& limits);
  char* read_area() const { return memory_.get() + front_capacity_; }
  /// Bytes available before read_area() (at least max_line_bytes and 4 KiB).
  std::size_t front_capacity() const { return front_capacity_; }
  /// Bytes available from read_area() on (at least chunk + max_line bytes).
  std::size_t read_capacity() const { return read_capacity_; }
  /// The configured chunk size (bytes read per chunk).
  std::size_t chunk_bytes() const { return chunk_bytes_; }

 private:
  struct Free {
    void operator()(char* p) const;
  };
  std::size_t front_capacity_;
  std::size_t chunk_bytes_;
  std::size_t read_capacity_;
  std::unique_ptr<char, Free> memory_;
};

/// A line the chunker dropped because it exceeded the limit.
struct SkippedLine {
  std::uint64_t offset = 0;  ///< byte offset of its first byte in the file
  std::uint64_t length = 0;  ///< bytes, without the '\n'
  bool has_newline = true;   ///< false for an unterminated last line
  /// It held ReadLimits::watched (a job line among the bytes skipped).
  bool held_watched = false;
};

struct LineChunk {
  /// Complete lines, each ending in '\n', except that the last line of the
  /// file may lack it when `end_of_file` is set. Points into the ChunkBuffer.
  std::string_view text;
  /// Byte offset of text[0] in the file.
  std::uint64_t file_offset = 0;
  /// Over-long lines dropped since the previous chunk (they come before `text`).
  std::vector<SkippedLine> skipped_before;
  /// An over-long line dropped right after `text` (range reading).
  std::optional<SkippedLine> skipped_after;
  /// `text` ends at the end of the file (its last line may lack '\n').
  bool end_of_file = false;
};

}  // namespace pipescope
