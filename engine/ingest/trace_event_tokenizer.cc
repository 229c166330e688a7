#include "ingest/trace_event_tokenizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

namespace pipescope {

namespace {

constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxKeyBytes = 64;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

TraceEventTokenizer::TraceEventTokenizer(std::vector<std::string> keys, EventCallback on_event,
                                         ValueCallback on_value, std::size_t max_event_bytes)
    : keys_(std::move(keys)),
      on_event_(std::move(on_event)),
      on_value_(std::move(on_value)),
      max_event_bytes_(max_event_bytes) {}

void TraceEventTokenizer::fail(std::uint64_t offset, std::string message) {
  if (!error_.empty()) return;
  error_ = std::move(message);
  error_offset_ = offset;
}

void TraceEventTokenizer::append_carry(const char* data, std::size_t size) {
  if (carry_.size() < carry_size_ + size + kPadding) {
    carry_.resize(std::max(carry_.size() * 2, carry_size_ + size + kPadding));
  }
  std::memcpy(carry_.data() + carry_size_, data, size);
  carry_size_ += size;
  std::memset(carry_.data() + carry_size_, ' ', kPadding);
}

std::string_view TraceEventTokenizer::region_view(const char* data, std::size_t end) {
  if (!region_in_carry_) return {data + region_begin_, end - region_begin_};
  append_carry(data, end);
  return {carry_.data(), carry_size_};
}

void TraceEventTokenizer::feed(const char* data, std::size_t size) {
  if (!error_.empty() || size == 0) {
    consumed_ += size;
    return;
  }
  scan(data, size);
  consumed_ += size;
  if (!error_.empty()) return;
  const bool open = region_ == Region::event || region_ == Region::value;
  if (!open) return;
  // Keep the unfinished region's bytes for the next chunk.
  const std::size_t kept = region_in_carry_ ? carry_size_ + size : size - region_begin_;
  if (kept > (region_ == Region::event ? max_event_bytes_ : kMaxValueBytes)) {
    if (region_ == Region::event) ++oversized_;
    region_ = Region::skipped;
    region_in_carry_ = false;
    carry_size_ = 0;
    return;
  }
  if (region_in_carry_) {
    append_carry(data, size);
  } else {
    carry_size_ = 0;
    append_carry(data + region_begin_, size - region_begin_);
    region_in_carry_ = true;
  }
}

void TraceEventTokenizer::close_value(const char* data, std::size_t end) {
  if (region_ == Region::value && on_value_) {
    std::string_view value = region_view(data, end);
    while (!value.empty() && is_space(value.back())) value.remove_suffix(1);
    on_value_(value_key_, value);
  }
  region_ = Region::none;
  region_in_carry_ = false;
  carry_size_ = 0;
}

namespace {

// Bytes that change the tokenizer's state outside a string.
struct Structural {
  bool table[256] = {};
  constexpr Structural() {
    for (const char c : {'"', '{', '}', '[', ']', ',', ':'})
      table[static_cast<unsigned char>(c)] = true;
  }
};
constexpr Structural kStructural;

}  // namespace

void TraceEventTokenizer::scan(const char* data, std::size_t size) {
  const std::uint64_t base = consumed_;
  for (std::size_t i = 0; i < size; ++i) {
    if (in_string_) {
      if (escape_) {
        escape_ = false;
        continue;
      }
      if (!key_capture_) {
        // The rest of the string at once: up to its quote or a backslash.
        while (i < size && data[i] != '"' && data[i] != '\\') ++i;
        if (i == size) break;
        if (data[i] == '\\') {
          escape_ = true;
        } else {
          in_string_ = false;
        }
        continue;
      }
      const char c = data[i];
      if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        key_capture_ = false;
      } else if (key_.size() <= kMaxKeyBytes) {
        key_.push_back(c);
      }
      continue;
    }
    if (done_) {
      // Whatever follows the document is ignored (a second document, junk).
      return;
    }
    if (!awaiting_value_) {
      while (i < size && !kStructural.table[static_cast<unsigned char>(data[i])]) ++i;
      if (i == size) break;
    }
    const char c = data[i];
    if (is_space(c)) continue;
    if (awaiting_value_) {
      awaiting_value_ = false;
      if (c == '[' && key_ == "traceEvents") {
        events_depth_ = 2;
      } else if (std::find(keys_.begin(), keys_.end(), key_) != keys_.end()) {
        region_ = Region::value;
        region_begin_ = i;
        region_offset_ = base + i;
        value_key_ = key_;
      }
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1 && top_object_ && expect_key_) {
          key_capture_ = true;
          expect_key_ = false;
          key_.clear();
        }
        break;
      case '{':
      case '[':
        if (depth_ >= kMaxDepth) {
          fail(base + i, fmt::format("nesting deeper than {} levels", kMaxDepth));
          return;
        }
        if (depth_ == 0) {
          top_object_ = c == '{';
          expect_key_ = top_object_;
          if (!top_object_) events_depth_ = 1;
        }
        if (c == '{' && events_depth_ > 0 && depth_ == events_depth_ && region_ == Region::none) {
          region_ = Region::event;
          region_begin_ = i;
          region_offset_ = base + i;
        }
        stack_.push_back(c);
        ++depth_;
        break;
      case '}':
      case ']': {
        const char open = c == '}' ? '{' : '[';
        if (depth_ == 0 || stack_.back() != open) {
          fail(base + i, fmt::format("unexpected '{}'", c));
          return;
        }
        stack_.pop_back();
        --depth_;
        if (depth_ == events_depth_ && events_depth_ > 0) {
          if (region_ == Region::event) {
            ++events_;
            on_event_(region_view(data, i + 1), region_offset_);
            region_in_carry_ = false;
            carry_size_ = 0;
            if (!error_.empty()) return;
          }
          if (region_ == Region::event || region_ == Region::skipped) region_ = Region::none;
        } else if (events_depth_ > 0 && depth_ == events_depth_ - 1) {
          events_depth_ = 0;  // the events array closed
        }
        if (depth_ == 0) {
          if (region_ == Region::value || region_ == Region::skipped) close_value(data, i);
          done_ = true;
        }
        break;
      }
      case ',':
        if (depth_ == 1 && top_object_) {
          if (region_ == Region::value || region_ == Region::skipped) close_value(data, i);
          expect_key_ = true;
        }
        break;
      case ':':
        if (depth_ == 1 && top_object_) awaiting_value_ = true;
        break;
      default:
        break;
    }
  }
}

void TraceEventTokenizer::finish() {
  if (!error_.empty()) return;
  if (consumed_ == 0) {
    fail(0, "the file is empty");
  } else if (depth_ == 0 && !done_) {
    fail(consumed_, "no JSON object or array in the file");
  } else if (!done_) {
    const std::uint64_t where = region_ == Region::event ? region_offset_ : consumed_;
    fail(where, fmt::format("the JSON ends early (cut off at byte {}): every event before byte {} "
                            "was read",
                            consumed_, where));
  }
}

}  // namespace pipescope
