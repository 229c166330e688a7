#include "export/trace_parts.h"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "analysis/pipeline.h"
#include "analysis/step_rule.h"
#include "export/trace_content.h"

namespace pipescope {

TraceLanes trace_lanes(const Run& run) {
  TraceLanes lanes;
  lanes.of_job.resize(run.devices.size());
  lanes.count.assign(run.devices.size(), 1);
  // Devices are independent: each one's lanes on its own thread.
  tbb::parallel_for(std::size_t{0}, run.devices.size(), [&](std::size_t d) {
    lanes.of_job[d] = trace_job_lanes(run.devices[d].jobs, lanes.count[d]);
  });
  return lanes;
}

std::vector<std::vector<int>> part_lanes(const TraceLanes& lanes, const JobIndices& job_index) {
  std::vector<std::vector<int>> out(job_index.size());
  for (std::size_t d = 0; d < job_index.size(); ++d) {
    out[d].reserve(job_index[d].size());
    for (const std::uint32_t i : job_index[d]) out[d].push_back(lanes.of_job[d][i]);
  }
  return out;
}

TracePart whole_trace_part(const Run& run, const Metrics& metrics, const TraceOptions& options,
                           const TraceLanes& lanes) {
  const bool flows = options.pipeline != nullptr && options.flows;
  return TracePart{run,
                   metrics.job_step,
                   nullptr,
                   lanes.of_job,
                   0,
                   metrics.steps.size(),
                   flows ? &options.pipeline->dependencies : nullptr};
}

std::optional<std::int64_t> part_earliest_start(const TracePart& part,
                                                const StepSelection& selection) {
  std::optional<std::int64_t> earliest;
  for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
    const JobVector& jobs = part.run.devices[d].jobs;
    const bool covered = d < part.job_step.size() && part.job_step[d].size() == jobs.size();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const std::int64_t k = covered ? part.job_step[d][i] : -1;
      // A part writes only its own steps' jobs; the jobs of no step are the
      // tail's, which a part given the whole run (first_step 0) stands for.
      const bool own = k >= 0 ? static_cast<std::size_t>(k) >= part.first_step &&
                                    static_cast<std::size_t>(k) < part.last_step
                              : part.job_index == nullptr;
      if (!own || !selection.contains(k)) continue;
      earliest = std::min(earliest.value_or(jobs[i].start_ns), jobs[i].start_ns);
    }
  }
  return earliest;
}

TraceFrame::TraceFrame(const Run& run, const Metrics& metrics, const TraceOptions& options,
                       const std::vector<int>& lane_counts,
                       std::optional<std::int64_t> earliest_job_ns)
    : run_(run),
      metrics_(metrics),
      options_(options),
      layout_(run, lane_counts, options.pipeline != nullptr),
      events_(trace_log_events(run, metrics, options.steps)) {
  // trace_origin's rule, with the jobs' part given.
  std::optional<std::int64_t> earliest = earliest_job_ns;
  for (const EventRef& ref : events_) {
    const std::int64_t t = run.devices[ref.device].events[ref.event].time_ns;
    earliest = std::min(earliest.value_or(t), t);
  }
  first_ns_ = earliest.value_or(0);
}

std::uint64_t trace_flow_id(const TracePart& part, JobRef consumer) {
  const std::uint64_t job =
      part.job_index == nullptr ? consumer.job : part.job_index->at(consumer.device)[consumer.job];
  return (std::uint64_t{consumer.device} << 32) + job + 1;
}

