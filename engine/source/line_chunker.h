// Reads one file in large aligned chunks and hands out runs of complete
// lines, carrying the partial last line of a chunk over to the next one.
// Memory stays bounded whatever the file: a line longer than
// ReadLimits::max_line_bytes is skipped (reported with its byte offset)
// instead of growing a buffer until it fits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

struct ReadLimits {
  /// Bytes read per chunk (rounded up to 4 KiB for the buffer).
  std::size_t chunk_bytes = std::size_t{8} << 20;
  /// Longest line kept; longer lines are skipped and reported.
  std::size_t max_line_bytes = std::size_t{1} << 20;
};

/// A reusable read buffer: a carry-over region followed by a 4 KiB-aligned
/// read area, so that read(2) always copies into aligned memory (unaligned
/// destinations were measured several times slower) and the carried partial
/// line is copied, small, just in front of it.
class ChunkBuffer {
 public:
  explicit ChunkBuffer(const ReadLimits& limits);
  char* read_area() const { return memory_.get() + carry_capacity_; }
  std::size_t read_capacity() const { return read_capacity_; }
  std::size_t carry_capacity() const { return carry_capacity_; }

 private:
  struct Free {
    void operator()(char* p) const;
  };
  std::size_t carry_capacity_;
  std::size_t read_capacity_;
  std::unique_ptr<char, Free> memory_;
};

/// A line the chunker dropped because it exceeded the limit.
struct SkippedLine {
  std::uint64_t offset = 0;  ///< byte offset of its first byte in the file
  std::uint64_t length = 0;  ///< bytes, without the '\n'
  bool has_newline = true;   ///< false for an unterminated last line
};

struct LineChunk {
  /// Complete lines, each ending in '\n', except that the last line of the
  /// file may lack it when `end_of_file` is set. Points into the ChunkBuffer.
  std::string_view text;
  /// Byte offset of text[0] in the file.
  std::uint64_t file_offset = 0;
  /// Over-long lines dropped since the previous chunk (they come before `text`).
  std::vector<SkippedLine> skipped_before;
  bool end_of_file = false;
};

class LineChunker {
 public:
  /// Opens `path` for reading. Throws std::system_error (with the path in the
  /// message) when it cannot be opened.
  LineChunker(std::string path, const ReadLimits& limits);
  ~LineChunker();
  LineChunker(const LineChunker&) = delete;
  LineChunker& operator=(const LineChunker&) = delete;

  /// Fills `chunk` with the next lines, read into `buffer` (which must stay
  /// alive and untouched until the chunk is consumed). Returns false when the
  /// file is exhausted. Throws std::system_error on a read error.
  bool next(ChunkBuffer& buffer, LineChunk& chunk);

  std::uint64_t bytes_read() const { return offset_; }

 private:
  std::size_t read_full(char* destination, std::size_t capacity);

  std::string path_;
  ReadLimits limits_;
  int fd_ = -1;
  std::uint64_t offset_ = 0;  // bytes read so far
  std::string carry_;         // partial last line of the previous chunk
  bool end_of_file_ = false;
  bool skipping_ = false;     // inside an over-long line
  SkippedLine skipped_;       // the over-long line being skipped
  std::vector<SkippedLine> pending_skipped_;
};

}  // namespace pipescope
