// The literals a line must hold for a regex to match it, so that a search for
// a few literals can pass over the lines no regex of the event library can
// match (scan/event_prefilter.h). Derived from RE2's own analysis
// (re2::FilteredRE2, whose contract is that a text without the literals its
// tree asks for never matches): the tree is read back as clauses, each a set
// of literals of which every matching line holds at least one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

/// Literals are lower case (ASCII letters folded; other bytes as they are),
/// and are found in a line with its ASCII letters folded.
struct RequiredLiterals {
  /// Every line the regex matches holds, for each clause, one of its
  /// literals at least. No clause: no literal is required (the regex may
  /// match a line holding none of at least 3 bytes), and every line must be
  /// read.
  std::vector<std::vector<std::string>> clauses;
};

/// The clauses of `regex` (RE2 syntax, read as Latin-1 bytes as the event
/// matcher reads it); none when RE2 rejects it or derives no literal.
/// Clauses share no literal.
RequiredLiterals required_literals(std::string_view regex);

}  // namespace pipescope
