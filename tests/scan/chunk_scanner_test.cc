#include "scan/chunk_scanner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scan/event_library.h"
#include "scan/event_matcher.h"

namespace pipescope {
namespace {

std::string job(int id, std::string_view type, int start_ms) {
  return "I1020 x.cc:217] Profiler Info: Job (" + std::to_string(id) +
         "), type = " + std::string(type) +
         ", micro_batch_id = 1, job_start_time = " + std::to_string(start_ms) +
         ".5, job_end_time = " + std::to_string(start_ms + 1) + ".25";
}

/// Lines of every kind the scanner tells apart, one per element.
std::vector<std::string> mixed_lines() {
  return {
      "noise",
      job(0, "forward", 10),
      "Schedule Profiler start at step 4",
      "",
      job(1, "backward", 20) + "\r",                                            // CRLF
      "\x1b[32m" + job(2, "forward", 30) + "\x1b[0m",                           // coloured
      "Profiler Info: Job (9), type = forward, micro_batch_id = 0, job_start",  // malformed
      "Schedule Profiler start at step 5 " + job(3, "optimizer", 40),           // both literals
      job(4, "forward", 50) + ", Schedule Profiler start at step 6",            // both, job first
      "Profiler Info: Jobs done",                                  // the literal, not a job
      job(5, "backward", 60) + ", note = Profiler Info: Job (7)",  // the literal twice
      std::string(400, 'y') + job(6, "forward", 70),               // over the 300-byte limit
      std::string("binary\0data", 11),
      job(7, "forward", 80),
  };
}

ChunkScan scan_pieces(const std::string& text, const std::vector<std::size_t>& cuts,
                      bool end_of_file, const JobLineRegex* job_line = nullptr) {
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  ChunkScanOptions options;
  options.look_for_binary = true;
  options.max_line_bytes = 300;
  std::optional<JobLineRegex::Scratch> job_line_scratch;
  if (job_line != nullptr) {
    job_line_scratch.emplace(*job_line);
    options.job_line = job_line;
    options.job_line_scratch = &*job_line_scratch;
  }
  ChunkScan out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const std::size_t end = i < cuts.size() ? cuts[i] : text.size();
    options.end_of_file = end_of_file && end == text.size();
    scan_chunk_more(std::string_view(text).substr(begin, end - begin), begin, prefilter, scratch,
                    options, out);
    begin = end;
  }
  return out;
}

void expect_same(const ChunkScan& a, const ChunkScan& b, const std::string& what) {
  EXPECT_EQ(a.lines, b.lines) << what;
  ASSERT_EQ(a.jobs.size(), b.jobs.size()) << what;
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].start_ns, b.jobs[i].start_ns) << what;
    EXPECT_EQ(a.jobs[i].end_ns, b.jobs[i].end_ns) << what;
    EXPECT_EQ(a.jobs[i].job_id, b.jobs[i].job_id) << what;
    EXPECT_EQ(a.types[a.jobs[i].type], b.types[b.jobs[i].type]) << what;
    EXPECT_EQ(a.jobs[i].line, b.jobs[i].line) << what;
  }
  EXPECT_EQ(a.malformed, b.malformed) << what;
  EXPECT_EQ(a.oversized, b.oversized) << what;
  ASSERT_EQ(a.problems.size(), b.problems.size()) << what;
  for (std::size_t i = 0; i < a.problems.size(); ++i) {
    EXPECT_EQ(a.problems[i].line, b.problems[i].line) << what;
    EXPECT_EQ(a.problems[i].error, b.problems[i].error) << what;
  }
  ASSERT_EQ(a.step_starts.size(), b.step_starts.size()) << what;
  for (std::size_t i = 0; i < a.step_starts.size(); ++i) {
    EXPECT_EQ(a.step_starts[i].line, b.step_starts[i].line) << what;
    EXPECT_EQ(a.step_starts[i].step, b.step_starts[i].step) << what;
  }
  EXPECT_EQ(a.first_nul, b.first_nul) << what;
  EXPECT_EQ(a.partial_last_line, b.partial_last_line) << what;
  EXPECT_EQ(a.anchor, b.anchor) << what;
  EXPECT_EQ(a.last_stamp, b.last_stamp) << what;
  EXPECT_EQ(a.last_stamp_line, b.last_stamp_line) << what;
}

