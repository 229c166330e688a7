#include "ingest/ingest.h"

#include <gtest/gtest.h>

#include <fmt/core.h>

#include <string>
#include <vector>

#include "scan/chunk_scanner.h"
#include "scan/event_library.h"
#include "scan/event_matcher.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string job_line(int id, std::string_view type, int mb, std::int64_t start_ms,
                     std::int64_t end_ms) {
  return fmt::format(
      "I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job ({}), type = "
      "{}, micro_batch_id = {}, job_start_time = {}.250000, job_end_time = {}.750000\n",
      id, type, mb, start_ms, end_ms);
}

/// A log with noise, job lines, malformed lines and a step-start line.
std::string sample_log(int jobs) {
  std::string log = "launch banner line\nSchedule Profiler start at step 7\n";
  for (int i = 0; i < jobs; ++i) {
    log += fmt::format("I1020 09:15:07.000000 1 interpretercore.cc:1] noise {} Profiler Info\n", i);
    log += job_line(i, i % 2 ? "backward" : "forward(chunk0)", i % 4, 1000 + 10 * i, 1005 + 10 * i);
    if (i % 17 == 5) log += "Profiler Info: Job (1), type = forward, micro_batch_id = 0, job_start\n";
  }
  return log;
}

struct Snapshot {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string,
                         std::uint32_t>>
      jobs;
  std::uint64_t lines = 0, matched = 0, malformed = 0, oversized = 0, bytes = 0, partial = 0;
  std::vector<std::string> diagnostics;
  std::optional<std::int64_t> first_step;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const Run& run) {
  Snapshot s;
  for (const auto& device : run.devices) {
    for (const Job& j : device.jobs) {
      s.jobs.emplace_back(j.start_ns, j.end_ns, j.job_id, j.micro_batch, run.types.name(j.type),
                          j.line);
    }
  }
  for (const auto& input : run.inputs) {
    s.lines += input.lines;
    s.matched += input.matched;
    s.malformed += input.malformed;
    s.oversized += input.oversized;
    s.partial += input.partial_last_line_bytes;
    s.bytes += input.bytes;
  }
  for (const auto& d : run.diagnostics) s.diagnostics.push_back(fmt::format("{}:{}: {}", d.path, d.line, d.message));
  s.first_step = run.first_step;
  return s;
}

std::vector<InputFile> inputs_for(const std::vector<std::string>& paths) {
  std::vector<InputFile> inputs;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    InputFile f;
    f.path = paths[i];
    f.rank = f.device = static_cast<int>(i);
    inputs.push_back(f);
  }
  return inputs;
}

TEST(LogScanner, FindsEveryJobWithExactLineNumbers) {
  TempDir dir;
  const std::string path = dir.write("workerlog.0", sample_log(40));
  IngestOptions options;
  const pipescope::Run run = ingest_inputs(inputs_for({path}), options);
  ASSERT_EQ(run.devices.size(), 1u);
  ASSERT_EQ(run.devices[0].jobs.size(), 40u);
  // Line 1 banner, 2 step start, then per job: noise, job (+ a malformed line).
  EXPECT_EQ(run.devices[0].jobs[0].line, 4u);
  EXPECT_EQ(run.devices[0].jobs[1].line, 6u);
  EXPECT_EQ(run.devices[0].jobs[0].start_ns, 1000'250'000);
  EXPECT_EQ(run.devices[0].jobs[0].end_ns, 1005'750'000);
  EXPECT_EQ(run.types.name(run.devices[0].jobs[0].type), "forward(chunk0)");
  EXPECT_EQ(run.inputs[0].matched, 40u);
  EXPECT_EQ(run.inputs[0].malformed, 3u);  // i = 5, 22, 39
  EXPECT_EQ(run.inputs[0].lines, 2u + 80u + 3u);
  EXPECT_EQ(run.first_step, 7);
  ASSERT_EQ(run.diagnostics.size(), 3u);
  EXPECT_EQ(run.diagnostics[0].line, 2u + 12u + 1u);
  EXPECT_EQ(run.diagnostics[0].message, "missing 'job_start_time = ' field");
}

