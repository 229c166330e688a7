#include "scan/required_literals.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <algorithm>
#include <numeric>

namespace pipescope {

namespace {

// Shorter literals are not asked for: they are in too many lines to pass
// over any.
constexpr int kMinLiteral = 3;

}  // namespace

RequiredLiterals required_literals(std::string_view regex) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // as the event matcher reads lines
  options.set_log_errors(false);
  // One regex per analysis: its tree then holds only its own literals, and
  // each question below is a walk over a handful of them.
  re2::FilteredRE2 filter(kMinLiteral);
  int id = 0;
  if (filter.Add(re2::StringPiece(regex.data(), regex.size()), options, &id) != RE2::NoError) {
    return {};
  }
  std::vector<std::string> atoms;
  filter.Compile(&atoms);
  // Whether the regex passes the filter when the atoms not in `absent` are
  // in the line. The tree is monotone (more atoms, more regexes pass), so a
  // set whose absence alone stops it is needed by every matching line.
  std::vector<int> present, passed;
  auto passes_without = [&](const std::vector<bool>& absent) {
    present.clear();
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      if (!absent[a]) present.push_back(static_cast<int>(a));
    }
    filter.AllPotentials(present, &passed);
    return !passed.empty();
  };
  // Shortest first out of a clause: the longer literals, rarer in text,
  // are the ones kept.
  std::vector<std::size_t> order(atoms.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return atoms[a].size() < atoms[b].size(); });
  RequiredLiterals out;
  std::vector<bool> used(atoms.size(), false);
  for (;;) {
    // Every atom not yet in a clause absent: if the regex still passes, no
    // further clause exists (with none found yet: it needs no literal).
    std::vector<bool> absent(atoms.size());
    for (std::size_t a = 0; a < atoms.size(); ++a) absent[a] = !used[a];
    if (passes_without(absent)) break;
    // Then as few absent as keep it stopped: a minimal clause.
    for (std::size_t a : order) {
      if (!absent[a]) continue;
      absent[a] = false;
      if (passes_without(absent)) absent[a] = true;
    }
    std::vector<std::string> clause;
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      if (absent[a]) {
        clause.push_back(atoms[a]);
        used[a] = true;
      }
    }
    // Stopped with every atom present: a regex RE2 finds can match no line;
    // say nothing rather than ask for nothing.
    if (clause.empty()) return {};
    out.clauses.push_back(std::move(clause));
  }
  return out;
}

}  // namespace pipescope
