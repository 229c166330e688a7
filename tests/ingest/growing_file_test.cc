// A worker log still being written: the last line has no '\n' yet. It is
// counted but never parsed (its numbers may be cut short and still look
// valid), is not malformed, and is read once complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/command_runner.h"
#include "support/compress_util.h"
#include "ingest/ingest.h"
#include "ingest/discovery.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string job_line(int mb, const std::string& end) {
  return "I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job (3), type = "
         "forward, micro_batch_id = " +
         std::to_string(mb) + ", job_start_time = 1697793307213.760986, job_end_time = " + end;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

pipescope::Run scan(const std::string& dir, std::size_t chunk_bytes = 8 << 20) {
  IngestOptions options;
  options.limits.chunk_bytes = chunk_bytes;
  return ingest_inputs(discover_inputs({dir}), options);
}

TEST(GrowingFile, PartialLastLineIsNotReadNorMalformedUntilComplete) {
  TempDir dir;
  const std::string path = dir / "workerlog.0";
  const std::string done = job_line(0, "1697793307254.006104") + "\n" + "noise\n";
  // Cut inside the end time: the cut number would parse as a valid, wrong time.
  const std::string partial = job_line(1, "1697793307254.0");
  write(path, done + partial);
  for (const std::size_t chunk : {std::size_t{8} << 20, std::size_t{64}}) {
    const pipescope::Run run = scan(dir.path(), chunk);
    ASSERT_EQ(run.inputs.size(), 1u);
    const InputStats& in = run.inputs[0];
    EXPECT_EQ(in.matched, 1u) << chunk;
    EXPECT_EQ(in.malformed, 0u) << chunk;
    EXPECT_EQ(in.lines, 3u) << chunk;
    EXPECT_EQ(in.bytes, done.size() + partial.size()) << chunk;
    EXPECT_EQ(in.partial_last_line_bytes, partial.size()) << chunk;
    ASSERT_EQ(run.diagnostics.size(), 1u) << chunk;
    EXPECT_EQ(run.diagnostics[0].line, 3u);
    EXPECT_NE(run.diagnostics[0].message.find("last line has no newline"), std::string::npos);
    ASSERT_EQ(run.devices[0].jobs.size(), 1u);
  }
  // The writer finishes the line: now it is read, with its full end time.
  write(path, done + job_line(1, "1697793307254.006104") + "\n");
  const pipescope::Run run = scan(dir.path());
  EXPECT_EQ(run.inputs[0].matched, 2u);
  EXPECT_EQ(run.inputs[0].partial_last_line_bytes, 0u);
  EXPECT_TRUE(run.diagnostics.empty());
  ASSERT_EQ(run.devices[0].jobs.size(), 2u);
  EXPECT_EQ(run.devices[0].jobs[1].end_ns, 1697793307254006104);
}

TEST(GrowingFile, CompressedStreamEndingInAPartialLineIsTheSame) {
  TempDir dir;
  const std::string done = job_line(0, "1697793307254.006104") + "\n";
  const std::string partial = job_line(1, "16977933");
  write(dir / "workerlog.0.gz", testing::gzip(done + partial));
  const pipescope::Run run = scan(dir.path());
  EXPECT_EQ(run.inputs[0].matched, 1u);
  EXPECT_EQ(run.inputs[0].malformed, 0u);
  EXPECT_EQ(run.inputs[0].partial_last_line_bytes, partial.size());
}

TEST(GrowingFile, StrictDoesNotFailOnAPartialLastLine) {
  TempDir dir;
  std::filesystem::create_directories(dir / "logs");
  write(dir / "logs/workerlog.0",
        job_line(0, "1697793307254.006104") + "\n" + job_line(1, "1697793307254.0"));
  const auto result = testing::run_cli("analyze " + testing::shell_quote(dir / "logs") +
                                       " --strict -q --no-trace -o " +
                                       testing::shell_quote(dir / "out"));
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(testing::read_file(dir / "out/summary.json").find("\"partial_last_line_bytes\": "),
            std::string::npos);
}

}  // namespace
}  // namespace pipescope