TEST(ChunkScanner, ReadsEveryKindOfLineWithItsLineIndex) {
  std::string text;
  for (const std::string& line : mixed_lines()) text += line + "\n";
  const ChunkScan scan = scan_pieces(text, {}, false);
  EXPECT_EQ(scan.lines, 14u);
  // Jobs 0..5 and 7 (job 6 is on the over-long line), at their 0-based lines.
  ASSERT_EQ(scan.jobs.size(), 7u);
  const std::uint32_t lines[] = {1, 4, 5, 7, 8, 10, 13};
  const std::int64_t ids[] = {0, 1, 2, 3, 4, 5, 7};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(scan.jobs[i].line, lines[i]) << i;
    EXPECT_EQ(scan.jobs[i].job_id, ids[i]) << i;
  }
  EXPECT_EQ(scan.jobs[3].start_ns, 40'500'000);
  EXPECT_EQ(scan.jobs[3].end_ns, 41'250'000);
  EXPECT_EQ(scan.types[scan.jobs[3].type], "optimizer");
  ASSERT_EQ(scan.step_starts.size(), 3u);
  EXPECT_EQ(scan.step_starts[0].line, 2u);
  EXPECT_EQ(scan.step_starts[1].line, 7u);
  EXPECT_EQ(scan.step_starts[1].step, 5);
  EXPECT_EQ(scan.step_starts[2].line, 8u);
  EXPECT_EQ(scan.step_starts[2].step, 6);
  EXPECT_EQ(scan.malformed, 2u);  // line 6, and "Jobs done" on line 9
  EXPECT_EQ(scan.oversized, 1u);
  ASSERT_EQ(scan.problems.size(), 3u);
  EXPECT_EQ(scan.problems[0].line, 6u);
  EXPECT_EQ(scan.problems[0].error, LineError::missing_start_time);
  EXPECT_EQ(scan.problems[1].line, 9u);
  EXPECT_EQ(scan.problems[1].error, LineError::bad_job_id);
  EXPECT_EQ(scan.problems[2].line, 11u);
  EXPECT_EQ(scan.problems[2].error, LineError::line_too_long);
  EXPECT_EQ(scan.first_nul, text.find('\0'));
}

TEST(ChunkScanner, PiecesCutAtAnyLineBoundariesGiveTheWhole) {
  for (const bool partial : {false, true}) {
    std::string text;
    std::vector<std::size_t> boundaries;
    for (const std::string& line : mixed_lines()) {
      text += line + "\n";
      boundaries.push_back(text.size());
    }
    boundaries.pop_back();
    if (partial) text += job(8, "forward", 90);  // the file's last line, without '\n'
    const ChunkScan whole = scan_pieces(text, {}, true);
    EXPECT_EQ(whole.partial_last_line, partial ? job(8, "forward", 90).size() : 0u);
    for (std::size_t i = 0; i < boundaries.size(); ++i) {
      expect_same(scan_pieces(text, {boundaries[i]}, true), whole,
                  "cut at " + std::to_string(boundaries[i]));
      for (std::size_t j = i + 1; j < boundaries.size(); ++j) {
        expect_same(
            scan_pieces(text, {boundaries[i], boundaries[j]}, true), whole,
            "cuts at " + std::to_string(boundaries[i]) + ", " + std::to_string(boundaries[j]));
      }
    }
  }
}

/// Another framework's job lines (--job-line), among Paddle's.
constexpr const char* kOtherRegex =
    R"(rank\d+ (?P<type>\w+) mb=(?P<mb>\S+) t0=(?P<start>\S+) t1=(?P<end>\S+))";

std::vector<std::string> other_framework_lines() {
  return {
      "[2024-05-01 10:00:00] rank0 fwd mb=0 t0=1714557600.5 t1=1714557601",  // a job
      job(0, "forward", 10),                                                 // Paddle's: not read
      "Schedule Profiler start at step 4",                                   // read
      "rank0 bwd mb=x t0=1 t1=2",                                            // malformed
      std::string(400, 'y') + "rank0 fwd mb=1 t0=1 t1=2",  // a job over the 300-byte limit
      std::string(400, 'z'),                               // over the limit, no job
      "noise",
      "[2024-05-01 10:00:09] rank0 bwd mb=2 t0=1714557603 t1=1714557604.000000001",
      "rank0 fwd mb=3 t0=1714557605 t1=1714557606",  // undated
  };
}

