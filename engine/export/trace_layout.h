// Where a run goes in a trace: the processes, threads (tracks) and lanes both
// trace exporters (chrome_trace, perfetto_trace) use, with their ids, sort
// indices and names, so that the two exports line up track for track.
//
//   pid 1            "Steps" (sorted first), thread tid 1 "Steps": the step
//                    windows and the bubble-ratio counters
//   pid machine+2    one per machine, named after its first device's machine
//                    folder, or "Machine <ordinal>"
//   per device       its job lanes "GPU <device> (machine <ordinal>)", then
//                    "... · overlap <lane>" for jobs that overlap on the
//                    device, then (with bubble lanes) "... · bubbles"
// pid 0 is avoided: trace viewers treat it as the kernel's swapper process.
// Trace viewers drop or mis-nest slices that overlap without nesting on one
// track, so jobs that overlap on one device are spread over extra lanes.
//
// A job's lane depends on the device's earlier jobs only (trace_job_lanes, a
// pass along one device), so a trace written by step range takes each job's
// lane from where the device's jobs were read whole, and the head needs only
// each device's lane count (export/trace_parts.h).
//
// Usage:
//   TraceLayout layout(run, /*bubble_lanes=*/true);
//   for (const TraceThread& t : layout.threads()) ...   // declare every lane
//   const TraceThread& lane = layout.thread(layout.job_lane(d, i));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/bubbles.h"
#include "model/run.h"

namespace pipescope {

struct TraceProcess {
  std::int64_t pid = 0;
  std::int64_t sort_index = 0;
  std::string name;
  /// The first thread of the process (Chrome metadata events carry a tid).
  std::int64_t first_tid = 0;
};

struct TraceThread {
  std::int64_t pid = 0;
  /// Unique in the whole trace, not only in its process.
  std::int64_t tid = 0;
  std::int64_t sort_index = 0;
  std::string name;
};

/// Each job's lane (in JobVector order): the lowest lane whose previous job
/// has ended by the job's start, so a lane never holds two overlapping jobs.
/// `lane_count` receives the number of lanes used (at least 1).
std::vector<int> trace_job_lanes(const JobVector& jobs, int& lane_count);

class TraceLayout {
 public:
  /// `bubble_lanes`: one lane after each device's job lanes for its bubbles.
  TraceLayout(const Run& run, bool bubble_lanes);
  /// The processes and threads alone, from each device's lane count
  /// (trace_job_lanes): the jobs of `run` are not read, and job_lane() is
  /// not available.
  TraceLayout(const Run& run, const std::vector<int>& lane_counts, bool bubble_lanes);

  /// The "Steps" process and its one thread.
  static TraceProcess steps_process();
  static TraceThread steps_thread();

  /// One process per machine, by machine ordinal.
  const std::vector<TraceProcess>& machines() const { return machines_; }

  /// Every device lane: devices in Run order, each with its job lanes then
  /// its bubble lane.
  const std::vector<TraceThread>& threads() const { return threads_; }
  const TraceThread& thread(std::size_t index) const { return threads_[index]; }

  /// Index into threads() of the lane that holds device d's i-th job.
  std::size_t job_lane(std::size_t d, std::size_t i) const {
    return first_lane_[d] + static_cast<std::size_t>(lanes_[d][i]);
  }
  /// Each job's lane on its device (trace_job_lanes), by device; empty when
  /// built from lane counts.
  const std::vector<std::vector<int>>& job_lanes() const { return lanes_; }
  /// Each device's number of job lanes.
  const std::vector<int>& lane_counts() const { return lane_counts_; }

  /// Index into threads() of device d's first lane (its jobs' lane 0): the
  /// track of its log events.
  std::size_t device_lane(std::size_t d) const { return first_lane_[d]; }
  /// Index into threads() of device d's bubble lane (with bubble lanes only).
  std::size_t bubble_lane(std::size_t d) const { return first_lane_[d + 1] - 1; }

  /// "bubble ratio": the counter of each step's idle share by bubble kind.
  static constexpr std::string_view kBubbleRatioName = "bubble ratio";
  /// "bubble ratio · fill": a counter track of one kind's share.
  static std::string bubble_ratio_track_name(BubbleKind kind);

 private:
  void declare(const Run& run, const std::vector<int>& lane_counts, bool bubble_lanes);

  /// Per device: each job's lane (in JobVector order).
  std::vector<std::vector<int>> lanes_;
  /// Per device, plus one past the last: the index of its first lane in threads_.
  std::vector<std::size_t> first_lane_;
  std::vector<int> lane_counts_;
  std::vector<TraceProcess> machines_;
  std::vector<TraceThread> threads_;
};

}  // namespace pipescope
