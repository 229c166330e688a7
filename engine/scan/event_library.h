// The log-event library: the patterns that find lines telling what else
// happened in a training run (docs/guide.md, "Log events"; the shipped
// library is data/log_events.patterns, compiled into the binary). The file
// format, one entry per `[id]` block:
//
//   # a comment
//   [nccl_warn]
//   category = nccl
//   severity = warning
//   description = NCCL printed a warning.
//   regex = NCCL WARN (?P<message>.+)
//   source = NVIDIA/nccl src/debug.cc (ncclDebugLog)
//   example = node3:22317:22410 [3] NCCL WARN Call to ibv_reg_mr failed
//   counter_example = ...
//   captures_expected = message=Call to ibv_reg_mr failed
//
// Keys: `category` (lower_snake_case), `severity` (info, warning, error) and
// `regex` are required; `description`, `source`, `example`,
// `counter_example` (both repeatable) and `captures_expected` are optional.
// A regex is matched against one line without its newline, in the subset
// Hyperscan and RE2 share (no backreferences or lookaround); named captures
// are `(?P<name>...)`.
//
// Guarantees: a parse either returns every entry of the text or throws
// EventLibraryError naming the origin, the 1-based line and what was wrong.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

struct EventPattern {
  std::string id;
  std::string category;
  std::string severity;
  std::string description;
  std::string regex;
  std::string source;
  std::vector<std::string> examples;
  std::vector<std::string> counter_examples;
  /// `name=value, name=value`: what the captures take on the first example.
  std::string captures_expected;
  /// Where the entry was read: `FILE:LINE` of its `[id]` line.
  std::string origin;
};

class EventLibraryError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct EventLibrary {
  std::vector<EventPattern> patterns;

  /// Adds `more`'s entries: an entry whose id is already here replaces it in
  /// place, a new id is appended.
  void add(EventLibrary more);
  /// The entry with this id, or null.
  const EventPattern* find(std::string_view id) const;
};

/// Parses library text; `origin` names it in errors (a path, `built-in`).
EventLibrary parse_event_library(std::string_view text, std::string_view origin);

/// The shipped library's text (data/log_events.patterns at build time).
std::string_view builtin_event_library_text();

/// The shipped library, parsed (the text is checked by the tests, so this
/// does not throw).
EventLibrary builtin_event_library();

/// Splits `captures_expected` text into (name, value) pairs; throws
/// EventLibraryError for an item without `=`.
std::vector<std::pair<std::string, std::string>> parse_expected_captures(std::string_view text);

}  // namespace pipescope
