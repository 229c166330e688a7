#include "distributed/partitioned_traces.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_kind.h"
#include "analysis/pipeline.h"
#include "analysis/step_partition.h"
#include "distributed/wire.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/perfetto_trace.h"
#include "export/trace_content.h"
#include "export/trace_layout.h"
#include "export/trace_parts.h"

namespace pipescope::distributed {

namespace {

/// The devices this rank read, as analyze_partitioned tells them.
std::vector<std::size_t> read_devices(const PartitionedAnalysis& a, int rank) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < a.read.reader.size(); ++d) {
    if (a.read.mine(d, rank)) out.push_back(d);
  }
  return out;
}

// ---- 1. lanes -----------------------------------------------------------------

struct PartLanes {
  /// The lane of each job of the part (PartRun' order), by device.
  std::vector<std::vector<int>> of_job;
  /// The lane count of each device this rank read; 1 elsewhere (a device
  /// without jobs has its one lane).
  std::vector<int> count;
};

/// Each job's lane, computed where its device was read whole and sent with
/// the job (PartitionedAnalysis::part_lanes, those not on lane 0).
PartLanes part_job_lanes(const PartitionedAnalysis& a) {
  PartLanes out;
  out.count = a.read.lane_count;
  out.of_job.resize(a.part.run.devices.size());
  for (std::size_t d = 0; d < a.part.run.devices.size(); ++d) {
    out.of_job[d].assign(a.part.run.devices[d].jobs.size(), 0);
    if (d >= a.part_lanes.size()) continue;
    for (const JobLane& lane : a.part_lanes[d]) {
      if (lane.position >= out.of_job[d].size()) throw WireError("a lane of a job the part lacks");
      out.of_job[d][lane.position] = lane.lane;
    }
  }
  return out;
}

// ---- 2. the frame's facts ---------------------------------------------------------

void put_optional(ByteWriter& w, const std::optional<std::int64_t>& value) {
  w.put(static_cast<std::uint8_t>(value ? 1 : 0));
  w.put(value.value_or(0));
}

std::optional<std::int64_t> get_optional(ByteReader& r) {
  const bool has = r.get<std::uint8_t>() != 0;
  const auto value = r.get<std::int64_t>();
  return has ? std::optional(value) : std::nullopt;
}

void take_earliest(std::optional<std::int64_t>& into, const std::optional<std::int64_t>& t) {
  if (t) into = std::min(into.value_or(*t), *t);
}

/// Every device's lane count into `counts`; returns the earliest of every
/// range's selected jobs and of every rank's drawn log events: time zero,
/// the same on every rank (a rank's events are enough for its own devices).
std::optional<std::int64_t> gather_frame_facts(Exchange& exchange, const PartitionedAnalysis& a,
                                               std::vector<int>& counts,
                                               std::optional<std::int64_t> earliest_job,
                                               std::optional<std::int64_t> earliest_event) {
  const std::vector<std::size_t> mine = read_devices(a, exchange.rank());
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::int32_t>(counts[d]));
  }
  put_optional(w, earliest_job);
  put_optional(w, earliest_event);
  std::optional<std::int64_t> earliest;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      const auto count = r.get<std::int32_t>();
      if (d >= counts.size() || count < 1) throw WireError("lane count of a device not in the run");
      counts[d] = count;
    }
    take_earliest(earliest, get_optional(r));
    take_earliest(earliest, get_optional(r));
  }
  return earliest;
}

// ---- 3. the head's step figures -----------------------------------------------------

/// What the head reads of the steps, on rank 0: every window without its
/// device figures (the head draws none; a copy of them would double the
/// largest thing rank 0 holds), each with its owner's bubble ratio, and
/// `per_step` holding one summed BubbleTime per step (all
/// bubble_ratio_samples adds up). Empty elsewhere.
struct HeadSteps {
  Metrics metrics;
  BubbleSummary bubbles;
};

