// Follows files that another process is still appending to (`pipescope
// watch`): each look reads only the bytes appended since the last one, from a
// kept offset, and hands out whole lines only, so a line still being written
// is never parsed; its start waits for the next look. A file that shrank
// (truncated, as copytruncate rotation does), whose inode changed (replaced
// by a new file under the same name), or whose last bytes handed out are no
// longer there (truncated and written past the old size between two looks)
// is read again from its start, and the look says so.
//
// A gzip or zstd file (`.gz`, `.zst`) that is still being written is followed
// the same way: the appended compressed bytes go through a decoder that keeps
// its state between looks (source/byte_stream.h), and only whole lines of the
// decompressed text are handed out. The offset and the checks for a
// truncated or replaced file are on the compressed bytes; a restart begins a
// fresh decoder. Corrupt compressed data stops the file (error says where)
// until it is truncated or replaced.
//
//   FileFollower follower("logs/workerlog.0");
//   FollowedBytes got = follower.poll();
//   if (got.restarted) ...          // rotation: the text starts a new file
//   use(got.lines);                  // whole lines, each ending in '\n'
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "source/byte_stream.h"

namespace pipescope {

struct FollowedBytes {
  /// Whole lines appended since the last look, each with its '\n'.
  std::string lines;
  /// The file was truncated or replaced since the last look: `lines` come
  /// from the start of the new content.
  bool restarted = false;
  /// Bytes held back: the start of a line without its '\n' yet.
  std::uint64_t pending = 0;
  /// The file cannot be opened or read now (it may appear later); errno text.
  /// Or its compressed data is corrupt (`corrupt` is set; what and where).
  std::string error;
  bool corrupt = false;
};

class FileFollower {
 public:
  /// `max_bytes`: the most read in one look (the rest waits for the next).
  explicit FileFollower(std::string path, std::uint64_t max_bytes = std::uint64_t{64} << 20);
  ~FileFollower();
  FileFollower(FileFollower&&) noexcept;
  FileFollower& operator=(FileFollower&&) noexcept;

  /// Reads what was appended since the last look. Never throws.
  FollowedBytes poll();

  const std::string& path() const { return path_; }
  /// Offset of the first byte not yet handed out (a partial line starts here);
  /// of a compressed file, the first compressed byte not yet decoded.
  std::uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  std::uint64_t max_bytes_;
  std::uint64_t offset_ = 0;
  /// Whether the bytes just before offset_ are still the ones handed out.
  bool tail_unchanged(int fd) const;
  static constexpr std::size_t kTailBytes = 64;

  /// The compressed bytes just read: whole lines of their text to `out`.
  void decode(std::string_view bytes, FollowedBytes& out);

  Compression compression_ = Compression::none;
  std::unique_ptr<StreamDecoder> decoder_;
  std::string corrupt_;  // why the decoder stopped
  std::string partial_;  // decompressed text after the last '\n' handed out
  bool seen_ = false;
  std::string tail_;  // the last (up to kTailBytes) bytes handed out
  dev_t dev_ = 0;
  ino_t inode_ = 0;
};

}  // namespace pipescope
