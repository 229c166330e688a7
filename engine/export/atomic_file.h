// A buffered, fmt-formatting writer of an output file that readers only ever
// see whole: io/atomic_output.h's temporary file and rename, with a block
// buffer the exporters format into. A writer destroyed without commit()
// removes its temporary file, so a failed or interrupted export never leaves
// a truncated summary behind.
//
// Usage:
//   ensure_output_dir(out_dir);
//   AtomicFile file(out_dir + "/summary.json");
//   fmt::format_to(std::back_inserter(file.buffer()), "{}", 42);
//   file.flush_if_full();           // writers call this between records
//   file.append("\n");
//   file.commit();                  // flush, close, rename
//
// A small file written at once (a report, diff.json, a .prom file) needs no
// buffer: write_file_atomically(path, text) (io/atomic_output.h).
//
// Every failure throws std::system_error whose what() reads
// "cannot write /x/summary.json: No space left on device".
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "io/atomic_output.h"

namespace pipescope {

using io::ensure_output_dir;
using io::write_file_atomically;

class AtomicFile {
 public:
  /// Bytes buffered before a block is written with write(2).
  static constexpr std::size_t kDefaultBlock = std::size_t{1} << 20;

  /// Opens a fresh temporary file next to `path`. The folder must exist.
  explicit AtomicFile(std::string path, std::size_t block_size = kDefaultBlock);
  AtomicFile(AtomicFile&& other) noexcept = default;
  AtomicFile& operator=(AtomicFile&& other) noexcept = default;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void append(std::string_view bytes);
  void append(char c) {
    buffer_.push_back(c);
    flush_if_full();
  }

  /// Appends `bytes` like append(), but a piece of kDirectBytes or more is
  /// written straight to the file after the buffered bytes, without a copy.
  void write_through(std::string_view bytes);
  static constexpr std::size_t kDirectBytes = std::size_t{64} << 10;

  /// The pending bytes; format into it directly, then call flush_if_full().
  fmt::memory_buffer& buffer() { return buffer_; }
  /// Writes the buffer out once it holds a whole block.
  void flush_if_full() {
    if (buffer_.size() >= block_size_) flush();
  }
  /// Writes every buffered byte to the temporary file.
  void flush();

  /// Flushes, closes and renames the temporary file over the destination.
  /// After commit() the object only holds the path.
  void commit();

  /// The destination path.
  const std::string& path() const { return output_.path(); }
  /// The temporary file's path (empty once committed or moved from).
  const std::string& temp_path() const { return output_.temp_path(); }

 private:
  io::AtomicOutput output_;
  std::size_t block_size_;
  fmt::memory_buffer buffer_;
};

}  // namespace pipescope
