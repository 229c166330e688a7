#include "option_words.h"

#include <fmt/core.h>

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

namespace pipescope::cli {

namespace {

struct FlagWords {
  CallerOption option;
  std::string_view flag;
  /// After a semicolon in the engine's message; `{}` in max_line's: the
  /// limit in KiB.
  std::string_view advice;
};

// One row per CallerOption, in its order.
constexpr std::array<FlagWords, kCallerOptionCount> kFlagWords{{
    {CallerOption::layout, "--layout", ""},
    {CallerOption::stages, "--stages", "pass --stages auto or --stages MAP"},
    {CallerOption::clock_offset, "--clock-offset", ""},
    {CallerOption::no_clock_fix, "--no-clock-fix", ""},
    {CallerOption::pipeline, "--pipeline", "pass --pipeline K to analyse pipeline K instead"},
    {CallerOption::max_line, "--max-line-kib",
     "raise --max-line-kib (now {} KiB) above the line's size to read it"},
    {CallerOption::job_line, "--job-line", ""},
    {CallerOption::allow_missing, "--allow-missing",
     "pass --allow-missing to leave it out of the figures (with a warning)"},
    {CallerOption::no_events, "--no-events", ""},
    {CallerOption::patterns, "--patterns", ""},
    {CallerOption::steps, "--steps", "--steps all writes every step"},
    {CallerOption::trace_steps, "analyze --steps", ""},
    {CallerOption::html_steps, "--html-steps", ""},
    {CallerOption::devices, "--devices", "--devices draws fewer devices"},
    {CallerOption::perfetto, "--perfetto", ""},
    {CallerOption::all_rows, "--all-rows", "--all-rows lists every one"},
    {CallerOption::machine_order, "--machine-order", ""},
    {CallerOption::strict, "--strict", ""},
    {CallerOption::local, "--local", ""},
    {CallerOption::allow_missing_nodes, "--allow-missing",
     "pass --allow-missing to leave their devices out of the figures"},
    {CallerOption::mpi, "--mpi", "analyse them without --mpi"},
    {CallerOption::mpi_timeout, "--mpi-timeout", ""},
    {CallerOption::step_range, "--step-range", ""},
    {CallerOption::skip_steps, "--skip-steps", ""},
    {CallerOption::max_events, "--max-events", ""},
    {CallerOption::allow_input_warnings, "--allow-input-warnings", ""},
    {CallerOption::threshold, "--{}", ""},
    {CallerOption::force, "--force", ""},
    {CallerOption::chunks, "--chunks", ""},
    {CallerOption::resolution, "--resolution", ""},
}};

static_assert([] {
  for (std::size_t i = 0; i < kFlagWords.size(); ++i) {
    if (static_cast<std::size_t>(kFlagWords[i].option) != i) return false;
  }
  return true;
}());

/// The engine's words, but the table's for `options`: the words of a
/// command that has only these of the table's options.
std::shared_ptr<OptionWords> with_flag_words(std::initializer_list<CallerOption> options) {
  auto words = std::make_shared<OptionWords>();
  for (const CallerOption option : options) {
    const FlagWords& row = kFlagWords[static_cast<std::size_t>(option)];
    words->set(option, std::string(row.flag), std::string(row.advice));
  }
  return words;
}

}  // namespace

std::shared_ptr<const OptionWords> command_line_words(std::size_t max_line_kib) {
  auto words = std::make_shared<OptionWords>();
  for (const FlagWords& row : kFlagWords) {
    words->set(row.option, std::string(row.flag),
               row.option == CallerOption::max_line
                   ? fmt::format(fmt::runtime(row.advice), max_line_kib)
                   : std::string(row.advice));
  }
  return words;
}

std::shared_ptr<const OptionWords> convert_command_words() {
  std::shared_ptr<OptionWords> words = with_flag_words({CallerOption::devices});
  words->set_advice(CallerOption::allow_missing,
                    "pass --allow-missing to convert the other inputs");
  return words;
}

std::shared_ptr<const OptionWords> simulate_command_words() {
  return with_flag_words({CallerOption::chunks, CallerOption::resolution, CallerOption::force});
}

}  // namespace pipescope::cli
