// The event library: every shipped pattern against the lines its source
// prints (examples), the near misses it must leave (counter-examples) and the
// captures it takes, through the engine's own matcher (Hyperscan finds the
// line in a block, RE2 confirms and captures); the file format's errors.
#include "scan/event_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "scan/event_matcher.h"

namespace pipescope {
namespace {

/// The patterns the matcher reports for `line`, alone in a block.
std::set<std::uint32_t> reported(const EventMatcher& matcher, EventMatcher::Scratch& scratch,
                                 const std::string& line) {
  std::vector<EventMatch> out;
  const std::string block = line + "\n";
  matcher.scan(block, scratch, out);
  std::set<std::uint32_t> patterns;
  for (const EventMatch& m : out) {
    EXPECT_EQ(m.line_begin, 0u);
    EXPECT_EQ(m.line_end, line.size());
    patterns.insert(m.pattern);
  }
  return patterns;
}

TEST(EventLibrary, TheShippedLibraryParsesWithAtLeastFortyEntries) {
  const EventLibrary library = builtin_event_library();
  EXPECT_GE(library.patterns.size(), 40u);
  std::set<std::string> categories;
  for (const EventPattern& p : library.patterns) {
    EXPECT_FALSE(p.examples.empty()) << p.id << " has no example";
    EXPECT_FALSE(p.source.empty()) << p.id << " cites no source";
    categories.insert(p.category);
  }
  EXPECT_GE(categories.size(), 8u);
}

TEST(EventLibrary, EveryShippedPatternMatchesTheLinesItsSourcePrints) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = builtin_event_library();
  const EventMatcher matcher(library);
  EventMatcher::Scratch scratch(matcher);
  for (std::uint32_t p = 0; p < library.patterns.size(); ++p) {
    const EventPattern& pattern = library.patterns[p];
    for (const std::string& example : pattern.examples) {
      EXPECT_TRUE(reported(matcher, scratch, example).count(p))
          << "[" << pattern.id << "] misses its example: " << example;
    }
    for (const std::string& near_miss : pattern.counter_examples) {
      EXPECT_FALSE(reported(matcher, scratch, near_miss).count(p))
          << "[" << pattern.id << "] matches its counter-example: " << near_miss;
    }
    if (!pattern.captures_expected.empty()) {
      const auto expected = parse_expected_captures(pattern.captures_expected);
      const auto got = matcher.captures(p, pattern.examples.front());
      for (const auto& [name, value] : expected) {
        const std::string& wanted = name;  // a binding clang 14 can capture
        const auto at =
            std::find_if(got.begin(), got.end(), [&](const auto& c) { return c.first == wanted; });
        ASSERT_NE(at, got.end()) << "[" << pattern.id << "] has no capture " << name;
        EXPECT_EQ(at->second, value) << "[" << pattern.id << "] capture " << name;
      }
    }
  }
}

TEST(EventLibrary, OrdinaryLogLinesAreNoEvent) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventMatcher matcher(builtin_event_library());
  EventMatcher::Scratch scratch(matcher);
  for (const std::string line :
       {"I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job (3), type = "
        "forward, micro_batch_id = 2, job_start_time = 1697793307213.760986, job_end_time = "
        "1697793307254.006104",
        "[2023-10-20 09:15:07,265] [    INFO] - loss: 2.10423, learning rate: 3e-05, "
        "global_step: 412, interval_runtime: 1.2043, interval_samples_per_second: 53.1",
        "iteration      412/  100000 | consumed samples:        52736 | elapsed time per "
        "iteration (ms): 1204.3 | learning rate: 3.000E-05 | lm loss: 2.104230E+00 |"}) {
    std::vector<EventMatch> out;
    matcher.scan(line + "\n", scratch, out);
    for (const EventMatch& m : out) {
      ADD_FAILURE() << "an ordinary line matched [" << matcher.kinds()[m.pattern].id
                    << "]: " << line;
    }
  }
}

TEST(EventMatcher, FindsEveryEventLineOfABlockOncePerPatternInLineOrder) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = parse_event_library(
      "[warn]\ncategory = nccl\nseverity = warning\nregex = NCCL WARN (?P<message>.+)\n"
      "[cost]\ncategory = dataloader\nseverity = info\nregex = reader_cost: (?P<s>[0-9.]+) s\n"
      "[edge]\ncategory = other\nseverity = info\nregex = ^end$\n",
      "test");
  const EventMatcher matcher(library);
  EventMatcher::Scratch scratch(matcher);
  const std::string block =
      "a NCCL WARN one NCCL WARN two\n"  // two occurrences: one event
      "quiet line\n"
      "reader_cost: 0.5 s and NCCL WARN x\n"  // two patterns on one line
      "end\n"
      "the end\n"          // ^end$ only where the line is `end`
      "reader_cost: 1 s";  // the block's last line without '\n'
  std::vector<EventMatch> out;
  matcher.scan(block, scratch, out);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].pattern, 0u);
  EXPECT_EQ(block.substr(out[0].line_begin, out[0].line_end - out[0].line_begin),
            "a NCCL WARN one NCCL WARN two");
  EXPECT_EQ(out[1].pattern, 0u);
  EXPECT_EQ(out[2].pattern, 1u);
  EXPECT_EQ(out[1].line_begin, out[2].line_begin);
  EXPECT_EQ(out[3].pattern, 2u);
  EXPECT_EQ(out[4].pattern, 1u);
  EXPECT_EQ(out[4].line_end, block.size());
  const auto captures = matcher.captures(1, "reader_cost: 0.52001 s");
  ASSERT_EQ(captures.size(), 1u);
  EXPECT_EQ(captures[0], (std::pair<std::string, std::string>{"s", "0.52001"}));
}

