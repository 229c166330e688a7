// Streams worker logs into the interval model: files are read in chunks by
// one serial stage, chunks are scanned in parallel, and a serial in-order
// stage turns chunk results into jobs with exact file line numbers. At most
// a fixed number of chunks is in flight, so memory depends on the number of
// jobs found, never on the size of the files.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/run.h"
#include "source/discovery.h"
#include "source/line_chunker.h"

namespace pipescope {

struct ScanProgress {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;  ///< sum of the file sizes at discovery
  std::size_t files_done = 0;
  std::size_t files_total = 0;
};

struct ScanOptions {
  /// Worker threads; 0 means one per core.
  unsigned threads = 0;
  ReadLimits limits;
  /// Diagnostics kept per input file (the counts are always complete).
  std::size_t diagnostics_per_file = 5;
  /// Called from the ordered stage after each chunk (keep it cheap).
  std::function<void(const ScanProgress&)> on_progress;
};

/// Reads `inputs` (from discover_inputs) into a Run with one Device per input,
/// in input order. A file that cannot be opened or read is recorded in its
/// InputStats::error and in the diagnostics; the other files are still read.
/// The returned Run is finalized (jobs sorted by start).
Run scan_worker_logs(const std::vector<InputFile>& inputs, const ScanOptions& options);

}  // namespace pipescope
