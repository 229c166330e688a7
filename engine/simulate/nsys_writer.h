// Writes a simulated run as Nsight Systems SQLite exports (`simulate --format
// nsys`): one `rank_R.sqlite` per global rank, as `nsys profile -o
// rank_%q{RANK} --trace=cuda,nvtx` then `nsys export --type sqlite
// --include-blobs=true` leave a Megatron-style run profiled with
// torch.distributed.pipelining's labels, in the tables and columns of a 3.x
// export (EXPORT_SCHEMA_VERSION 3.25.0), written through SQLite:
//
//  - GPU activities: the kernel timeline (simulate/kernel_timeline.h) in
//    CUPTI_ACTIVITY_KIND_KERNEL (deviceId: the GPU's index on its machine,
//    names through StringIds; NCCL kernels by NCCL 2.19+'s names), each
//    launched by a CUPTI_ACTIVITY_KIND_RUNTIME row with its correlationId
//    (cudaLaunchKernel, eventClass 0; NCCL's cuLaunchKernelEx, eventClass 1)
//    on the process's main thread, at least 40 us before the kernel starts.
//  - NVTX_EVENTS: a `ProfilerStep#N` push/pop range per step around its
//    launches (N from first_step); per compute job but the optimizer a
//    `PP:<stage><op><mb>` range from its first kernel's launch to the end of
//    its last one's (torch_action_label); NCCL's own ranges in its domain
//    (a domain-create row, id 1): ncclCommInitRankConfig per communicator
//    of the rank before the first step, and around each NCCL launch
//    ncclSend / ncclRecv (peer: its rank in the pipeline group) or
//    ncclAllReduce, each with its payload (binaryData: the 32-byte header,
//    then NCCL's struct; NVTX_PAYLOAD_SCHEMAS and _ENTRIES lay it out).
//  - Metadata: META_DATA_EXPORT, META_DATA_CAPTURE (RANK, LOCAL_RANK and
//    WORLD_SIZE of the process), TARGET_INFO_SYSTEM_ENV (Hostname
//    `node<M>`), TARGET_INFO_CUDA_STREAM (the process's streams, as
//    CUPTI lists them), TARGET_INFO_SESSION_START_TIME: stored times count from
//    systemClockNs, absolute = utcEpochNs + stored − systemClockNs, machine
//    m's utcEpochNs SimConfig::machine_skew_ns[m] ahead (its clock offset).
//
// expected.json: {"format": "nsys", "summary" (summary.json's job figures of
// the labelled jobs, by expected_metrics.h: a job's interval is exactly its
// kernels' span), "kernel_view" (summary.json's object, by
// kernel_expected.h, on machine 0's clock), "layout", "clock"};
// simulation.json the configuration.
//
// Usage:
//   NsysExportOptions options;  options.dir = "out";
//   NsysExportReport report = write_nsys_exports(config, options);  // throws
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "simulate/expected_metrics.h"
#include "simulate/kernel_expected.h"
#include "simulate/log_writer.h"

namespace pipescope::sim {

struct NsysExportOptions {
  std::filesystem::path dir;
  /// Replace the exports of a non-empty folder instead of refusing.
  bool force = false;
  /// N of the first `ProfilerStep#N` range.
  std::int64_t first_step = 0;
  /// Compute kernels per compute job (at least 1).
  int kernels_per_job = 24;
};

struct NsysExportReport {
  /// One per rank (`jobs`: its labelled jobs; `lines`: its GPU activities).
  std::vector<WrittenFile> files;
  std::filesystem::path expected_path;
  std::uint64_t bytes = 0;
  std::uint64_t activities = 0;
  std::uint64_t runtime_rows = 0;
  int steps = 0;
  int ranks = 0;
  int machines = 0;
  ExpectedKernelView kernel_view;
  ExpectedMetrics jobs;
};

/// Simulates config, writes the exports, expected.json and simulation.json.
/// Throws std::invalid_argument for what build_kernel_timeline refuses, a
/// first step outside 0..10^12 or a non-empty folder without force;
/// std::system_error (naming the file) for I/O failures, std::runtime_error
/// for one SQLite reports.
NsysExportReport write_nsys_exports(const SimConfig& config, const NsysExportOptions& options);

}  // namespace pipescope::sim
