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

#include "analysis/bubbles.h"
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
/// (PartRun::job_index): what a part receives with its jobs.
std::vector<std::vector<int>> part_lanes(const TraceLanes& lanes, const JobIndices& job_index);

/// What one step range's part of a trace is written from: what its owner
/// holds after the exchange (step_partition.h, PartRun), or the whole run.
struct TracePart {
  /// Its jobs: those of its steps, which it writes, and those it holds for
  /// their overlap (their bubbles' neighbours), which it only reads.
  const Run& run;
  /// Each job's step (PartRun::job_step, Metrics::job_step); a device the
  /// list does not cover has jobs of no step.
  const std::vector<std::vector<std::int32_t>>& job_step;
  /// Each job's index in the whole run's device (PartRun::job_index);
  /// null: `run` is the whole run.
  const JobIndices* job_index = nullptr;
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

// ---- A trace's size by parts (trace_size.h) --------------------------------
//
// The estimate is the frame's bytes (head and tail, whole-run facts: formatted
// whole, or their items sampled by position in the head) plus what each
// part's units add: their jobs, bubbles and flows, each section a sample
// summed over the parts and scaled once. Whether an item is in the sample
// depends on the whole run alone (a piece's whole-run position, a bubble's or
// an arrow's identity), never on the cut, so the parts of any cut add up to
// the single process's estimate exactly:
//
//   TraceBulkCounts counts = count_trace_bulk(frame, part, false);  // summed over parts
//   const TraceSampling sampling(frame, counts, sample);
//   TraceBulkBytes bytes = measure(frame, part, false, sampling, pieces_before);
//   total = frame_bytes + (bytes summed over the parts).total();

/// Jobs per piece of a body (TraceBody) in both writers: a piece's text
/// (about 200 bytes a job in JSON) stays well under a MiB, pieces are many
/// more than threads, and the estimate samples the same pieces in both.
inline constexpr std::size_t kTraceJobsPerPiece = 4096;

/// What the strides of a trace's sample are decided from: counted part by
/// part (count_trace_bulk) and summed into the whole run's.
struct TraceBulkCounts {
  /// The pieces that hold a job (TraceBody): the units', then the jobs of
  /// no step's; the whole-run position of a part's first one is the sum of
  /// the parts' before it.
  std::uint64_t pieces = 0;
  /// The dependency arrows drawn (TraceBody::for_each_flow).
  std::uint64_t flows = 0;
  /// The run's jobs, drawn or not: with the windows, a bound on the
  /// bubbles. count_trace_bulk leaves it 0; the caller adds its share (the
  /// run's job_count, or the jobs of the devices a rank read).
  std::uint64_t run_jobs = 0;

  void add(const TraceBulkCounts& other) {
    pieces += other.pieces;
    flows += other.flows;
    run_jobs += other.run_jobs;
  }
};

/// The counts of `part`'s units (or, `stepless`, of its jobs of no step).
TraceBulkCounts count_trace_bulk(const TraceFrame& frame, const TracePart& part, bool stepless);

/// Which of the bulk's items the estimate formats, from the whole run's
/// counts: every piece_stride-th piece with a job (from sample_start, by
/// whole-run position), and the bubbles and arrows whose identity hashes
/// to a multiple of their stride (trace_key_sampled), so that a part decides
/// alone. Strides of 1 (a run within the sample) take everything.
struct TraceSampling {
  TraceSampling() = default;
  TraceSampling(const TraceFrame& frame, const TraceBulkCounts& whole, TraceSampleSize sample);

  std::uint64_t piece_stride = 1;
  std::uint64_t bubble_stride = 1;
  std::uint64_t flow_stride = 1;
};

/// Whether the piece at whole-run position `index` is sampled.
bool trace_piece_sampled(std::uint64_t index, std::uint64_t stride);
/// Whether the item of identity `key` is sampled: its hash (so that no
/// periodic pattern of a schedule lines up with the stride) is a multiple
/// of `stride`; always for a stride of 1.
bool trace_key_sampled(std::uint64_t key, std::uint64_t stride);
/// A bubble's identity: its device, step, kind and times.
std::uint64_t trace_bubble_key(const Bubble& bubble);

/// One bulk section's sample: `bytes` of `sampled` items formatted, of
/// `count` in all. Summed over the parts, then scaled once (scaled_bytes).
struct SampledBytes {
  std::uint64_t bytes = 0;
  std::uint64_t sampled = 0;
  std::uint64_t count = 0;

  void add(const SampledBytes& other) {
    bytes += other.bytes;
    sampled += other.sampled;
    count += other.count;
  }
  std::uint64_t scaled() const;
};

/// What a part's units add to a trace: bytes formatted whole (a
/// trace.pftrace unit's opening packet) and the sampled sections.
struct TraceBulkBytes {
  std::uint64_t exact = 0;
  SampledBytes jobs;
  SampledBytes bubbles;
  SampledBytes flows;

  void add(const TraceBulkBytes& other) {
    exact += other.exact;
    jobs.add(other.jobs);
    bubbles.add(other.bubbles);
    flows.add(other.flows);
  }
  /// The bytes of the parts summed into this one.
  std::uint64_t total() const { return exact + jobs.scaled() + bubbles.scaled() + flows.scaled(); }
};

/// Calls `visit(body, piece)` for each piece of `body` that holds a job and
/// is sampled, its whole-run position counted from `first_piece`.
template <typename Visit>
void for_each_sampled_piece(const TraceBody& body, std::uint64_t first_piece, std::uint64_t stride,
                            Visit&& visit) {
  std::uint64_t index = first_piece;
  for (const TraceBody::Piece& piece : body.pieces()) {
    if (piece.jobs == 0) continue;
    if (trace_piece_sampled(index++, stride)) visit(piece);
  }
}

/// The bubbles of `part`'s selected steps, in its units' windows: how many,
/// and those trace_key_sampled keeps at `stride` (devices in order, then
/// step and time). The devices are walked on several threads.
struct TraceBubbleSample {
  std::vector<Bubble> bubbles;
  std::uint64_t count = 0;
};
TraceBubbleSample sample_part_bubbles(const TracePart& part, const Metrics& metrics,
                                      const StepSelection& selection, std::uint64_t stride);

/// How a trace format measures itself: the frame's bytes (head and tail;
/// its head items sampled by `sample`), and what a part's units add.
struct TraceMeasure {
  std::uint64_t (*frame)(const TraceFrame& frame, TraceSampleSize sample);
  TraceBulkBytes (*part)(const TraceFrame& frame, const TracePart& part, bool stepless,
                         const TraceSampling& sampling, std::uint64_t first_piece);
};

/// The single process's estimate: the whole run as one part, then its jobs
/// of no step (after it in the pieces' order).
std::uint64_t estimate_whole_trace(const Run& run, const Metrics& metrics,
                                   const TraceOptions& options, TraceSampleSize sample,
                                   const TraceMeasure& measure);

}  // namespace pipescope
