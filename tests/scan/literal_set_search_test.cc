// The literal search of the event prefilter against a plain search of each
// literal, with every kernel this machine runs (portable, and avx2 and vbmi
// where the CPU has them) on the same inputs: every occurrence once, at the
// text's edges and at every cut of the kernels' 32- and 64-byte steps, in
// any case, for literals of every length around both windows, with bytes
// beyond ASCII in the text and in the literals, and whatever windows the
// search was told to avoid; misses are only reported, never hits. And the
// environment variable that chooses the kernel.
#include "scan/literal_set_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/literal_kernels.h"

namespace pipescope {
namespace {

using testing::ForcedKernel;
using testing::machine_kernels;
using Kernel = LiteralSetSearch::Kernel;
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
               LiteralSetSearch::Misses* misses = nullptr) {
  std::vector<LiteralSetSearch::Hit> hits;
  search.find(text, hits, misses);
  Found out;
  for (const auto& hit : hits) out.emplace_back(hit.begin, hit.literal);
  // Each occurrence once: sorting keeps duplicates for the compare to see.
  std::sort(out.begin(), out.end());
  return out;
}

/// Literals of every length around the windows', sharing bytes so that
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

TEST(LiteralSetSearch, EveryKernelOfThisMachineIsTested) {
  const std::vector<Kernel> kernels = machine_kernels();
  std::string names;
  for (const Kernel kernel : kernels) names += std::string(" ") + LiteralSetSearch::name(kernel);
  RecordProperty("kernels", names);
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.front(), Kernel::portable);
#if defined(__x86_64__)
  // The avx2 kernel on every x86-64 CPU that has AVX2.
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_NE(std::find(kernels.begin(), kernels.end(), Kernel::avx2), kernels.end());
  }
#endif
}

TEST(LiteralSetSearch, FindsEveryOccurrenceOnceWithEveryKernel) {
  const std::vector<std::string> literals = test_literals();
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    const LiteralSetSearch search(literals, {}, kernel);
    std::mt19937 random(11);
    for (int round = 0; round < 200; ++round) {
      const std::string text = random_text(literals, random, 1 + random() % 700);
      EXPECT_EQ(searched(search, text), plain_search(literals, text)) << text;
      // Every suffix and prefix: literals at the text's first and last
      // bytes, and the 32- and 64-byte steps cut at every offset.
      for (std::size_t cut = 0; cut < std::min<std::size_t>(text.size(), 140); ++cut) {
        const std::string_view tail = std::string_view(text).substr(cut);
        const std::string_view head = std::string_view(text).substr(0, text.size() - cut);
        EXPECT_EQ(searched(search, tail), plain_search(literals, tail));
        EXPECT_EQ(searched(search, head), plain_search(literals, head));
      }
    }
  }
}

TEST(LiteralSetSearch, LiteralsAtEveryOffsetOfShortTextsAndOfTheSteps) {
  // Each literal alone in texts of 0 to 150 bytes, at every offset, in
  // filler that holds none: ASCII, zero bytes and bytes beyond ASCII (read
  // by their low bits where a shorter literal's window has ended).
  const std::vector<std::string> literals = test_literals();
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    const LiteralSetSearch search(literals, {}, kernel);
    for (const char filler : {'#', '\0', '\xff', '\x8a'}) {
      for (std::size_t size = 0; size <= 150; ++size) {
        const std::string empty(size, filler);
        ASSERT_EQ(searched(search, empty), Found{}) << size;
        for (std::uint32_t l = 0; l < literals.size(); ++l) {
          const std::string& literal = literals[l];
          for (std::size_t at = 0; at + literal.size() <= size; ++at) {
            std::string text = empty;
            text.replace(at, literal.size(), literal);
            ASSERT_EQ(searched(search, text), plain_search(literals, text))
                << "literal " << l << " at " << at << " of " << size << ", filler "
                << static_cast<int>(filler);
          }
        }
      }
    }
  }
}

