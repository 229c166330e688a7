// Resource limits in the wild: one thread over a large input, a low open-file
// limit with a thousand inputs, and a 1 GB line. Each must finish with the
// same figures (or a specific message), in bounded memory.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "ingest/ingest.h"
#include "ingest/discovery.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

std::string cli(const std::string& args) {
  return std::string(PIPESCOPE_CLI) + " " + args + " 2>&1";
}

TEST(WildLimits, OneThreadOverALargeInputGivesTheSameSummary) {
  TempDir dir;
  // ~24 MB in one file: many chunks and ranges for a single thread.
  std::string log = testing::wild_log(100000);
  dir.write("logs/workerlog.0", log);
  dir.write("logs/workerlog.1", log);
  const std::string logs = dir / "logs";
  const auto one = run_command(cli("analyze " + shell_quote(logs) + " -q --no-trace --threads 1 "
                                   "--chunk-mib 1 -o " + shell_quote(dir / "one")));
  ASSERT_EQ(one.status, 0) << one.output;
  const auto many = run_command(cli("analyze " + shell_quote(logs) + " -q --no-trace --threads 4 "
                                    "-o " + shell_quote(dir / "many")));
  ASSERT_EQ(many.status, 0) << many.output;
  EXPECT_EQ(testing::read_file(dir / "one/summary.json"), testing::read_file(dir / "many/summary.json"));
}

TEST(WildLimits, LowOpenFileLimitWithAThousandInputs) {
  TempDir dir;
  for (int r = 0; r < 1000; ++r) {
    dir.write("logs/workerlog." + std::to_string(r), testing::wild_log(2, 1000 + r));
  }
  const auto result = run_command("ulimit -n 64 && " + cli("analyze " + shell_quote(dir / "logs") +
                                                           " -q --no-trace -j 4 -o " +
                                                           shell_quote(dir / "out")));
  ASSERT_EQ(result.status, 0) << result.output.substr(0, 2000);
  const std::string summary = testing::read_file(dir / "out/summary.json");
  EXPECT_NE(summary.find("\"jobs\": 2000"), std::string::npos) << summary.substr(0, 600);
}

TEST(WildLimits, GigabyteLineIsSkippedInBoundedMemory) {
  TempDir dir;
  const std::string path = dir / "logs/workerlog.0";
  fs::create_directories(dir / "logs");
  const std::string head = testing::wild_job_line(1, 0, 1000, 1005);
  // Appended, not "\n" + std::string&&: GCC 12 warns (-Wrestrict) on that form.
  std::string tail = "\n";
  tail += testing::wild_job_line(2, 0, 1010, 1015);
  {
    // head, then 1 GiB of NUL bytes without a newline (sparse: no disk used), then tail.
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
    const off_t end = static_cast<off_t>(head.size()) + (off_t{1} << 30);
    ASSERT_EQ(::pwrite(fd, tail.data(), tail.size(), end), static_cast<ssize_t>(tail.size()));
    ::close(fd);
  }
  // Run through wait4(2) to get this command's own peak memory.
  const std::string output_file = dir / "output.txt";
  const std::string command = "exec " + cli("analyze " + shell_quote(dir / "logs") +
                                            " --no-trace -j 2 -o " + shell_quote(dir / "out")) +
                              " > " + shell_quote(output_file);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(pid, &status, 0, &usage), pid);
  testing::CommandResult result;
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.output = testing::read_file(output_file);
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("1073741824"), std::string::npos) << result.output;  // its length
  const std::string summary = testing::read_file(dir / "out/summary.json");
  EXPECT_NE(summary.find("\"oversized\": 1"), std::string::npos) << summary.substr(0, 800);
  EXPECT_NE(summary.find("\"matched\": 2"), std::string::npos);
  // The line was measured, never held: the CLI's peak memory (KiB) stays
  // far below it, even under AddressSanitizer.
  EXPECT_LT(usage.ru_maxrss, 512L * 1024) << "KiB";
  std::printf("peak memory of analyze over a 1 GiB line: %ld KiB\n", usage.ru_maxrss);
}

}  // namespace
}  // namespace pipescope
