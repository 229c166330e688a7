#include "export/atomic_file.h"

#include <utility>

namespace pipescope {

AtomicFile::AtomicFile(std::string path, std::size_t block_size)
    : output_(std::move(path)), block_size_(block_size == 0 ? 1 : block_size) {
  buffer_.reserve(block_size_);
}

void AtomicFile::append(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > block_size_) {
    flush();
    // A piece bigger than a block skips the copy.
    if (bytes.size() >= block_size_) {
      output_.write(bytes.data(), bytes.size());
      return;
    }
  }
  buffer_.append(bytes.data(), bytes.data() + bytes.size());
}

void AtomicFile::write_through(std::string_view bytes) {
  if (bytes.size() < kDirectBytes) {
    append(bytes);
    return;
  }
  flush();
  output_.write(bytes.data(), bytes.size());
}

void AtomicFile::flush() {
  if (buffer_.size() == 0) return;
  output_.write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::commit() {
  flush();
  output_.commit();
  buffer_ = fmt::memory_buffer();
}

}  // namespace pipescope
