// A trace written by step range, so that the ranks of a partitioned analysis
// (CONTRIBUTING.md, "Make a figure partitionable") each write the part of
// trace.json and trace.pftrace their steps' jobs make, joined by
// concatenation. Both traces are laid out as
//
//   head   processes, threads and tracks, the step windows, the bubble-ratio
//          counters and the log events: whole-run facts, small
//   body   one unit per selected step, in step order: its jobs (devices in
//          Run order, each device's in start order), its bubbles (devices in
//          order, then time) and its dependency arrows (consumers in device
//          then job order; in trace.pftrace they ride on the job slices). A
//          trace.pftrace unit starts with a packet that clears the interned
//          names and defines the ones the unit uses, so a unit reads alone
//   tail   the jobs of no step (a run the metrics do not number) as one more
//          unit, then the JSON trailer
//
// A unit depends on its step alone, so head + parts in step order + tail is
// the single process's trace byte for byte, whatever the cut
// (tests/export/trace_parts_test.cc). On each rank:
//
//   TraceLanes lanes = trace_lanes(run);              // where each device is read whole
//   TraceFrame frame(run, metrics, options, lanes.count, earliest);  // decided once
//   TracePart part{mine.run, mine.job_step, &mine.job_index, my_lanes, first, last, &my_deps};
//   write_chrome_trace_part(frame, part, file);       // chrome_trace.h; the owner of
//   write_perfetto_trace_part(frame, part, file);     // the first/last range adds head/tail
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "analysis/dependencies.h"
#include "analysis/metrics.h"
#include "analysis/step_events.h"
#include "analysis/step_selection.h"
#include "export/chrome_trace.h"
#include "export/trace_layout.h"
#include "model/run.h"

namespace pipescope {

/// Each job's lane on its device (trace_job_lanes), by device, and each
/// device's lane count. A pass along each device's jobs: computed where a
/// device's jobs are read whole, before the exchange, each lane then goes
/// with its job.
struct TraceLanes {
  std::vector<std::vector<int>> of_job;
  std::vector<int> count;
};
TraceLanes trace_lanes(const Run& run);

/// The lanes of a part's jobs, from the whole run's through `job_index`
/// (PartJobs::job_index): what a part receives with its jobs.
std::vector<std::vector<int>> part_lanes(const TraceLanes& lanes,
                                         const std::vector<std::vector<std::uint64_t>>& job_index);

/// What one step range's part of a trace is written from: what its owner
/// holds after the exchange (step_partition.h, PartJobs), or the whole run.
struct TracePart {
  /// Its jobs: those of its steps, which it writes, and those it holds for
  /// their overlap (their bubbles' neighbours), which it only reads.
  const Run& run;
  /// Each job's step (PartJobs::job_step, Metrics::job_step); a device the
  /// list does not cover has jobs of no step.
  const std::vector<std::vector<std::int32_t>>& job_step;
  /// Each job's index in the whole run's device (PartJobs::job_index);
  /// null: `run` is the whole run.
  const std::vector<std::vector<std::uint64_t>>* job_index = nullptr;
  /// Each job's lane (TraceLanes::of_job, part_lanes).
  const std::vector<std::vector<int>>& lanes;
  /// It owns steps [first_step, last_step) of Metrics::steps.
  std::size_t first_step = 0;
  std::size_t last_step = 0;
  /// With flows: the dependencies among its jobs (indices into `run`), at
  /// least those whose consumer is of its steps (find_dependencies over its
  /// jobs finds them: a dependency joins two jobs of one step); null: none.
  const Dependencies* dependencies = nullptr;
};

/// The whole run as the one part of a single process: every step, the
/// run's own jobs and (with flows) the pipeline analysis's dependencies.
TracePart whole_trace_part(const Run& run, const Metrics& metrics, const TraceOptions& options,
                           const TraceLanes& lanes);

/// The earliest start among the jobs of `part`'s steps that `selection`
/// keeps; the minimum over the parts is TraceFrame's `earliest_job_ns`.
std::optional<std::int64_t> part_earliest_start(const TracePart& part,
                                                const StepSelection& selection);

/// The whole-run facts every part of a trace is written with, small and
/// decided once: which steps, the tracks, time zero, the log events drawn.
class TraceFrame {
 public:
  /// `run`: every device (index, machine, path) with the log events to draw;
  /// its jobs are not read. `metrics`: every step's window (its job_step is
  /// not read). `lane_counts`: TraceLanes::count. `earliest_job_ns`: the
  /// earliest start of a selected job (earliest_selected_start over the
  /// whole run, or the minimum of part_earliest_start). The references must
  /// outlive the frame.
  TraceFrame(const Run& run, const Metrics& metrics, const TraceOptions& options,
             const std::vector<int>& lane_counts, std::optional<std::int64_t> earliest_job_ns);

