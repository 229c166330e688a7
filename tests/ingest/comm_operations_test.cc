// A NCCL kernel's operations and peers as PyTorch versions write them
// (docs/guide.md, "The kernel view"): the args on the kernel (2.5+), on the
// host's record_param_comms only (2.2-2.4: the kernel carries none of the
// point-to-point ones), a batched kernel launched after its operations'
// calls ended (batch_isend_irecv: one SendRecv kernel, no args), External
// ids that are only correlations (2.2 and earlier), and process groups
// whose rank list PyTorch cut after 30 ranks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "ingest/torch_trace_reader.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string event(std::string_view cat, std::string_view name, std::int64_t ts_us,
                  std::int64_t dur_us, std::string_view args, int tid = 7) {
  return fmt::format(
      R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, )"
      R"("args": {{{}}}}})",
      cat, name, tid, ts_us, dur_us, args);
}

std::string trace(const std::vector<std::string>& events) {
  std::string doc = "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) doc += (i ? ",\n" : "") + events[i];
  return doc + "\n]}\n";
}

RankKernels read_kernels(const std::string& path) {
  InputFile input;
  input.path = path;
  input.format = InputFormat::torch_trace;
  FileResult r = read_torch_trace(input, ReadOptions{}, TorchTraceOptions{});
  EXPECT_EQ(r.kernels.size(), 1u) << path;
  return r.kernels.empty() ? RankKernels{} : std::move(r.kernels.front());
}

constexpr std::string_view kSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

TEST(CommOperations, BatchedKernelTakesEveryCallBeforeItsLaunch) {
  // Megatron's send_forward_recv_backward as batch_isend_irecv runs it on
  // PyTorch 2.4: c10d::send and c10d::recv_ each record one
  // record_param_comms (no launch inside), then endCoalescing launches one
  // SendRecv kernel whose args name nothing. An earlier plain send, whose
  // kernel is launched inside its own call, bounds the batch.
  TempDir dir;
  const std::string path =
      dir.write("r.pt.trace.json",
                trace({
                    event("user_annotation", "ProfilerStep#3", 0, 1000, ""),
                    event("cpu_op", "record_param_comms", 10, 20,
                          R"("External id": 5, "Collective name": "send", "Dst Rank": 4, )"
                          R"("Process Group Name": "3", "Process Group Ranks": "[0, 4]")"),
                    event("cpu_op", "record_param_comms", 100, 5,
                          R"("External id": 8, "Collective name": "send", "Dst Rank": 4, )"
                          R"("Process Group Name": "3", "Process Group Ranks": "[0, 4]")"),
                    event("cpu_op", "record_param_comms", 106, 5,
                          R"("External id": 9, "Collective name": "recv", "Src Rank": 4, )"
                          R"("Process Group Name": "3", "Process Group Ranks": "[0, 4]")"),
                    event("user_annotation", "nccl:coalesced", 112, 400, R"("External id": 10)"),
                    event("cuda_runtime", "cudaLaunchKernelExC", 15, 2,
                          R"("External id": 5, "correlation": 50)"),
                    event("kernel", kSendRecv, 20, 30,
                          R"("External id": 5, "correlation": 50, "Collective name": "send", )"
                          R"("Dst Rank": 4, "Process Group Name": "3")"),
                    event("cuda_runtime", "cudaLaunchKernelExC", 113, 2,
                          R"("External id": 60, "correlation": 60)"),
                    event("kernel", kSendRecv, 120, 40, R"("External id": 60, "correlation": 60)"),
                }));
  const RankKernels k = read_kernels(path);
  ASSERT_EQ(k.comm.size(), 2u);
  EXPECT_EQ(k.comm[0].op, CommOp::point_to_point);
  EXPECT_EQ(k.comm[0].p2p, (std::vector<PeerOp>{{CommOp::send, 4}}));
  EXPECT_EQ(k.comm[1].op, CommOp::point_to_point);
  EXPECT_EQ(k.comm[1].p2p, (std::vector<PeerOp>{{CommOp::send, 4}, {CommOp::recv, 4}}));
  EXPECT_EQ(k.comm[1].source, CommSource::host);
  EXPECT_EQ(k.comm[1].collective, "send/recv");
  EXPECT_EQ(k.comm[1].group_name, "3");
  EXPECT_EQ(k.comm[1].step, 3);
}