TEST(ChunkScanner, AJobLineRegexReadsItsLinesInsteadOfPaddles) {
  for (const JobLineRegex::Search search :
       {JobLineRegex::Search::hyperscan, JobLineRegex::Search::every_line}) {
    const JobLineRegex regex(kOtherRegex, TimeUnit::s,
                             JobLineRegex::parse_kinds("fwd=forward,bwd=backward"), search);
    std::string text;
    for (const std::string& line : other_framework_lines()) text += line + "\n";
    const ChunkScan scan = scan_pieces(text, {}, false, &regex);
    EXPECT_EQ(scan.lines, 9u);
    ASSERT_EQ(scan.jobs.size(), 3u);
    EXPECT_EQ(scan.jobs[0].line, 0u);
    EXPECT_EQ(scan.jobs[0].start_ns, 1714557600500000000);
    EXPECT_EQ(scan.jobs[0].end_ns, 1714557601000000000);
    EXPECT_EQ(scan.jobs[0].micro_batch, 0);
    EXPECT_EQ(scan.types[scan.jobs[0].type], "forward");
    EXPECT_EQ(scan.jobs[1].line, 7u);
    EXPECT_EQ(scan.jobs[1].end_ns, 1714557604000000001);
    EXPECT_EQ(scan.types[scan.jobs[1].type], "backward");
    EXPECT_EQ(scan.jobs[2].line, 8u);
    ASSERT_EQ(scan.step_starts.size(), 1u);
    EXPECT_EQ(scan.step_starts[0].line, 2u);
    EXPECT_EQ(scan.malformed, 1u);
    EXPECT_EQ(scan.oversized, 1u);
    ASSERT_EQ(scan.problems.size(), 2u);
    EXPECT_EQ(scan.problems[0].line, 3u);
    EXPECT_EQ(scan.problems[0].error, LineError::bad_micro_batch_capture);
    EXPECT_EQ(scan.problems[1].line, 4u);
    EXPECT_EQ(scan.problems[1].error, LineError::line_too_long);
    // The first dated job line places the file's stamps; the last dated one
    // is the chunk's last stamp.
    ASSERT_TRUE(scan.anchor);
    EXPECT_EQ(scan.anchor->end_ns, 1714557601000000000);
    EXPECT_EQ(scan.anchor->stamp, (LineStamp{2024, 5, 1, 36'000'000'000'000, std::nullopt}));
    ASSERT_TRUE(scan.last_stamp);
    EXPECT_EQ(scan.last_stamp_line, 7u);
  }
}

TEST(ChunkScanner, AJobLineRegexGivesTheWholeWhereverThePiecesAreCut) {
  const JobLineRegex regex(kOtherRegex, TimeUnit::s);
  std::string text;
  std::vector<std::size_t> boundaries;
  for (const std::string& line : other_framework_lines()) {
    text += line + "\n";
    boundaries.push_back(text.size());
  }
  boundaries.pop_back();
  text += "rank0 fwd mb=4 t0=1 t1=2";  // the file's last line, without '\n': not read
  const ChunkScan whole = scan_pieces(text, {}, true, &regex);
  EXPECT_EQ(whole.jobs.size(), 3u);
  for (std::size_t i = 0; i < boundaries.size(); ++i) {
    for (std::size_t j = i + 1; j < boundaries.size(); ++j) {
      expect_same(
          scan_pieces(text, {boundaries[i], boundaries[j]}, true, &regex), whole,
          "cuts at " + std::to_string(boundaries[i]) + ", " + std::to_string(boundaries[j]));
    }
  }
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

/// The (line, pattern) of each event of a scan.
std::vector<std::pair<std::uint64_t, std::uint32_t>> event_lines(const ChunkScan& scan) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
  for (const EventSeen& seen : scan.events) out.emplace_back(seen.line, seen.pattern);
  return out;
}

