// A small streaming JSON writer for the exporters. It formats straight into a
// byte buffer (an AtomicFile's, flushed in blocks, or a plain memory buffer)
// so a trace of millions of events never exists as a tree in memory.
//
// Strings are always emitted as valid JSON: job types and paths come from
// arbitrary log bytes, so every byte that is not part of a valid UTF-8
// sequence becomes U+FFFD and control characters are escaped.
//
// Usage:
//   JsonWriter w(file, JsonStyle::pretty());
//   w.begin_object();
//   w.key("jobs"); w.value(std::int64_t{12});
//   w.key("devices"); w.begin_array();
//   w.begin_object(/*one_line=*/true); ... w.end_object();
//   w.end_array();
//   w.end_object();
// Misuse (a value where a key is due, unbalanced ends) is a programming
// error and is not diagnosed.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "export/atomic_file.h"

namespace pipescope {

struct JsonStyle {
  /// Spaces per nesting level; negative: no line breaks at all.
  int indent = -1;
  /// ", " and ": " instead of "," and ":".
  bool spaces = false;

  static JsonStyle compact() { return {-1, false}; }
  static JsonStyle pretty() { return {2, true}; }
};

/// Appends `text` as a quoted JSON string (escaped, invalid UTF-8 replaced).
void append_json_string(fmt::memory_buffer& out, std::string_view text);
/// Appends a double with the shortest text that reads back to the same value,
/// always with a '.' or exponent so readers see a float; NaN and infinities
/// become `null`.
void append_json_double(fmt::memory_buffer& out, double value);

class JsonWriter {
 public:
  /// Writes into `file`'s buffer, letting it write blocks out as they fill.
  JsonWriter(AtomicFile& file, JsonStyle style);
  /// Writes into `buffer` only (tests, small documents).
  JsonWriter(fmt::memory_buffer& buffer, JsonStyle style);
  /// Writes into `buffer` the elements of an array that sits `depth`
  /// containers deep in a document of `style` (the array counted; the
  /// top-level object's array has depth 2), exactly as they follow its '['
  /// there: the first with no separator before it. A piece another writer
  /// splices in with raw_elements(); nothing but elements goes in (no
  /// end_array() of that array). `depth` >= 1.
  JsonWriter(fmt::memory_buffer& buffer, JsonStyle style, std::size_t depth);

  /// `one_line`: the container and everything inside it stay on one line.
  void begin_object(bool one_line = false) { open('{', one_line); }
  void end_object() { close('}'); }
  void begin_array(bool one_line = false) { open('[', one_line); }
  void end_array() { close(']'); }

  void key(std::string_view name);

  void value(std::int64_t v);
  void value(std::uint64_t v);
  void value(int v) { value(static_cast<std::int64_t>(v)); }
  void value(unsigned v) { value(static_cast<std::uint64_t>(v)); }
  void value(double v);
  void value(bool v);
  void value(std::string_view v);
  void value(const char* v) { value(std::string_view(v)); }
  void null();
  /// Emits already valid JSON text (e.g. a preformatted number) as a value.
  void raw_value(std::string_view json);
  /// Splices `piece` into the open array: elements written by the
  /// depth-constructed writer at this array's depth() and style. A separator
  /// goes first when the array already has an element; an empty piece
  /// writes nothing. So the pieces of consecutive runs of elements, spliced
  /// in order, write what writing the elements here would.
  void raw_elements(std::string_view piece);

  /// The containers open (the one being written in counted).
  std::size_t depth() const { return stack_.size(); }

  /// key + value in one call.
  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

 private:
  struct Frame {
    bool one_line = false;
    bool empty = true;
  };

  void open(char bracket, bool one_line);
  void close(char bracket);
  // Separator and line break before an element (a key, or an array value).
  void before_value();
  void newline(std::size_t depth);
  void maybe_flush() {
    if (file_ != nullptr) file_->flush_if_full();
  }

  fmt::memory_buffer* out_;
  AtomicFile* file_ = nullptr;
  JsonStyle style_;
  std::vector<Frame> stack_;
  bool after_key_ = false;
};

}  // namespace pipescope
