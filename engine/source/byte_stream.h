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

/// Decompresses a gzip (one or several members) or zstd (any number of
/// frames) stream fed in pieces: the bytes of a file read in chunks, or
/// appended to a file still being written (source/file_follower.h). Keeps its
/// state between calls, so a piece may end anywhere.
class StreamDecoder {
 public:
  /// A decoder for `compression` (not Compression::none).
  static std::unique_ptr<StreamDecoder> create(Compression compression);
  virtual ~StreamDecoder() = default;

  /// Decompresses from `in` (advanced past the bytes consumed) into
  /// [out, out + capacity); returns the bytes written. Stops when the output
  /// is full, when no progress is possible without more input, or on corrupt
  /// data (then error() says what, and the decoder stays stopped).
  virtual std::size_t decode(std::string_view& in, char* out, std::size_t capacity) = 0;

  /// The last call filled the output: more may come without more input.
  bool output_pending() const { return output_pending_; }
  /// The bytes consumed so far end inside a gzip member or zstd frame.
  bool inside() const { return inside_; }
  /// Empty, or what is wrong with the data ("corrupt gzip data: ...").
  const std::string& error() const { return error_; }
  /// "gzip" or "zstd".
  virtual const char* name() const = 0;

 protected:
  bool output_pending_ = false;
  bool inside_ = false;
  std::string error_;
};

/// Opens `path` as the stream its name implies. Throws std::system_error
/// (with the path) when it cannot be opened.
std::unique_ptr<ByteStream> open_byte_stream(const std::string& path);

}  // namespace pipescope
