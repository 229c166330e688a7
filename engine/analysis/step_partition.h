// Cutting a run's steps into contiguous ranges ("parts"), each analysed where
// its jobs are: the plan of the partitioned analysis (CONTRIBUTING.md, "Make
// a figure partitionable"). Part p owns steps [bounds[p], bounds[p+1]) of
// Metrics::steps, across every device, and holds (part_job_indices):
//   - every job of those steps;
//   - on each device, every job between its first and last job of those
//     steps (a step's prologue moves an lr or recv job into the next step
//     ahead of the previous step's last jobs: walks along a device's jobs
//     must see the same neighbours as in the whole run);
//   - every job that overlaps the part's span of time, or starts in it (a
//     device already in step k+1 while another one still runs step k: its
//     early jobs count in window k); windows are ordered and disjoint
//     (S_k >= E_{k-1}), so a part's windows lie in one span and a job
//     reaches a contiguous run of parts;
//   - each device's span_neighbours (the jobs its edge bubbles name).
//
//   StepPartition plan = partition_steps(jobs_per_step, metrics.steps, ranks);
//   plan.for_each_recipient(job, step, [&](std::size_t part) { send(job, part); });
//   PartRun mine = cut_part(run, kinds, metrics.job_step, plan, rank);   // in one process
//   add_window_times(mine.run.devices, kinds, plan.windows(metrics.steps, rank));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/step_rule.h"
#include "model/run.h"

namespace pipescope {

struct StepPartition {
  /// Part p owns steps [bounds[p], bounds[p + 1]); bounds.front() is 0 and
  /// bounds.back() the number of steps. A part may own no step.
  std::vector<std::size_t> bounds;
  /// Part p's windows span [span_start[p], span_end[p]): its first window's
  /// start to its last window's end (equal for a part without steps).
  std::vector<std::int64_t> span_start;
  std::vector<std::int64_t> span_end;

  std::size_t parts() const { return bounds.empty() ? 0 : bounds.size() - 1; }

  /// Widens each part's span to hold its steps' windows in `other`, the
  /// windows of another set of devices over the same steps (a replica's,
  /// which may begin a step before the whole run's window does: its devices
  /// finished the step before while another replica had not).
  void widen(std::span<const StepWindow> other);
  /// The part that owns `step` (an index into Metrics::steps).
  std::size_t owner(std::size_t step) const;
  /// Part p's windows in `steps` (Metrics::steps).
  std::span<StepWindow> windows(std::vector<StepWindow>& steps, std::size_t part) const;

  /// Calls f(part) once for each part that needs a job of `step` running
  /// over [start_ns, end_ns) for its time: its owner first, then, in
  /// ascending order, every other part whose span the job overlaps or starts
  /// in. (The other rules of the header need the device's jobs:
  /// part_job_indices.)
  template <typename F>
  void for_each_recipient(std::int64_t start_ns, std::int64_t end_ns, std::size_t step,
                          F&& f) const {
    const std::size_t own = owner(step);
    f(own);
    // A job of no length still has a place in time: the span it starts in.
    const std::int64_t end = std::max(end_ns, start_ns + 1);
    for (std::size_t p = first_overlapping(start_ns); p < parts(); ++p) {
      if (span_end[p] == span_start[p]) continue;  // no step: no window to hold jobs for
      if (span_start[p] >= end) break;             // starts only grow
      if (p != own && span_end[p] > start_ns) f(p);
    }
  }

 private:
  /// The first part whose span ends after `t`.
  std::size_t first_overlapping(std::int64_t t) const;
};

/// Contiguous ranges over the windows `steps` (placed: metric_parts.h), as
/// even in jobs as whole steps allow: part p's range ends at the first step
/// where the jobs so far reach p/parts of all (`jobs_per_step[k]`: step k's
/// jobs over every device). `parts` >= 1.
StepPartition partition_steps(std::span<const std::uint64_t> jobs_per_step,
                              std::span<const StepWindow> steps, std::size_t parts);

/// The jobs of `device` (in start order, all of them) just outside part
/// p's span that its bubbles name (bubbles.h: the job before a fill bubble
/// may have ended before the part's first window, the one after a drain
/// bubble start after its last): the first busy job (not comm, not of zero
/// length) reaching the latest end at or before the span's start, and the
/// first busy job starting at or after its end. SIZE_MAX where none.
std::pair<std::size_t, std::size_t> span_neighbours(const Device& device, const TypeKinds& kinds,
                                                    const StepPartition& plan, std::size_t part);

/// The indices of the jobs of `device` (all of them, in start order, steps
/// in `job_step`) that part `part` holds, ascending (the rules of the header).
std::vector<std::size_t> part_job_indices(const Device& device,
                                          std::span<const std::int32_t> job_step,
                                          const TypeKinds& kinds, const StepPartition& plan,
                                          std::size_t part);

/// part_job_indices for every part at once, in one pass over the device's
/// jobs: element p is part p's list. What a rank that read the device sends.
std::vector<std::vector<std::size_t>> device_part_indices(const Device& device,
                                                          std::span<const std::int32_t> job_step,
                                                          const TypeKinds& kinds,
                                                          const StepPartition& plan);

/// What part p holds of a run: a Run with every device (same order, index,
/// machine, rank, path and cut; no events or step-start lines) holding the
/// jobs the part needs, in start order (for_each_recipient's and the
/// span_neighbours), the same job types, segments and first step; and each
/// job's step. The run's analyses can read it: what they find for the steps
/// the part owns is what they find for them in the whole run (each figure's
/// header says whether it keeps that guarantee).
struct PartRun {
  Run run;
  std::vector<std::vector<std::int32_t>> job_step;
  /// job_index[d][i]: the index of run.devices[d].jobs[i] in the whole
  /// run's device d.
  JobIndices job_index;
  /// Of those jobs, the ones of steps it owns (the others were sent to it
  /// for their overlap only).
  std::uint64_t owned_jobs = 0;

  /// Device d's first job in the whole run (index 0), where this part holds
  /// it; null otherwise.
  const Job* first_job(std::size_t d) const {
    if (d >= job_index.size() || job_index[d].empty() || job_index[d].front() != 0) return nullptr;
    return &run.devices[d].jobs.front();
  }
};

/// A part's Run before its jobs arrive: the run's types, segments, first
/// step and time resolution, every device's place (index, machine, rank,
/// path, cut), no job.
PartRun empty_part(const Run& run);

/// Part `part` of `run` as the exchange would deliver it, in one process:
/// the model the partitioned analysis's tests compare with the whole run.
PartRun cut_part(const Run& run, const TypeKinds& kinds,
                 const std::vector<std::vector<std::int32_t>>& job_step, const StepPartition& plan,
                 std::size_t part);

/// The jobs of steps [0, steps) of every device (Run order kept), as a
/// part holds them: what whole-run decisions that read only a run's head
/// (the layout: layout.h kLayoutSteps) are taken from.
PartRun head_part(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                  std::int32_t steps);

}  // namespace pipescope
