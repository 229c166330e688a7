// The metric contract (metrics.h) in parts, so that the figures of a range of
// steps can be computed where only that range's jobs are (the partitioned
// analysis, docs/guide.md "Partitioned analysis"). compute_metrics is these
// parts in one process, in this order:
//
//   1. number_steps: every device numbers its own steps (it needs its own
//      jobs and the run's launch segments, nothing of another device); then
//      the devices' steps are lined up by time (a device whose input begins
//      mid-run takes the number of the window its first step starts in, from
//      the first step and last end of each of every device's steps), and
//      each segment counts the steps up to its last device's last.
//   2. device_step_edges, then StepEdges::combine over the devices: the first
//      start and last end of every step (min and max: any order gives the
//      same edges).
//   3. place_windows, then mark_complete_steps: the windows from the edges,
//      and which steps are complete. The rule needs, besides the windows and
//      how many steps each device began, the job counts per kind of two steps
//      of a segment whose last step it must judge by counts (a callback: the
//      owner of those steps answers).
//   4. add_window_times: busy, idle and comm of a range of windows from the
//      jobs that overlap them. Guarantee: any subset of a device's jobs that
//      holds every job overlapping a window gives that window the same
//      figures as all the device's jobs.
//   5. add_totals: per-step ratios, the totals over the complete steps and
//      the ratios of the run. Integer sums, so the order of the parts does
//      not matter; the ratios are one division each.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/step_rule.h"
#include "model/run.h"

namespace pipescope {

/// Jobs of each kind one device ran in one step, by JobKind.
using KindCounts = std::array<std::int64_t, 6>;

/// What step numbering found besides Metrics::job_step and the segments.
struct StepCounts {
  /// begun[s][d]: the steps device d began in segment s before its input's
  /// cut (all of them when not cut), counted from the segment's first step
  /// (its lead included); 0 for a device without a job there.
  std::vector<std::vector<std::int64_t>> begun;
  /// The number of steps of the run (all segments).
  std::size_t steps = 0;
};

/// Step 1 for one device: each job's step within its segment, in its own
/// numbering (from 0, in `job_step`, one entry per job) and, per segment,
/// the steps it has and when each ran.
struct DeviceStepCounts {
  std::vector<std::int64_t> steps;  ///< [segment]: steps numbered there
  std::vector<std::int64_t> begun;  ///< [segment]: as StepCounts::begun, before the lead
  std::vector<char> present;        ///< [segment]: the device has a job there
  /// [segment]: 1 when the device's first step there is the tail of a step
  /// that began before its input: its first forward, backward, optimizer or
  /// lr job is neither an lr job nor a forward of micro-batch 0.
  std::vector<char> begins_inside;
  /// Each step's first job start and last job end, segment after segment
  /// (steps[s] entries for segment s), in the device's own numbering.
  std::vector<std::int64_t> first_start;
  std::vector<std::int64_t> last_end;
};
DeviceStepCounts number_device_steps(const Device& device, const TypeKinds& kinds,
                                     std::size_t segments, std::span<std::int32_t> job_step);

/// Step 1, the run: lines the devices' steps up by time, then
/// metrics.segments (index, first_step, first, count, devices, lead,
/// first_whole) and metrics.devices[d].steps from every device's counts
/// (`devices[d]`: device d's, empty for a device without a job). Guarantee:
/// the same counts give the same numbering on every process.
StepCounts combine_device_steps(const Run& run, std::span<const DeviceStepCounts> devices,
                                Metrics& metrics);

/// Step 1, back on device `d` (its position in Run::devices): its own step
/// numbers made indices into Metrics::steps (each segment's `first` and the
/// device's lead there added).
void offset_device_steps(const Device& device, std::size_t d,
                         const std::vector<SegmentSteps>& segments,
                         std::span<std::int32_t> job_step);

/// Device `d`'s lead in `segment` (SegmentSteps::lead; 0 when it has no job
/// there).
std::int64_t segment_lead(const SegmentSteps& segment, std::size_t d);

/// Step 1 in one process (the three above): fills metrics.job_step, metrics.segments (index,
/// first_step, first, count, devices) and metrics.devices[d].steps. Requires run.finalize().
StepCounts number_steps(const Run& run, const TypeKinds& kinds, Metrics& metrics);

/// Every step's first job start and last job end over some devices.
struct StepEdges {
  explicit StepEdges(std::size_t steps = 0);

  std::vector<std::int64_t> first_start;  ///< INT64_MAX where no job
  std::vector<std::int64_t> last_end;     ///< INT64_MIN where no job
  std::vector<char> has_job;

  void add(std::size_t step, const Job& job);
  /// Takes the other devices' edges in (same number of steps).
  void combine(const StepEdges& other);
};

/// Step 2, one device: its jobs' edges. `job_step[i]` is jobs[i]'s step.
StepEdges device_step_edges(const Device& device, std::span<const std::int32_t> job_step,
                            std::size_t steps);

/// Step 3a: metrics.steps (numbers, segments, windows) from the combined
/// edges, and each segment's start and end. `metrics.steps` gets one entry
/// per step with one DeviceStepTime per device (all zero).
void place_windows(const StepEdges& edges, std::size_t devices, Metrics& metrics);

/// Job counts per kind of `device` (position in Run::devices) in `step`
/// (index into Metrics::steps).
using KindCountsOf = std::function<KindCounts(std::size_t device, std::size_t step)>;

/// Step 3b: StepWindow::complete of every step and SegmentSteps::complete
/// (a step before a device's SegmentSteps::first_whole is not complete).
/// `cut_ns[d]` is Run::devices[d].cut_ns; `counts` is asked only about the
/// last step of a segment and the complete step before it.
void mark_complete_steps(const StepCounts& counts, std::span<const std::int64_t> cut_ns,
                         const KindCountsOf& kind_counts, Metrics& metrics);

/// Device `d`'s job counts per kind in `step`, from jobs in Run order and
/// their steps.
KindCounts step_kind_counts(const Device& device, std::span<const std::int32_t> job_step,
                            std::size_t step, const TypeKinds& kinds);

/// Step 4: adds busy and comm of `devices[d]` to device d's entry of each of
/// `windows` (sorted, as Metrics::steps; any contiguous range of them), then
/// sets idle. `devices` may hold only some of each device's jobs (in start
/// order): see the guarantee above.
void add_window_times(std::span<const Device> devices, const TypeKinds& kinds,
                      std::span<StepWindow> windows);

/// Step 5 in parts: what a range of windows adds to the run's totals
/// (integer sums, so ranges add in any order).
struct WindowSums {
  explicit WindowSums(std::size_t devices = 0);
  /// busy_ns, idle_ns, comm_ns per device over the complete windows.
  std::vector<DeviceTotals> device;
  std::int64_t window_ns = 0;  ///< Σ window lengths of the complete ones
  std::int64_t idle_ns = 0;    ///< Σ_d idle of the complete ones
  std::int64_t comm_ns = 0;
  std::size_t incomplete = 0;
  void add(const WindowSums& other);
};
/// Sets each window's bubble_ratio and returns the range's sums.
WindowSums sum_windows(std::span<StepWindow> windows, std::size_t devices);
/// The run's totals and ratios from the sums of all its windows.
void finish_totals(const WindowSums& sums, Metrics& metrics);

/// Step 5: per-step bubble ratios, incomplete_steps, devices' totals and
/// utilization, total_window_ns, comm_ns and bubble_ratio.
void add_totals(Metrics& metrics);

}  // namespace pipescope
