// A sequential source of bytes: a plain file descriptor (pipes included), or
// a gzip or zstd file decompressed on the fly. The line chunker reads through
// this interface, so compressed logs go through the same scanning as plain ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace pipescope {

enum class Compression { none, gzip, zstd };

/// From the file name: `.gz` is gzip, `.zst` is zstd, anything else none.
Compression compression_of(std::string_view path);

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  /// Reads up to `capacity` bytes (of decompressed data). Returns 0 at the end
  /// of the data, and also when the data stops being readable: then error()
  /// says why (a corrupt or truncated compressed stream). Everything returned
  /// before is good data. Throws std::system_error on an I/O error.
  virtual std::size_t read(char* destination, std::size_t capacity) = 0;

  /// Empty, or why the stream ended early (with the compressed byte offset).
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

/// Opens `path` as the stream its name implies. Throws std::system_error
/// (with the path) when it cannot be opened.
std::unique_ptr<ByteStream> open_byte_stream(const std::string& path);

}  // namespace pipescope