TEST(ChunkScanner, EventsBetweenJobLinesAreFoundButNoneOnAJobLine) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  // `micro_batch_id` is on every job line too: the few job lines between two
  // stretches are searched with them, and what is found there is dropped.
  const EventLibrary library = parse_event_library(
      "[mb]\ncategory = x\nseverity = info\nregex = micro_batch_id = (?P<mb>[0-9]+)\n"
      "[warn]\ncategory = nccl\nseverity = warning\nregex = NCCL WARN (?P<message>.+)\n",
      "test");
  std::string text;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> expected;
  std::uint64_t line = 0;
  for (int i = 0; i < 60; ++i) {
    // Stretches parted by 1, 2, ... job lines, some far apart.
    for (int j = 0; j <= i % 4; ++j, ++line) text += job(i * 4 + j, "forward", 10 * i) + "\n";
    if (i % 7 == 3) {
      for (int j = 0; j < 40; ++j, ++line) text += job(1000 + j, "backward", 10 * i) + "\n";
    }
    text += "free text, micro_batch_id = " + std::to_string(i) + "\n";
    expected.emplace_back(line++, 0);
    text += "node3:22317 [3] NCCL WARN Call to ibv_reg_mr failed\n";
    expected.emplace_back(line++, 1);
    text += "quiet\n";
    ++line;
  }
  for (const EventSearch search : {EventSearch::full_scan, EventSearch::prefiltered}) {
    const EventMatcher matcher(library, search);
    EventMatcher::Scratch event_scratch(matcher);
    const Prefilter prefilter;
    Prefilter::Scratch scratch(prefilter);
    ChunkScanOptions options;
    options.events = &matcher;
    options.event_scratch = &event_scratch;
    ChunkScan scan;
    scan_chunk(text, prefilter, scratch, options, scan);
    EXPECT_EQ(scan.jobs.size(), line - expected.size() - 60);
    EXPECT_EQ(event_lines(scan), expected) << matcher.prefiltered();
  }
}

// Each event carries the nearest job line before it that has a stamp (the
// offset its stamp is read with: scan/event_clock.h), an unstamped job line
// passed over; the chunk's last such line is its last anchor. Scanned in
// pieces cut at any two line boundaries, the same.
TEST(ChunkScanner, EachEventCarriesTheNearestStampedJobLineBeforeIt) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = parse_event_library(
      "[warn]\ncategory = nccl\nseverity = warning\nregex = NCCL WARN (?P<message>.+)\n", "test");
  const auto stamped = [](const std::string& glog, int id, int start_ms) {
    return glog + " 1 standalone_executor.cc:217] " + job(id, "forward", start_ms).substr(16);
  };
  const std::vector<std::string> lines = {
      "W0310 01:58:00.000000 1 a.cc:1] NCCL WARN before any job line",   // no anchor
      stamped("I0310 01:59:03.200000", 0, 100),                          // A
      "W0310 01:59:30.000000 1 a.cc:1] NCCL WARN after A",               // A
      job(1, "forward", 200),                                            // unstamped
      "node3:22317 [3] NCCL WARN undated, after an unstamped job line",  // A
      stamped("I0310 03:00:03.200000", 2, 300),                          // B
      job(3, "forward", 400),                                            // unstamped
      "W0310 03:00:30.000000 1 a.cc:1] NCCL WARN after B",               // B
      "quiet",
  };
  const StampAnchor a{*find_line_stamp("I0310 01:59:03.200000 1 x"), 101'250'000};
  const StampAnchor b{*find_line_stamp("I0310 03:00:03.200000 1 x"), 301'250'000};
  const std::vector<std::optional<StampAnchor>> expected = {std::nullopt, a, a, b};
  std::string text;
  std::vector<std::size_t> boundaries = {0};
  for (const std::string& line : lines) {
    text += line + "\n";
    boundaries.push_back(text.size());
  }
  const EventMatcher matcher(library);
  EventMatcher::Scratch event_scratch(matcher);
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  ChunkScanOptions options;
  options.events = &matcher;
  options.event_scratch = &event_scratch;
  for (std::size_t i = 0; i < boundaries.size(); ++i) {
    for (std::size_t j = i; j < boundaries.size(); ++j) {
      ChunkScan scan;
      std::size_t begin = 0;
      for (const std::size_t end : {boundaries[i], boundaries[j], text.size()}) {
        scan_chunk_more(std::string_view(text).substr(begin, end - begin), begin, prefilter,
                        scratch, options, scan);
        begin = end;
      }
      const std::string what = "cuts " + std::to_string(i) + ", " + std::to_string(j);
      ASSERT_EQ(scan.events.size(), expected.size()) << what;
      for (std::size_t e = 0; e < expected.size(); ++e) {
        EXPECT_EQ(scan.events[e].anchor, expected[e]) << what << " event " << e;
      }
      EXPECT_EQ(scan.anchor, a) << what;
      EXPECT_EQ(scan.last_anchor, b) << what;
    }
  }
  // Without events nothing looks for the last anchor.
  ChunkScan plain;
  scan_chunk(text, prefilter, scratch, ChunkScanOptions{}, plain);
  EXPECT_EQ(plain.anchor, a);
  EXPECT_FALSE(plain.last_anchor);
}

}  // namespace
}  // namespace pipescope
