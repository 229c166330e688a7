// The log events' literal search end to end: every kernel this CPU runs,
// forced with PIPESCOPE_LITERAL_SEARCH, finds the same events in a
// simulated run with events (summary.json byte for byte), `--version` names
// the kernel, and a kernel the CPU lacks or an unknown word is a usage
// error naming the variable.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "scan/event_matcher.h"
#include "scan/literal_set_search.h"
#include "support/command_runner.h"
#include "support/literal_kernels.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::machine_kernels;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;
namespace fs = std::filesystem;

/// `pipescope ARGS` with $PIPESCOPE_LITERAL_SEARCH set to `kernel` ("":
/// unset), stderr merged in.
CommandResult with_kernel(const std::string& kernel, const std::string& args) {
  const std::string env = kernel.empty() ? "env -u PIPESCOPE_LITERAL_SEARCH "
                                         : "env PIPESCOPE_LITERAL_SEARCH=" + kernel + " ";
  return run_command(env + PIPESCOPE_CLI + std::string(" ") + args + " 2>&1");
}

TEST(LiteralKernelCli, EveryKernelFindsTheSameEvents) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  TempDir dir;
  const std::string run = dir / "run";
  ASSERT_EQ(run_command(std::string(PIPESCOPE_CLI) + " simulate -o " + shell_quote(run) +
                        " --stages 2 --micro-batches 4 --steps 8 --noise-per-job 30 --events" +
                        " --seed 5 > /dev/null 2>&1")
                .status,
            0);
  std::string expected;
  for (const std::string& kernel :
       {std::string(), std::string("portable"), std::string("avx2"), std::string("vbmi")}) {
    SCOPED_TRACE(kernel);
    if (!kernel.empty() && kernel != "portable" &&
        !LiteralSetSearch::runs(kernel == "avx2" ? LiteralSetSearch::Kernel::avx2
                                                 : LiteralSetSearch::Kernel::vbmi)) {
      continue;
    }
    const std::string out = dir / ("out-" + (kernel.empty() ? "default" : kernel));
    const CommandResult r = with_kernel(
        kernel, "analyze " + shell_quote(run) + " --no-trace -q -o " + shell_quote(out));
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string summary = testing::read_file(fs::path(out) / "summary.json");
    // Events were found (simulate --events writes these).
    ASSERT_NE(summary.find("\"nccl_warn\""), std::string::npos);
    ASSERT_NE(summary.find("\"paddle_reader_cost\""), std::string::npos);
    if (expected.empty()) {
      expected = summary;
    } else {
      EXPECT_EQ(summary, expected);
    }
  }
  EXPECT_GE(machine_kernels().size(), 1u);
}

TEST(LiteralKernelCli, VersionNamesTheKernel) {
  const CommandResult plain = with_kernel("", "--version");
  ASSERT_EQ(plain.status, 0);
  EXPECT_EQ(plain.output.rfind("pipescope ", 0), 0u) << plain.output;
  if (!EventMatcher::available()) {
    EXPECT_NE(plain.output.find("log events: off"), std::string::npos) << plain.output;
    return;
  }
  const LiteralSetSearch::Kernel fastest = machine_kernels().back();
  const std::string expected = fastest == LiteralSetSearch::Kernel::portable
                                   ? std::string("log events: Hyperscan reads every byte")
                                   : std::string("log events: literal search, ") +
                                         LiteralSetSearch::name(fastest) + " kernel";
  EXPECT_NE(plain.output.find(expected), std::string::npos) << plain.output;
  if (LiteralSetSearch::runs(LiteralSetSearch::Kernel::avx2)) {
    const CommandResult avx2 = with_kernel("avx2", "--version");
    EXPECT_NE(avx2.output.find("log events: literal search, avx2 kernel"), std::string::npos)
        << avx2.output;
    EXPECT_NE(avx2.output.find("as PIPESCOPE_LITERAL_SEARCH asks"), std::string::npos)
        << avx2.output;
  }
  const CommandResult portable = with_kernel("portable", "--version");
  EXPECT_NE(portable.output.find("log events: Hyperscan reads every byte"), std::string::npos)
      << portable.output;
}

TEST(LiteralKernelCli, AKernelTheCpuLacksOrAnUnknownWordIsAUsageError) {
  if (!EventMatcher::available()) GTEST_SKIP() << "built without Hyperscan";
  TempDir dir;
  const std::string args = "analyze " + shell_quote(std::string(PIPESCOPE_TESTDATA) + "/single") +
                           " --no-trace -q -o " + shell_quote(dir / "out");
  const CommandResult wrong = with_kernel("sse9", args);
  EXPECT_EQ(wrong.status, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("PIPESCOPE_LITERAL_SEARCH='sse9': expected portable, avx2 or vbmi"),
            std::string::npos)
      << wrong.output;
  EXPECT_NE(with_kernel("sse9", "--version").output.find("PIPESCOPE_LITERAL_SEARCH='sse9'"),
            std::string::npos);
  for (const char* kernel : {"avx2", "vbmi"}) {
    const bool runs =
        LiteralSetSearch::runs(std::string(kernel) == "avx2" ? LiteralSetSearch::Kernel::avx2
                                                             : LiteralSetSearch::Kernel::vbmi);
    const CommandResult r = with_kernel(kernel, args);
    if (runs) {
      EXPECT_EQ(r.status, 0) << r.output;
    } else {
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_NE(r.output.find(std::string("PIPESCOPE_LITERAL_SEARCH=") + kernel +
                              ": this CPU cannot run that kernel"),
                std::string::npos)
          << r.output;
    }
  }
  // --no-events asks for no search: the variable is not read.
  EXPECT_EQ(with_kernel("sse9", args + " --no-events").status, 0);
}

}  // namespace
}  // namespace pipescope
