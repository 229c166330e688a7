#include "option_words.h"

#include <fmt/core.h>

#include <array>
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
}};

static_assert([] {
  for (std::size_t i = 0; i < kFlagWords.size(); ++i) {
    if (static_cast<std::size_t>(kFlagWords[i].option) != i) return false;
  }
  return true;
}());

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
  auto words = std::make_shared<OptionWords>();
  words->set_advice(CallerOption::allow_missing,
                    "pass --allow-missing to convert the other inputs");
  return words;
}

}  // namespace pipescope::cli
