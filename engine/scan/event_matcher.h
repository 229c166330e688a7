// Matches the event library against text: a first pass finds, in a block of
// complete lines, the lines each pattern may match; RE2 then confirms each
// such line on its own and takes its named captures. The first pass is the
// literal search of scan/event_prefilter.h where every pattern requires a
// literal and the CPU runs that search many bytes at a time (AVX-512 VBMI:
// 64, AVX2: 32); otherwise one Hyperscan database of every pattern reads
// every byte.
// Contract, either way: an event is reported for a line exactly when RE2
// finds the pattern in that line (without its newline), whatever the
// block's cut, since blocks are whole lines; a line matched by several
// patterns gives one event per pattern.
//
// A build without Hyperscan (PIPESCOPE_HAVE_HYPERSCAN 0) has no matcher:
// available() is false and the caller says events are off.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/log_event.h"
#include "scan/event_library.h"
#include "scan/event_prefilter.h"
#include "scan/hyperscan_block.h"

namespace pipescope {

/// One event line found in a block.
struct EventMatch {
  std::size_t line_begin = 0;  ///< offset of the line in the block
  std::size_t line_end = 0;    ///< offset of its '\n' (or the block's end)
  std::uint32_t pattern = 0;   ///< index into the library's patterns
};

/// How the first pass finds the lines a pattern may match.
enum class EventSearch {
  automatic,    ///< the literal search where it applies and is fast, else Hyperscan
  full_scan,    ///< Hyperscan over every byte
  prefiltered,  ///< the literal search even with its portable kernel (tests), where it applies
};

class EventMatcher {
 public:
  /// Whether this build can match events (it was built with Hyperscan).
  static bool available();
  /// What the automatic first pass is in this build and on this CPU, in
  /// words (`pipescope --version`): the literal search's kernel
  /// (LiteralSetSearch::chosen_kernel()), or why Hyperscan reads every byte,
  /// or what is wrong with $PIPESCOPE_LITERAL_SEARCH. (An entry that
  /// requires no literal makes Hyperscan read every byte whatever it says.)
  static std::string first_pass();

  /// Compiles every pattern of `library`. Throws EventLibraryError naming the
  /// entry (its id and origin) whose regex Hyperscan or RE2 rejects,
  /// std::runtime_error when !available(), and std::invalid_argument when
  /// $PIPESCOPE_LITERAL_SEARCH names no kernel this CPU runs.
  explicit EventMatcher(const EventLibrary& library, EventSearch search = EventSearch::automatic);
  ~EventMatcher();
  EventMatcher(const EventMatcher&) = delete;
  EventMatcher& operator=(const EventMatcher&) = delete;

  std::size_t size() const { return kinds_.size(); }
  /// Whether the literal search is the first pass (else Hyperscan).
  bool prefiltered() const { return prefilter_ != nullptr; }
  /// About as many bytes as the first pass reads in the time it takes to
  /// start a scan: stretches of lines parted by fewer are better scanned as
  /// one. Hyperscan's start costs less than reading a job line.
  std::size_t joined_bytes() const { return prefiltered() ? 2048 : 0; }
  /// The library's entries as a run reports them, in pattern order.
  const std::vector<EventKind>& kinds() const { return kinds_; }

  /// Per-thread scratch space (the first pass's); one per worker thread.
  class Scratch {
   public:
    explicit Scratch(const EventMatcher& matcher);

   private:
    friend class EventMatcher;
    HyperscanScratch hyperscan_;
    std::vector<std::pair<std::size_t, std::uint32_t>> hits_;  // (end offset, pattern)
    std::unique_ptr<EventPrefilter::State> prefilter_;
    std::vector<EventPrefilter::Candidate> candidates_;
  };

  /// Appends the event lines of `block` (complete lines) to `out`, in line
  /// order, then pattern order within a line; each is confirmed by RE2.
  void scan(std::string_view block, Scratch& scratch, std::vector<EventMatch>& out) const;

  /// The named captures of `pattern` on `line`, in the pattern's order
  /// (a group that took no part is an empty value).
  std::vector<std::pair<std::string, std::string>> captures(std::uint32_t pattern,
                                                            std::string_view line) const;

  /// Whether `pattern` matches `line` (RE2).
  bool matches(std::uint32_t pattern, std::string_view line) const;

 private:
  struct Compiled;
  /// The Hyperscan database of every pattern, loaded from the cache or
  /// compiled (and cached); throws as the constructor says.
  void compile_hyperscan(const EventLibrary& library);

  std::unique_ptr<Compiled> compiled_;
  std::unique_ptr<EventPrefilter> prefilter_;
  std::vector<EventKind> kinds_;
};

}  // namespace pipescope
