// The caller's options that the engine's messages name, in one table, and
// the words a caller names them with.
//
// The engine never names a command-line flag, yet some of its messages must
// say how to change what it did ("...; pass --pipeline K to analyse pipeline
// K instead"). Such a message names the option by its CallerOption and takes
// the words from the OptionWords the caller gave in its options
// (IngestOptions, PipelineOptions, ClockOptions, InputRules: `words`). Each
// row of PIPESCOPE_CALLER_OPTIONS is one option with the engine's own words,
// used when the caller gives none (a library caller, the tests); the command
// line's words are its own table (cli/option_words.h).
//
// Usage:
//   const OptionWords& w = *options.words;
//   fmt::format("{} and {} both say how the devices form stages", w.name(CallerOption::layout),
//               w.name(CallerOption::stages));
//   auto mine = std::make_shared<OptionWords>();
//   mine->set(CallerOption::pipeline, "--pipeline", "pass --pipeline K to pick another");
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace pipescope {

// X(option, name, advice): the engine's words. `name` is how a message names
// the option ("{name} and {name}: give one", "lines matching {name}");
// `advice` is a clause that tells how to use it, after a semicolon ("...;
// {advice}"); empty where no message gives one (an empty advice adds nothing).
//
// A row is an option, or one more clause a message advises an option with
// (trace_steps, allow_missing_nodes). The compare rows take the names of the
// thresholds' config keys (compare/check.h); `threshold` is how a report
// names a threshold, `{}` standing for the threshold's name.
#define PIPESCOPE_CALLER_OPTIONS(X)                                                         \
  X(layout, "layout", "")                                                                   \
  X(stages, "stage map", "give a stage map that groups them (auto, or one item per stage)") \
  X(clock_offset, "imposed clock offset", "")                                               \
  X(no_clock_fix, "clock correction disabled", "")                                          \
  X(pipeline, "pipeline", "another can be chosen by its number")                            \
  X(max_line, "line limit", "raise the line limit to read it")                              \
  X(job_line, "the job-line regex", "")                                                     \
  X(allow_missing, "leaving unreadable inputs out", "")                                     \
  X(no_events, "turned off by the caller", "")                                              \
  X(patterns, "event pattern file", "")                                                     \
  X(steps, "step list", "a step list of all writes every step")                             \
  X(trace_steps, "a step list of the traces", "")                                           \
  X(html_steps, "HTML report's step list", "")                                              \
  X(devices, "device selection", "a device selection draws fewer devices")                  \
  X(perfetto, "the Perfetto output", "")                                                    \
  X(all_rows, "all rows", "all rows can be listed")                                         \
  X(machine_order, "machine order", "")                                                     \
  X(strict, "strict check", "")                                                             \
  X(local, "node-local", "")                                                                \
  X(allow_missing_nodes, "leaving unlisted nodes out",                                      \
    "allow missing inputs to leave their devices out of the figures")                       \
  X(mpi, "the partitioned run", "analyse them in one process")                              \
  X(mpi_timeout, "the rank timeout", "")                                                    \
  X(step_range, "the step-range regex", "")                                                 \
  X(skip_steps, "skip_steps", "")                                                           \
  X(max_events, "max_events", "")                                                           \
  X(allow_input_warnings, "allowing input warnings", "")                                    \
  X(threshold, "{}", "")                                                                    \
  X(force, "force", "")                                                                     \
  X(chunks, "chunks", "")                                                                   \
  X(resolution, "time resolution", "")

/// One enumerator per row of PIPESCOPE_CALLER_OPTIONS, in table order.
enum class CallerOption {
#define PIPESCOPE_CALLER_OPTION_ENUM(option, name, advice) option,
  PIPESCOPE_CALLER_OPTIONS(PIPESCOPE_CALLER_OPTION_ENUM)
#undef PIPESCOPE_CALLER_OPTION_ENUM
};

inline constexpr std::size_t kCallerOptionCount = [] {
  std::size_t n = 0;
#define PIPESCOPE_CALLER_OPTION_COUNT(option, name, advice) ++n;
  PIPESCOPE_CALLER_OPTIONS(PIPESCOPE_CALLER_OPTION_COUNT)
#undef PIPESCOPE_CALLER_OPTION_COUNT
  return n;
}();

/// How one caller names each option: a name and an advice per CallerOption.
/// Immutable once handed to the engine (options hold it as a shared const).
class OptionWords {
 public:
  /// The engine's words (the table's).
  OptionWords();

  /// The engine's words, shared: what every options struct holds by default.
  static const std::shared_ptr<const OptionWords>& engine();

  const std::string& name(CallerOption option) const { return row(option).name; }
  const std::string& advice(CallerOption option) const { return row(option).advice; }

  /// Replaces `option`'s words.
  void set(CallerOption option, std::string name, std::string advice);
  /// Replaces `option`'s advice only.
  void set_advice(CallerOption option, std::string advice);

 private:
  struct Row {
    std::string name;
    std::string advice;
  };
  const Row& row(CallerOption option) const { return rows_[static_cast<std::size_t>(option)]; }

  std::array<Row, kCallerOptionCount> rows_;
};

}  // namespace pipescope
