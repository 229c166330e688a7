// Output problems in the wild: an unwritable output folder, a full disk
// (simulated with a file-size limit), an output inside an input folder or on
// an input file. Never a half-written output under the final name, never an
// input overwritten, always one clear line and exit status 2.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

/// Files in `dir` whose name contains `part` (temporary files left behind).
int count_named(const std::string& dir, std::string_view part) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(part) != std::string::npos) ++n;
  }
  return n;
}

std::string make_logs(const TempDir& dir, int jobs) {
  dir.write("logs/workerlog.0", testing::wild_log(jobs));
  dir.write("logs/workerlog.1", testing::wild_log(jobs));
  return dir / "logs";
}

TEST(WildOutputs, UnwritableOutputFolder) {
  TempDir dir;
  const std::string logs = make_logs(dir, 8);
  fs::create_directories(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec |
                                   fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir.path(), fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);
  // root ignores permissions: run the CLI as nobody then (setpriv, util-linux).
  std::string prefix;
  if (::geteuid() == 0) {
    if (run_command("command -v setpriv >/dev/null").status != 0) GTEST_SKIP() << "root, no setpriv";
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  for (const std::string& out : {dir / "ro", dir / "ro/sub"}) {
    const auto result = run_command(prefix + PIPESCOPE_CLI + " analyze " + shell_quote(logs) +
                                    " -q -o " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.status, 2) << result.output;
    EXPECT_NE(result.output.find("Permission denied"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("terminate"), std::string::npos) << result.output;
  }
  EXPECT_TRUE(fs::is_empty(dir / "ro"));
}

TEST(WildOutputs, FullDiskLeavesNoHalfWrittenOutput) {
  TempDir dir;
  const std::string logs = make_logs(dir, 3000);  // a trace of several hundred KiB
  const std::string out = dir / "out";
  fs::create_directories(out);
  dir.write("out/summary.json", "previous summary\n");
  // ulimit -f 64: files may grow to 64 KiB; the trace cannot be written.
  const auto result = run_command("ulimit -f 64 && " + std::string(PIPESCOPE_CLI) + " analyze " +
                                  shell_quote(logs) + " -q -o " + shell_quote(out) + " 2>&1");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_NE(result.output.find("File too large"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out + "/trace.json"));  // never a truncated trace
  EXPECT_EQ(count_named(out, ".tmp"), 0);          // no temporary file left
  EXPECT_EQ(count_named(out, "trace"), 0);
  // The summary, small enough, was completely written or left as it was.
  const std::string summary = read_file(out + "/summary.json");
  EXPECT_TRUE(summary == "previous summary\n" || summary.ends_with("}\n")) << summary.size();
}

TEST(WildOutputs, OutputInsideAnInputFolderOrOnAnInputIsRefused) {
  TempDir dir;
  const std::string logs = make_logs(dir, 8);
  const std::string before = read_file(logs + "/workerlog.0");
  auto result = run_cli("analyze " + shell_quote(logs) + " -q -o " + shell_quote(logs + "/out"));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("is inside input folder"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(logs + "/out"));
  // --html onto an input file: refused even with --allow-output-in-input.
  result = run_cli("analyze " + shell_quote(logs) + " -q --allow-output-in-input -o " +
                   shell_quote(dir / "out") + " --html " + shell_quote(logs + "/workerlog.0"));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("inputs are never overwritten"), std::string::npos) << result.output;
  // A summary.json given as an input file, and -o its folder.
  dir.write("in2/summary.json", testing::wild_log(4));
  const std::string summary_before = read_file(dir / "in2/summary.json");
  result = run_cli("analyze " + shell_quote(dir / "in2/summary.json") + " -q --no-trace -o " +
                   shell_quote(dir / "in2"));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.output.find("inputs are never overwritten"), std::string::npos) << result.output;
  EXPECT_EQ(read_file(logs + "/workerlog.0"), before);
  EXPECT_EQ(read_file(dir / "in2/summary.json"), summary_before);
}

}  // namespace
}  // namespace pipescope
