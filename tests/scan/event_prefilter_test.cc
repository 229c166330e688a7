// The event search's literal first pass against Hyperscan's full scan, with
// every kernel of the literal search this CPU runs (forced in turn with
// PIPESCOPE_LITERAL_SEARCH): the same events for every example line of the
// shipped library, alone and in blocks cut anywhere between lines, in logs
// that make each thread change the clauses it searches and the buckets of
// its search; and a library with a pattern that requires no literal reads
// every line.
#include "scan/event_prefilter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "scan/event_library.h"
#include "scan/event_matcher.h"
#include "support/literal_kernels.h"

namespace pipescope {
namespace {

using testing::ForcedKernel;
using testing::machine_kernels;
using Events = std::vector<std::tuple<std::size_t, std::size_t, std::uint32_t>>;

Events events_of(const EventMatcher& matcher, EventMatcher::Scratch& scratch,
                 std::string_view block) {
  std::vector<EventMatch> out;
  matcher.scan(block, scratch, out);
  Events events;
  for (const EventMatch& m : out) events.emplace_back(m.line_begin, m.line_end, m.pattern);
  return events;
}

/// The events of `text` scanned in blocks cut at the line ends `cuts`
/// picks, as offsets in the whole text.
Events events_in_blocks(const EventMatcher& matcher, EventMatcher::Scratch& scratch,
                        std::string_view text, std::mt19937& random) {
  Events all;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = begin;
    for (int lines = 1 + static_cast<int>(random() % 40); lines > 0 && end < text.size(); --lines) {
      const std::size_t nl = text.find('\n', end);
      end = nl == std::string_view::npos ? text.size() : nl + 1;
    }
    for (auto [b, e, p] : events_of(matcher, scratch, text.substr(begin, end - begin))) {
      all.emplace_back(b + begin, e + begin, p);
    }
    begin = end;
  }
  return all;
}

/// Every example and counter-example of the library, and ordinary lines
/// around them (a Paddle log's chatter).
std::vector<std::string> library_lines(const EventLibrary& library) {
  std::vector<std::string> lines;
  for (const EventPattern& p : library.patterns) {
    lines.insert(lines.end(), p.examples.begin(), p.examples.end());
    lines.insert(lines.end(), p.counter_examples.begin(), p.counter_examples.end());
  }
  return lines;
}

const std::vector<std::string> kChatter = {
    "I1020 09:15:02.213411 46940 interpretercore.cc:237] New Executor is Running.",
    "LAUNCH INFO 2023-10-20 09:15:02,213 Pod status: running, 12 heartbeats",
    "I1020 09:15:02.213685 46940 nccl_comm_context.cc:72] ncclCommInitRank\tdone, rank 0",
    "I1020 09:15:02.214233 46940 standalone_executor.cc:195] Profiler Info: Joined 5 threads",
    "[2023-10-20 09:15:02,213] [    INFO] - loss: 2.399275, learning_rate: 3e-05",
    "",
    "W1020 09:15:02.214096 46940 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute",
};

/// A log of chatter with the library's lines among it, mostly chatter.
std::string mixed_log(const std::vector<std::string>& lines, std::mt19937& random,
                      std::size_t size) {
  std::string text;
  while (text.size() < size) {
    text +=
        random() % 20 == 0 ? lines[random() % lines.size()] : kChatter[random() % kChatter.size()];
    text += '\n';
  }
  return text;
}

TEST(EventPrefilter, TheShippedLibraryRequiresALiteralOfEveryPattern) {
  std::vector<std::string> regexes;
  for (const EventPattern& p : builtin_event_library().patterns) regexes.push_back(p.regex);
  const auto prefilter = EventPrefilter::make(regexes);
  ASSERT_NE(prefilter, nullptr);
  EXPECT_EQ(prefilter->patterns(), regexes.size());
}

TEST(EventPrefilter, FindsWhatTheFullScanFindsForEveryLibraryLine) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = builtin_event_library();
  const EventMatcher full(library, EventSearch::full_scan);
  ASSERT_FALSE(full.prefiltered());
  EventMatcher::Scratch full_scratch(full);
  for (const auto kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    ForcedKernel forced(kernel);
    const EventMatcher literal(library, EventSearch::prefiltered);
    ASSERT_TRUE(literal.prefiltered());
    EventMatcher::Scratch literal_scratch(literal);
    const std::vector<std::string> lines = library_lines(library);
    std::string all;
    for (const std::string& line : lines) {
      // Alone, with and without its newline.
      for (const std::string& block : {line, line + "\n"}) {
        EXPECT_EQ(events_of(literal, literal_scratch, block), events_of(full, full_scratch, block))
            << line;
      }
      all += line + "\n";
    }
    // All in one block: the search's 32- and 64-byte steps cut lines everywhere.
    const Events expected = events_of(full, full_scratch, all);
    EXPECT_GE(expected.size(), library.patterns.size());
    EXPECT_EQ(events_of(literal, literal_scratch, all), expected);
  }
}

