#include "scan/event_library.h"

#include <algorithm>
#include <string>
#include <utility>

namespace pipescope {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool snake_case(std::string_view s) {
  if (s.empty() || !(s.front() >= 'a' && s.front() <= 'z')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

[[noreturn]] void fail(std::string_view origin, std::size_t line, const std::string& what) {
  throw EventLibraryError(std::string(origin) + ":" + std::to_string(line) + ": " + what);
}

void check_complete(const EventPattern& p, std::string_view origin, std::size_t line) {
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"category", &p.category},
        {"severity", &p.severity},
        {"regex", &p.regex}}) {
    if (value->empty()) fail(origin, line, "entry [" + p.id + "] has no " + key);
  }
}

}  // namespace

void EventLibrary::add(EventLibrary more) {
  for (EventPattern& p : more.patterns) {
    const auto at = std::find_if(patterns.begin(), patterns.end(),
                                 [&](const EventPattern& q) { return q.id == p.id; });
    if (at != patterns.end()) {
      *at = std::move(p);
    } else {
      patterns.push_back(std::move(p));
    }
  }
}

const EventPattern* EventLibrary::find(std::string_view id) const {
  for (const EventPattern& p : patterns) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

EventLibrary parse_event_library(std::string_view text, std::string_view origin) {
  EventLibrary library;
  EventPattern* open = nullptr;
  std::size_t open_line = 0;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      if (line.back() != ']') fail(origin, line_number, "an entry's line is `[id]`");
      const std::string_view id = trim(line.substr(1, line.size() - 2));
      if (!snake_case(id)) {
        fail(origin, line_number,
             "entry id '" + std::string(id) + "' is not lower_snake_case (a-z, 0-9, _)");
      }
      if (open != nullptr) check_complete(*open, origin, open_line);
      for (const EventPattern& p : library.patterns) {
        if (p.id == id) fail(origin, line_number, "entry [" + std::string(id) + "] given twice");
      }
      library.patterns.emplace_back();
      open = &library.patterns.back();
      open->id = std::string(id);
      open->origin = std::string(origin) + ":" + std::to_string(line_number);
      open_line = line_number;
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      fail(origin, line_number, "expected `key = value`, `[id]` or a `#` comment");
    }
    if (open == nullptr) fail(origin, line_number, "a key before the first `[id]`");
    const std::string_view key = trim(line.substr(0, eq));
    // Only the blanks after `=` are dropped: a regex may end in a space.
    std::string_view value = line.substr(eq + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    std::string_view value_end = raw.substr(raw.find('=') + 1);
    while (!value_end.empty() && (value_end.front() == ' ' || value_end.front() == '\t')) {
      value_end.remove_prefix(1);
    }
    if (!value_end.empty() && value_end.back() == '\r') value_end.remove_suffix(1);
    if (value.empty()) fail(origin, line_number, "`" + std::string(key) + "` has no value");
    auto set_once = [&](std::string& field) {
      if (!field.empty()) {
        fail(origin, line_number,
             "entry [" + open->id + "] gives `" + std::string(key) + "` twice");
      }
      field = std::string(value);
    };
    if (key == "category") {
      if (!snake_case(value)) {
        fail(origin, line_number, "category '" + std::string(value) + "' is not lower_snake_case");
      }
      set_once(open->category);
    } else if (key == "severity") {
      if (value != "info" && value != "warning" && value != "error") {
        fail(origin, line_number,
             "severity '" + std::string(value) + "' is not one of info, warning, error");
      }
      set_once(open->severity);
    } else if (key == "regex") {
      if (!open->regex.empty())
        fail(origin, line_number, "entry [" + open->id + "] gives `regex` twice");
      open->regex = std::string(value_end);  // as written, trailing blanks included
    } else if (key == "description") {
      set_once(open->description);
    } else if (key == "source") {
      set_once(open->source);
    } else if (key == "example") {
      open->examples.emplace_back(value_end);
    } else if (key == "counter_example") {
      open->counter_examples.emplace_back(value_end);
    } else if (key == "captures_expected") {
      set_once(open->captures_expected);
    } else {
      fail(origin, line_number,
           "unknown key `" + std::string(key) +
               "` (category, severity, description, regex, source, example, counter_example, "
               "captures_expected)");
    }
  }
  if (open != nullptr) check_complete(*open, origin, open_line);
  return library;
}

std::vector<std::pair<std::string, std::string>> parse_expected_captures(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    // Items are separated by `, ` followed by a name and `=`; a value may
    // itself hold commas, so an item ends only where the next name begins.
    std::size_t end = text.size();
    for (std::size_t at = text.find(", "); at != std::string_view::npos;
         at = text.find(", ", at + 1)) {
      const std::string_view rest = text.substr(at + 2);
      const std::size_t eq = rest.find('=');
      if (eq != std::string_view::npos && snake_case(rest.substr(0, eq))) {
        end = at;
        break;
      }
    }
    const std::string_view item = text.substr(0, end);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw EventLibraryError("captures_expected item '" + std::string(item) + "' has no `=`");
    }
    out.emplace_back(std::string(trim(item.substr(0, eq))), std::string(item.substr(eq + 1)));
    text.remove_prefix(std::min(text.size(), end + 2));
  }
  return out;
}

EventLibrary builtin_event_library() {
  return parse_event_library(builtin_event_library_text(), "built-in library");
}

}  // namespace pipescope
