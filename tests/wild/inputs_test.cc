// The failure cases a log tool meets in the wild, on the input side: odd
// folders (symlink loops, dangling links, 100 000 entries, names with spaces
// and non-ASCII, a folder that is a file) and files that change while they
// are read (truncated, growing, replaced). None may crash or hang; each gets a
// specific message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "source/range_reader.h"
#include "support/command_runner.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::has_diagnostic;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;
using testing::wild_log;

TEST(WildInputs, SymlinkLoopAndDanglingLinkAreReportedNotSkippedSilently) {
  TempDir dir;
  dir.write("logs/workerlog.0", wild_log(8));
  fs::create_symlink("workerlog.1", dir / "logs/workerlog.1");  // a loop onto itself
  fs::create_symlink("gone/file", dir / "logs/workerlog.2");    // dangling
  const auto inputs = discover_inputs({dir / "logs"});
  ASSERT_EQ(inputs.size(), 3u);  // the two broken links keep their ranks
  const pipescope::Run run = ingest_inputs(inputs, {});
  EXPECT_EQ(run.job_count(), 8u);
  EXPECT_NE(run.inputs[1].error.find("Too many levels of symbolic links"), std::string::npos)
      << run.inputs[1].error;
  EXPECT_NE(run.inputs[2].error.find("No such file or directory"), std::string::npos)
      << run.inputs[2].error;
  EXPECT_TRUE(run.inputs[1].unreadable);
  EXPECT_TRUE(run.inputs[2].unreadable);
  // And end to end: inputs that cannot be read are an input error naming
  // both, before anything is written (not two devices idle all run)...
  const auto refused = run_cli("analyze " + shell_quote(dir / "logs") + " -o " +
                               shell_quote(dir / "out") + " --no-trace");
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("cannot read 2 of 3 input files"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("Too many levels of symbolic links"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find(dir / "logs/workerlog.2"), std::string::npos) << refused.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
  // ...and with --allow-missing the analysis runs on the one readable device,
  // the table naming both problems.
  const auto result = run_cli("analyze " + shell_quote(dir / "logs") + " -o " +
                              shell_quote(dir / "out") + " --no-trace --allow-missing");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("Too many levels of symbolic links"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("which cover 1 of 3 devices"), std::string::npos) << result.output;
  // A machineK folder link back onto its own folder: discovery goes one level
  // deep only, so no endless walk; a link to a folder already read is
  // skipped, with a note naming both.
  fs::create_symlink(".", dir / "logs/machine0");
  std::vector<Warning> notes;
  EXPECT_EQ(discover_inputs({dir / "logs"}, &notes).size(), 3u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].code, WarningCode::folder_skipped);
  EXPECT_NE(notes[0].message.find(dir / "logs/machine0"), std::string::npos) << notes[0].message;
  EXPECT_NE(notes[0].message.find("is a link to"), std::string::npos) << notes[0].message;
}

TEST(WildInputs, HundredThousandFilesInOneFolderAreDiscoveredFast) {
  TempDir dir;
  const std::string logs = dir / "logs";
  fs::create_directories(logs);
  // 99 998 files that are no log, and two logs.
  for (int i = 0; i < 99998; ++i) {
    const std::string name = logs + "/core." + std::to_string(i);
    const int fd = ::open(name.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  dir.write("logs/workerlog.0", wild_log(4));
  dir.write("logs/workerlog.1", wild_log(4));
  const auto start = std::chrono::steady_clock::now();
  const auto inputs = discover_inputs({logs});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[1].rank, 1);
  // One listing and no per-entry work beyond a name check: well under a
  // second here, generous for sanitizer builds and busy CI machines.
  EXPECT_LT(seconds, 10.0);
  std::printf("discovery of 100 000 entries: %.3f s\n", seconds);
}

TEST(WildInputs, NamesWithSpacesAndNonAsciiSurviveIntoValidJson) {
  TempDir dir;
  const std::string logs = dir / "run 42/machine0 données 機器";
  dir.write("run 42/machine0 données 機器/workerlog.0", wild_log(6));
  dir.write("run 42/machine0 données 機器/workerlog.1", wild_log(6));
  const std::string out = dir / "out ünï";
  const auto result = run_cli("analyze " + shell_quote(logs) + " -o " + shell_quote(out) + " -q");
  ASSERT_EQ(result.status, 0) << result.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out + "/summary.json").get(summary), simdjson::SUCCESS);
  std::string_view path;
  ASSERT_EQ(summary["inputs"].at(0)["path"].get(path), simdjson::SUCCESS);
  EXPECT_EQ(path, logs + "/workerlog.0");
  simdjson::dom::parser trace_parser;
  simdjson::dom::element trace;
  EXPECT_EQ(trace_parser.load(out + "/trace.json").get(trace), simdjson::SUCCESS);
}

