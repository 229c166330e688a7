// Which training steps an output covers: `--steps 10-20` for the traces,
// `--html-steps 3,5` for the HTML timeline. Parsed once against the run's
// step numbers so every exporter filters the same way.
//
//   StepSelection s = StepSelection::parse("10-20,25", metrics, "--steps");
//   if (s.contains(metrics.job_step[d][i])) ...   // by index into Metrics::steps
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/metrics.h"

namespace pipescope {

/// Parses a list of step numbers and ranges ("7", "10-20", "3,5,7-9"; spaces
/// allowed) into sorted, distinct indices into metrics.steps. Where launch
/// segments repeat step numbers, "SEG:STEP" and "SEG:FROM-TO" ("1:12",
/// "0:10-12") name steps of one segment (by its index), and a plain number
/// means the last segment that has it. Throws
/// std::invalid_argument, naming `flag`, for a malformed item, an empty range
/// or a step the run does not have.
std::vector<std::size_t> parse_step_list(std::string_view spec, const Metrics& metrics,
                                         std::string_view flag);

class StepSelection {
 public:
  /// Every step, and the jobs outside any step.
  StepSelection() = default;
  /// "" selects everything; otherwise parse_step_list.
  static StepSelection parse(std::string_view spec, const Metrics& metrics, std::string_view flag);

  bool everything() const { return everything_; }
  /// Whether the step of index `step_index` (Metrics::job_step's value; -1 =
  /// no step) is selected.
  bool contains(std::int64_t step_index) const {
    if (everything_) return true;
    return step_index >= 0 && static_cast<std::size_t>(step_index) < chosen_.size() &&
           chosen_[static_cast<std::size_t>(step_index)];
  }
  /// Time range covered by the selected steps' windows, [start, end); the
  /// whole int64 range when everything is selected.
  std::int64_t start_ns() const { return start_ns_; }
  std::int64_t end_ns() const { return end_ns_; }

 private:
  bool everything_ = true;
  std::vector<bool> chosen_;  // by step index
  std::int64_t start_ns_ = INT64_MIN;
  std::int64_t end_ns_ = INT64_MAX;
};

}  // namespace pipescope
