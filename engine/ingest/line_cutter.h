// The tokenizer of the line formats in the reading loop (reading_loop.h):
// the loop's chunks cut into runs of whole lines, the line a chunk ends
// inside carried over to the next, a line longer than the limit skipped
// (measured, never held) and reported where it was, exactly as the line
// chunker cuts a stream (source/line_chunker.h), so memory stays bounded
// whatever the file. Every run handed out has ReadChunk::kPadding readable
// bytes after it (simdjson can parse a line in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/reading_loop.h"
#include "source/chunk.h"

namespace pipescope {

class LineCutter {
 public:
  /// What the lines go to, in file order.
  class Sink {
   public:
    virtual ~Sink() = default;
    /// Whole lines at byte offset `offset` (each ends in '\n', except the
    /// file's last when `end_of_file`); `padded_end`: at least
    /// ReadChunk::kPadding readable bytes lie between text's end and it.
    virtual void lines(std::string_view text, std::uint64_t offset, const char* padded_end,
                       bool end_of_file) = 0;
    /// A line longer than the limit, skipped (SkippedLine::held_watched is
    /// never set).
    virtual void skipped(const SkippedLine& line) = 0;
  };

  /// Lines longer than `max_line_bytes` are skipped.
  explicit LineCutter(std::size_t max_line_bytes);

  /// The lines that end in `chunk` (the next chunk of the file).
  void cut(const ReadChunk& chunk, Sink& sink);
  /// The end of the file: the last line, when it lacks its '\n'.
  void finish(Sink& sink);

 private:
  std::size_t max_line_bytes_;
  std::string carry_;  // the start of a line a chunk ended inside, then padding room
  std::uint64_t carry_offset_ = 0;
  bool skipping_ = false;
  SkippedLine skipped_;
};

}  // namespace pipescope