HeadSteps gather_head_steps(Exchange& exchange, const PartitionedAnalysis& a, bool bubbles) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(a.first));
  std::vector<double> ratios;
  std::vector<BubbleTime> totals;
  for (std::size_t k = a.first; k < a.last; ++k) {
    ratios.push_back(a.metrics.steps[k].bubble_ratio);
    if (!bubbles) continue;
    BubbleTime sum;
    if (k - a.first < a.pipeline.bubbles.per_step.size()) {
      for (const BubbleTime& t : a.pipeline.bubbles.per_step[k - a.first]) sum.add(t);
    }
    totals.push_back(sum);
  }
  w.list(ratios);
  w.list(totals);
  std::vector<std::string> out(static_cast<std::size_t>(exchange.size()));
  out[0] = w.take();
  const std::vector<std::string> in = exchange.all_to_all(std::move(out));
  HeadSteps head;
  if (exchange.rank() != 0) return head;
  const Metrics& m = a.metrics;
  head.metrics.segments = m.segments;
  head.metrics.devices = m.devices;
  head.metrics.bubble_ratio = m.bubble_ratio;
  head.metrics.total_window_ns = m.total_window_ns;
  head.metrics.comm_ns = m.comm_ns;
  head.metrics.incomplete_steps = m.incomplete_steps;
  head.metrics.steps.reserve(m.steps.size());
  for (const StepWindow& step : m.steps) {
    StepWindow& to = head.metrics.steps.emplace_back();
    to.step = step.step;
    to.segment = step.segment;
    to.complete = step.complete;
    to.start_ns = step.start_ns;
    to.end_ns = step.end_ns;
  }
  if (bubbles) head.bubbles.per_step.resize(m.steps.size());
  for (const std::string& message : in) {
    ByteReader r(message);
    const auto first = r.get<std::uint64_t>();
    r.list(ratios);
    r.list(totals);
    if (first > m.steps.size() || ratios.size() > m.steps.size() - first ||
        (bubbles && totals.size() != ratios.size())) {
      throw WireError("step figures of another run");
    }
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      head.metrics.steps[first + i].bubble_ratio = ratios[i];
      if (bubbles) head.bubbles.per_step[first + i] = {totals[i]};
    }
  }
  return head;
}

// ---- 4-6. the parts, to rank 0 ------------------------------------------------------

void write_head(const TraceFrame& frame, TraceFormat format, AtomicFile& file) {
  format == TraceFormat::json ? write_chrome_trace_head(frame, file)
                              : write_perfetto_trace_head(frame, file);
}

void write_part(const TraceFrame& frame, const TracePart& part, TraceFormat format,
                AtomicFile& file) {
  format == TraceFormat::json ? write_chrome_trace_part(frame, part, file)
                              : write_perfetto_trace_part(frame, part, file);
}

// Every job of a partitioned run has a step: the tail has no jobs to write.
void write_tail(const TraceFrame& frame, TraceFormat format, AtomicFile& file) {
  format == TraceFormat::json ? write_chrome_trace_tail(frame, nullptr, file)
                              : write_perfetto_trace_tail(frame, nullptr, file);
}

std::string scratch_path(const TraceStreaming& streaming, int rank, TraceFormat format) {
  const std::filesystem::path dir = streaming.scratch_dir.empty()
                                        ? std::filesystem::temp_directory_path()
                                        : std::filesystem::path(streaming.scratch_dir);
  return (dir /
          ("pipescope-" + std::string(trace_file_name(format)) + "-part" + std::to_string(rank)))
      .string();
}

/// Streams every rank's part to rank 0 in rank order, after rank 0's own:
/// `scratch` holds this rank's (null on rank 0), `into` is the trace (null
/// elsewhere). Every rank takes part in every round.
void stream_parts(Exchange& exchange, AtomicFile* scratch, AtomicFile* into,
                  std::size_t chunk_bytes) {
  const auto ranks = static_cast<std::size_t>(exchange.size());
  const auto rank = static_cast<std::size_t>(exchange.rank());
  std::uint64_t mine = 0;
  std::ifstream in;
  if (scratch != nullptr) {
    scratch->flush();
    mine = std::filesystem::file_size(scratch->temp_path());
    in.open(scratch->temp_path(), std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + scratch->temp_path());
  }
  ByteWriter w;
  w.put(mine);
  std::vector<std::uint64_t> sizes;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    sizes.push_back(r.get<std::uint64_t>());
  }
  chunk_bytes = std::max<std::size_t>(1, chunk_bytes);
  for (std::size_t from = 1; from < ranks; ++from) {
    for (std::uint64_t sent = 0; sent < sizes[from]; sent += chunk_bytes) {
      const auto n =
          static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, sizes[from] - sent));
      std::vector<std::string> out(ranks);
      if (rank == from) {
        out[0].resize(n);
        if (!in.read(out[0].data(), static_cast<std::streamsize>(n))) {
          throw std::runtime_error("cannot read " + scratch->temp_path());
        }
      }
      const std::vector<std::string> got = exchange.all_to_all(std::move(out));
      if (into == nullptr) continue;
      if (got[from].size() != n) throw WireError("trace part ends early");
      into->write_through(got[from]);
    }
  }
}