TEST(LogScanner, EveryChunkSizeAndThreadCountGivesTheSameResult) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int f = 0; f < 3; ++f) {
    std::string log = sample_log(30 + f * 7);
    if (f == 1) log.pop_back();  // last line without '\n'
    paths.push_back(dir.write(fmt::format("workerlog.{}", f), log));
  }
  IngestOptions reference_options;
  reference_options.threads = 1;
  const Snapshot reference = snapshot(ingest_inputs(inputs_for(paths), reference_options));
  // File 1 ends in a job line without its newline: a partial line, not read.
  ASSERT_EQ(reference.jobs.size(), 30u + 36u + 44u);
  for (const std::size_t chunk : {1ul, 2ul, 7ul, 64ul, 200ul, 4096ul, 1ul << 20}) {
    for (const unsigned threads : {1u, 2u, 4u}) {
      IngestOptions options;
      options.threads = threads;
      options.limits.chunk_bytes = chunk;
      const Snapshot got = snapshot(ingest_inputs(inputs_for(paths), options));
      EXPECT_EQ(got, reference) << "chunk " << chunk << " threads " << threads;
    }
  }
}

TEST(LogScanner, ReadingARangeInBlocksGivesWhatReadingItWholeGives) {
  // Every block boundary falls on every byte of a line for some block size;
  // lines over the limit sit inside a range (kept as text when the range is
  // read whole) and at range ends (skipped); the last file ends in a partial
  // line, one file holds a NUL byte.
  TempDir dir;
  const std::string huge(1500, 'x');
  std::vector<std::string> paths;
  paths.push_back(dir.write("workerlog.0", sample_log(12) + huge + "\n" + sample_log(3) +
                                               "Profiler Info: Job" + huge + "\n" + sample_log(2)));
  std::string binary = sample_log(4);
  binary[binary.find("noise 2")] = '\0';
  paths.push_back(dir.write("workerlog.1", binary));
  std::string partial = sample_log(9);
  partial.pop_back();
  paths.push_back(dir.write("workerlog.2", partial));
  for (const std::size_t chunk : {std::size_t{1} << 20, std::size_t{4096}, std::size_t{1000}}) {
    IngestOptions whole;
    whole.limits.chunk_bytes = chunk;
    whole.limits.max_line_bytes = 1024;
    whole.limits.block_bytes = 0;
    const Snapshot reference = snapshot(ingest_inputs(inputs_for(paths), whole));
    ASSERT_EQ(reference.jobs.size(), 12u + 3u + 2u + 4u + 9u - 1u) << chunk;
    for (std::size_t block = 1; block <= 400; block += chunk == 1000 ? 1 : 7) {
      IngestOptions options = whole;
      options.limits.block_bytes = block;
      options.threads = block % 2 + 1;
      EXPECT_EQ(snapshot(ingest_inputs(inputs_for(paths), options)), reference)
          << "chunk " << chunk << " block " << block;
    }
  }
}

TEST(LogScanner, ExactLineNumbersWhenReadInSmallBlocks) {
  TempDir dir;
  const std::string path = dir.write("workerlog.0", sample_log(40));
  IngestOptions options;
  options.limits.block_bytes = 64;
  const pipescope::Run run = ingest_inputs(inputs_for({path}), options);
  ASSERT_EQ(run.devices[0].jobs.size(), 40u);
  EXPECT_EQ(run.devices[0].jobs[0].line, 4u);
  EXPECT_EQ(run.devices[0].jobs[39].line, 2u + 2u * 40u + 2u);  // after 2 malformed lines
  EXPECT_EQ(run.devices[0].jobs[39].start_ns, 1390'250'000);
  EXPECT_EQ(run.inputs[0].lines, 2u + 80u + 3u);
  EXPECT_EQ(run.inputs[0].malformed, 3u);
  EXPECT_EQ(run.first_step, 7);
  ASSERT_EQ(run.diagnostics.size(), 3u);
  EXPECT_EQ(run.diagnostics[0].line, 2u + 12u + 1u);
  EXPECT_EQ(run.diagnostics[2].line, 2u + 80u + 3u);
}

