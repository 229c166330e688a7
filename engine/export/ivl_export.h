// Writes an analysed run as .ivl record files (records/ivl_format.h), one per
// device, in the layout discovery reads back: DIR/workerlog.R.ivl, or
// DIR/machineK/workerlog.R.ivl when the run has several machines. Each file
// is written to a temporary name and renamed when complete (io/atomic_output.h),
// so a failure never leaves a half file, and no file of a failed export stays.
// Records carry the step the metric contract assigns to each job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "model/run.h"

namespace pipescope {

struct IvlExportedFile {
  std::string input;   ///< the device's input path
  std::string output;  ///< the .ivl file written
  std::uint64_t jobs = 0;
};

struct IvlExport {
  std::vector<IvlExportedFile> files;
  std::uint64_t bytes = 0;  ///< written in all
};

/// Writes every device of `run` into `output_dir` (which must exist).
/// `producer` names the writer in each header. Throws std::system_error.
IvlExport write_ivl_records(const Run& run, const Metrics& metrics, const std::string& output_dir,
                            const std::string& producer);

}  // namespace pipescope
