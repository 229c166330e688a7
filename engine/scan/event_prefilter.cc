#include "scan/event_prefilter.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "scan/required_literals.h"

namespace pipescope {

namespace {

// A clause's counts weigh as much as its guessed rate once it was searched
// over this many bytes.
constexpr double kPriorBytes = 1 << 20;
// Rejected lines before the first review; each review doubles it, so a log
// that keeps proving the guesses wrong costs a few reviews, not one a block.
constexpr std::uint64_t kFirstReview = 32;
// Another clause replaces the one searched when it looks this much rarer.
constexpr double kSwitchGain = 2;
// Misses before the first review (a miss costs a compare, a rejected line a
// search of the line); doubled by each review as above.
constexpr std::uint64_t kFirstMissReview = 512;
// Missed windows kept: enough for the few line shapes a log repeats.
constexpr std::size_t kMissedWindows = 64;

unsigned char fold(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + ('a' - 'A')) : c;
}

/// Whether `line` holds `literal` (lower case) with its ASCII letters folded.
bool contains_folded(std::string_view line, std::string_view literal) {
  if (literal.size() > line.size()) return false;
  const auto* d = reinterpret_cast<const unsigned char*>(line.data());
  const auto* l = reinterpret_cast<const unsigned char*>(literal.data());
  for (std::size_t i = 0; i + literal.size() <= line.size(); ++i) {
    std::size_t k = 0;
    while (k < literal.size() && fold(d[i + k]) == l[k]) ++k;
    if (k == literal.size()) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<EventPrefilter> EventPrefilter::make(const std::vector<std::string>& regexes,
                                                     LiteralSetSearch::Kernel kernel) {
  std::unique_ptr<EventPrefilter> prefilter(new EventPrefilter);
  prefilter->kernel_ = kernel;
  std::map<std::string, std::uint32_t> ids;
  prefilter->clause_base_.push_back(0);
  for (const std::string& regex : regexes) {
    RequiredLiterals required = required_literals(regex);
    if (required.clauses.empty()) return nullptr;
    for (std::vector<std::string>& clause : required.clauses) {
      std::vector<std::uint32_t> literals;
      for (std::string& literal : clause) {
        const auto [at, added] =
            ids.emplace(literal, static_cast<std::uint32_t>(prefilter->literals_.size()));
        if (added) prefilter->literals_.push_back(std::move(literal));
        literals.push_back(at->second);
      }
      prefilter->clause_literals_.push_back(std::move(literals));
    }
    prefilter->clause_base_.push_back(prefilter->clause_literals_.size());
  }
  for (const std::string& literal : prefilter->literals_) {
    prefilter->literal_rate_.push_back(LiteralSetSearch::rate(literal));
  }
  const State first(*prefilter);
  prefilter->guessed_search_ = first.search_;
  prefilter->guessed_literals_ = first.search_literal_;
  return prefilter;
}

std::vector<std::string> EventPrefilter::clause(std::uint32_t pattern, std::size_t c) const {
  std::vector<std::string> out;
  for (const std::uint32_t literal : clause_literals_[clause_base_[pattern] + c]) {
    out.push_back(literals_[literal]);
  }
  return out;
}

double EventPrefilter::clause_rate(std::size_t clause) const {
  double rate = 0;
  for (const std::uint32_t literal : clause_literals_[clause]) rate += literal_rate_[literal];
  return rate;
}

std::vector<std::uint32_t> EventPrefilter::guessed_clauses() const {
  std::vector<std::uint32_t> searched(patterns());
  for (std::uint32_t p = 0; p < patterns(); ++p) {
    std::uint32_t best = 0;
    for (std::uint32_t c = 1; c < clauses(p); ++c) {
      if (clause_rate(clause_base_[p] + c) < clause_rate(clause_base_[p] + best)) best = c;
    }
    searched[p] = best;
  }
  return searched;
}

bool EventPrefilter::line_has_clause(std::string_view line, std::size_t clause) const {
  for (const std::uint32_t literal : clause_literals_[clause]) {
    if (contains_folded(line, literals_[literal])) return true;
  }
  return false;
}

EventPrefilter::State::State(const EventPrefilter& prefilter)
    : searched_(prefilter.guessed_clauses()),
      search_(prefilter.guessed_search_),
      search_literal_(prefilter.guessed_literals_),
      rejected_(prefilter.clause_literals_.size(), 0),
      bytes_searched_(prefilter.clause_literals_.size(), 0),
      searched_since_(prefilter.patterns(), 0),
      review_after_(kFirstReview),
      miss_review_after_(kFirstMissReview) {
  search_again(prefilter, false);
}

EventPrefilter::State::~State() = default;
EventPrefilter::State::State(State&&) noexcept = default;

void EventPrefilter::State::search_again(const EventPrefilter& prefilter, bool rebuild,
                                         std::string_view sample) {
  // The literals of the searched clauses, in id order: the same clauses
  // give the same search, so a thread that starts with the guesses shares
  // the one made for them.
  std::vector<std::uint32_t> literals;
  for (std::uint32_t p = 0; p < prefilter.patterns(); ++p) {
    const auto& clause = prefilter.clause_literals_[prefilter.clause_base_[p] + searched_[p]];
    literals.insert(literals.end(), clause.begin(), clause.end());
  }
  std::sort(literals.begin(), literals.end());
  literals.erase(std::unique(literals.begin(), literals.end()), literals.end());
  if (search_ == nullptr || rebuild || literals != search_literal_) {
    std::vector<std::string> texts;
    for (const std::uint32_t literal : literals) texts.push_back(prefilter.literals_[literal]);
    std::vector<LiteralSetSearch::Avoid> avoid;
    const std::size_t width = LiteralSetSearch::window(prefilter.kernel_);
    for (const auto& [window, times] : missed_) {
      std::string bytes(width, '\0');
      std::memcpy(bytes.data(), &window, width);
      avoid.push_back({std::move(bytes), static_cast<double>(times) / static_cast<double>(bytes_)});
    }
    auto made = std::make_shared<const LiteralSetSearch>(texts, avoid, prefilter.kernel_);
    // The buckets built to avoid the misses seen weigh them against a guess
    // (the byte frequencies of ordinary text), and may miss more elsewhere in
    // this log: when the literals are the same, the search before is kept if
    // it misses no more in `sample` (the block at hand; the log's next
    // blocks are much like it).
    if (!sample.empty() && search_ != nullptr && literals == search_literal_) {
      std::vector<LiteralSetSearch::Hit> hits;
      auto misses_of = [&](const LiteralSetSearch& search) {
        LiteralSetSearch::Misses misses;
        hits.clear();
        search.find(sample, hits, &misses);
        return misses.count;
      };
      if (misses_of(*search_) <= misses_of(*made)) made = search_;
    }
    search_ = std::move(made);
    search_literal_ = std::move(literals);
    missed_new_ = false;
  }
  searched_by_.assign(prefilter.literals_.size(), {});
  for (std::uint32_t p = 0; p < prefilter.patterns(); ++p) {
    for (const std::uint32_t literal :
         prefilter.clause_literals_[prefilter.clause_base_[p] + searched_[p]]) {
      searched_by_[literal].push_back(p);
    }
  }
}

void EventPrefilter::State::note_misses(std::string_view block) {
  missed_since_review_ += misses_.count;
  const std::size_t width = search_->window();
  static_assert(LiteralSetSearch::kWindow <= sizeof(std::uint64_t) &&
                LiteralSetSearch::kNibbleWindow <= sizeof(std::uint64_t));
  for (std::size_t m = 0; m < misses_.kept(); ++m) {
    const std::size_t at = misses_.first[m];
    if (at + width > block.size()) continue;
    unsigned char bytes[sizeof(std::uint64_t)] = {};
    for (std::size_t k = 0; k < width; ++k)
      bytes[k] = fold(static_cast<unsigned char>(block[at + k]));
    std::uint64_t window = 0;
    std::memcpy(&window, bytes, sizeof window);
    auto seen = std::find_if(missed_.begin(), missed_.end(),
                             [&](const auto& entry) { return entry.first == window; });
    if (seen != missed_.end()) {
      ++seen->second;
      continue;
    }
    missed_new_ = true;
    if (missed_.size() < kMissedWindows) {
      missed_.emplace_back(window, 1);
      continue;
    }
    // Full: the least seen window makes room, its count passed on (the
    // "space-saving" count of frequent items: a window seen more often than
    // once in kMissedWindows misses is never lost to one seen once).
    auto least = std::min_element(missed_.begin(), missed_.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
    *least = {window, least->second + 1};
  }
}

void EventPrefilter::State::review(const EventPrefilter& prefilter, std::string_view block) {
  if (rejected_since_review_ >= review_after_) review_after_ *= 2;
  if (missed_since_review_ >= miss_review_after_) miss_review_after_ *= 2;
  rejected_since_review_ = 0;
  missed_since_review_ = 0;
  bool changed = false;
  for (std::uint32_t p = 0; p < prefilter.patterns(); ++p) {
    const std::size_t base = prefilter.clause_base_[p];
    // Rejected lines per byte searched, the guess counting as kPriorBytes
    // of searching at its rate.
    auto estimate = [&](std::uint32_t c) {
      const double bytes =
          static_cast<double>(bytes_searched_[base + c]) +
          (c == searched_[p] ? static_cast<double>(bytes_ - searched_since_[p]) : 0);
      return (static_cast<double>(rejected_[base + c]) +
              prefilter.clause_rate(base + c) * kPriorBytes) /
             (bytes + kPriorBytes);
    };
    std::uint32_t best = searched_[p];
    for (std::uint32_t c = 0; c < prefilter.clauses(p); ++c) {
      if (estimate(c) * kSwitchGain < estimate(best)) best = c;
    }
    if (best == searched_[p]) continue;
    bytes_searched_[base + searched_[p]] += bytes_ - searched_since_[p];
    searched_since_[p] = bytes_;
    searched_[p] = best;
    changed = true;
  }
  if (changed || missed_new_) search_again(prefilter, missed_new_, block);
}

void EventPrefilter::candidates(std::string_view block, State& state,
                                std::vector<Candidate>& out) const {
  state.bytes_ += block.size();
  auto& hits = state.hits_;
  hits.clear();
  state.misses_ = {};
  state.search_->find(block, hits, &state.misses_);
  if (state.misses_.count != 0) state.note_misses(block);
  if (hits.empty()) {
    if (state.missed_since_review_ >= state.miss_review_after_) state.review(*this, block);
    return;
  }
  std::sort(hits.begin(), hits.end(),
            [](const LiteralSetSearch::Hit& a, const LiteralSetSearch::Hit& b) {
              return a.begin < b.begin;
            });
  const char* data = block.data();
  auto& patterns = state.line_patterns_;
  std::size_t i = 0;
  while (i < hits.size()) {
    // The line of the first hit left, and every hit on it.
    const std::size_t at = hits[i].begin;
    const void* nl_before = at > 0 ? memrchr(data, '\n', at) : nullptr;
    const std::size_t line_begin = nl_before ? static_cast<const char*>(nl_before) - data + 1 : 0;
    const void* nl_after = std::memchr(data + at, '\n', block.size() - at);
    const std::size_t line_end =
        nl_after ? static_cast<const char*>(nl_after) - data : block.size();
    patterns.clear();
    for (; i < hits.size() && hits[i].begin <= line_end; ++i) {
      const auto& by = state.searched_by_[state.search_literal_[hits[i].literal]];
      patterns.insert(patterns.end(), by.begin(), by.end());
    }
    std::sort(patterns.begin(), patterns.end());
    patterns.erase(std::unique(patterns.begin(), patterns.end()), patterns.end());
    const std::string_view line = block.substr(line_begin, line_end - line_begin);
    for (const std::uint32_t p : patterns) {
      bool all = true;
      for (std::uint32_t c = 0; c < clauses(p) && all; ++c) {
        // The searched clause's literal is on the line: one was found there.
        if (c != state.searched_[p]) all = line_has_clause(line, clause_base_[p] + c);
      }
      if (all) {
        out.push_back({line_begin, line_end, p});
      } else {
        ++state.rejected_[clause_base_[p] + state.searched_[p]];
        ++state.rejected_since_review_;
      }
    }
  }
  if (state.rejected_since_review_ >= state.review_after_ ||
      state.missed_since_review_ >= state.miss_review_after_) {
    state.review(*this, block);
  }
}

}  // namespace pipescope
