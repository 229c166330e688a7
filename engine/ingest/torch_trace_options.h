// What the reader of PyTorch profiler traces (torch_trace_reader.h) is told
// beyond every reader's options (read_options.h) and the pipeline choice
// (pipeline_choice.h).
#pragma once

#include <cstddef>
#include <memory>

namespace pipescope {

class JobPattern;

struct TorchTraceOptions {
  /// Chrome-trace JSON: user-annotation names to jobs instead of PyTorch
  /// pipelining's `PP:` labels (job_pattern.h), compiled once by the caller
  /// and shared by every file's reader; null: the `PP:` labels. Nsight
  /// Systems exports take it too, for their NVTX ranges (nsys_reader.h).
  std::shared_ptr<const JobPattern> job_pattern;
  /// PyTorch traces whose spans come after the launches they hold: the
  /// most bytes of joined kernels (24 each) held until the end of the file;
  /// past it, the trace's kernels are read a second time
  /// (torch_trace_file_reader.h).
  std::size_t trace_held_bytes = std::size_t{64} << 20;
};

}  // namespace pipescope