TraceBody::TraceBody(const TracePart& part, const StepSelection& selection, bool stepless,
                     std::size_t jobs_per_piece)
    : part_(part), devices_(part.run.devices.size()) {
  covered_.resize(devices_);
  for (std::size_t d = 0; d < devices_; ++d) {
    covered_[d] =
        d < part.job_step.size() && part.job_step[d].size() == part.run.devices[d].jobs.size();
  }
  // Units: the part's selected steps, or the jobs of no step.
  std::vector<std::size_t> unit_of_step;  // by step - first_step; SIZE_MAX: none
  if (stepless) {
    steps_.push_back(-1);
  } else {
    const std::size_t last = std::max(part.first_step, part.last_step);
    unit_of_step.assign(last - part.first_step, SIZE_MAX);
    for (std::size_t k = part.first_step; k < last; ++k) {
      if (!selection.contains(static_cast<std::int64_t>(k))) continue;
      unit_of_step[k - part.first_step] = steps_.size();
      steps_.push_back(static_cast<std::int64_t>(k));
    }
  }
  // One pass over the held jobs: each unit's range and count per device.
  ranges_.assign(steps_.size() * devices_, {0, 0});
  std::vector<std::uint64_t> counts(steps_.size() * devices_, 0);
  for (std::size_t d = 0; d < devices_; ++d) {
    const std::size_t n = part.run.devices[d].jobs.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t k = job_step(d, i);
      std::size_t unit = SIZE_MAX;
      if (stepless) {
        if (k < 0) unit = 0;
      } else if (k >= 0 && static_cast<std::size_t>(k) >= part.first_step &&
                 static_cast<std::size_t>(k) - part.first_step < unit_of_step.size()) {
        unit = unit_of_step[static_cast<std::size_t>(k) - part.first_step];
      }
      if (unit == SIZE_MAX) continue;
      auto& range = ranges_[unit * devices_ + d];
      if (counts[unit * devices_ + d]++ == 0) range.first = i;
      range.second = i + 1;
    }
  }
  if (stepless && std::all_of(counts.begin(), counts.end(), [](auto n) { return n == 0; })) {
    steps_.clear();
    ranges_.clear();
    return;
  }
  // Devices grouped into pieces of about jobs_per_piece jobs; a device with
  // more is cut by index.
  jobs_per_piece = std::max<std::size_t>(1, jobs_per_piece);
  for (std::size_t u = 0; u < steps_.size(); ++u) {
    const std::size_t first_piece = pieces_.size();
    Piece piece;
    piece.unit = u;
    const auto flush = [&](std::size_t next_device) {
      if (piece.device_end > piece.device_begin) pieces_.push_back(piece);
      piece = Piece{};
      piece.unit = u;
      piece.device_begin = piece.device_end = next_device;
    };
    for (std::size_t d = 0; d < devices_; ++d) {
      const std::uint64_t jobs = counts[u * devices_ + d];
      if (jobs > jobs_per_piece) {
        flush(d);
        const auto [b, e] = ranges_[u * devices_ + d];
        for (std::size_t from = b; from < e; from += jobs_per_piece) {
          piece.device_end = d + 1;
          piece.job_begin = from;
          piece.job_end = std::min(e, from + jobs_per_piece);
          for (std::size_t i = piece.job_begin; i < piece.job_end; ++i) {
            if (job_step(d, i) == steps_[u]) ++piece.jobs;
          }
          flush(d);
        }
        flush(d + 1);
        continue;
      }
      if (piece.device_end > piece.device_begin && piece.jobs + jobs > jobs_per_piece) flush(d);
      piece.device_end = d + 1;
      piece.jobs += jobs;
    }
    if (piece.device_end > piece.device_begin || pieces_.size() == first_piece) {
      pieces_.push_back(piece);
    }
    pieces_[first_piece].first_of_unit = true;
    pieces_.back().last_of_unit = true;
  }
}

// ---- A trace's size by parts -------------------------------------------------

TraceBulkCounts count_trace_bulk(const TraceFrame& frame, const TracePart& part, bool stepless) {
  const StepSelection& selection = frame.options().steps;
  const TraceBody body(part, selection, stepless, kTraceJobsPerPiece);
  TraceBulkCounts counts;
  for (const TraceBody::Piece& piece : body.pieces()) {
    if (piece.jobs > 0) ++counts.pieces;
  }
  if (frame.flows()) {
    for (std::size_t u = 0; u < body.units(); ++u) {
      body.for_each_flow(u, selection, [&](const Dependency&) { ++counts.flows; });
    }
  }
  return counts;
}

