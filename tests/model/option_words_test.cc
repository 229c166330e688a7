#include "model/option_words.h"

#include <gtest/gtest.h>

#include <memory>

namespace pipescope {
namespace {

TEST(OptionWords, EngineWordsAreTheTables) {
  const OptionWords& words = *OptionWords::engine();
  EXPECT_EQ(words.name(CallerOption::stages), "stage map");
  EXPECT_EQ(words.advice(CallerOption::stages),
            "give a stage map that groups them (auto, or one item per stage)");
  EXPECT_EQ(words.name(CallerOption::layout), "layout");
  EXPECT_EQ(words.advice(CallerOption::pipeline), "another can be chosen by its number");
  EXPECT_EQ(words.advice(CallerOption::max_line), "raise the line limit to read it");
  // No advice: the refusal of an unreadable input adds none.
  EXPECT_EQ(words.advice(CallerOption::allow_missing), "");
  // Every option has a name for the messages that name it, and the
  // engine's words name no command-line flag (a library caller has none).
  for (std::size_t i = 0; i < kCallerOptionCount; ++i) {
    const auto option = static_cast<CallerOption>(i);
    EXPECT_FALSE(words.name(option).empty()) << i;
    EXPECT_EQ(words.name(option).find("--"), std::string::npos) << words.name(option);
    EXPECT_EQ(words.advice(option).find("--"), std::string::npos) << words.advice(option);
  }
  // One shared table.
  EXPECT_EQ(OptionWords::engine().get(), OptionWords::engine().get());
}

TEST(OptionWords, ACallerReplacesSomeWords) {
  OptionWords words;
  words.set(CallerOption::stages, "--stages", "pass --stages auto");
  words.set_advice(CallerOption::allow_missing, "say how");
  EXPECT_EQ(words.name(CallerOption::stages), "--stages");
  EXPECT_EQ(words.advice(CallerOption::stages), "pass --stages auto");
  EXPECT_EQ(words.advice(CallerOption::allow_missing), "say how");
  EXPECT_EQ(words.name(CallerOption::allow_missing),
            OptionWords::engine()->name(CallerOption::allow_missing));
  EXPECT_EQ(words.name(CallerOption::layout), "layout");
}

}  // namespace
}  // namespace pipescope
