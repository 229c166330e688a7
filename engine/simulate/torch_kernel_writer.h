// Writes a simulated run as the PyTorch profiler traces of a Megatron-style
// job without labels (`simulate --format torch-kernels`): one
// `rankR.pt.trace.json` per global rank (DIR/machineK/ for several
// machines) holding only what Kineto records of such a run — the GPU
// activities of the kernel timeline (simulate/kernel_timeline.h), each with
// its `cudaLaunchKernel` (`cuda_runtime`) or, for NCCL kernels of the new
// generation, `cuLaunchKernelEx` (`cuda_driver`) call sharing its
// `args.correlation` and an `ac2g` flow pair; every NCCL launch inside a
// `record_param_comms` cpu_op and an `nccl:send` / `nccl:recv` /
// `nccl:all_reduce` annotation; one `ProfilerStep#N` span per step around its
// launches (N from first_step). No `PP:` labels.
//
// NCCL kernels carry Kineto's args (also on their record_param_comms):
// "Collective name" (send, recv, allreduce), "Process Group Name",
// "Process Group Description" (Megatron's PIPELINE_MODEL_PARALLEL_GROUP and
// DATA_PARALLEL_GROUP), "Process Group Ranks", "Dst Rank" / "Src Rank"
// (global ranks), the message sizes and dtype, and unless !comms_id
// "Comms Id" (a bare unsigned 64-bit integer, about half of them above 2^63).
// Process group names follow Megatron's creation order: the data-parallel
// group of stage s is "1+s", the pipeline group of replica d "1+P+d".
//
// Files are in Kineto's write order, not sorted by time: the CPU events
// (spans, cpu_ops, annotations) in time order, then the runtime and driver
// calls interleaved with the GPU activities in time order, then the process
// and thread metadata; `distributedInfo.rank` is the global rank,
// `baseTimeNanoseconds` whole seconds, `ts`/`dur` microseconds with three
// decimals. Machine m writes every time SimConfig::machine_skew_ns[m] ahead
// of the true clock (its clock offset).
//
// expected.json: {"format", "kernel_view" (summary.json's object, by
// simulate/kernel_expected.h, on machine 0's clock), "layout" (pp, dp and
// each rank's stage, replica, machine, device), "clock" (each machine's
// offset from machine 0's clock)}; simulation.json the configuration.
//
// Usage:
//   TorchKernelOptions options;  options.dir = "out";
//   KernelTraceReport report = write_torch_kernel_traces(config, options);  // throws
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "simulate/kernel_expected.h"
#include "simulate/log_writer.h"

namespace pipescope::sim {

/// The NCCL kernel names (and launch call) of a generation.
enum class NcclGeneration {
  /// Before NCCL 2.19: ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...),
  /// ncclKernel_AllReduce_RING_LL_Sum_float(...), launched by cudaLaunchKernel.
  old_names,
  /// NCCL 2.19 on: ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>),
  /// ncclDevKernel_AllReduce_Sum_f32_RING_LL(...), launched by cuLaunchKernelEx.
  new_names,
};

struct TorchKernelOptions {
  std::filesystem::path dir;
  /// Replace the traces of a non-empty folder instead of refusing.
  bool force = false;
  /// N of the first `ProfilerStep#N` span.
  std::int64_t first_step = 0;
  /// Compute kernels per compute job (at least 1).
  int kernels_per_job = 24;
  /// Write "Comms Id" on the NCCL kernels.
  bool comms_id = true;
  NcclGeneration nccl = NcclGeneration::new_names;
};

struct KernelTraceReport {
  /// One per rank (`jobs`: its GPU activities; `lines`: its events).
  std::vector<WrittenFile> files;
  std::filesystem::path expected_path;
  std::uint64_t bytes = 0;
  std::uint64_t activities = 0;
  int steps = 0;
  int ranks = 0;
  int machines = 0;
  ExpectedKernelView expected;
};

/// Simulates config, writes the traces, expected.json and simulation.json.
/// Throws std::invalid_argument for what build_kernel_timeline refuses, a
/// first step outside 0..10^12 or a non-empty folder without force;
/// std::system_error (naming the file) for I/O failures.
KernelTraceReport write_torch_kernel_traces(const SimConfig& config,
                                            const TorchKernelOptions& options);

}  // namespace pipescope::sim