TEST(LogScanner, SkipsOverlongLinesAndReportsWhere) {
  TempDir dir;
  const std::string huge(5000, 'x');
  const std::string log = job_line(0, "forward", 0, 1, 2) + huge + "\n" +
                          job_line(1, "backward", 0, 3, 4) + "Profiler Info: Job" + huge +
                          job_line(2, "forward", 1, 5, 6) + huge;
  const std::string path = dir.write("workerlog.0", log);
  // Chunks smaller than the long lines: the reader skips all three of them.
  for (const std::size_t chunk : {100ul, 1000ul, 3000ul}) {
    IngestOptions options;
    options.limits.chunk_bytes = chunk;
    options.limits.max_line_bytes = 1024;
    const auto run = ingest_inputs(inputs_for({path}), options);
    ASSERT_EQ(run.devices[0].jobs.size(), 2u) << chunk;
    EXPECT_EQ(run.devices[0].jobs[1].line, 3u);
    EXPECT_EQ(run.inputs[0].oversized, 3u) << chunk;
    EXPECT_EQ(run.inputs[0].lines, 5u) << chunk;
    EXPECT_EQ(run.inputs[0].bytes, log.size()) << chunk;
    ASSERT_EQ(run.diagnostics.size(), 3u);
    EXPECT_EQ(run.diagnostics[0].line, 2u);
    EXPECT_NE(run.diagnostics[0].message.find("5000 bytes at byte offset"), std::string::npos)
        << run.diagnostics[0].message;
    EXPECT_EQ(run.diagnostics[1].line, 4u);
    EXPECT_EQ(run.diagnostics[2].line, 5u);
  }
  // Chunks that hold them whole: a long candidate line is still rejected the
  // same way, so the jobs never depend on where chunks happen to end.
  for (const std::size_t chunk : {6000ul, 1ul << 20}) {
    IngestOptions options;
    options.limits.chunk_bytes = chunk;
    options.limits.max_line_bytes = 1024;
    const auto run = ingest_inputs(inputs_for({path}), options);
    ASSERT_EQ(run.devices[0].jobs.size(), 2u) << chunk;
    EXPECT_EQ(run.inputs[0].lines, 5u) << chunk;
    EXPECT_GE(run.inputs[0].oversized, 1u) << chunk;
    bool line4_reported = false;
    for (const auto& d : run.diagnostics) line4_reported |= d.line == 4;
    EXPECT_TRUE(line4_reported) << chunk;
  }
}

TEST(LogScanner, EmptyUnreadableAndBinaryFilesDoNotStopTheRest) {
  TempDir dir;
  const std::string good = dir.write("workerlog.0", job_line(0, "forward", 0, 1, 2));
  const std::string empty = dir.write("workerlog.1", "");
  const std::string missing = dir / "workerlog.2";
  std::string junk("\x00\xff\xfe binary \x80\x81\n", 15);
  junk += job_line(0, "forward", 0, 3, 4) + std::string("\xc3\x28 invalid utf-8\n");
  const std::string binary = dir.write("workerlog.3", junk);
  const pipescope::Run run = ingest_inputs(inputs_for({good, empty, missing, binary}), {});
  EXPECT_EQ(run.devices[0].jobs.size(), 1u);
  EXPECT_EQ(run.devices[1].jobs.size(), 0u);
  EXPECT_EQ(run.devices[3].jobs.size(), 1u);
  EXPECT_EQ(run.devices[3].jobs[0].line, 2u);
  EXPECT_NE(run.inputs[2].error.find("No such file"), std::string::npos) << run.inputs[2].error;
  EXPECT_EQ(run.inputs[1].lines, 0u);
  std::string all;
  for (const auto& d : run.diagnostics) all += d.path + ": " + d.message + "\n";
  EXPECT_NE(all.find("workerlog.1: file is empty"), std::string::npos) << all;
  EXPECT_NE(all.find("workerlog.3: binary data (NUL byte at byte offset 0)"), std::string::npos) << all;
}

