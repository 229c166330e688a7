// The literal search of the event prefilter against a plain search of each
// literal: every occurrence once, at text edges and in any case, whether
// the 64-position kernel or the portable one runs, and whatever windows
// the search was told to avoid; misses are only reported, never hits.
#include "scan/literal_set_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace pipescope {
namespace {

using Found = std::vector<std::pair<std::size_t, std::uint32_t>>;  // (begin, literal)

Found plain_search(const std::vector<std::string>& literals, std::string_view text) {
  std::string folded(text);
  for (char& c : folded) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  }
  Found out;
  for (std::uint32_t l = 0; l < literals.size(); ++l) {
    for (std::size_t at = folded.find(literals[l]); at != std::string::npos;
         at = folded.find(literals[l], at + 1)) {
      out.emplace_back(at, l);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Found searched(const LiteralSetSearch& search, std::string_view text,
               LiteralSetSearch::Kernel kernel, LiteralSetSearch::Misses* misses = nullptr) {
  std::vector<LiteralSetSearch::Hit> hits;
  search.find(text, hits, misses, kernel);
  Found out;
  for (const auto& hit : hits) out.emplace_back(hit.begin, hit.literal);
  std::sort(out.begin(), out.end());
  return out;
}

/// Literals of every length around the window's, sharing bytes so that
/// buckets hold several, with bytes beyond ASCII and overlapping ones.
std::vector<std::string> test_literals() {
  return {"nccl warn ",      "nccl info ",   "cuda error",  "out of memory",
          "[torch] ",        "ab",           "abc",         "checkpoint",
          "checkpoint to ",  "aaaaaaaaaa",   "\xe9t\xe9 f", "x",
          "timed out after", "`max_tracing", "12345678",    "*****"};
}

/// Text of random lines with the literals dropped in at random places, in
/// random case, many at the start and the end.
std::string random_text(const std::vector<std::string>& literals, std::mt19937& random,
                        std::size_t size) {
  const std::string bytes = "abcdeimnorstuw  ,.:[]()0123456789\n\xe9\x80\xff*`AEIMNOTW";
  std::string text;
  while (text.size() < size) {
    if (random() % 8 == 0) {
      std::string literal = literals[random() % literals.size()];
      for (char& c : literal) {
        if (c >= 'a' && c <= 'z' && random() % 2) c = static_cast<char>(c - ('a' - 'A'));
      }
      text += literal;
    } else {
      text += bytes[random() % bytes.size()];
    }
  }
  return text;
}

TEST(LiteralSetSearch, FindsEveryOccurrenceOnceWithEitherKernel) {
  const std::vector<std::string> literals = test_literals();
  const LiteralSetSearch search(literals);
  std::mt19937 random(11);
  for (int round = 0; round < 200; ++round) {
    const std::string text = random_text(literals, random, 1 + random() % 700);
    const Found expected = plain_search(literals, text);
    EXPECT_EQ(searched(search, text, LiteralSetSearch::Kernel::portable), expected) << text;
    EXPECT_EQ(searched(search, text, LiteralSetSearch::Kernel::best), expected) << text;
    // Every suffix and prefix: literals at the text's first and last bytes,
    // and the 64-byte steps cut at every offset.
    for (std::size_t cut = 0; cut < std::min<std::size_t>(text.size(), 140); ++cut) {
      const std::string_view tail = std::string_view(text).substr(cut);
      const std::string_view head = std::string_view(text).substr(0, text.size() - cut);
      EXPECT_EQ(searched(search, tail, LiteralSetSearch::Kernel::best),
                plain_search(literals, tail));
      EXPECT_EQ(searched(search, head, LiteralSetSearch::Kernel::best),
                plain_search(literals, head));
    }
  }
}

TEST(LiteralSetSearch, WindowsToAvoidMoveBucketsButNotWhatIsFound) {
  const std::vector<std::string> literals = test_literals();
  std::mt19937 random(5);
  const std::string text = random_text(literals, random, 20000);
  const Found expected = plain_search(literals, text);
  const LiteralSetSearch first(literals);
  // Avoid what the first search missed at, in pieces of the text: a search
  // of the same literals.
  std::vector<LiteralSetSearch::Avoid> avoid;
  for (std::size_t piece = 0; piece < text.size(); piece += 500) {
    const std::string_view part = std::string_view(text).substr(piece, 500);
    LiteralSetSearch::Misses misses;
    EXPECT_EQ(searched(first, part, LiteralSetSearch::Kernel::best, &misses),
              plain_search(literals, part));
    for (std::size_t m = 0; m < misses.kept(); ++m) {
      if (misses.first[m] + LiteralSetSearch::kWindow <= part.size()) {
        avoid.push_back(
            {std::string(part.substr(misses.first[m], LiteralSetSearch::kWindow)), 1e-3});
      }
    }
  }
  EXPECT_FALSE(avoid.empty());
  const LiteralSetSearch second(literals, avoid);
  LiteralSetSearch::Misses misses_after;
  EXPECT_EQ(searched(second, text, LiteralSetSearch::Kernel::best, &misses_after), expected);
  EXPECT_EQ(searched(second, text, LiteralSetSearch::Kernel::portable), expected);
}

TEST(LiteralSetSearch, AWindowWithoutItsLiteralIsAMissNotAHit) {
  // Whichever window of the literal the search picked, one of the two
  // near misses holds it without the literal.
  const std::vector<std::string> literals{"abcdefghij"};
  const LiteralSetSearch search(literals);
  const std::string text = "abcdefghiQ...Qbcdefghij.. QQcdefghij";
  for (const auto kernel : {LiteralSetSearch::Kernel::best, LiteralSetSearch::Kernel::portable}) {
    LiteralSetSearch::Misses misses;
    EXPECT_TRUE(searched(search, text, kernel, &misses).empty());
    EXPECT_GE(misses.count, 1u);
  }
}

TEST(LiteralSetSearch, RareWindowsCostLessThanCommonOnes) {
  EXPECT_LT(LiteralSetSearch::rate("`max_tracing_count`"), LiteralSetSearch::rate("the rest of"));
  EXPECT_LT(LiteralSetSearch::rate("a longer literal"), LiteralSetSearch::rate("abc"));
}

}  // namespace
}  // namespace pipescope
