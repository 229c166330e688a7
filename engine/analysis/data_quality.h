// Checks of the input that make other figures doubtful; each finding is a
// warning (summary.json "warnings", and stderr), never an error:
//   overlap            jobs that start before an earlier job of the same
//                      device ended (busy time counts them once)
//   nonpositive_length jobs whose end is not after their start (never busy)
//   missing_steps      a device with fewer steps than there are step windows
//                      (a log that ends early, or a device without jobs)
//   job_count_mismatch a step in which the devices of one stage ran
//                      different numbers of jobs
//   incomplete_steps   steps that are not complete (metrics.h): listed, with
//                      why the first one is, and left out of every total
//   no_complete_step   no step is complete: the totals cover nothing
//   short_step         a complete step in which a device ran fewer forward,
//                      backward and optimizer jobs than its stage peers (the
//                      median of the other devices of its stage), or, alone in
//                      its stage, than its own median complete step
//   time_outlier       jobs starting far from the others: more than ten times
//                      the span of the middle half of all starts (at least
//                      10 s) before or after that middle half; a bad clock
//                      or a stray line
//
// Usage:
//   for (const QualityWarning& w : check_data_quality(run, metrics, stages)) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

struct QualityWarning {
  /// One of the codes above (or a code added by analyze_pipeline).
  std::string code;
  /// One line for a person, e.g. "device 3: 2 of 3 steps (its log ends early?)".
  std::string message;
  /// The global device index concerned, or -1.
  int device = -1;
  /// The stage concerned, or -1.
  int stage = -1;
  /// How many jobs/steps the finding covers.
  std::uint64_t count = 0;
};

std::vector<QualityWarning> check_data_quality(const Run& run, const Metrics& metrics,
                                               const StageMap& stages);

}  // namespace pipescope