// ---- 1-3. the frame and the part ---------------------------------------------------

/// What a rank writes or measures its part with, and rank 0 the head and
/// tail: steps 1-3 of the header, collectives every rank takes part in.
class PartitionedFrame {
 public:
  PartitionedFrame(Exchange& exchange, const Run& local, const PartitionedAnalysis& analysis,
                   const TraceOptions& options)
      // 1. The lanes of the part's jobs.
      : lanes_(part_job_lanes(analysis)),
        part_{analysis.part.run,
              analysis.part.job_step,
              &analysis.part.job_index,
              lanes_.of_job,
              analysis.first,
              analysis.last,
              options.pipeline != nullptr && options.flows ? &analysis.pipeline.dependencies
                                                           : nullptr},
        options_(options) {
    const bool root = exchange.rank() == 0;
    const bool drawn = options.pipeline != nullptr;
    // 2. Every device's lane count, and time zero.
    std::optional<std::int64_t> earliest_event;
    for (const EventRef& ref : trace_log_events(local, analysis.metrics, options.steps)) {
      take_earliest(earliest_event, local.devices[ref.device].events[ref.event].time_ns);
    }
    const std::optional<std::int64_t> earliest =
        gather_frame_facts(exchange, analysis, lanes_.count,
                           part_earliest_start(part_, options.steps), earliest_event);

    // 3. The head's figures of every step, on rank 0.
    head_ = gather_head_steps(exchange, analysis, drawn);

    // What the writers read of the pipeline analysis: the bubble-ratio
    // counters (the head's) and which of this range's dependencies lie on a
    // critical path (each step's path is its range's); the dependencies and
    // bubbles themselves come from the part.
    if (root) pipeline_.bubbles = std::move(head_.bubbles);
    pipeline_.critical_dependency_hops = analysis.paths.via_dependency;
    std::sort(pipeline_.critical_dependency_hops.begin(), pipeline_.critical_dependency_hops.end(),
              [](const JobRef& x, const JobRef& y) {
                return std::pair(x.device, x.job) < std::pair(y.device, y.job);
              });
    options_.pipeline = drawn ? &pipeline_ : nullptr;
    frame_.emplace(local, root ? head_.metrics : analysis.metrics, options_, lanes_.count,
                   earliest);
  }
  PartitionedFrame(const PartitionedFrame&) = delete;
  PartitionedFrame& operator=(const PartitionedFrame&) = delete;

  const TraceFrame& frame() const { return *frame_; }
  const TracePart& part() const { return part_; }

 private:
  PartLanes lanes_;
  TracePart part_;
  HeadSteps head_;
  PipelineAnalysis pipeline_;
  TraceOptions options_;
  std::optional<TraceFrame> frame_;  // reads the members above
};

void put_counts(ByteWriter& w, const TraceBulkCounts& counts) {
  w.put(counts.pieces);
  w.put(counts.flows);
  w.put(counts.run_jobs);
}

TraceBulkCounts get_counts(ByteReader& r) {
  TraceBulkCounts counts;
  counts.pieces = r.get<std::uint64_t>();
  counts.flows = r.get<std::uint64_t>();
  counts.run_jobs = r.get<std::uint64_t>();
  return counts;
}

void put_sampled(ByteWriter& w, const SampledBytes& sampled) {
  w.put(sampled.bytes);
  w.put(sampled.sampled);
  w.put(sampled.count);
}

SampledBytes get_sampled(ByteReader& r) {
  SampledBytes sampled;
  sampled.bytes = r.get<std::uint64_t>();
  sampled.sampled = r.get<std::uint64_t>();
  sampled.count = r.get<std::uint64_t>();
  return sampled;
}

}  // namespace

