// The event search's first pass: the lines of a block that may match a
// pattern of the library, found by a literal search instead of running the
// patterns over every byte (scan/event_matcher.h confirms each with RE2).
//
// Every pattern requires literals (scan/required_literals.h): clauses, each
// a set of literals of which every line the pattern matches holds one. For
// each pattern one clause is searched (scan/literal_set_search.h, near the
// speed of copying the bytes); a line holding one of its literals is then
// checked for a literal of each of the pattern's other clauses, and only a
// line holding all of them is a candidate. Contract: every line a pattern
// matches is a candidate for it, whatever the block's cut and whichever
// clauses are searched.
//
// Which clause is searched is a guess, from the frequency of bytes in text,
// and a log may prove it wrong: a logger's prefix (`LAUNCH INFO`) is on many
// of its lines, and each of them costs a check. So each thread counts, per
// clause searched, the lines its literals brought that failed the pattern's
// other clauses, and now and then searches instead the clause that its
// counts and the guess say is rarest in this log. It also keeps the text at
// which the search's buckets took a window that held none of their literals
// (its misses; the commonest, when there are many), and builds the search
// again to avoid it (keeping the search before where it misses no more in
// the block at hand). The counts change only which lines are checked, never
// what is found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/literal_set_search.h"

namespace pipescope {

class EventPrefilter {
 public:
  /// A line of the block that may match `pattern`.
  struct Candidate {
    std::size_t line_begin = 0;  ///< offset of the line in the block
    std::size_t line_end = 0;    ///< offset of its '\n' (or the block's end)
    std::uint32_t pattern = 0;
  };

  /// The prefilter of `regexes` (one per pattern, RE2 syntax), or null when
  /// one of them requires no literal: then every line must be read. Its
  /// searches run `kernel` (LiteralSetSearch::chosen_kernel() by default).
  static std::unique_ptr<EventPrefilter> make(
      const std::vector<std::string>& regexes,
      LiteralSetSearch::Kernel kernel = LiteralSetSearch::chosen_kernel());

  /// One thread's choice of clauses, its counts and its search buffers.
  class State {
   public:
    explicit State(const EventPrefilter& prefilter);
    ~State();
    State(State&&) noexcept;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    State& operator=(State&&) = delete;

    /// The clause searched for `pattern` now (an index into its clauses).
    std::size_t searched_clause(std::uint32_t pattern) const { return searched_[pattern]; }

   private:
    friend class EventPrefilter;
    /// Builds the search for the clauses searched now, avoiding the misses
    /// seen (again if `rebuild`, else only when its literals change); with
    /// a `sample` of the log, keeps the search before where it misses no
    /// more there.
    void search_again(const EventPrefilter& prefilter, bool rebuild, std::string_view sample = {});
    void review(const EventPrefilter& prefilter, std::string_view block);
    void note_misses(std::string_view block);

    std::vector<std::uint32_t> searched_;  // per pattern: the clause searched
    std::shared_ptr<const LiteralSetSearch> search_;
    std::vector<std::uint32_t> search_literal_;  // search_'s literal -> literal id
    /// Per literal id: the patterns whose searched clause holds it.
    std::vector<std::vector<std::uint32_t>> searched_by_;
    // Per pattern and clause (flattened, clause_base_): lines rejected while
    // searched, and the bytes searched before it last stopped being.
    std::vector<std::uint64_t> rejected_;
    std::vector<std::uint64_t> bytes_searched_;
    std::vector<std::uint64_t> searched_since_;  // per pattern: bytes_ when its clause began
    std::uint64_t bytes_ = 0;                    // bytes searched by this thread
    std::uint64_t rejected_since_review_ = 0;
    std::uint64_t review_after_ = 0;
    // The windows the search missed at (its window() bytes, folded, in a
    // word), with how often.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> missed_;
    bool missed_new_ = false;  // a window not avoided by the search yet
    std::uint64_t missed_since_review_ = 0;
    std::uint64_t miss_review_after_ = 0;
    std::vector<LiteralSetSearch::Hit> hits_;
    LiteralSetSearch::Misses misses_;
    std::vector<std::uint32_t> line_patterns_;
  };

  /// Appends the candidates of `block` (complete lines) to `out`, in line
  /// order, then pattern order within a line.
  void candidates(std::string_view block, State& state, std::vector<Candidate>& out) const;

  LiteralSetSearch::Kernel kernel() const { return kernel_; }

  std::size_t patterns() const { return clause_base_.size() - 1; }
  /// How many clauses `pattern` has, and the literals of one.
  std::size_t clauses(std::uint32_t pattern) const {
    return clause_base_[pattern + 1] - clause_base_[pattern];
  }
  std::vector<std::string> clause(std::uint32_t pattern, std::size_t c) const;

 private:
  EventPrefilter() = default;
  /// The clause searched for each pattern when nothing was counted yet.
  std::vector<std::uint32_t> guessed_clauses() const;
  double clause_rate(std::size_t clause) const;
  bool line_has_clause(std::string_view line, std::size_t clause) const;

  LiteralSetSearch::Kernel kernel_ = LiteralSetSearch::Kernel::portable;
  std::vector<std::string> literals_;  // each once
  std::vector<double> literal_rate_;   // LiteralSetSearch::rate of each
  /// Clause c of pattern p is clause_literals_[clause_base_[p] + c].
  std::vector<std::vector<std::uint32_t>> clause_literals_;
  std::vector<std::size_t> clause_base_;  // patterns + 1 entries
  /// The search for the guessed clauses, which every thread starts with,
  /// and its literals' ids.
  std::shared_ptr<const LiteralSetSearch> guessed_search_;
  std::vector<std::uint32_t> guessed_literals_;
};

}  // namespace pipescope
