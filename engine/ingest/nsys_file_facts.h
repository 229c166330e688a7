// What the reader of Nsight Systems exports (nsys_reader.h) keeps of one
// export between reading it and placing its GPU processes among every
// export's (the join): the facts the placement rule reads (host, CUDA device,
// environment, NCCL communicators) and what a process's record still needs
// once the run's ranks are known (its NCCL calls, to name its kernels' peers
// by global rank; its NCCL kernels' launches; its jobs' diagnostics, kept in
// rank order). An export is read wherever `analyze --mpi` shares it out;
// these facts travel with its FileResult (FileResult::placement, in the
// encoding below) to the rank that joins the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/run.h"

namespace pipescope {

/// NCCL's calls that are the kernel view's host calls: the point-to-point
/// ones, then the collectives.
inline constexpr std::string_view kNsysHostCalls[] = {
    "ncclSend",          "ncclRecv",      "ncclAllReduce", "ncclAllGather",
    "ncclReduceScatter", "ncclBroadcast", "ncclBcast",     "ncclReduce",
    "ncclAlltoAll",      "ncclGather",    "ncclScatter"};

/// One NCCL call that is a host call of the kernel view, with its payload's
/// fields.
struct NsysCallFacts {
  std::int64_t thread = 0;  // globalTid
  std::int64_t start = 0;   // absolute ns
  std::int64_t end = 0;
  std::uint8_t call = 0;  // its name: kNsysHostCalls[call]
  std::optional<std::uint64_t> comm;
  std::optional<std::int64_t> peer;
};

/// One GPU process of an export, as the join needs it.
struct NsysProcessFacts {
  int pid = 0;
  std::string host;
  int cuda_device = -1;
  std::optional<int> env_rank;
  std::optional<int> world_size;
  /// Its communicator memberships (communicator, ranks, its rank), in the
  /// order its NVTX rows give them.
  struct Member {
    std::uint64_t comm = 0;
    std::int64_t nranks = 0;
    std::int64_t rank = 0;
  };
  std::vector<Member> members;
  /// Its host calls, by thread (ascending), each thread's by start (ties in
  /// row order).
  std::vector<NsysCallFacts> calls;
  /// Its NCCL kernels' launches, in its RankKernels::comm order: the launch's
  /// time and thread (-1: no launch found).
  struct Launch {
    std::int64_t ts = 0;
    std::int64_t thread = -1;
  };
  std::vector<Launch> launches;
  /// What reading its jobs said (its first ReadOptions::diagnostics_per_file).
  std::vector<Diagnostic> diagnostics;
};

struct NsysFileFacts {
  /// A `.nsys-rep` report, not an export: skipped when its export is among
  /// the inputs, else refused (the join decides: it sees every input).
  bool report = false;
  /// Jobs timed by their host ranges (no kernel launched inside).
  std::uint64_t host_timed = 0;
  /// The file's GPU processes, in the order of its result's devices
  /// (`device`, then `more_devices`) and `kernels`.
  std::vector<NsysProcessFacts> processes;
};

/// The bytes of `facts` (model/byte_codec.h's encoding).
std::string encode_nsys_facts(const NsysFileFacts& facts);
/// What encode_nsys_facts wrote; WireError for bytes that are not that.
NsysFileFacts decode_nsys_facts(std::string_view bytes);

}  // namespace pipescope
