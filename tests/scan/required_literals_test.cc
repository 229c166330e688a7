// The literals RE2's analysis says a matching line must hold: their form
// (lower case, clauses of alternatives), the regexes that require none, and
// the promise the event search rests on: every line a shipped pattern
// matches, its examples and lines made from them, holds a literal of each
// of its clauses.
#include "scan/required_literals.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "scan/event_library.h"

namespace pipescope {
namespace {

std::string folded(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  }
  return out;
}

/// Whether `line` holds a literal of every clause.
bool holds_every_clause(const RequiredLiterals& required, std::string_view line) {
  const std::string text = folded(line);
  return std::all_of(required.clauses.begin(), required.clauses.end(), [&](const auto& clause) {
    return std::any_of(clause.begin(), clause.end(), [&](const std::string& literal) {
      return text.find(literal) != std::string::npos;
    });
  });
}

TEST(RequiredLiterals, ALiteralRunIsOneClauseInLowerCase) {
  const RequiredLiterals r = required_literals("NCCL WARN (?P<message>.+)");
  ASSERT_EQ(r.clauses.size(), 1u);
  EXPECT_EQ(r.clauses[0], std::vector<std::string>{"nccl warn "});
}

TEST(RequiredLiterals, AnAlternationIsAClauseOfItsBranches) {
  const RequiredLiterals r = required_literals("(?:unspecified launch failure|'cudaErrorLaunch')");
  ASSERT_EQ(r.clauses.size(), 1u);
  std::vector<std::string> clause = r.clauses[0];
  std::sort(clause.begin(), clause.end());
  EXPECT_EQ(clause, (std::vector<std::string>{"'cudaerrorlaunch'", "unspecified launch failure"}));
}

TEST(RequiredLiterals, LiteralsApartAreClausesOfTheirOwn) {
  const RequiredLiterals r = required_literals("LAUNCH INFO [0-9-]+ [0-9:,]+ Pod failed");
  ASSERT_EQ(r.clauses.size(), 2u);
  std::vector<std::string> all;
  for (const auto& clause : r.clauses) {
    ASSERT_EQ(clause.size(), 1u);
    all.push_back(clause[0]);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{" pod failed", "launch info "}));
}

TEST(RequiredLiterals, CaselessPatternsGiveFoldedLiterals) {
  const RequiredLiterals r = required_literals("(?i)Out Of Memory");
  ASSERT_EQ(r.clauses.size(), 1u);
  EXPECT_EQ(r.clauses[0], std::vector<std::string>{"out of memory"});
}

TEST(RequiredLiterals, ARegexWithoutALiteralOfThreeBytesRequiresNone) {
  for (const char* regex : {".+", "[0-9]+ s", "a|b", "OK", "(?:ab)?c*", "x(", ""}) {
    EXPECT_TRUE(required_literals(regex).clauses.empty()) << regex;
  }
}

TEST(RequiredLiterals, EveryLineAShippedPatternMatchesHoldsALiteralOfEachClause) {
  const EventLibrary library = builtin_event_library();
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  std::mt19937 random(7);
  for (const EventPattern& p : library.patterns) {
    const RequiredLiterals required = required_literals(p.regex);
    EXPECT_FALSE(required.clauses.empty()) << "[" << p.id << "] requires no literal";
    const RE2 re(p.regex, options);
    for (const std::string& example : p.examples) {
      EXPECT_TRUE(holds_every_clause(required, example)) << p.id << ": " << example;
      // Lines made from the example: cut short, a byte dropped, upper and
      // lower case swapped. Where RE2 still matches, the literals hold.
      for (int round = 0; round < 200; ++round) {
        std::string line = example;
        std::uniform_int_distribution<std::size_t> at(0, line.size() - 1);
        switch (round % 3) {
          case 0:
            line.resize(at(random));
            break;
          case 1:
            line.erase(at(random), 1);
            break;
          default:
            for (char& c : line) {
              if (std::isalpha(static_cast<unsigned char>(c)) && random() % 2) c ^= 0x20;
            }
        }
        if (RE2::PartialMatch(line, re)) {
          EXPECT_TRUE(holds_every_clause(required, line)) << p.id << ": " << line;
        }
      }
    }
  }
}

}  // namespace
}  // namespace pipescope
