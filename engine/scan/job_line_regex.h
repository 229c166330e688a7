// `--job-line`: the job lines of a framework other than PaddlePaddle, read by
// a regular expression (docs/guide.md, "Other frameworks' job lines"). A line
// the expression matches (RE2, anywhere in the line without its newline) is a
// job: its named captures give the job's type (`type`), micro-batch (`mb`),
// start and end (`start`, `end`: decimal text in the chosen unit, converted
// exactly to integer nanoseconds) and, optionally, its id (`id`); a type text
// may be mapped to a type name (`--job-kinds fwd=forward`).
//
// Speed: the expression is compiled into a Hyperscan block-mode database of
// its own, which finds in one pass over a block of complete lines the lines
// it may match; RE2 then reads only those lines. Its own database, not a
// reserved entry of the event library's: it is needed with events off
// (--no-events) as much as with them, the event matcher's contract (an event
// per entry, a per-file cap) stays as it is, and an expression Hyperscan
// cannot take costs the job lines their speed, never the events theirs. A
// build without Hyperscan, or an expression Hyperscan cannot compile or read
// as RE2 does (one that can match the empty string, `\p{..}`, caseless
// Latin-1 letters), has RE2 read every line: slower, the same jobs.
// Contract: a line is a job line exactly when RE2 finds the expression in it,
// whichever way the candidates were found; where Hyperscan would read a
// construct more narrowly than RE2 (`\S` and the vertical tab, `\A`), the
// expression it compiles is rewritten to RE2's meaning.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/decimal_time.h"
#include "scan/hyperscan_block.h"
#include "scan/job_line_parser.h"

namespace pipescope {

/// One line of a block: [begin, end), `end` at its '\n' (or the block's end).
struct LineSpan {
  std::size_t begin = 0;
  std::size_t end = 0;

  friend bool operator==(const LineSpan&, const LineSpan&) = default;
};

class JobLineRegex {
 public:
  /// How candidate lines are found.
  enum class Search : std::uint8_t {
    hyperscan,   ///< a Hyperscan database of the expression (when the build has it)
    every_line,  ///< none: RE2 reads every line
  };

  /// The named captures: `type`, `mb`, `start` and `end` are required, `id`
  /// is optional.
  static constexpr std::string_view kRequired[] = {"type", "mb", "start", "end"};
  static constexpr std::string_view kOptional[] = {"id"};

  /// Captured type text to the type stored (`--job-kinds`, "fwd=forward"):
  /// a type found here is replaced, any other is kept as printed.
  using Kinds = std::map<std::string, std::string, std::less<>>;

  /// "F=forward,B=backward" as Kinds. Throws std::invalid_argument for an
  /// item that is not OP=TYPE with both sides non-empty.
  static Kinds parse_kinds(std::string_view text);

  /// Compiles `regex` (RE2 syntax, named groups written `(?P<name>...)`)
  /// whose times are in `unit`, its types mapped by `kinds`. With
  /// Search::hyperscan, candidates are found
  /// by Hyperscan when this build has it and it compiles the expression;
  /// otherwise (and with Search::every_line) every line is a candidate.
  /// Throws std::invalid_argument saying what is wrong: RE2's message for
  /// an expression it rejects, the name of a required capture it lacks, an
  /// unknown capture name.
  JobLineRegex(const std::string& regex, TimeUnit unit, Kinds kinds = {},
               Search search = Search::hyperscan);
  ~JobLineRegex();
  JobLineRegex(const JobLineRegex&) = delete;
  JobLineRegex& operator=(const JobLineRegex&) = delete;

  /// How this one finds candidates (every_line where Hyperscan is missing or
  /// rejected the expression).
  Search search() const;
  TimeUnit unit() const { return unit_; }
  const std::string& regex() const { return regex_; }
  /// Whether the expression has an `id` capture; without one, a job's id
  /// is its index among its file's jobs (the reader numbers them).
  bool has_id() const;

  /// Per-thread scratch space (Hyperscan's); one per worker thread.
  class Scratch {
   public:
    explicit Scratch(const JobLineRegex& regex);

   private:
    friend class JobLineRegex;
    HyperscanScratch hyperscan_;
  };

  /// Appends to `out`, in order, the lines of `block` (complete lines; the
  /// last may lack its '\n') that may be job lines: every line the
  /// expression matches, and perhaps others (parse() decides).
  void candidates(std::string_view block, Scratch& scratch, std::vector<LineSpan>& out) const;

  /// candidates() of a build without Hyperscan: every line of `block`.
  static void every_line(std::string_view block, std::vector<LineSpan>& out);

  /// Whether the expression matches `line` (RE2, no captures).
  bool matches(std::string_view line) const;

  /// Reads one line (without its '\n'): LineError::no_literal when the
  /// expression does not match it (not a job line); none, with `out` filled
  /// (`out.type` points into `line` or into the kinds; `out.job_id` 0 without an `id`
  /// capture); or what is wrong with the job line: a capture that is empty
  /// or took no part, `mb` or `id` not an integer, `start` or `end` not a
  /// plain decimal in the unit, end before start.
  LineError parse(std::string_view line, JobLine& out) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  std::string regex_;
  TimeUnit unit_;
  Kinds kinds_;
};

}  // namespace pipescope
