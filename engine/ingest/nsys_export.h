// One Nsight Systems SQLite export (`nsys export --type sqlite`) read into
// what the kernel view needs of each GPU process it holds, before the run's
// processes are placed as ranks (nsys_reader.h does that over every export).
//
// What is read, table by table (a table or column that is absent has no
// rows; docs/formats.md, "Nsight Systems exports"):
//  - META_DATA_EXPORT (schema 3.x) or EXPORT_META_DATA (2.x): the schema
//    version; TARGET_INFO_SESSION_START_TIME: utcEpochNs and (3.x)
//    systemClockNs. A stored time t is the absolute ns utcEpochNs + t −
//    systemClockNs (2.x: utcEpochNs + t), integers throughout.
//  - TARGET_INFO_SYSTEM_ENV: each VM's Hostname, and DeviceEnvironment;
//    META_DATA_CAPTURE: the launched processes' environment.
//  - CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET: the GPU activities, by
//    process (globalPid >> 24); a kernel named `nccl...` (StringIds) is a
//    communication kernel, every other activity compute.
//  - CUPTI_ACTIVITY_KIND_RUNTIME: an activity's launch is the row of its
//    process with its correlationId (the runtime or driver row, eventClass 0
//    or 1, before others; then the earliest).
//  - NVTX_EVENTS: push/pop and start/end ranges (eventType 59, 60) with an
//    end: steps (NsysOptions::step_range), NCCL's own calls (domain
//    "NCCL", else any non-default domain; names `nccl...`) with their
//    payloads (binaryData, laid out by NVTX_PAYLOAD_SCHEMAS and _ENTRIES),
//    and jobs: `PP:<action>` labels (emit_nvtx's ", seq = ..." and
//    ", op_id = ..." cut off), or the names a job pattern matches, made jobs
//    by the rule of a PyTorch trace's user annotations (annotation_jobs.h):
//    each timed by the activities (NCCL kernels too) whose launch lies in
//    the range, in the range's process.
//  - TARGET_INFO_CUDA_DEVICE, else TARGET_INFO_GPU: a process's CUDA device.
//
// Throws InputError for a file that is no export (naming the tables it
// lacks) or a database damaged where it is read.
#pragma once

#include <re2/re2.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/annotation_jobs.h"
#include "ingest/kernel_collector.h"

namespace pipescope {

/// One call of NCCL's as its NVTX range and payload give it.
struct NsysNcclCall {
  std::int64_t start = 0;  // absolute ns
  std::int64_t end = 0;
  std::int64_t order = 0;  // its row: start-time ties in table order
  std::string name;        // ncclSend, ncclAllReduce, ...
  // Payload fields (nullopt: not in the payload, or no payload).
  std::optional<std::uint64_t> comm;   // `NCCL communicator ID`
  std::optional<std::int64_t> peer;    // `Peer rank`
  std::optional<std::int64_t> rank;    // `Rank`
  std::optional<std::int64_t> nranks;  // `No. of ranks`
};

/// A NCCL kernel of a process, kept whole until the run's ranks are known.
struct NsysCommKernel {
  std::int64_t start = 0, end = 0;
  std::int64_t order = 0;  // its row
  bool launched = false;
  std::int64_t launch = 0;   // absolute ns of its launch
  std::int64_t thread = -1;  // its launch's globalTid
  std::string name;
};

/// One GPU process of an export: one rank.
struct NsysProcess {
  std::int64_t key = 0;  // globalPid >> 24
  int pid = 0;
  std::string host;
  /// The deviceId most of its activities ran on (ties: the lowest), and the
  /// CUDA ordinal of that device; -1: none.
  std::int64_t device_id = -1;
  int cuda_device = -1;
  /// The report's environment where it holds this one GPU process.
  std::optional<int> env_rank;
  std::optional<int> world_size;
  /// NCCL's calls by launching thread (globalTid), in row order.
  std::map<std::int64_t, std::vector<NsysNcclCall>> calls;
  /// Its communicator memberships: (communicator, ranks, its rank).
  struct Member {
    std::uint64_t comm = 0;
    std::int64_t nranks = 0;
    std::int64_t rank = 0;
  };
  std::vector<Member> members;
  std::vector<NsysCommKernel> comm;
  /// Its compute activities and step spans, already placed in their steps.
  std::unique_ptr<KernelCollector> kernels = std::make_unique<KernelCollector>();
  /// Its job ranges and step spans, its compute activities placed in them
  /// (its NCCL kernels are placed with the run's ranks: nsys_reader.cc).
  std::unique_ptr<AnnotationJobs> jobs;
  /// The earliest launch of an activity (INT64_MAX: none).
  std::int64_t earliest_launch = INT64_MAX;
  std::uint64_t activities = 0;
};

struct NsysExport {
  std::string path;
  std::string schema_version;
  std::vector<std::string> hosts;
  /// GPU processes (with an activity), by key.
  std::vector<NsysProcess> processes;
};

/// True when `first_bytes` begin an SQLite database.
bool sqlite_header(std::string_view first_bytes);

/// Reads the export at `path`; `step_range` names the step ranges (its
/// first group, or the group named `step`, is N); `pattern` names the jobs
/// (null: `PP:` labels).
NsysExport read_nsys_export(const std::string& path, const RE2& step_range,
                            const JobPattern* pattern);

/// How many GPU processes (ranks) the export holds, read cheaply for
/// discovery: the processes of its CUDA streams (TARGET_INFO_CUDA_STREAM),
/// else those with an activity (a scan of the activity tables); 0 when it
/// cannot be read (the reader then says why). The reader numbers the
/// devices by the processes it reads, whatever this said.
int nsys_gpu_processes(const std::string& path);

}  // namespace pipescope
