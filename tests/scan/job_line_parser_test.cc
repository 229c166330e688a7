#include "scan/job_line_parser.h"

#include <gtest/gtest.h>

#include <string>

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
  const auto p = parse(
      "I1020 09:15:07.265326 22317 standalone_executor.cc:217] " + std::string(kBody));
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
