// `analyze` on PyTorch traces without job labels: the kernel view end to end,
// on two hand-written ranks whose every figure is worked out below.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;

// Times in us after the base (1e18 ns). Rank 0: ProfilerStep#7 [0,1000];
// compute kernels [100,300) and [500,600); a send to rank 1 [300,450) whose
// kernel comes *before* its launch in the file (as Kineto often writes
// them); a graph launch at 20 whose two kernels [600,650) and [650,700)
// share its correlation id. Rank 1: compute [100,200) and [450,700); the
// matching recv [380,450) (Comms Id above 2^63, on both sides).
//   Window [1e18 + 100 us, 1e18 + 700 us): 600 us.
//   Rank 0: compute 200 + 100 + the graph's 100 = 400 us; its
//   send waits [300,380) for the recv (80 us), transfers [380,450) (70 us);
//   idle 600 - 400 - 70 - 80 = 50 us ([450,500)).
//   Rank 1: compute 100 + 250 = 350 us; its recv started last: transfer 70,
//   no wait; idle 600 - 350 - 70 = 180 us.
constexpr const char* kRank0 =
    R"json({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 2},
"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0.000, "dur": 1000.000},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.000, "dur": 2, "args": {"correlation": 1}},
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100.000, "dur": 200.000, "args": {"correlation": 1, "stream": 7}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 20.000, "dur": 2, "args": {"correlation": 5}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 9, "ts": 300.000, "dur": 150.000, "args": {"correlation": 2, "Collective name": "send", "Process Group Name": "3", "Process Group Description": "PIPELINE_MODEL_PARALLEL_GROUP", "Process Group Ranks": "[0, 1]", "Dst Rank": 1, "Comms Id": 18446744073709551557}},
{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 1, "ts": 30.000, "dur": 2, "args": {"correlation": 2}},
{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 7, "ts": 500.000, "dur": 100.000, "args": {"correlation": 3}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 40.000, "dur": 2, "args": {"correlation": 3}},
{"ph": "X", "cat": "kernel", "name": "graph_a", "pid": 0, "tid": 7, "ts": 600.000, "dur": 50.000, "args": {"correlation": 5}},
{"ph": "X", "cat": "kernel", "name": "graph_b", "pid": 0, "tid": 7, "ts": 650.000, "dur": 50.000, "args": {"correlation": 5}}
],
"baseTimeNanoseconds": 1000000000000000000}
)json";
constexpr const char* kRank1 =
    R"json({"schemaVersion": 1, "distributedInfo": {"rank": 1, "world_size": 2},
"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0.000, "dur": 1000.000},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.000, "dur": 2, "args": {"correlation": 11}},
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100.000, "dur": 100.000, "args": {"correlation": 11}},
{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 1, "ts": 30.000, "dur": 2, "args": {"correlation": 12}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 9, "ts": 380.000, "dur": 70.000, "args": {"correlation": 12, "Collective name": "recv", "Process Group Name": "3", "Process Group Description": "PIPELINE_MODEL_PARALLEL_GROUP", "Process Group Ranks": "[0, 1]", "Src Rank": 0, "Comms Id": "18446744073709551557"}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 50.000, "dur": 2, "args": {"correlation": 13}},
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 450.000, "dur": 250.000, "args": {"correlation": 13}}
],
"baseTimeNanoseconds": 1000000000000000000}
)json";

std::int64_t at(simdjson::dom::element e, const char* key) { return std::int64_t(e[key]); }