TEST(LiteralSetSearch, EveryLiteralLengthInEveryCase) {
  // Sets of literals of one length, 1 to 12 bytes (beyond both windows),
  // and all lengths together: the avx2 kernel's copy for each count of
  // ASCII-only positions; the text upper case, lower case and mixed.
  const std::string letters = "nccl warn: cuda error 12345678 [torch] timed out after xyz";
  std::mt19937 random(17);
  std::vector<std::vector<std::string>> sets;
  std::vector<std::string> all;
  for (std::size_t length = 1; length <= 12; ++length) {
    std::vector<std::string> set;
    for (std::size_t at = 0; at + length <= letters.size(); at += 1 + random() % 9) {
      set.push_back(letters.substr(at, length));
      all.push_back(set.back());
    }
    sets.push_back(std::move(set));
  }
  sets.push_back(all);
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    for (const auto& literals : sets) {
      const LiteralSetSearch search(literals, {}, kernel);
      for (int round = 0; round < 20; ++round) {
        std::string text = random_text(literals, random, 1 + random() % 400);
        EXPECT_EQ(searched(search, text), plain_search(literals, text)) << text;
        for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        EXPECT_EQ(searched(search, text), plain_search(literals, text)) << text;
        for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_EQ(searched(search, text), plain_search(literals, text)) << text;
      }
    }
  }
}

TEST(LiteralSetSearch, LiteralsBeyondAscii) {
  // A literal with no ASCII window (every position of the avx2 kernel's
  // tables then reads a byte by its low bits), beside ASCII ones; text whose
  // bytes beyond ASCII share their low bits with the literals'.
  const std::vector<std::vector<std::string>> sets = {{"\xe9\xe8\xe9", "nccl warn"},
                                                      {"\xc3\xbc"
                                                       "berlauf",
                                                       "speicher\xc3\xbc", "out of memory"},
                                                      {"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7"}};
  std::mt19937 random(23);
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    for (const auto& literals : sets) {
      const LiteralSetSearch search(literals, {}, kernel);
      for (int round = 0; round < 50; ++round) {
        std::string text = random_text(literals, random, 1 + random() % 300);
        for (char& c : text) {
          if (random() % 7 == 0) c = static_cast<char>(c | 0x80);
        }
        text += literals[random() % literals.size()];
        EXPECT_EQ(searched(search, text), plain_search(literals, text)) << text;
      }
    }
  }
}

TEST(LiteralSetSearch, WindowsToAvoidMoveBucketsButNotWhatIsFound) {
  const std::vector<std::string> literals = test_literals();
  std::mt19937 random(5);
  const std::string text = random_text(literals, random, 20000);
  const Found expected = plain_search(literals, text);
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    const LiteralSetSearch first(literals, {}, kernel);
    // Avoid what the first search missed at, in pieces of the text: a search
    // of the same literals.
    std::vector<LiteralSetSearch::Avoid> avoid;
    for (std::size_t piece = 0; piece < text.size(); piece += 500) {
      const std::string_view part = std::string_view(text).substr(piece, 500);
      LiteralSetSearch::Misses misses;
      EXPECT_EQ(searched(first, part, &misses), plain_search(literals, part));
      for (std::size_t m = 0; m < misses.kept(); ++m) {
        if (misses.first[m] + first.window() <= part.size()) {
          avoid.push_back({std::string(part.substr(misses.first[m], first.window())), 1e-3});
        }
      }
    }
    EXPECT_FALSE(avoid.empty());
    const LiteralSetSearch second(literals, avoid, kernel);
    LiteralSetSearch::Misses misses_before, misses_after;
    EXPECT_EQ(searched(first, text, &misses_before), expected);
    EXPECT_EQ(searched(second, text, &misses_after), expected);
    // This text is random: the windows avoided are no commoner than others,
    // and the second search misses about as often.
    EXPECT_GT(misses_before.count, 0u);
  }
}

TEST(LiteralSetSearch, AWindowWithoutItsLiteralIsAMissNotAHit) {
  // Whichever window of the literal the search picked, one of the near
  // misses holds it without the literal.
  const std::vector<std::string> literals{"abcdefghij"};
  const std::string text = "abcdefghiQ...Qbcdefghij.. QQcdefghij";
  for (const Kernel kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    const LiteralSetSearch search(literals, {}, kernel);
    LiteralSetSearch::Misses misses;
    EXPECT_TRUE(searched(search, text, &misses).empty());
    EXPECT_GE(misses.count, 1u);
  }
}