void write_partitioned_trace(Exchange& exchange, const Run& local,
                             const PartitionedAnalysis& analysis, const TraceOptions& options,
                             TraceFormat format, const std::string& path,
                             const TraceStreaming& streaming) {
  // 1-3. The lanes, time zero and the head's figures.
  const PartitionedFrame mine(exchange, local, analysis, options);
  const TraceFrame& frame = mine.frame();
  const TracePart& part = mine.part();

  // 4-6. Rank 0: head, its part, the others' parts as they come, tail.
  if (exchange.rank() == 0) {
    AtomicFile file(path);
    write_head(frame, format, file);
    write_part(frame, part, format, file);
    stream_parts(exchange, nullptr, &file, streaming.chunk_bytes);
    write_tail(frame, format, file);
    file.commit();
  } else {
    AtomicFile scratch(scratch_path(streaming, exchange.rank(), format));
    write_part(frame, part, format, scratch);
    stream_parts(exchange, &scratch, nullptr, streaming.chunk_bytes);
    // Never committed: the scratch file goes when `scratch` does.
  }
  // Every rank returns once the trace is in place (or throws with rank 0).
  exchange.all_gather(std::string());
}

std::uint64_t estimate_partitioned_trace_bytes(Exchange& exchange, const Run& local,
                                               const PartitionedAnalysis& analysis,
                                               const TraceOptions& options, TraceFormat format,
                                               TraceSampleSize sample) {
  const PartitionedFrame mine(exchange, local, analysis, options);
  const TraceFrame& frame = mine.frame();
  const TraceMeasure measure = trace_measure(format);
  const auto rank = static_cast<std::size_t>(exchange.rank());

  // The whole run's counts decide the sample; the pieces of the ranges
  // before this one place its pieces in the whole run's order. Every job of
  // a partitioned run has a step: there is no tail of jobs of no step.
  TraceBulkCounts counts = count_trace_bulk(frame, mine.part(), false);
  for (std::size_t d = 0; d < analysis.read.device_jobs.size(); ++d) {
    if (analysis.read.mine(d, exchange.rank())) counts.run_jobs += analysis.read.device_jobs[d];
  }
  ByteWriter w;
  put_counts(w, counts);
  TraceBulkCounts whole;
  std::uint64_t pieces_before = 0;
  const std::vector<std::string> all_counts = exchange.all_gather(w.take());
  for (std::size_t r = 0; r < all_counts.size(); ++r) {
    ByteReader reader(all_counts[r]);
    const TraceBulkCounts theirs = get_counts(reader);
    if (r < rank) pieces_before += theirs.pieces;
    whole.add(theirs);
  }
  const TraceSampling sampling(frame, whole, sample);

  // Each range's sample, and the head and tail on rank 0; summed alike on
  // every rank, then scaled once: the single process's arithmetic.
  const TraceBulkBytes bulk = measure.part(frame, mine.part(), false, sampling, pieces_before);
  ByteWriter bytes;
  bytes.put(rank == 0 ? measure.frame(frame, sample) : std::uint64_t{0});
  bytes.put(bulk.exact);
  put_sampled(bytes, bulk.jobs);
  put_sampled(bytes, bulk.bubbles);
  put_sampled(bytes, bulk.flows);
  std::uint64_t frame_bytes = 0;
  TraceBulkBytes sum;
  for (const std::string& message : exchange.all_gather(bytes.take())) {
    ByteReader reader(message);
    frame_bytes += reader.get<std::uint64_t>();
    TraceBulkBytes theirs;
    theirs.exact = reader.get<std::uint64_t>();
    theirs.jobs = get_sampled(reader);
    theirs.bubbles = get_sampled(reader);
    theirs.flows = get_sampled(reader);
    sum.add(theirs);
  }
  return frame_bytes + sum.total();
}

TracePlan plan_partitioned_trace(Exchange& exchange, const Run& local,
                                 const PartitionedAnalysis& analysis, const TraceOptions& options,
                                 bool steps_given, TraceFormat format, std::uint64_t limit) {
  return plan_trace_with(analysis.metrics, options, steps_given, format, limit, [&] {
    TraceOptions whole = options;
    whole.steps = StepSelection();
    return estimate_partitioned_trace_bytes(exchange, local, analysis, whole, format);
  });
}

}  // namespace pipescope::distributed