TEST(CommOperations, ArgsOnTheHostCallOnly) {
  // PyTorch 2.3-2.4 point-to-point: the kernel has no Dst Rank; the
  // record_param_comms around its launch has. Its External id joins them
  // too, but the launch's thread and time alone suffice.
  TempDir dir;
  const std::string path =
      dir.write("r.pt.trace.json",
                trace({
                    event("cpu_op", "record_param_comms", 10, 20,
                          R"("External id": 5, "Collective name": "recv", "Src Rank": 2, )"
                          R"("Process Group Name": "1", "Process Group Ranks": "[2, 3]")"),
                    event("cpu_op", "record_param_comms", 40, 20,
                          R"("External id": 6, "Collective name": "send", "Dst Rank": 2)", 8),
                    event("cuda_runtime", "cudaLaunchKernel", 15, 2,
                          R"("External id": 5, "correlation": 50)"),
                    event("kernel", kSendRecv, 20, 30,
                          R"("External id": 5, "correlation": 50, "Collective name": "recv", )"
                          R"("Process Group Name": "1")"),
                    // Launched on another thread inside a call there.
                    event("cuda_runtime", "cudaLaunchKernel", 45, 2,
                          R"("External id": 6, "correlation": 51)", 8),
                    event("kernel", kSendRecv, 60, 30, R"("External id": 6, "correlation": 51)"),
                }));
  const RankKernels k = read_kernels(path);
  ASSERT_EQ(k.comm.size(), 2u);
  EXPECT_EQ(k.comm[0].p2p, (std::vector<PeerOp>{{CommOp::recv, 2}}));
  EXPECT_EQ(k.comm[0].group_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(k.comm[1].p2p, (std::vector<PeerOp>{{CommOp::send, 2}}));
}

TEST(CommOperations, OldExternalIdsAreCorrelationsNotOps) {
  // PyTorch 2.2 and earlier: a kernel's External id is its correlation. Here
  // it equals the id of an unrelated allreduce's record_param_comms on
  // another thread, which must not name the kernel; the host call around
  // the launch (a name, no args) says only which collective it runs (an
  // all_to_all runs as SendRecv kernels).
  TempDir dir;
  const std::string path =
      dir.write("r.pt.trace.json",
                trace({
                    event("cpu_op", "record_param_comms", 500, 20,
                          R"("External id": 77, "Collective name": "allreduce", )"
                          R"("Process Group Ranks": "[0, 1]")",
                          3),
                    event("cpu_op", "record_param_comms", 10, 20, R"("External id": 4)"),
                    event("user_annotation", "nccl:all_to_all", 12, 10, R"("External id": 5)"),
                    event("cuda_runtime", "cudaLaunchKernel", 15, 2,
                          R"("External id": 77, "correlation": 77)"),
                    event("kernel", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", 20,
                          30, R"("External id": 77, "correlation": 77)"),
                }));
  const RankKernels k = read_kernels(path);
  ASSERT_EQ(k.comm.size(), 1u);
  EXPECT_EQ(k.comm[0].op, CommOp::collective);
  EXPECT_EQ(k.comm[0].collective, "all_to_all");
  EXPECT_TRUE(k.comm[0].p2p.empty());
  EXPECT_TRUE(k.comm[0].group_ranks.empty());
  EXPECT_EQ(k.comm[0].source, CommSource::none);
}

TEST(CommOperations, CutRankListsAreNotLists) {
  // 64 ranks: PyTorch writes the first 30 and "...". The host call's
  // Global rank start/stride and Group size give the members; the kernel's
  // own list is never taken.
  TempDir dir;
  std::string cut = "[";
  for (int i = 0; i < 30; ++i) cut += fmt::format("{}, ", 2 * i);
  cut += "...]";
  const std::string path = dir.write(
      "r.pt.trace.json",
      trace({
          event("cpu_op", "record_param_comms", 10, 20,
                fmt::format(R"("External id": 5, "Collective name": "allreduce", )"
                            R"("Process Group Name": "9", "Process Group Ranks": "{}", )"
                            R"("Global rank start": 0, "Global rank stride": 2, "Group size": 64)",
                            cut)),
          event("cuda_runtime", "cudaLaunchKernel", 15, 2,
                R"("External id": 5, "correlation": 50)"),
          event(
              "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
              20, 30,
              fmt::format(R"("External id": 5, "correlation": 50, "Collective name": "allreduce", )"
                          R"("Process Group Name": "9", "Process Group Ranks": "{}", )"
                          R"("Group size": 64)",
                          cut)),
      }));
  const RankKernels k = read_kernels(path);
  ASSERT_EQ(k.comm.size(), 1u);
  EXPECT_EQ(k.comm[0].op, CommOp::collective);
  ASSERT_EQ(k.comm[0].group_ranks.size(), 64u);
  EXPECT_EQ(k.comm[0].group_ranks.back(), 126);
  EXPECT_EQ(k.comm[0].group_size, 64);
}

}  // namespace
}  // namespace pipescope
