#include "scan/job_line_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipescope {
namespace {

constexpr std::string_view kBody =
    "Profiler Info: Job (3), type = forward, micro_batch_id = 2, job_start_time = "
    "1697793307213.760986, job_end_time = 1697793307254.006104";

struct Parsed {
  LineError error;
  JobLine job;
  std::string type;
};

Parsed parse(std::string_view line) {
  std::string scratch;
  Parsed p;
  p.error = parse_job_line(line, p.job, scratch);
  p.type = std::string(p.job.type);
  return p;
}

TEST(JobLineParser, ParsesTheGlogLine) {
  const auto p =
      parse("I1020 09:15:07.265326 22317 standalone_executor.cc:217] " + std::string(kBody));
  ASSERT_EQ(p.error, LineError::none);
  EXPECT_EQ(p.job.job_id, 3);
  EXPECT_EQ(p.type, "forward");
  EXPECT_EQ(p.job.micro_batch, 2);
  EXPECT_EQ(p.job.start_ns, 1697793307213760986);
  EXPECT_EQ(p.job.end_ns, 1697793307254006104);
}

TEST(JobLineParser, AcceptsEveryTypeVariant) {
  for (const char* type : {"forward", "backward", "optimizer", "backward_b", "backward_w",
                           "backward_w1_reduce", "forward0", "forward(chunk0)", "recv_forward",
                           "send_backward(chunk1)", "some type with spaces"}) {
    const auto p = parse(std::string("Profiler Info: Job (0), type = ") + type +
                         ", micro_batch_id = 0, job_start_time = 1.5, job_end_time = 2");
    ASSERT_EQ(p.error, LineError::none) << type;
    EXPECT_EQ(p.type, type);
  }
}

TEST(JobLineParser, AcceptsPrefixesEscapesSpacingAndCrLf) {
  const std::string variants[] = {
      std::string(kBody),
      "[rank3]: " + std::string(kBody),
      "2023-10-20 09:15:07 INFO " + std::string(kBody) + "\r",
      "\x1b[32mI1020 09:15:07.265326 22317 x.cc:1] " + std::string(kBody) + "\x1b[0m",
      "\x1b[1;31m" + std::string(kBody) + "\x1b[0m\r",
      std::string(kBody) + "\r\r",  // CR CR LF: a CRLF log copied through a text-mode transfer
      "Profiler Info: Job(3),type=forward,micro_batch_id=2,job_start_time=1697793307213.760986,"
      "job_end_time=1697793307254.006104",
      "Profiler Info: Job ( 3 ) ,\ttype =  forward , micro_batch_id = 2 , job_start_time = "
      "1697793307213.760986 , job_end_time = 1697793307254.006104   ",
      std::string(kBody) + ", stream = 7",  // a future field
  };
  for (const auto& line : variants) {
    const auto p = parse(line);
    ASSERT_EQ(p.error, LineError::none) << line;
    EXPECT_EQ(p.type, "forward") << line;
    EXPECT_EQ(p.job.start_ns, 1697793307213760986) << line;
    EXPECT_EQ(p.job.end_ns, 1697793307254006104) << line;
  }
}

TEST(JobLineParser, AcceptsIdVariantsAndNegativeMicroBatch) {
  const auto p = parse(
      "Profiler Info: Job (123456789012345678), type = optimizer, micro_batch_id = -1, "
      "job_start_time = 5, job_end_time = 5");
  ASSERT_EQ(p.error, LineError::none);
  EXPECT_EQ(p.job.job_id, 123456789012345678);
  EXPECT_EQ(p.job.micro_batch, -1);
  EXPECT_EQ(p.job.start_ns, p.job.end_ns);  // zero length is allowed
}

TEST(JobLineParser, NamesWhatIsWrong) {
  const std::string start = "Profiler Info: Job (3), type = forward, micro_batch_id = 2, ";
  const std::pair<std::string, LineError> cases[] = {
      {"nothing here", LineError::no_literal},
      {"Profiler Info: Job", LineError::bad_job_id},
      {"Profiler Info: Job (x), type = f", LineError::bad_job_id},
      {"Profiler Info: Job (1234567890123456789), type = f", LineError::bad_job_id},
      {"Profiler Info: Job (3) type = forward", LineError::missing_type},
      {"Profiler Info: Job (3), kind = forward", LineError::missing_type},
      {"Profiler Info: Job (3), type = , micro_batch_id = 2", LineError::empty_type},
      {"Profiler Info: Job (3), type = forward", LineError::missing_micro_batch},
      {"Profiler Info: Job (3), type = forward, micro_batch_id = two, job_start_time = 1",
       LineError::bad_micro_batch},
      {"Profiler Info: Job (3), type = forward, micro_batch_id = 2x, job_start_time = 1",
       LineError::bad_micro_batch},
      {start, LineError::missing_start_time},
      {start + "job_start_time = 12.3.4, job_end_time = 13", LineError::bad_start_time},
      {start + "job_start_time = 1e12, job_end_time = 13", LineError::bad_start_time},
      {start + "job_start_time = , job_end_time = 13", LineError::bad_start_time},
      {start + "job_start_time = 12", LineError::missing_end_time},
      {start + "job_start_time = 12, job_end", LineError::missing_end_time},  // truncated
      {start + "job_start_time = 12, job_end_time = ", LineError::bad_end_time},
      {start + "job_start_time = 12, job_end_time = 13.5abc", LineError::bad_end_time},
      {start + "job_start_time = 12, job_end_time = 13 garbage", LineError::bad_end_time},
      {start + "job_start_time = 12, job_end_time = 11.999999", LineError::end_before_start},
  };
  for (const auto& [line, expected] : cases) {
    EXPECT_EQ(parse(line).error, expected) << line;
    EXPECT_FALSE(describe(expected).empty());
  }
}

TEST(JobLineParser, NeverReadsPastTheLine) {
  // Every prefix of a valid line is rejected or accepted without crashing;
  // only prefixes ending inside the end time's digits can be valid.
  const std::string line(kBody);
  for (std::size_t n = 0; n <= line.size(); ++n) {
    const auto p = parse(std::string_view(line).substr(0, n));
    if (p.error == LineError::none) {
      EXPECT_GT(n, line.size() - 20);
    }
  }
}

/// The fast path's verdict on `line`: it may decline anything, but what it
/// accepts the full grammar must accept with the same fields.
bool fast_agrees(const std::string& line, bool& accepted) {
  accepted = false;
  const std::size_t literal = line.find(kJobLineLiteral);
  if (literal == std::string::npos || line.find('\x1b') < literal) return true;
  JobLine fast;
  accepted = parse_job_line_fast(line, literal, fast);
  if (!accepted) return true;
  const Parsed slow = parse(line);
  return slow.error == LineError::none && slow.job.job_id == fast.job_id &&
         slow.job.micro_batch == fast.micro_batch && slow.job.start_ns == fast.start_ns &&
         slow.job.end_ns == fast.end_ns && slow.type == fast.type;
}

TEST(JobLineFastPath, TakesTheCanonicalLines) {
  const std::string prefix = "I1020 09:15:07.265326 22317 standalone_executor.cc:217] ";
  JobLine job;
  const std::string line = prefix + std::string(kBody);
  ASSERT_TRUE(parse_job_line_fast(line, prefix.size(), job));
  EXPECT_EQ(job.job_id, 3);
  EXPECT_EQ(job.type, "forward");
  EXPECT_EQ(job.micro_batch, 2);
  EXPECT_EQ(job.start_ns, 1697793307213760986);
  EXPECT_EQ(job.end_ns, 1697793307254006104);
  const std::string negative =
      "Profiler Info: Job (-12), type = backward_w1(chunk1), micro_batch_id = -1, job_start_time "
      "= 5, job_end_time = 5.0000005";
  ASSERT_TRUE(parse_job_line_fast(negative, 0, job));
  EXPECT_EQ(job.job_id, -12);
  EXPECT_EQ(job.type, "backward_w1(chunk1)");
  EXPECT_EQ(job.micro_batch, -1);
  EXPECT_EQ(job.start_ns, 5'000'000);
  EXPECT_EQ(job.end_ns, 5'000'001);  // sub-nanosecond digits rounded half up
}

// A start time of the printed form (13 digits, a dot, 6 digits) is read in
// place; any other start time, or that form with a non-digit, goes the
// general way, with the same result as the grammar.
TEST(JobLineFastPath, StartTimesInAndOutOfThePrintedForm) {
  const auto line_with = [](std::string_view start) {
    return "Profiler Info: Job (3), type = forward, micro_batch_id = 2, job_start_time = " +
           std::string(start) + ", job_end_time = 1697793307254.006104";
  };
  JobLine job;
  ASSERT_TRUE(parse_job_line_fast(line_with("1697793307213.760986"), 0, job));
  EXPECT_EQ(job.start_ns, 1697793307213760986);
  ASSERT_TRUE(parse_job_line_fast(line_with("0697793307213.000001"), 0, job));
  EXPECT_EQ(job.start_ns, 697793307213000001);
  ASSERT_TRUE(parse_job_line_fast(line_with("169779330721.3760986"), 0, job));
  EXPECT_EQ(job.start_ns, 169779330721376099);  // 7th fraction digit rounded half up
  ASSERT_TRUE(parse_job_line_fast(line_with("1697793307213.76"), 0, job));
  EXPECT_EQ(job.start_ns, 1697793307213760000);
  EXPECT_FALSE(parse_job_line_fast(line_with("16977933072x3.760986"), 0, job));
  EXPECT_FALSE(parse_job_line_fast(line_with("1697793307213.7609x6"), 0, job));
  EXPECT_FALSE(parse_job_line_fast(line_with("1697793307213.760986 "), 0, job));
}

TEST(JobLineFastPath, DeclinesWhatTheGrammarTreatsOtherwise) {
  JobLine job;
  for (const std::string& line :
       {// Trailing '\r', later fields, extra blanks: the grammar accepts, the fast path leaves
        // them to it.
        std::string(kBody) + "\r", std::string(kBody) + ", extra = 1", std::string(kBody) + " ",
        std::string("Profiler Info: Job (3), type =  forward , micro_batch_id = 2, "
                    "job_start_time = 1.5, job_end_time = 2.5"),
        // An escape code in the type is stripped by the grammar.
        std::string("Profiler Info: Job (3), type = for\x1b[0mward, micro_batch_id = 2, "
                    "job_start_time = 1.5, job_end_time = 2.5"),
        // Errors, which the grammar names.
        std::string("Profiler Info: Job (3), type = forward, micro_batch_id = 2, "
                    "job_start_time = 3.5, job_end_time = 2.5"),
        std::string("Profiler Info: Job (1234567890123456789), type = forward, micro_batch_id "
                    "= 2, job_start_time = 1.5, job_end_time = 2.5"),
        std::string("Profiler Info: Job (3), type = forward, micro_batch_id = 2, "
                    "job_start_time = 1.5, job_end_time = 2.5.5"),
        std::string("Profiler Info: Job (3), type = forward, micro_batch_id = 2, "
                    "job_start_time = 1.5, job_end_time = ")}) {
    EXPECT_FALSE(parse_job_line_fast(line, 0, job)) << line;
  }
}

TEST(JobLineFastPath, NeverAcceptsWhatTheGrammarRejectsOrReadsDifferently) {
  // Every single-byte deletion, duplication and replacement (by each byte
  // class the grammar treats specially) of a canonical line.
  const std::string base =
      "I1020 09:15:07 x.cc:217] Profiler Info: Job (-37), type = forward(chunk0), micro_batch_id "
      "= 12, job_start_time = 1697793307213.760986, job_end_time = 1697793307254.0061045";
  std::size_t accepted_count = 0;
  bool accepted = false;
  ASSERT_TRUE(fast_agrees(base, accepted));
  ASSERT_TRUE(accepted);
  const std::string replacements = " \t,=().-09a\x1b\r\n";
  for (std::size_t i = 0; i < base.size(); ++i) {
    std::vector<std::string> variants;
    variants.push_back(base.substr(0, i) + base.substr(i + 1));
    variants.push_back(base.substr(0, i + 1) + base.substr(i));
    for (const char c : replacements) {
      std::string v = base;
      v[i] = c;
      variants.push_back(v);
      variants.push_back(base.substr(0, i) + c + base.substr(i));
    }
    for (const std::string& v : variants) {
      EXPECT_TRUE(fast_agrees(v, accepted)) << "'" << v << "'";
      accepted_count += accepted ? 1 : 0;
    }
  }
  // The fast path does take most digit changes and the like.
  EXPECT_GT(accepted_count, 500u);
}

TEST(StepStartLine, ReadsTheFirstProfiledStep) {
  EXPECT_EQ(parse_step_start_line("[2023-10-20 09:15:05,123] [    INFO] - Schedule Profiler start "
                                  "at step 12"),
            12);
  EXPECT_EQ(parse_step_start_line("Schedule Profiler start at step 0\r"), 0);
  EXPECT_EQ(parse_step_start_line("Schedule Profiler start at step"), std::nullopt);
  EXPECT_EQ(parse_step_start_line("Schedule Profiler start at step x"), std::nullopt);
}

TEST(StripAnsi, RemovesCsiSequencesOnly) {
  std::string out;
  EXPECT_EQ(strip_ansi("plain", out), "plain");
  EXPECT_EQ(strip_ansi("\x1b[1;32mgreen\x1b[0m text\x1b[K", out), "green text");
  EXPECT_EQ(strip_ansi("lone \x1b escape", out), "lone \x1b escape");
}

}  // namespace
}  // namespace pipescope