  const Run& run() const { return run_; }
  const Metrics& metrics() const { return metrics_; }
  const TraceOptions& options() const { return options_; }
  const TraceLayout& layout() const { return layout_; }
  /// The log events drawn (trace_log_events).
  const std::vector<EventRef>& events() const { return events_; }
  /// The earliest time drawn (trace_origin): time zero of a relative trace;
  /// 0 when nothing is drawn.
  std::int64_t first_ns() const { return first_ns_; }

  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }
  /// Whether the traces draw bubbles and the bubble-ratio counters; flows.
  bool bubbles() const { return options_.pipeline != nullptr; }
  bool flows() const { return options_.pipeline != nullptr && options_.flows; }

 private:
  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  TraceLayout layout_;
  std::vector<EventRef> events_;
  std::int64_t first_ns_ = 0;
};

/// The id of the arrow into `consumer` (a job of `part`): unique in the
/// whole run whatever the cut, since a job has at most one producer:
/// device × 2^32 + the job's whole-run index + 1.
std::uint64_t trace_flow_id(const TracePart& part, JobRef consumer);

/// The body of a part cut into pieces for the parallel writer
/// (ordered_writer.h): each selected step of the part is a unit (or, for
/// the tail, the jobs of no step are the one unit), and each unit's devices
/// are grouped so a piece holds about `jobs_per_piece` jobs. Every unit has
/// at least one piece.
class TraceBody {
 public:
  struct Piece {
    std::size_t unit = 0;
    std::size_t device_begin = 0;
    std::size_t device_end = 0;
    bool first_of_unit = false;
    bool last_of_unit = false;
    /// Of a single device's range, only indices [job_begin, job_end): a
    /// device with more than jobs_per_piece jobs in a unit is cut.
    std::size_t job_begin = 0;
    std::size_t job_end = SIZE_MAX;
    std::uint64_t jobs = 0;  // the unit's jobs in the piece
  };

  /// `stepless`: the one unit of the jobs of no step (none when there are
  /// no such jobs); otherwise the part's steps that `selection` keeps.
  TraceBody(const TracePart& part, const StepSelection& selection, bool stepless,
            std::size_t jobs_per_piece);

  const TracePart& part() const { return part_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  std::size_t units() const { return steps_.size(); }
  /// The step of unit u (an index into Metrics::steps), -1 for no step.
  std::int64_t step(std::size_t unit) const { return steps_[unit]; }
  /// Job i of device d's step (-1: none).
  std::int32_t job_step(std::size_t d, std::size_t i) const {
    return covered_[d] ? part_.job_step[d][i] : -1;
  }
  /// Indices [begin, end) of device d's jobs that hold every job of unit u
  /// (others may lie between: check job_step).
  std::size_t begin(const Piece& piece, std::size_t d) const {
    return std::max(begin(piece.unit, d), piece.job_begin);
  }
  std::size_t end(const Piece& piece, std::size_t d) const {
    return std::min(end(piece.unit, d), piece.job_end);
  }
  std::size_t begin(std::size_t unit, std::size_t d) const {
    return ranges_[unit * devices_ + d].first;
  }
  std::size_t end(std::size_t unit, std::size_t d) const {
    return ranges_[unit * devices_ + d].second;
  }

  /// Calls f(dep) for each dependency drawn in unit u: its consumer is one of
  /// the unit's jobs and its producer of a selected step; consumers in device
  /// then job order. Indices into part().run.
  template <typename F>
  void for_each_flow(std::size_t unit, const StepSelection& selection, F&& f) const {
    const Dependencies* deps = part_.dependencies;
    if (deps == nullptr) return;
    for (std::size_t d = 0; d < devices_; ++d) {
      deps->for_each_in(d, begin(unit, d), end(unit, d), [&](const Dependency& dep) {
        if (job_step(dep.consumer.device, dep.consumer.job) != steps_[unit]) return;
        if (!selection.contains(job_step(dep.producer.device, dep.producer.job))) return;
        f(dep);
      });
    }
  }

 private:
  const TracePart& part_;
  std::size_t devices_ = 0;
  std::vector<bool> covered_;
  std::vector<std::int64_t> steps_;
  std::vector<std::pair<std::size_t, std::size_t>> ranges_;  // [unit * devices + d]
  std::vector<Piece> pieces_;
};

}  // namespace pipescope