TEST(KernelViewCli, SplitsTwoHandWrittenRanks) {
  TempDir dir;
  dir.write("run/rank0.pt.trace.json", kRank0);
  dir.write("run/rank1.pt.trace.json", kRank1);
  const CommandResult r =
      run_cli("analyze " + shell_quote(dir / "run") + " -o " + shell_quote(dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Of the "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("points are NCCL kernels waiting for their peers (most on rank 1)"),
            std::string::npos)
      << r.output;

  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(at(s, "jobs"), 0);
  const simdjson::dom::element k = s["kernel_view"];
  EXPECT_EQ(at(k, "gpu_activities"), 8);  // 5 on rank 0, 3 on rank 1
  EXPECT_EQ(at(k, "without_launch"), 0);
  EXPECT_EQ(at(k, "comm_kernels_without_peers"), 0);
  const simdjson::dom::element step = k["steps"].at(0);
  EXPECT_EQ(at(step, "step"), 7);
  EXPECT_EQ(at(step, "start_ns"), 1'000'000'000'000'100'000);
  EXPECT_EQ(at(step, "end_ns"), 1'000'000'000'000'700'000);
  const simdjson::dom::element r0 = k["ranks"].at(0);
  EXPECT_EQ(at(r0, "compute_ns"), 400'000);
  EXPECT_EQ(at(r0, "wait_ns"), 80'000);
  EXPECT_EQ(at(r0, "transfer_ns"), 70'000);
  EXPECT_EQ(at(r0, "idle_ns"), 50'000);
  EXPECT_EQ(at(r0, "most_waited_on"), 1);
  const simdjson::dom::element r1 = k["ranks"].at(1);
  EXPECT_EQ(at(r1, "compute_ns"), 350'000);
  EXPECT_EQ(at(r1, "wait_ns"), 0);
  EXPECT_EQ(at(r1, "transfer_ns"), 70'000);
  EXPECT_EQ(at(r1, "idle_ns"), 180'000);
  EXPECT_TRUE(r1["most_waited_on"].is_null());
  EXPECT_DOUBLE_EQ(double(k["bubble_ratio"]), 450.0 / 1200.0);

  // The trace: the send is two slices, its wait naming the peer.
  simdjson::dom::element t;
  ASSERT_EQ(parser.load(dir / "out/trace.json").get(t), simdjson::SUCCESS);
  int waits = 0, transfers = 0;
  for (simdjson::dom::element e : t["traceEvents"]) {
    std::string_view cat;
    if (e["cat"].get(cat) != simdjson::SUCCESS) continue;
    if (cat == "nccl_wait") {
      ++waits;
      EXPECT_EQ(std::string_view(e["name"]), "wait · send (for rank 1)");
      EXPECT_DOUBLE_EQ(double(e["ts"]), 200.0);  // 300 us after the base, origin at 100
      EXPECT_DOUBLE_EQ(double(e["dur"]), 80.0);
    } else if (cat == "nccl_transfer") {
      ++transfers;
    }
  }
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(transfers, 2);
}

// One rank alone: its NCCL kernel has no peer in the files: all transfer, with
// the warning naming the count; --no-trace writes the summary only.
TEST(KernelViewCli, ALoneRanksNcclKernelsAreTheWarningCase) {
  TempDir dir;
  dir.write("run/rank0.pt.trace.json", kRank0);
  const CommandResult r = run_cli("analyze " + shell_quote(dir / "run/rank0.pt.trace.json") +
                                  " --no-trace -q -o " + shell_quote(dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("1 of 1 NCCL kernels have no peer in the traces given"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out/trace.json"));
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  // The split is unknown: null, never the kernel's time as all transfer.
  const simdjson::dom::element r0 = s["kernel_view"]["ranks"].at(0);
  EXPECT_TRUE(r0["wait_ns"].is_null());
  EXPECT_TRUE(r0["transfer_ns"].is_null());
  EXPECT_TRUE(s["kernel_view"]["wait_share"].is_null());
  EXPECT_EQ(at(r0, "window_ns") - at(r0, "compute_ns") - at(r0, "idle_ns"), 150'000);
  EXPECT_NE(r.output.find("the NCCL time of rank 0 is not split into wait and transfer"),
            std::string::npos)
      << r.output;
  bool warned = false;
  for (simdjson::dom::element w : s["warnings"]) {
    warned = warned || std::string_view(w["code"]) == "comm_kernels_without_peers";
  }
  EXPECT_TRUE(warned);
}

// The one rank rule: without distributedInfo, a trace takes its CUDA device
// on its machine (rank 1's kernels ran on device 1: it is rank 1, said in
// rank_source and a note, even though its file sorts first); two traces
// that claim one rank are refused, naming both.
TEST(KernelViewCli, RanksWithoutDistributedInfoAndTwoClaimsOfOne) {
  TempDir dir;
  std::string no_info = kRank1;
  no_info.replace(no_info.find(R"("distributedInfo": {"rank": 1, "world_size": 2},)"),
                  std::string_view(R"("distributedInfo": {"rank": 1, "world_size": 2},)").size(),
                  "");
  for (const char* corr : {R"("correlation": 11})", R"("correlation": 13})"}) {
    const std::string with_device = std::string(corr, std::strlen(corr) - 1) + R"(, "device": 1})";
    no_info.replace(no_info.rfind(corr), std::strlen(corr), with_device);  // the kernel's
  }
  dir.write("run/a.pt.trace.json", no_info);  // sorts before b: once taken as rank 0
  dir.write("run/b.pt.trace.json", kRank0);
  const CommandResult r =
      run_cli("analyze " + shell_quote(dir / "run") + " --no-trace -o " + shell_quote(dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("a.pt.trace.json is rank 1 by device"), std::string::npos) << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  const simdjson::dom::element r1 = s["kernel_view"]["ranks"].at(1);
  EXPECT_EQ(std::string_view(r1["rank_source"]), "device");
  EXPECT_NE(std::string_view(r1["path"]).find("a.pt.trace.json"), std::string_view::npos);
  EXPECT_EQ(at(r1, "compute_ns"), 350'000);
  EXPECT_EQ(std::string_view(s["kernel_view"]["ranks"].at(0)["rank_source"]), "distributed_info");

  TempDir twice;
  twice.write("run/a.pt.trace.json", kRank0);
  twice.write("other/b.pt.trace.json", kRank0);
  const CommandResult refused = run_cli("analyze " + shell_quote(twice / "run/a.pt.trace.json") +
                                        " " + shell_quote(twice / "other/b.pt.trace.json") +
                                        " --no-trace -q -o " + shell_quote(twice / "out"));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("both claim rank 0"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace pipescope