TraceSampling::TraceSampling(const TraceFrame& frame, const TraceBulkCounts& whole,
                             TraceSampleSize sample) {
  piece_stride = sample_stride(whole.pieces, sample.job_pieces);
  flow_stride = sample_stride(whole.flows, sample.items);
  // A device has at most one bubble per job (the gap before it) and one per
  // window (its drain): a bound known before the bubbles are walked, so
  // that they are walked once.
  std::uint64_t bound = whole.run_jobs;
  const Metrics& metrics = frame.metrics();
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    if (frame.selected(static_cast<std::int64_t>(k))) bound += frame.run().devices.size();
  }
  bubble_stride = sample_stride(bound, sample.items);
}

bool trace_piece_sampled(std::uint64_t index, std::uint64_t stride) {
  return index % stride == sample_start(stride);
}

bool trace_key_sampled(std::uint64_t key, std::uint64_t stride) {
  if (stride <= 1) return true;
  // splitmix64's finalizer: consecutive keys spread over the whole range.
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebull;
  key ^= key >> 31;
  return key % stride == 0;
}

std::uint64_t trace_bubble_key(const Bubble& bubble) {
  std::uint64_t key = bubble.device;
  for (const std::uint64_t part :
       {std::uint64_t{bubble.step}, static_cast<std::uint64_t>(bubble.kind),
        static_cast<std::uint64_t>(bubble.start_ns), static_cast<std::uint64_t>(bubble.end_ns)}) {
    key = key * 0x100000001b3ull ^ part;  // FNV's prime: every field moves the key
  }
  return key;
}

std::uint64_t SampledBytes::scaled() const { return scaled_bytes(bytes, sampled, count); }

TraceBubbleSample sample_part_bubbles(const TracePart& part, const Metrics& metrics,
                                      const StepSelection& selection, std::uint64_t stride) {
  const std::size_t devices = part.run.devices.size();
  const std::size_t last = std::min(part.last_step, metrics.steps.size());
  const TypeKinds kinds(part.run.types);
  std::vector<TraceBubbleSample> per_device(devices);
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    TraceBubbleSample& mine = per_device[d];
    WindowBubbles walk(part.run.devices[d], d,
                       part.job_index != nullptr ? &(*part.job_index)[d] : nullptr, kinds);
    for (std::size_t k = part.first_step; k < last; ++k) {
      if (!selection.contains(static_cast<std::int64_t>(k))) continue;
      walk.window(metrics.steps[k], k, [&](const Bubble& bubble) {
        ++mine.count;
        if (trace_key_sampled(trace_bubble_key(bubble), stride)) mine.bubbles.push_back(bubble);
      });
    }
  });
  TraceBubbleSample sample;
  for (const TraceBubbleSample& mine : per_device) {
    sample.count += mine.count;
    sample.bubbles.insert(sample.bubbles.end(), mine.bubbles.begin(), mine.bubbles.end());
  }
  return sample;
}

std::uint64_t estimate_whole_trace(const Run& run, const Metrics& metrics,
                                   const TraceOptions& options, TraceSampleSize sample,
                                   const TraceMeasure& measure) {
  const TraceLanes lanes = trace_lanes(run);
  const TraceFrame frame(run, metrics, options, lanes.count,
                         earliest_selected_start(run, metrics, options.steps));
  const TracePart whole = whole_trace_part(run, metrics, options, lanes);
  const TraceBulkCounts steps = count_trace_bulk(frame, whole, false);
  TraceBulkCounts counts = steps;
  counts.add(count_trace_bulk(frame, whole, true));
  counts.run_jobs = run.job_count();
  const TraceSampling sampling(frame, counts, sample);
  TraceBulkBytes bulk = measure.part(frame, whole, false, sampling, 0);
  bulk.add(measure.part(frame, whole, true, sampling, steps.pieces));
  return measure.frame(frame, sample) + bulk.total();
}

}  // namespace pipescope
