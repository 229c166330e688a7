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
#include <vector>

#include "source/byte_stream.h"
#include "source/chunk.h"

namespace pipescope {

/// Reads a ByteStream in order: pipes, and compressed files (decompressed on
/// the fly). Regular uncompressed files are read faster, in parallel ranges,
/// by RangeFile.
class LineChunker {
 public:
  /// Opens `path` (see open_byte_stream). Throws std::system_error (with the
  /// path in the message) when it cannot be opened.
  LineChunker(std::string path, const ReadLimits& limits);
  ~LineChunker();
  LineChunker(const LineChunker&) = delete;
  LineChunker& operator=(const LineChunker&) = delete;

  /// Fills `chunk` with the next lines, read into `buffer` (which must stay
  /// alive and untouched until the chunk is consumed). Returns false when the
  /// file is exhausted. Throws std::system_error on a read error.
  bool next(ChunkBuffer& buffer, LineChunk& chunk);

  std::uint64_t bytes_read() const { return offset_; }
  /// Why the stream ended early (corrupt or truncated compressed data), or empty.
  const std::string& stream_error() const { return stream_->error(); }

 private:
  std::size_t read_full(char* destination, std::size_t capacity);
  /// Looks for ReadLimits::watched in the next bytes of the line being
  /// skipped (across the pieces it comes in).
  void watch_skipped(std::string_view bytes);

  std::string path_;
  ReadLimits limits_;
  std::unique_ptr<ByteStream> stream_;
  std::uint64_t offset_ = 0;  // bytes read so far
  std::string carry_;         // partial last line of the previous chunk
  bool end_of_file_ = false;
  bool skipping_ = false;   // inside an over-long line
  SkippedLine skipped_;     // the over-long line being skipped
  std::string watch_tail_;  // its last bytes, for a watched string cut by a piece
  std::vector<SkippedLine> pending_skipped_;
};

}  // namespace pipescope
