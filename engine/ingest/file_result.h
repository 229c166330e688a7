// What one reader made of one input file: the unit every reader produces and
// the one merge (run_merge.h) consumes, whatever the file's format. Type ids
// in `device.jobs` index the file's own `types`, so readers never share state
// and the merge alone decides the run's ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ingest/discovery.h"
#include "model/gpu_activity.h"
#include "model/run.h"

namespace pipescope {

struct FileResult {
  /// The file's place (from discovery) and its jobs in file order.
  Device device;
  /// Job type names used by `device.jobs` (the file's own ids).
  TypeTable types;
  InputStats stats;
  /// The first few problems of the file, in file order.
  std::vector<Diagnostic> diagnostics;
  /// `Schedule Profiler start at step N` or the record header's first step.
  std::optional<std::int64_t> first_step;
  /// False when none of the file's jobs is analysed (Paddle dygraph records
  /// of another pipeline): the merge keeps the file's stats, adds no device.
  bool has_device = true;
  /// Further devices read from the same file, merged after `device`: a file
  /// of several ranks (input_formats.h, FileRanks::several), or Paddle's
  /// pipeline_profile.json, which concatenates every rank's records.
  std::vector<Device> more_devices;
  /// Run::time_resolution_ns of this file's times (0: as fine as logged).
  std::int64_t time_resolution_ns = 0;
  /// Findings about the inputs as a whole (the merge keeps them in order).
  std::vector<Warning> notes;
  /// The GPU activities of each rank the file holds, for the kernel view
  /// (with or without jobs; a PyTorch trace: one rank): the merge moves them
  /// to Run::kernels, in this order.
  std::vector<RankKernels> kernels;
  /// A format whose ranks are placed over every file at once
  /// (InputFormatSpec::join): what its join needs of this file, in the
  /// format's own encoding, as bytes, so that it travels with the result
  /// (`analyze --mpi` reads files apart and joins them on rank 0). Empty once
  /// joined, and for every other format.
  std::string placement;
};

/// An empty result for `input`: its device placed where discovery put it,
/// its stats named after its path. Every reader starts from this.
inline FileResult empty_result_for(const InputFile& input) {
  FileResult result;
  result.device.index = input.device;
  result.device.machine = input.machine;
  result.device.machine_name = input.machine_name;
  result.device.rank = input.rank;
  result.device.path = input.path;
  result.stats.path = input.path;
  return result;
}

}  // namespace pipescope