TEST(WildInputs, FolderThatIsAFileGetsAClearMessage) {
  TempDir dir;
  const std::string file = dir.write("notafolder", "just text\n");
  auto result = run_cli("analyze " + shell_quote(file + "/") + " -o " + shell_quote(dir / "o"));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("Not a directory"), std::string::npos) << result.output;
  // machineK and workerlog.N entries of the wrong kind are not taken for what
  // their names say.
  dir.write("logs/machine1", "a file named like a machine folder\n");
  fs::create_directories(dir / "logs/workerlog.3");  // a folder named like a log
  dir.write("logs/workerlog.0", wild_log(4));
  const auto inputs = discover_inputs({dir / "logs"});
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].rank, 0);
  // An output "folder" that is a file.
  result = run_cli("analyze " + shell_quote(dir / "logs") + " -o " + shell_quote(file));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("cannot create output folder"), std::string::npos) << result.output;
  EXPECT_EQ(testing::read_file(file), "just text\n");
}

TEST(WildInputs, FileTruncatedWhileReadKeepsWhatWasThereAndSaysSo) {
  TempDir dir;
  const std::string log = testing::wild_log(200);
  const std::string path = dir.write("workerlog.0", log);
  // Truncated after discovery recorded its size, mid-line.
  const auto inputs = discover_inputs({path});
  // Cut inside a job line, before its fields: a partial line that is no job.
  const std::size_t cut = log.find("Profiler Info: Job", log.size() / 2) + 10;
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut)), 0);
  IngestOptions options;
  options.limits.chunk_bytes = 4096;
  const pipescope::Run run = ingest_inputs(inputs, options);
  // Every job line wholly before the cut is kept.
  std::size_t complete = 0;
  for (std::size_t pos = 0; (pos = log.find("Profiler Info: Job", pos)) != std::string::npos;
       ++pos) {
    if (log.find('\n', pos) < cut) ++complete;
  }
  EXPECT_EQ(run.job_count(), complete);
  EXPECT_TRUE(has_diagnostic(run, "file shrank from")) << run.diagnostics.size();

  // Truncated after RangeFile opened it: ranges past the end read nothing.
  const std::string path2 = dir.write("workerlog.1", log);
  RangeFile file(path2);
  ASSERT_EQ(::truncate(path2.c_str(), 100), 0);
  ReadLimits limits;
  limits.chunk_bytes = 4096;
  ChunkBuffer buffer(limits);
  LineChunk chunk;
  std::uint64_t text = 0;
  for (std::uint64_t begin = 0; begin < file.size(); begin += 4096) {
    file.read_lines(begin, begin + 4096, limits, buffer, chunk);
    text += chunk.text.size();
  }
  EXPECT_LE(text, 100u);
}

TEST(WildInputs, FileGrowingWhileReadIsReadUpToItsSizeAtOpen) {
  TempDir dir;
  const std::string path = dir.write("workerlog.0", testing::wild_log(50));
  const auto inputs = discover_inputs({path});
  RangeFile file(path);
  const std::uint64_t size = file.size();
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const std::string more = testing::wild_log(50, 9000);
    ASSERT_EQ(::write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
    ::close(fd);
  }
  ReadLimits limits;
  ChunkBuffer buffer(limits);
  LineChunk chunk;
  file.read_lines(0, size, limits, buffer, chunk);
  EXPECT_EQ(chunk.text.size(), size);  // ends on a line boundary at the old size
  // The scan reads the file as it is when the scan opens it: no crash, no
  // message (growing logs are normal), every line counted once.
  const pipescope::Run run = ingest_inputs(inputs, {});
  EXPECT_EQ(run.job_count(), 100u);
  EXPECT_FALSE(has_diagnostic(run, "shrank"));
}

TEST(WildInputs, FileReplacedDuringTheRunIsReadAsTheNewFile) {
  TempDir dir;
  const std::string path = dir.write("logs/workerlog.0", testing::wild_log(80));
  dir.write("logs/workerlog.1", testing::wild_log(80));
  const auto inputs = discover_inputs({dir / "logs"});
  // Replaced (rename over it, as log rotation does) by a shorter file.
  const std::string fresh = dir.write("fresh", testing::wild_log(10));
  fs::rename(fresh, path);
  IngestOptions options;
  options.threads = 2;
  options.limits.chunk_bytes = 4096;
  const pipescope::Run run = ingest_inputs(inputs, options);
  EXPECT_EQ(run.devices[0].jobs.size(), 10u);
  EXPECT_EQ(run.devices[1].jobs.size(), 80u);
  EXPECT_TRUE(has_diagnostic(run, "file shrank from"));
}

}  // namespace
}  // namespace pipescope
