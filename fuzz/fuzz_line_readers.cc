// Fuzzes the chunk splitters: the sequential LineChunker and the parallel
// RangeFile, each with chunk/range sizes taken from the input, over the rest
// of the input as a file. Both must yield exactly the lines of a plain
// one-pass split (lines over the limit reported as skipped, with their
// offset and length), whatever the chunk size.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "source/chunk.h"
#include "source/line_chunker.h"
#include "source/range_reader.h"

namespace {

using pipescope::LineChunk;

/// One line of the file as a reader reports it.
struct Event {
  bool skipped = false;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;  // without '\n'
  bool newline = true;
  bool operator==(const Event&) const = default;
};

/// The reference: split the whole text at once.
std::vector<Event> reference(std::string_view text, std::size_t max_line) {
  std::vector<Event> events;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const bool newline = nl != std::string_view::npos;
    const std::size_t end = newline ? nl : text.size();
    events.push_back({end - pos > max_line, pos, end - pos, newline});
    pos = newline ? nl + 1 : text.size();
  }
  return events;
}

/// Appends the lines of `chunk`, checking each against the file's bytes.
/// A kept line longer than the limit is what the scanner would skip
/// (RangeFile only measures the last line of a range), so it counts as skipped.
void collect(const LineChunk& chunk, std::string_view file, std::size_t max_line,
             std::vector<Event>& events) {
  for (const auto& s : chunk.skipped_before) events.push_back({true, s.offset, s.length, s.has_newline});
  std::string_view text = chunk.text;
  std::uint64_t offset = chunk.file_offset;
  if (!text.empty()) {
    // The text must be the file's bytes at that offset.
    if (offset + text.size() > file.size() || file.substr(offset, text.size()) != text) std::abort();
  }
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const bool newline = nl != std::string_view::npos;
    if (!newline && !chunk.end_of_file) std::abort();  // only the file's last line lacks '\n'
    const std::size_t length = newline ? nl : text.size();
    events.push_back({length > max_line, offset, length, newline});
    const std::size_t used = newline ? nl + 1 : text.size();
    text.remove_prefix(used);
    offset += used;
  }
  if (chunk.skipped_after) {
    const auto& s = *chunk.skipped_after;
    events.push_back({true, s.offset, s.length, s.has_newline});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pipescope::fuzz::Cursor in(data, size);
  const std::size_t chunk_bytes = 1 + in.u16() % 6000;
  const std::size_t range_bytes = 1 + in.u16() % 6000;
  const std::uint8_t line_code = in.byte();
  // Mostly small limits (the interesting edges), sometimes the default.
  const std::size_t max_line = line_code == 255 ? std::size_t{1} << 20 : 1 + line_code;
  const std::string_view file = in.rest();

  static pipescope::fuzz::ScratchFile scratch("");
  const std::string& path = scratch.write(in.data(), in.size());
  const std::vector<Event> expected = reference(file, max_line);

  pipescope::ReadLimits limits;
  limits.chunk_bytes = chunk_bytes;
  limits.max_line_bytes = max_line;
  {
    pipescope::ChunkBuffer buffer(limits);
    pipescope::LineChunker chunker(path, limits);
    std::vector<Event> events;
    LineChunk chunk;
    while (chunker.next(buffer, chunk)) collect(chunk, file, max_line, events);
    if (events != expected) std::abort();
    if (chunker.bytes_read() != file.size()) std::abort();
  }
  {
    pipescope::ReadLimits range_limits = limits;
    range_limits.chunk_bytes = range_bytes;
    pipescope::ChunkBuffer buffer(range_limits);
    pipescope::RangeFile ranges(path);
    std::vector<Event> events;
    LineChunk chunk;
    for (std::uint64_t begin = 0; begin < ranges.size(); begin += range_bytes) {
      ranges.read_lines(begin, begin + range_bytes, range_limits, buffer, chunk);
      collect(chunk, file, max_line, events);
    }
    if (events != expected) std::abort();
  }
  return 0;
}
