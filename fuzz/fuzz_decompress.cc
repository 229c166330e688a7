// Fuzzes the decompressing sources (source/byte_stream.h) through the line
// chunker: gzip when the first byte is even, zstd when odd. Corrupt or
// truncated streams must end with error() set and everything before it kept;
// nothing may crash, hang, or allocate what a frame header merely claims.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "source/chunk.h"
#include "source/line_chunker.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static pipescope::fuzz::ScratchFile gz(".gz");
  static pipescope::fuzz::ScratchFile zst(".zst");
  const std::string& path = (data[0] & 1 ? zst : gz).write(data + 1, size - 1);
  pipescope::ReadLimits limits;
  limits.chunk_bytes = 4096;
  limits.max_line_bytes = 512;
  pipescope::ChunkBuffer buffer(limits);
  pipescope::LineChunker chunker(path, limits);
  pipescope::LineChunk chunk;
  std::uint64_t bytes = 0;
  while (chunker.next(buffer, chunk)) {
    bytes += chunk.text.size();
    for (const auto& s : chunk.skipped_before) bytes += s.length + (s.has_newline ? 1 : 0);
    if (bytes > chunker.bytes_read()) std::abort();
  }
  return 0;
}
