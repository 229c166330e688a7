// Which training steps an output covers: `--steps 10-20` for the traces,
// `--html-steps 3,5` for the HTML timeline. Parsed once against the run's
// step numbers so every exporter filters the same way.
//
//   StepSelection s = StepSelection::parse("10-20,25", metrics, "--steps");
//   if (s.contains(metrics.job_step[d][i])) ...   // by index into Metrics::steps
//
// A trace too big to open keeps a few steps by default (export/trace_size.h):
//   StepSelection::of(with_neighbours(metrics, median_and_slowest_steps(metrics)), metrics)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

/// The median-duration and the slowest complete step (indices into
/// metrics.steps, sorted; one when they are the same step): among every step
/// when none is complete, none when the run has no step. The median is the
/// lower middle of the windows sorted by length, the earlier of equal ones.
std::vector<std::size_t> median_and_slowest_steps(const Metrics& metrics);

/// `indices` (sorted) with the step before and the step after each, where
/// they are of the same launch segment: sorted and distinct, so ranges that
/// touch or overlap merge.
std::vector<std::size_t> with_neighbours(const Metrics& metrics,
                                         const std::vector<std::size_t>& indices);

/// `indices` (sorted, distinct) as parse_step_list reads them back:
/// consecutive steps as ranges, "9-11,41-43"; "SEG:FROM-TO" ("0:9-11") when
/// the run has several launch segments.
std::string step_list_text(const Metrics& metrics, const std::vector<std::size_t>& indices);

class StepSelection {
 public:
  /// Every step, and the jobs outside any step.
  StepSelection() = default;
  /// "" and "all" select everything; otherwise parse_step_list.
  static StepSelection parse(std::string_view spec, const Metrics& metrics, std::string_view flag);
  /// The steps of `indices` (into metrics.steps; each must be one).
  static StepSelection of(const std::vector<std::size_t>& indices, const Metrics& metrics);

  bool everything() const { return everything_; }
  /// The selected steps' indices, in order (empty when everything() is).
  std::vector<std::size_t> indices() const;
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