TEST(LiteralSetSearch, TheAvx2KernelsTablesReadLowBits) {
  // "a", "q", "1" and "!" (0x61, 0x71, 0x31, 0x21) share their low 4 bits:
  // the avx2 tables pass any mix of them where the literal's window is, the
  // exact check makes each a miss, not a hit; a byte beyond ASCII with the
  // same low bits (0xe1) passes no ASCII position.
  if (!LiteralSetSearch::runs(Kernel::avx2)) GTEST_SKIP() << "this CPU has no AVX2";
  const std::vector<std::string> literals{"aqaqaqaqaq"};
  const LiteralSetSearch avx2(literals, {}, Kernel::avx2);
  EXPECT_EQ(avx2.window(), LiteralSetSearch::kNibbleWindow);
  EXPECT_EQ(LiteralSetSearch(literals, {}, Kernel::portable).window(), LiteralSetSearch::kWindow);
  LiteralSetSearch::Misses misses;
  EXPECT_TRUE(searched(avx2, std::string(70, 'Q') + "1!1!1!1!1!1!1!1!", &misses).empty());
  EXPECT_GT(misses.count, 60u);
  LiteralSetSearch::Misses high;
  EXPECT_TRUE(searched(avx2, std::string(80, '\xe1'), &high).empty());
  EXPECT_EQ(high.count, 0u);
  EXPECT_EQ(searched(avx2, "xxAqAqAqAqAqAqxx"), (Found{{2, 0}, {4, 0}}));
}

TEST(LiteralSetSearch, PortableAndVbmiShareTheirTables) {
  // The same exact tables, one position or 64 at a time: the same misses.
  if (!LiteralSetSearch::runs(Kernel::vbmi)) GTEST_SKIP() << "this CPU has no AVX-512 VBMI";
  const std::vector<std::string> literals = test_literals();
  std::mt19937 random(29);
  const std::string text = random_text(literals, random, 50000);
  LiteralSetSearch::Misses portable_misses, vbmi_misses;
  EXPECT_EQ(searched(LiteralSetSearch(literals, {}, Kernel::portable), text, &portable_misses),
            searched(LiteralSetSearch(literals, {}, Kernel::vbmi), text, &vbmi_misses));
  EXPECT_EQ(portable_misses.count, vbmi_misses.count);
}

TEST(LiteralSetSearch, TheEnvironmentChoosesTheKernel) {
  const std::vector<Kernel> kernels = machine_kernels();
  {
    ForcedKernel unset(nullptr);
    EXPECT_EQ(LiteralSetSearch::chosen_kernel(), kernels.back());  // the fastest
    EXPECT_EQ(LiteralSetSearch::fast(), kernels.back() != Kernel::portable);
  }
  {
    ForcedKernel empty("");
    EXPECT_EQ(LiteralSetSearch::chosen_kernel(), kernels.back());
  }
  for (const Kernel kernel : {Kernel::portable, Kernel::avx2, Kernel::vbmi}) {
    ForcedKernel forced(kernel);
    if (LiteralSetSearch::runs(kernel)) {
      EXPECT_EQ(LiteralSetSearch::chosen_kernel(), kernel);
      EXPECT_EQ(LiteralSetSearch({"abc"}).kernel(), kernel);  // the default argument
    } else {
      EXPECT_THROW(LiteralSetSearch::chosen_kernel(), std::invalid_argument);
      EXPECT_THROW(LiteralSetSearch({"abc"}, {}, kernel), std::invalid_argument);
    }
  }
  ForcedKernel wrong("sse9");
  try {
    (void)LiteralSetSearch::chosen_kernel();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "PIPESCOPE_LITERAL_SEARCH='sse9': expected portable, avx2 or vbmi");
  }
}

TEST(LiteralSetSearch, RareWindowsCostLessThanCommonOnes) {
  EXPECT_LT(LiteralSetSearch::rate("`max_tracing_count`"), LiteralSetSearch::rate("the rest of"));
  EXPECT_LT(LiteralSetSearch::rate("a longer literal"), LiteralSetSearch::rate("abc"));
}

}  // namespace
}  // namespace pipescope
