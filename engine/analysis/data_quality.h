// Checks of the input that make other figures doubtful; each finding is a
// warning (summary.json "warnings", and stderr), never an error. The codes and
// what each means: model/warning.h (overlap, nonpositive_length,
// missing_steps, job_count_mismatch, incomplete_steps, no_complete_step,
// short_step, time_outlier).
//
// Usage:
//   for (const Warning& w : check_data_quality(run, metrics, stages)) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"
#include "model/warning.h"

namespace pipescope {

std::vector<Warning> check_data_quality(const Run& run, const Metrics& metrics,
                                        const StageMap& stages);

}  // namespace pipescope
