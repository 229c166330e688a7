// Writes a simulated run as PyTorch profiler traces of a
// torch.distributed.pipelining schedule, one `rankR.pt.trace.json` per rank
// (DIR/machineK/ for several machines), in the shape torch.profiler's
// tensorboard_trace_handler writes: `distributedInfo.rank`, events with `ts`
// and `dur` in microseconds after `baseTimeNanoseconds`, a `ProfilerStep#N`
// span per step, and per job a CPU span `PP:<stage><op><mb>`
// (user_annotation) with, by turns, the GPU span over the job's exact
// interval (gpu_user_annotation), a kernel launched from inside the CPU span
// (cuda_runtime + kernel with one correlation id) and no GPU span, or a GPU
// span that does not cover the kernel (the kernel's interval is the job's).
// The optimizer step is an `Optimizer.step#SGD.step` annotation, which is no
// job. expected.json holds the figures of the jobs written (no optimizer),
// computed by expected_metrics.h, independently of the analysis.
//
// Usage:
//   TorchTraceOptions options;  options.dir = "out";
//   WriteReport report = write_torch_traces(config, options);  // throws on error
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <optional>

#include "model/option_words.h"
#include "simulate/log_writer.h"

namespace pipescope::sim {

struct TorchTraceOptions {
  std::filesystem::path dir;
  /// Replace the traces of a non-empty folder instead of refusing.
  bool force = false;
  /// N of the first `ProfilerStep#N` span (the first step's number).
  std::int64_t first_step = 0;
};

/// Simulates config and writes the traces, expected.json and simulation.json.
/// Throws std::invalid_argument for bad options (lr jobs, which PyTorch's
/// schedules do not have; a non-empty folder without force),
/// std::system_error (naming the file) for I/O failures, as model/errors.h
/// says system calls do.
WriteReport write_torch_traces(const SimConfig& config, const TorchTraceOptions& options);

/// Makes `dir` ready for a run's PyTorch traces: created when missing; when
/// not empty, refused (std::invalid_argument, in `words`:
/// simulate/output_folder.h) unless `force`, which removes the traces
/// (.sqlite exports too), expected.json, simulation.json and temporary files
/// a simulation wrote there (nothing else).
void prepare_trace_dir(const std::filesystem::path& dir, bool force, const OptionWords& words);

/// The `PP:` label of a job (without the prefix): "2F3", "0RECV_B1", ...
/// (global stage, op, micro-batch); empty for a job that has none (optimizer).
std::string torch_action_label(const SimJob& job, const ScheduleShape& shape, int stage);

/// ns as microseconds with three decimals ("12.345"), ns >= 0: the `ts` and
/// `dur` of the traces' events (both trace writers).
void append_us(fmt::memory_buffer& out, std::int64_t ns);

}  // namespace pipescope::sim
