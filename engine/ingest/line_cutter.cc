#include "ingest/line_cutter.h"

#include <algorithm>
#include <cstring>

namespace pipescope {

LineCutter::LineCutter(std::size_t max_line_bytes)
    : max_line_bytes_(std::max<std::size_t>(max_line_bytes, 1)) {}

void LineCutter::cut(const ReadChunk& chunk, Sink& sink) {
  std::string_view view(chunk.data(), chunk.size);
  std::uint64_t offset = chunk.offset;
  if (skipping_) {
    const void* newline = std::memchr(view.data(), '\n', view.size());
    if (newline == nullptr) {
      skipped_.length += view.size();
      return;
    }
    const std::size_t consumed = static_cast<const char*>(newline) - view.data() + 1;
    skipped_.length += consumed - 1;
    sink.skipped(skipped_);
    skipping_ = false;
    view.remove_prefix(consumed);
    offset += consumed;
  }
  const std::size_t last_newline = view.rfind('\n');
  if (last_newline == std::string_view::npos) {  // no line ends here: all of it is carried
    if (carry_.empty()) carry_offset_ = offset;
    if (carry_.size() + view.size() > max_line_bytes_) {
      skipping_ = true;
      skipped_ = {carry_offset_, carry_.size() + view.size(), true, false};
      carry_.clear();
    } else {
      carry_.append(view);
    }
    return;
  }
  if (!carry_.empty()) {  // the carried line ends here: handed out alone, padded
    const std::size_t first = view.find('\n') + 1;
    carry_.append(view.substr(0, first));
    const std::size_t size = carry_.size();
    carry_.append(ReadChunk::kPadding, ' ');
    sink.lines(std::string_view(carry_.data(), size), carry_offset_, carry_.data() + carry_.size(),
               false);
    carry_.clear();
    view.remove_prefix(first);
    offset += first;
  }
  const std::size_t complete = view.empty() ? 0 : view.rfind('\n') + 1;
  if (complete > 0) {
    sink.lines(view.substr(0, complete), offset, chunk.data() + chunk.size + ReadChunk::kPadding,
               false);
  }
  const std::string_view tail = view.substr(complete);
  if (tail.size() > max_line_bytes_) {
    skipping_ = true;
    skipped_ = {offset + complete, tail.size(), true, false};
  } else if (!tail.empty()) {
    carry_.assign(tail);
    carry_offset_ = offset + complete;
  }
}

void LineCutter::finish(Sink& sink) {
  if (skipping_) {  // the over-long line is the file's last
    skipped_.has_newline = false;
    sink.skipped(skipped_);
    skipping_ = false;
    return;
  }
  if (carry_.empty()) return;
  const std::size_t size = carry_.size();
  carry_.append(ReadChunk::kPadding, ' ');
  sink.lines(std::string_view(carry_.data(), size), carry_offset_, carry_.data() + carry_.size(),
             true);
  carry_.clear();
}

}  // namespace pipescope