// Event times across a daylight-saving change (America/New_York, 2024-03-10
// 02:00 EST -> 03:00 EDT at 07:00 UTC), read in chunks of every size: a
// local stamp takes the offset of the nearest stamped job line before it,
// in its chunk or an earlier one (the first one's for lines before it); a
// written offset is obeyed. Expected seconds from Python's zoneinfo
// (`datetime(2024, 3, 10, 3, 0, 30, tzinfo=ZoneInfo("America/New_York"))
// .timestamp()` = 1710054030), apart from the code.
TEST(LogScanner, EventTimesFollowTheJobLinesOffsetAcrossChunks) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  const EventLibrary library = parse_event_library(
      "[save]\ncategory = checkpoint\nseverity = info\n"
      "regex = Saving model checkpoint to (?P<path>[^ ]+)\n",
      "test");
  const EventMatcher matcher(library);
  const auto job = [](const std::string& glog, int id, std::int64_t end_s) {
    return fmt::format(
        "{} 4242 standalone_executor.cc:217] Profiler Info: Job ({}), type = forward, "
        "micro_batch_id = 0, job_start_time = {}000.000000, job_end_time = {}192.000000\n",
        glog, id, end_s, end_s);
  };
  std::string log;
  log += "[2024-03-10 01:58:00,000] [    INFO] - Saving model checkpoint to c/1\n";
  log += job("I0310 01:59:03.200000", 0, 1'710'053'943);
  for (int i = 0; i < 20; ++i) log += fmt::format("I0310 01:59:29.{:06d} 4242 a.cc:1] noise\n", i);
  log += "W0310 01:59:30.000000 4242 trainer.cc:1] Saving model checkpoint to c/2\n";
  log += "Saving model checkpoint to c/3 (no stamp)\n";
  log += job("I0310 03:00:03.200000", 1, 1'710'054'003);
  log += "2024-03-10T07:00:10.500Z INFO Saving model checkpoint to c/4\n";
  for (int i = 0; i < 20; ++i) log += fmt::format("I0310 03:00:11.{:06d} 4242 a.cc:1] noise\n", i);
  log += "[2024-03-10 03:00:30,250] [    INFO] - Saving model checkpoint to c/5\n";
  log += "2024-03-10T12:30:40.000000+05:30 INFO Saving model checkpoint to c/6\n";
  TempDir dir;
  const std::string path = dir.write("workerlog.0", log);
  constexpr std::int64_t kS = 1'000'000'000;
  const std::vector<std::pair<std::int64_t, EventTime>> expected = {
      {1'710'053'880 * kS, EventTime::stamped},                // 01:58:00 EST
      {1'710'053'970 * kS, EventTime::stamped},                // 01:59:30 EST
      {1'710'053'970 * kS, EventTime::approximate},            // the dated line before it
      {1'710'054'010 * kS + 500'000'000, EventTime::stamped},  // written Z
      {1'710'054'030 * kS + 250'000'000, EventTime::stamped},  // 03:00:30.25 EDT
      {1'710'054'040 * kS, EventTime::stamped},                // written +05:30
  };
  for (const std::size_t chunk : {1ul, 7ul, 64ul, 200ul, 700ul, 4096ul, 1ul << 20}) {
    for (const unsigned threads : {1u, 2u}) {
      IngestOptions options;
      options.threads = threads;
      options.limits.chunk_bytes = chunk;
      options.events = &matcher;
      const pipescope::Run run = ingest_inputs(inputs_for({path}), options);
      ASSERT_EQ(run.devices.size(), 1u);
      const auto& events = run.devices[0].events;
      ASSERT_EQ(events.size(), expected.size()) << "chunk " << chunk;
      for (std::size_t e = 0; e < expected.size(); ++e) {
        EXPECT_EQ(events[e].time_ns, expected[e].first) << "chunk " << chunk << " event " << e;
        EXPECT_EQ(events[e].time_kind, expected[e].second) << "chunk " << chunk << " event " << e;
      }
    }
  }
}

TEST(ChunkScanner, CountsNewlinesInAnyAlignment) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += (i % 7 == 0) ? '\n' : 'a';
  std::uint64_t expected = 0;
  for (std::size_t start = 0; start < 70; ++start) {
    expected = 0;
    for (std::size_t i = start; i < text.size(); ++i) expected += text[i] == '\n';
    EXPECT_EQ(count_newlines(std::string_view(text).substr(start)), expected);
  }
}

}  // namespace
}  // namespace pipescope