TEST(EventMatcher, ARegexHyperscanOrRe2RejectsIsAnErrorNamingTheEntry) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  for (const std::string regex : {"a(?=b)", "(a)\\1", "unclosed("}) {
    const EventLibrary library = parse_event_library(
        "[good]\ncategory = x\nseverity = info\nregex = fine\n\n[bad_one]\ncategory = x\n"
        "severity = info\nregex = " +
            regex + "\n",
        "my.patterns");
    try {
      EventMatcher matcher(library);
      ADD_FAILURE() << "accepted " << regex;
    } catch (const EventLibraryError& e) {
      EXPECT_NE(std::string(e.what()).find("[bad_one]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("my.patterns:6"), std::string::npos) << e.what();
    }
  }
}

TEST(EventLibrary, FormatErrorsNameTheOriginAndLine) {
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"category = x\n", "my.patterns:1: a key before the first `[id]`"},
      {"[Bad-Id]\n", "my.patterns:1: entry id 'Bad-Id'"},
      {"[a]\ncategory = x\nseverity = loud\nregex = y\n", "my.patterns:3: severity 'loud'"},
      {"[a]\ncategory = x\nseverity = info\n", "my.patterns:1: entry [a] has no regex"},
      {"[a]\ncategory = x\nseverity = info\nregex = y\n[a]\n",
       "my.patterns:5: entry [a] given twice"},
      {"[a]\ncolour = red\n", "my.patterns:2: unknown key `colour`"},
      {"[a]\njust text\n", "my.patterns:2: expected `key = value`"},
      {"[a]\nregex = x\nregex = y\n", "my.patterns:3: entry [a] gives `regex` twice"},
  };
  for (const Case& c : cases) {
    try {
      parse_event_library(c.text, "my.patterns");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const EventLibraryError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos)
          << e.what() << " (expected " << c.says << ")";
    }
  }
}

TEST(EventLibrary, AddedEntriesReplaceThoseWithTheSameIdInPlace) {
  EventLibrary library = parse_event_library(
      "[a]\ncategory = x\nseverity = info\nregex = one\n[b]\ncategory = x\nseverity = info\n"
      "regex = two\n",
      "base");
  library.add(parse_event_library(
      "[a]\ncategory = y\nseverity = error\nregex = uno\n[c]\ncategory = z\nseverity = info\n"
      "regex = three =  with equals \n",
      "mine"));
  ASSERT_EQ(library.patterns.size(), 3u);
  EXPECT_EQ(library.patterns[0].id, "a");
  EXPECT_EQ(library.patterns[0].regex, "uno");
  EXPECT_EQ(library.patterns[0].origin, "mine:1");
  EXPECT_EQ(library.patterns[1].regex, "two");
  // The value is the rest of the line after `= `, trailing blanks kept.
  EXPECT_EQ(library.patterns[2].regex, "three =  with equals ");
  EXPECT_EQ(library.find("c")->category, "z");
  EXPECT_EQ(library.find("d"), nullptr);
}

TEST(EventLibrary, ExpectedCapturesSplitAtTheNextName) {
  const auto pairs = parse_expected_captures("path=/a, b/c, seconds=0.5, empty=");
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0], (std::pair<std::string, std::string>{"path", "/a, b/c"}));
  EXPECT_EQ(pairs[1], (std::pair<std::string, std::string>{"seconds", "0.5"}));
  EXPECT_EQ(pairs[2], (std::pair<std::string, std::string>{"empty", ""}));
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(EventMatcher, TheCompiledLibraryIsCachedAndADamagedCacheIsRecompiled) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pipescope-hs-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const ScopedEnv env("PIPESCOPE_CACHE_DIR", dir.string());
  const EventLibrary library = builtin_event_library();
  const std::string line =
      "gpu-node-3:22317:22410 [3] misc/ibvwrap.cc:153 NCCL WARN Call to ibv_reg_mr failed\n";
  auto found = [&](const EventMatcher& m) {
    EventMatcher::Scratch scratch(m);
    std::vector<EventMatch> out;
    m.scan(line, scratch, out);
    return out.size();
  };
  std::size_t first = 0;
  {
    const EventMatcher compiled(library);
    first = found(compiled);
    EXPECT_GE(first, 1u);
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u);  // written once, no temporary left
  EXPECT_EQ(files[0].extension(), ".hsdb");
  {
    const EventMatcher loaded(library);
    EXPECT_EQ(found(loaded), first);
  }
  // A damaged file is not trusted: compiled again, and rewritten.
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "not a database";
  {
    const EventMatcher recompiled(library);
    EXPECT_EQ(found(recompiled), first);
  }
  EXPECT_GT(std::filesystem::file_size(files[0]), 1000u);
  // Another library is another file.
  EventLibrary mine = library;
  mine.add(parse_event_library("[mine]\ncategory = x\nseverity = info\nregex = zzz_marker\n", "t"));
  { const EventMatcher other(mine); }
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++count;
  EXPECT_EQ(count, 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipescope
