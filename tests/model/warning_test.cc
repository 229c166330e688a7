// The warning table (model/warning.h): every code unique, named and
// explained, found again by its name, and docs/guide.md's table generated
// from it.
#include "model/warning.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "support/temp_dir.h"

namespace pipescope {
namespace {

TEST(WarningTable, CodesAreUniqueNamedAndExplained) {
  std::set<std::string_view> names;
  for (const WarningInfo& info : kWarnings) {
    EXPECT_TRUE(names.insert(info.name).second) << "twice: " << info.name;
    EXPECT_FALSE(info.meaning.empty()) << info.name;
    // Written into summary.json and matched by `check`: lower_snake_case only.
    EXPECT_EQ(info.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string_view::npos)
        << info.name;
    EXPECT_EQ(info.meaning.find('|'), std::string_view::npos) << info.name << ": breaks the table";
    EXPECT_EQ(info.meaning.find('\n'), std::string_view::npos) << info.name << ": one line";
  }
  EXPECT_EQ(names.size(), kWarningCount);
}

TEST(WarningTable, NamesFindTheirCodesAgain) {
  for (const WarningInfo& info : kWarnings) {
    EXPECT_EQ(warning_from_name(info.name), info.code) << info.name;
    EXPECT_EQ(warning_name(info.code), info.name);
  }
  EXPECT_EQ(warning_from_name("no_such_warning"), std::nullopt);
  EXPECT_EQ(warning_from_name(""), std::nullopt);
}

TEST(WarningTable, SeveritiesAreThoseCheckActsOn) {
  // `check` refuses to compare a run with an input warning: exactly these.
  std::set<std::string_view> input;
  for (const WarningInfo& info : kWarnings) {
    if (info.severity == WarningSeverity::input) input.insert(info.name);
  }
  EXPECT_EQ(input, (std::set<std::string_view>{"unreadable_input", "empty_input", "rank_gap",
                                               "uneven_ranks", "short_device", "trace_cut"}));
  EXPECT_EQ(severity_name(WarningSeverity::input), "input");
  EXPECT_EQ(severity_name(WarningSeverity::data), "data");
  EXPECT_EQ(severity_name(WarningSeverity::note), "note");
}

TEST(WarningTable, MarkdownHasOneRowPerCode) {
  const std::string table = warning_table_markdown();
  EXPECT_EQ(table.rfind("| code | severity | meaning |\n| --- | --- | --- |\n", 0), 0u);
  std::size_t lines = 0;
  for (const char c : table) lines += c == '\n';
  EXPECT_EQ(lines, kWarningCount + 2);
  EXPECT_NE(table.find("| `time_outlier` | data | jobs starting far from the others"),
            std::string::npos);
}

// The guide's "Warnings" section holds the table between two markers; when
// a code is added or a meaning changed, this prints the text to paste there.
TEST(WarningTable, GuideHoldsTheGeneratedTable) {
  const std::string guide =
      testing::read_file(std::string(PIPESCOPE_SOURCE_DIR) + "/docs/guide.md");
  const std::string begin = "<!-- warning table: generated from engine/model/warning.h -->\n";
  const std::string end = "<!-- end of warning table -->";
  const std::size_t from = guide.find(begin);
  ASSERT_NE(from, std::string::npos) << "docs/guide.md has no line " << begin;
  const std::size_t to = guide.find(end, from);
  ASSERT_NE(to, std::string::npos) << "docs/guide.md has no line " << end;
  const std::string expected = warning_table_markdown();
  EXPECT_EQ(guide.substr(from + begin.size(), to - from - begin.size()), expected)
      << "docs/guide.md's warning table differs from engine/model/warning.h; put this between "
         "the markers:\n"
      << expected;
}

}  // namespace
}  // namespace pipescope