TEST(EventPrefilter, CaselessAndNonAsciiPatternsFindWhatTheFullScanFinds) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  // A caseless entry's literals are found in any case; a case-sensitive
  // one's only in its own, by RE2; bytes beyond ASCII are compared as they
  // are (UTF-8 read as Latin-1, as RE2 and Hyperscan read lines).
  const EventLibrary library = parse_event_library(
      "[oom]\ncategory = memory\nseverity = error\nregex = (?i)out of memory on (?P<dev>\\w+)\n"
      "[warn]\ncategory = nccl\nseverity = warning\nregex = NCCL WARN (?P<message>.+)\n"
      "[umlaut]\ncategory = memory\nseverity = error\nregex = Speicher\xc3\xbc"
      "berlauf auf GPU\n",
      "test");
  const EventMatcher full(library, EventSearch::full_scan);
  EventMatcher::Scratch full_scratch(full);
  const std::string block =
      "Out Of Memory on gpu0\nOUT OF MEMORY ON GPU1\nout of memory on\n"
      "nccl warn lower case\nNCCL WARN upper\nNccl Warn mixed\n"
      "Speicher\xc3\xbc"
      "berlauf auf GPU 3\nSPEICHER\xc3\x9c"
      "BERLAUF AUF GPU\n"
      "Speicher\xc3\x9c"
      "berlauf auf GPU\nx Speicher\xc3\xbc"
      "berlauf auf GPU";
  const Events expected = events_of(full, full_scratch, block);
  EXPECT_EQ(expected.size(), 5u);
  for (const auto kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    ForcedKernel forced(kernel);
    const EventMatcher literal(library, EventSearch::prefiltered);
    ASSERT_TRUE(literal.prefiltered());
    EventMatcher::Scratch literal_scratch(literal);
    EXPECT_EQ(events_of(literal, literal_scratch, block), expected);
  }
}

TEST(EventPrefilter, BlocksCutAnywhereAndLearningThreadsFindTheSame) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = builtin_event_library();
  const EventMatcher full(library, EventSearch::full_scan);
  EventMatcher::Scratch full_scratch(full);
  std::mt19937 random(3);
  const std::string log = mixed_log(library_lines(library), random, 400000);
  const Events expected = events_of(full, full_scratch, log);
  EXPECT_GT(expected.size(), 100u);
  for (const auto kernel : machine_kernels()) {
    SCOPED_TRACE(LiteralSetSearch::name(kernel));
    ForcedKernel forced(kernel);
    const EventMatcher literal(library, EventSearch::prefiltered);
    for (int thread = 0; thread < 3; ++thread) {
      // A fresh thread's state, which learns from the chatter as it goes.
      EventMatcher::Scratch literal_scratch(literal);
      EXPECT_EQ(events_in_blocks(literal, literal_scratch, log, random), expected) << thread;
      EXPECT_EQ(events_of(literal, literal_scratch, log), expected) << thread;
    }
  }
}

TEST(EventPrefilter, AThreadSearchesAnotherClauseWhereItsFirstChoiceIsCommon) {
  // `LAUNCH INFO` starts many lines of a launcher's log, `Pod failed` few:
  // whichever clause was guessed, the thread ends up searching the rare one.
  const std::vector<std::string> regexes{"LAUNCH INFO [0-9-]+ [0-9:,]+ Pod failed",
                                         "NCCL WARN (?P<message>.+)"};
  const auto prefilter = EventPrefilter::make(regexes);
  ASSERT_NE(prefilter, nullptr);
  ASSERT_EQ(prefilter->clauses(0), 2u);
  EventPrefilter::State state(*prefilter);
  const std::string common =
      "LAUNCH INFO 2023-10-20 09:15:02,213 Pod status: running, 1 heartbeats\n";
  const std::string event = "LAUNCH INFO 2023-10-20 09:15:09,001 Pod failed\n";
  std::vector<EventPrefilter::Candidate> out;
  std::vector<std::size_t> searched;
  for (int block = 0; block < 200; ++block) {
    std::string text;
    for (int i = 0; i < 50; ++i) text += common;
    text += event;
    out.clear();
    prefilter->candidates(text, state, out);
    ASSERT_EQ(out.size(), 1u) << block;
    EXPECT_EQ(out[0].pattern, 0u);
    EXPECT_EQ(text.substr(out[0].line_begin, out[0].line_end - out[0].line_begin + 1), event);
    searched.push_back(state.searched_clause(0));
  }
  // The thread settled on the clause no common line holds.
  EXPECT_EQ(prefilter->clause(0, searched.back()), std::vector<std::string>{" pod failed"});
  EXPECT_TRUE(std::all_of(searched.end() - 100, searched.end(),
                          [&](std::size_t c) { return c == searched.back(); }));
}

TEST(EventPrefilter, APatternWithoutALiteralMakesTheMatcherReadEveryLine) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = parse_event_library(
      "[warn]\ncategory = nccl\nseverity = warning\nregex = NCCL WARN (?P<message>.+)\n"
      "[slow]\ncategory = other\nseverity = info\nregex = ^[0-9]+ s$\n",
      "test");
  EXPECT_EQ(EventPrefilter::make({"NCCL WARN (?P<message>.+)", "^[0-9]+ s$"}), nullptr);
  const EventMatcher matcher(library, EventSearch::prefiltered);
  EXPECT_FALSE(matcher.prefiltered());
  EventMatcher::Scratch scratch(matcher);
  const std::string block = "a NCCL WARN x\n1250 s\nquiet\n";
  const Events events = events_of(matcher, scratch, block);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(std::get<2>(events[0]), 0u);
  EXPECT_EQ(std::get<2>(events[1]), 1u);
  EXPECT_EQ(std::get<0>(events[1]), block.find("1250"));
}

}  // namespace
}  // namespace pipescope
