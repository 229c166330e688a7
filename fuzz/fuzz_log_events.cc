// Fuzzes the log events' readers: the pattern file format
// (scan/event_library.h; a bad file must end in EventLibraryError naming its
// line, never a crash), line stamps and their placement on the epoch
// (scan/line_stamp.h), and the chunk scanner with the shipped library's
// matcher on the input read as log text (scan/chunk_scanner.h): every event
// it reports lies on a line of the text, and the literal first pass
// (scan/event_prefilter.h) finds the events Hyperscan's full scan finds, one
// thread's state learning across inputs; and every kernel of the literal
// search this CPU runs (scan/literal_set_search.h) finds what a plain search
// finds, for the library's literals and for literals cut from the input.
// Seeded with the library, its example lines and simulated logs with events.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/chunk_scanner.h"
#include "scan/event_library.h"
#include "scan/event_matcher.h"
#include "scan/line_stamp.h"
#include "scan/literal_set_search.h"
#include "scan/required_literals.h"

namespace {

/// The shipped library's matcher with `search` as its first pass (one per
/// kind for the whole run), or null without Hyperscan.
const pipescope::EventMatcher* shipped_matcher(
    pipescope::EventSearch search = pipescope::EventSearch::automatic) {
  auto make = [](pipescope::EventSearch s) {
    return pipescope::EventMatcher::available()
               ? std::make_unique<pipescope::EventMatcher>(pipescope::builtin_event_library(), s)
               : nullptr;
  };
  static const auto automatic = make(pipescope::EventSearch::automatic);
  static const auto full = make(pipescope::EventSearch::full_scan);
  static const auto literal = make(pipescope::EventSearch::prefiltered);
  switch (search) {
    case pipescope::EventSearch::full_scan:
      return full.get();
    case pipescope::EventSearch::prefiltered:
      return literal.get();
    default:
      return automatic.get();
  }
}

using Found = std::vector<std::pair<std::size_t, std::uint32_t>>;  // (begin, literal)

constexpr pipescope::LiteralSetSearch::Kernel kKernels[] = {
    pipescope::LiteralSetSearch::Kernel::portable, pipescope::LiteralSetSearch::Kernel::avx2,
    pipescope::LiteralSetSearch::Kernel::vbmi};

/// Every literal the shipped library's patterns require (all clauses).
std::vector<std::string> shipped_literals() {
  std::set<std::string> all;
  for (const auto& p : pipescope::builtin_event_library().patterns) {
    for (auto& clause : pipescope::required_literals(p.regex).clauses) {
      all.insert(clause.begin(), clause.end());
    }
  }
  return {all.begin(), all.end()};
}

Found plain_search(const std::vector<std::string>& literals, std::string_view text) {
  std::string folded(text);
  for (char& c : folded) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  }
  Found out;
  for (std::uint32_t l = 0; l < literals.size(); ++l) {
    for (std::size_t at = folded.find(literals[l]); at != std::string::npos;
         at = folded.find(literals[l], at + 1)) {
      out.emplace_back(at, l);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Found found_by(const pipescope::LiteralSetSearch& search, std::string_view text) {
  std::vector<pipescope::LiteralSetSearch::Hit> hits;
  search.find(text, hits);
  Found out;
  for (const auto& hit : hits) out.emplace_back(hit.begin, hit.literal);
  std::sort(out.begin(), out.end());
  return out;
}

/// Every kernel this CPU runs finds exactly what a plain search finds.
void compare_kernels(const std::vector<std::string>& literals, std::string_view text,
                     const std::vector<const pipescope::LiteralSetSearch*>& searches) {
  const Found expected = plain_search(literals, text);
  for (const pipescope::LiteralSetSearch* search : searches) {
    if (found_by(*search, text) != expected) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // 1. The pattern file format.
  try {
    (void)pipescope::parse_event_library(text, "fuzz.patterns");
  } catch (const pipescope::EventLibraryError& e) {
    if (std::string(e.what()).find("fuzz.patterns:") != 0) std::abort();
  }
  // 2. A stamp at the start of the input, placed against a job line's end.
  if (const auto stamp = pipescope::find_line_stamp(text)) {
    if (stamp->month < 1 || stamp->month > 12 || stamp->day < 1 || stamp->day > 31) std::abort();
    const pipescope::StampAnchor anchor{*stamp, 1'697'793'307'254'006'104};
    if (const auto placement = pipescope::placement_from(anchor)) (void)placement->place(*stamp);
  }
  // 3. The input as log text, with events on.
  const pipescope::EventMatcher* matcher = shipped_matcher();
  if (matcher == nullptr) return 0;
  static const pipescope::Prefilter prefilter;
  static pipescope::Prefilter::Scratch scratch(prefilter);
  static pipescope::EventMatcher::Scratch event_scratch(*matcher);
  pipescope::ChunkScanOptions options;
  options.end_of_file = true;
  options.max_line_bytes = 4096;
  options.events = matcher;
  options.event_scratch = &event_scratch;
  pipescope::ChunkScan out;
  pipescope::scan_chunk(text, prefilter, scratch, options, out);
  for (const pipescope::EventSeen& seen : out.events) {
    if (seen.line >= out.lines || seen.pattern >= matcher->size()) std::abort();
  }
  // 4. The literal first pass against the full scan, on the input as one
  // block of lines.
  const pipescope::EventMatcher* full = shipped_matcher(pipescope::EventSearch::full_scan);
  const pipescope::EventMatcher* literal = shipped_matcher(pipescope::EventSearch::prefiltered);
  static pipescope::EventMatcher::Scratch full_scratch(*full);
  static pipescope::EventMatcher::Scratch literal_scratch(*literal);
  std::vector<pipescope::EventMatch> by_full, by_literal;
  full->scan(text, full_scratch, by_full);
  literal->scan(text, literal_scratch, by_literal);
  if (by_full.size() != by_literal.size()) std::abort();
  for (std::size_t i = 0; i < by_full.size(); ++i) {
    if (by_full[i].line_begin != by_literal[i].line_begin ||
        by_full[i].line_end != by_literal[i].line_end ||
        by_full[i].pattern != by_literal[i].pattern) {
      std::abort();
    }
  }
  // 5. The literal search's kernels, for the library's literals (built
  // once) and for literals of 1 to 12 bytes cut from the input itself
  // (folded to lower case, as the search takes them).
  using pipescope::LiteralSetSearch;
  static const std::vector<std::string> shipped = shipped_literals();
  static const auto shipped_searches = [] {
    std::vector<std::unique_ptr<LiteralSetSearch>> out;
    for (const auto kernel : kKernels) {
      if (LiteralSetSearch::runs(kernel)) {
        out.push_back(std::make_unique<LiteralSetSearch>(
            shipped, std::vector<LiteralSetSearch::Avoid>{}, kernel));
      }
    }
    return out;
  }();
  std::vector<const LiteralSetSearch*> searches;
  for (const auto& search : shipped_searches) searches.push_back(search.get());
  compare_kernels(shipped, text, searches);
  if (size >= 4) {
    std::vector<std::string> cut;
    for (std::size_t i = 0; i + 1 < 4 && cut.size() < 3; i += 2) {
      const std::size_t length = 1 + data[i] % 12;
      const std::size_t at = data[i + 1] % size;
      std::string literal(text.substr(at, length));
      for (char& c : literal) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
      }
      cut.push_back(std::move(literal));
    }
    std::vector<std::unique_ptr<LiteralSetSearch>> own;
    searches.clear();
    for (const auto kernel : kKernels) {
      if (LiteralSetSearch::runs(kernel)) {
        own.push_back(std::make_unique<LiteralSetSearch>(
            cut, std::vector<LiteralSetSearch::Avoid>{}, kernel));
        searches.push_back(own.back().get());
      }
    }
    compare_kernels(cut, text, searches);
  }
  return 0;
}
