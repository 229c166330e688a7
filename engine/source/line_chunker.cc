#include "source/line_chunker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

namespace pipescope {

LineChunker::LineChunker(std::string path, const ReadLimits& limits)
    : path_(std::move(path)), limits_(limits) {
  limits_.chunk_bytes = std::max<std::size_t>(limits_.chunk_bytes, 1);
  limits_.max_line_bytes = std::max<std::size_t>(limits_.max_line_bytes, 1);
  stream_ = open_byte_stream(path_);
}

LineChunker::~LineChunker() = default;

std::size_t LineChunker::read_full(char* destination, std::size_t capacity) {
  std::size_t filled = 0;
  while (filled < capacity) {
    const std::size_t n = stream_->read(destination + filled, capacity - filled);
    if (n == 0) break;
    filled += n;
  }
  offset_ += filled;
  return filled;
}

void LineChunker::watch_skipped(std::string_view bytes) {
  const std::string_view watched = limits_.watched;
  if (watched.empty() || skipped_.held_watched) return;
  // The watched string may begin in an earlier piece: its tail and this
  // piece's head are searched together.
  std::string seam = watch_tail_;
  seam.append(bytes.substr(0, std::min(bytes.size(), watched.size() - 1)));
  if (seam.find(watched) != std::string::npos || bytes.find(watched) != std::string_view::npos) {
    skipped_.held_watched = true;
    return;
  }
  watch_tail_.append(bytes.substr(bytes.size() - std::min(bytes.size(), watched.size() - 1)));
  if (watch_tail_.size() > watched.size() - 1) {
    watch_tail_.erase(0, watch_tail_.size() - (watched.size() - 1));
  }
}

bool LineChunker::next(ChunkBuffer& buffer, LineChunk& chunk) {
  chunk.skipped_before.clear();
  while (true) {
    if (end_of_file_) {
      if (pending_skipped_.empty()) return false;
      chunk.text = {};
      chunk.file_offset = offset_;
      chunk.end_of_file = true;
      chunk.skipped_before.swap(pending_skipped_);
      return true;
    }
    // The carry is never longer than max_line_bytes <= carry_capacity.
    char* const read_area = buffer.read_area();
    char* const begin = read_area - carry_.size();
    std::memcpy(begin, carry_.data(), carry_.size());
    const std::uint64_t begin_offset = offset_ - carry_.size();
    const std::size_t n = read_full(read_area, std::min(limits_.chunk_bytes, buffer.chunk_bytes()));
    carry_.clear();
    std::string_view view(begin, static_cast<std::size_t>(read_area + n - begin));
    std::uint64_t view_offset = begin_offset;

    if (skipping_) {
      const void* newline = std::memchr(view.data(), '\n', view.size());
      if (newline == nullptr) {
        watch_skipped(view);
        skipped_.length += view.size();
        if (n == 0) {  // the over-long line is the file's last
          end_of_file_ = true;
          skipping_ = false;
          skipped_.has_newline = false;
          pending_skipped_.push_back(skipped_);
        }
        continue;
      }
      const std::size_t consumed = static_cast<const char*>(newline) - view.data() + 1;
      watch_skipped(view.substr(0, consumed - 1));
      skipped_.length += consumed - 1;
      pending_skipped_.push_back(skipped_);
      skipping_ = false;
      view.remove_prefix(consumed);
      view_offset += consumed;
    }

    if (n == 0) {
      end_of_file_ = true;
      if (view.empty() && pending_skipped_.empty()) return false;
      chunk.text = view;
      chunk.file_offset = view_offset;
      chunk.end_of_file = true;
      chunk.skipped_before.swap(pending_skipped_);
      return true;
    }

    const std::size_t last_newline = view.rfind('\n');
    const std::size_t complete = last_newline == std::string_view::npos ? 0 : last_newline + 1;
    const std::string_view tail = view.substr(complete);
    if (tail.size() > limits_.max_line_bytes) {
      skipping_ = true;
      skipped_ = {view_offset + complete, tail.size(), true, false};
      watch_tail_.clear();
      watch_skipped(tail);
    } else {
      carry_.assign(tail);
    }
    if (complete == 0 && pending_skipped_.empty()) continue;  // need more bytes for one line
    chunk.text = view.substr(0, complete);
    chunk.file_offset = view_offset;
    chunk.end_of_file = false;
    chunk.skipped_before.swap(pending_skipped_);
    return true;
  }
}

}  // namespace pipescope
