#include "scan/prefilter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scan/job_line_parser.h"

namespace pipescope {
namespace {

using Match = std::pair<std::size_t, LiteralId>;  // end offset, literal

std::vector<Match> expected_matches(std::string_view text) {
  std::vector<Match> out;
  for (const auto& [literal, id] : {std::pair{kJobLineLiteral, LiteralId::job_line},
                                    std::pair{kStepStartLiteral, LiteralId::step_start}}) {
    for (std::size_t at = text.find(literal); at != std::string_view::npos;
         at = text.find(literal, at + 1)) {
      out.emplace_back(at + literal.size(), id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Match> found_matches(std::string_view text) {
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  std::vector<Match> out;
  prefilter.scan(text, scratch, [&](LiteralId id, std::size_t end) {
    out.emplace_back(end, id);
    return true;
  });
  return out;
}

TEST(Prefilter, ReportsEveryOccurrenceInOrder) {
  const std::string text =
      std::string("x Schedule Profiler start at step 3 Profiler Info: Job (1)") +
      "Profiler Info: JobProfiler Info: Job" + "Schedule Profiler start at step";
  const std::vector<Match> got = found_matches(text);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], Match(2 + kStepStartLiteral.size(), LiteralId::step_start));
  EXPECT_EQ(got, expected_matches(text));
  EXPECT_EQ(got.back(), Match(text.size(), LiteralId::step_start));
}

TEST(Prefilter, FindsTheLiteralsAtEveryAlignmentAndNearMissesNever) {
  // Literals, truncated literals and look-alikes at every offset of texts of
  // every length around the 16- and 32-byte strides.
  const std::vector<std::string> pieces = {
      std::string(kJobLineLiteral),  std::string(kStepStartLiteral),
      "Profiler Info: Jo",           "Profiler start at step",
      "Schedule Profiler Info: Job", "Scheduled Profiler start at step",
      "Profiler  Info: Job",         "PPfffProfiler Pf Prof",
      "Profiler Info: Joined",
  };
  std::size_t total = 0;
  for (const std::string& piece : pieces) {
    for (std::size_t length = 0; length <= 80; ++length) {
      for (std::size_t at = 0; at + piece.size() <= length || (at == 0 && length < piece.size());
           ++at) {
        std::string text(length, '.');
        text.replace(at, std::min(piece.size(), length - at), piece.substr(0, length - at));
        const std::vector<Match> expected = expected_matches(text);
        EXPECT_EQ(found_matches(text), expected) << "'" << text << "'";
        total += expected.size();
      }
    }
  }
  EXPECT_GT(total, 1000u);  // the literals were in place
}

TEST(Prefilter, AgreesWithASearchOnRandomText) {
  std::mt19937 rng(11);
  const std::string alphabet = "PfrSo lei:nJb\n";
  const std::vector<std::string> literals = {std::string(kJobLineLiteral),
                                             std::string(kStepStartLiteral)};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    while (text.size() < 2000) {
      if (rng() % 8 == 0) {
        text += literals[rng() % 2];
      } else {
        text += alphabet[rng() % alphabet.size()];
      }
    }
    EXPECT_EQ(found_matches(text), expected_matches(text)) << round;
  }
}

TEST(Prefilter, StopsWhenTheCallbackSaysSo) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += std::string(kJobLineLiteral) + " padding to the next one\n";
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  int calls = 0;
  prefilter.scan(text, scratch, [&](LiteralId, std::size_t) { return ++calls < 3; });
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace pipescope
