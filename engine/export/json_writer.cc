#include "export/json_writer.h"

#include <cmath>
#include <iterator>

namespace pipescope {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence at p (RFC 3629, Table 3-7 of the
// Unicode standard: no overlong forms, no surrogates, nothing above
// U+10FFFF), or 0 when the byte at p does not start one.
std::size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  const auto left = static_cast<std::size_t>(end - p);
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && is_continuation(p[1]) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !is_continuation(p[2])) return 0;
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return p[1] >= lo && p[1] <= hi ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !is_continuation(p[2]) || !is_continuation(p[3])) return 0;
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return p[1] >= lo && p[1] <= hi ? 4 : 0;
  }
  return 0;
}

void append(fmt::memory_buffer& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

void append_escape(fmt::memory_buffer& out, unsigned char c) {
  switch (c) {
    case '"':
      append(out, "\\\"");
      return;
    case '\\':
      append(out, "\\\\");
      return;
    case '\b':
      append(out, "\\b");
      return;
    case '\f':
      append(out, "\\f");
      return;
    case '\n':
      append(out, "\\n");
      return;
    case '\r':
      append(out, "\\r");
      return;
    case '\t':
      append(out, "\\t");
      return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(escaped, escaped + 6);
    }
  }
}

}  // namespace

void append_json_string(fmt::memory_buffer& out, std::string_view text) {
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  // Plain runs are copied in one piece: most names need no escaping at all.
  const auto* run = p;
  while (p < end) {
    const unsigned char c = *p;
    // DEL is escaped too: some trace readers reject every iscntrl() byte.
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      if (const auto n = utf8_sequence_length(p, end); n != 0) {
        p += n;
        continue;
      }
    }
    out.append(reinterpret_cast<const char*>(run), reinterpret_cast<const char*>(p));
    if (c >= 0x80) {
      append(out, kReplacement);
    } else {
      append_escape(out, c);
    }
    run = ++p;
  }
  out.append(reinterpret_cast<const char*>(run), reinterpret_cast<const char*>(end));
  out.push_back('"');
}

void append_json_double(fmt::memory_buffer& out, double value) {
  if (!std::isfinite(value)) {
    append(out, "null");
    return;
  }
  const std::size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", value);
  // fmt prints 1.0 as "1"; keep the float visible to readers.
  for (std::size_t i = start; i < out.size(); ++i) {
    if (out[i] == '.' || out[i] == 'e') return;
  }
  append(out, ".0");
}

JsonWriter::JsonWriter(AtomicFile& file, JsonStyle style)
    : out_(&file.buffer()), file_(&file), style_(style) {}

JsonWriter::JsonWriter(fmt::memory_buffer& buffer, JsonStyle style)
    : out_(&buffer), style_(style) {}

JsonWriter::JsonWriter(fmt::memory_buffer& buffer, JsonStyle style, std::size_t depth)
    : out_(&buffer), style_(style) {
  // The containers around the array as open() would have left them: only
  // their count (the indentation) and the array's own frame matter, and
  // these writers make multi-line containers only (the summary's step lists).
  stack_.assign(depth, Frame{style_.indent < 0, true});
}

void JsonWriter::newline(std::size_t depth) {
  out_->push_back('\n');
  for (std::size_t i = 0, n = depth * static_cast<std::size_t>(style_.indent); i < n; ++i) {
    out_->push_back(' ');
  }
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) return;
  Frame& frame = stack_.back();
  if (!frame.empty) {
    out_->push_back(',');
    if (frame.one_line && style_.spaces) out_->push_back(' ');
  }
  if (!frame.one_line) newline(stack_.size());
  frame.empty = false;
}

void JsonWriter::open(char bracket, bool one_line) {
  before_value();
  out_->push_back(bracket);
  const bool parent_one_line = !stack_.empty() && stack_.back().one_line;
  stack_.push_back({one_line || parent_one_line || style_.indent < 0, true});
}

void JsonWriter::close(char bracket) {
  const Frame frame = stack_.back();
  stack_.pop_back();
  if (!frame.one_line && !frame.empty) newline(stack_.size());
  out_->push_back(bracket);
  maybe_flush();
}

void JsonWriter::key(std::string_view name) {
  before_value();
  append_json_string(*out_, name);
  out_->push_back(':');
  if (style_.spaces) out_->push_back(' ');
  after_key_ = true;
}

void JsonWriter::value(std::int64_t v) {
  before_value();
  const fmt::format_int text(v);
  out_->append(text.data(), text.data() + text.size());
  maybe_flush();
}

void JsonWriter::value(std::uint64_t v) {
  before_value();
  const fmt::format_int text(v);
  out_->append(text.data(), text.data() + text.size());
  maybe_flush();
}

void JsonWriter::value(double v) {
  before_value();
  append_json_double(*out_, v);
  maybe_flush();
}

void JsonWriter::value(bool v) { raw_value(v ? "true" : "false"); }

void JsonWriter::value(std::string_view v) {
  before_value();
  append_json_string(*out_, v);
  maybe_flush();
}

void JsonWriter::null() { raw_value("null"); }

void JsonWriter::raw_elements(std::string_view piece) {
  if (piece.empty()) return;
  Frame& frame = stack_.back();
  // The piece begins as the array's first element would (its line break,
  // no separator): only the separator between pieces is the array's to add.
  if (!frame.empty) {
    out_->push_back(',');
    if (frame.one_line && style_.spaces) out_->push_back(' ');
  }
  frame.empty = false;
  if (file_ != nullptr) {
    file_->write_through(piece);  // a large piece goes out without a copy
  } else {
    append(*out_, piece);
  }
}

void JsonWriter::raw_value(std::string_view json) {
  before_value();
  append(*out_, json);
  maybe_flush();
}

}  // namespace pipescope
