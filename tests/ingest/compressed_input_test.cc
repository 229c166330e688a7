// gzip and zstd worker logs are decompressed on the fly and give exactly the
// jobs, lines and line numbers of the plain file; damaged streams keep what
// was readable and say where they broke.
#include <gtest/gtest.h>

#include <string>

#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "support/compress_util.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::gzip;
using testing::TempDir;
using testing::zstd;

std::string compressed_sample_log(int jobs) {
  std::string log;
  for (int i = 0; i < jobs; ++i) {
    log += "I1020 09:15:07.000000 1 interpretercore.cc:1] noise line " + std::to_string(i) + "\n";
    log += "I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job (" +
           std::to_string(i) + "), type = forward, micro_batch_id = " + std::to_string(i % 8) +
           ", job_start_time = " + std::to_string(1697793307000 + 3 * i) +
           ".123456, job_end_time = " + std::to_string(1697793307002 + 3 * i) + ".5\n";
  }
  return log;
}

pipescope::Run scan(const std::vector<std::string>& paths, std::size_t chunk = 4096) {
  IngestOptions options;
  options.limits.chunk_bytes = chunk;
  options.limits.max_line_bytes = 1024;
  std::vector<InputFile> inputs;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    InputFile f;
    f.path = paths[i];
    f.device = f.rank = static_cast<int>(i);
    inputs.push_back(f);
  }
  return ingest_inputs(inputs, options);
}

TEST(CompressedInput, SameJobsAsThePlainFile) {
  TempDir dir;
  const std::string log = compressed_sample_log(3000);
  const std::string half = log.substr(0, log.size() / 2 + 7), rest = log.substr(log.size() / 2 + 7);
  const auto run = scan({dir.write("workerlog.0", log), dir.write("workerlog.1.gz", gzip(log)),
                         dir.write("workerlog.2.zst", zstd(log)),
                         // concatenated members and frames, split mid-line
                         dir.write("workerlog.3.gz", gzip(half) + gzip(rest)),
                         dir.write("workerlog.4.zst", zstd(half) + zstd(rest))});
  for (std::size_t d = 1; d < 5; ++d) {
    ASSERT_EQ(run.devices[d].jobs.size(), 3000u) << d;
    EXPECT_EQ(run.inputs[d].lines, run.inputs[0].lines) << d;
    EXPECT_EQ(run.inputs[d].bytes, log.size()) << d;  // decompressed bytes
    EXPECT_TRUE(run.inputs[d].error.empty()) << run.inputs[d].error;
    for (std::size_t i = 0; i < 3000; ++i) {
      EXPECT_EQ(run.devices[d].jobs[i].start_ns, run.devices[0].jobs[i].start_ns);
      EXPECT_EQ(run.devices[d].jobs[i].line, run.devices[0].jobs[i].line);
    }
  }
}

// A progress bar redraws itself with '\r' and no newline: a job line printed
// before the bar's last update ends up inside one line longer than the limit.
// Plain (read in ranges) or compressed (read as a stream), the skipped line
// is said to hold a job line, with the advice on raising the limit.
TEST(CompressedInput, AJobLineInsideAnOverLongProgressLineIsSaidToBeLost) {
  TempDir dir;
  std::string bar;
  for (int i = 0; bar.size() < 3000; ++i) bar += "\rtraining:  " + std::to_string(i) + "% |####|";
  const std::string log = compressed_sample_log(3) + bar +
                          compressed_sample_log(1).substr(compressed_sample_log(1).find("I1020 09:15:07.265326")) + bar +
                          "\n" + compressed_sample_log(2);
  const auto run = scan({dir.write("workerlog.0", log), dir.write("workerlog.1.gz", gzip(log))});
  for (std::size_t d = 0; d < 2; ++d) {
    // The line ending in the job line (and, read in ranges, the bar's last
    // line: a reader counts the over-long lines it skips itself too).
    EXPECT_GE(run.inputs[d].oversized, 1u) << d;
    EXPECT_EQ(run.devices[d].jobs.size(), 5u) << d;
    bool said = false;
    for (const Diagnostic& diagnostic : run.diagnostics) {
      if (diagnostic.path != run.inputs[d].path) continue;
      said = said || (diagnostic.message.find("holds a job line ('Profiler Info: Job')") !=
                          std::string::npos &&
                      diagnostic.message.find("raise the line limit") != std::string::npos);
    }
    EXPECT_TRUE(said) << d << [&] {
      std::string all;
      for (const Diagnostic& x : run.diagnostics) all += x.path + ": " + x.message + "\n";
      return all;
    }();
  }
  // A long line without a job line is only counted.
  const auto plain = scan({dir.write("other/workerlog.0", compressed_sample_log(2) + bar + "\n")});
  for (const Diagnostic& diagnostic : plain.diagnostics) {
    EXPECT_EQ(diagnostic.message.find("holds a job line"), std::string::npos) << diagnostic.message;
  }
}

TEST(CompressedInput, TruncatedAndCorruptStreamsKeepWhatWasReadable) {
  TempDir dir;
  const std::string log = compressed_sample_log(20000);
  std::string gz = gzip(log), zs = zstd(log);
  std::string corrupt = gz;
  for (std::size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 64; ++i) corrupt[i] ^= 0x5a;
  const auto run = scan({dir.write("workerlog.0.gz", gz.substr(0, gz.size() * 3 / 4)),
                         dir.write("workerlog.1.zst", zs.substr(0, zs.size() * 3 / 4)),
                         dir.write("workerlog.2.gz", corrupt)},
                        1 << 16);
  for (std::size_t d = 0; d < 3; ++d) {
    EXPECT_GT(run.devices[d].jobs.size(), 1000u) << d;
    EXPECT_LT(run.devices[d].jobs.size(), 20000u) << d;
    EXPECT_NE(run.inputs[d].error.find("compressed byte"), std::string::npos)
        << run.inputs[d].error;
  }
  EXPECT_NE(run.inputs[0].error.find("truncated gzip"), std::string::npos) << run.inputs[0].error;
  EXPECT_NE(run.inputs[1].error.find("truncated zstd"), std::string::npos) << run.inputs[1].error;
  EXPECT_NE(run.inputs[2].error.find("corrupt gzip"), std::string::npos) << run.inputs[2].error;
}

TEST(CompressedInput, DiscoveryTakesCompressedWorkerLogs) {
  TempDir dir;
  dir.write("workerlog.0.gz", gzip("x\n"));
  dir.write("workerlog.1.zst", zstd("x\n"));
  dir.write("workerlog.2", "x\n");
  dir.write("workerlog.3.bz2", "x\n");  // not a format we read: ignored
  const auto inputs = discover_inputs({dir.path().string()});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[1].rank, 1);
  EXPECT_EQ(worker_log_rank("workerlog.12.zst"), 12);
  EXPECT_EQ(worker_log_rank("workerlog.gz"), -1);
}

}  // namespace
}  // namespace pipescope
