// What the trace exporters (chrome_trace, perfetto_trace) draw from a run and
// a step selection, computed once here so both traces show the same thing.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/dependencies.h"
#include "analysis/job_kind.h"
#include "analysis/metrics.h"
#include "analysis/step_events.h"
#include "analysis/step_selection.h"
#include "model/run.h"

namespace pipescope {

/// The step index of device d's i-th job (Metrics::job_step), -1 when the
/// metrics do not cover that device's jobs.
std::int32_t trace_job_step(const Run& run, const Metrics& metrics, std::size_t d, std::size_t i);

/// The earliest start among the selected jobs; nullopt when none is selected.
std::optional<std::int64_t> earliest_selected_start(const Run& run, const Metrics& metrics,
                                                    const StepSelection& selection);

/// The log events a trace draws as instants (docs/formats.md): every placed
/// event (not EventTime::unplaced); with a step selection, only those in a
/// selected step's window or in the gap before it (analysis/step_events.h),
/// as the selection keeps a step's jobs. Device by device in Run order, each
/// device's in time order (then line order).
std::vector<EventRef> trace_log_events(const Run& run, const Metrics& metrics,
                                       const StepSelection& selection);

/// Time zero of a trace in relative time: the earliest of the selected jobs'
/// starts (earliest_selected_start) and of `events`' times (trace_log_events),
/// so that nothing drawn lies before it; nullopt when there is neither.
std::optional<std::int64_t> trace_origin(const Run& run, const Metrics& metrics,
                                         const StepSelection& selection,
                                         const std::vector<EventRef>& events);

/// `ns` relative to the trace's time zero: ns - origin_ns without signed
/// overflow for any pair whose true difference fits.
std::int64_t ns_since(std::int64_t ns, std::int64_t origin_ns);

/// The slice name of step `index`: "step 12", "step 1:12" when the run has
/// several launch segments, with " (incomplete)" for a step left out of the
/// totals (metrics.h).
std::string trace_step_name(const Metrics& metrics, std::size_t index);

/// "TYPE mbMB", the slice of a job ("?" for a type id the run does not have),
/// into `out` (its memory is reused from one job to the next).
void trace_job_name(const Run& run, const Job& job, std::string& out);

// ---- The size of a trace before it is written (trace_size.h): the writers
// format the small sections whole and, of the bulk (jobs, steps, bubble
// counters, bubbles, log events, flows), a sample (TraceSampleSize,
// chrome_trace.h) that they scale by the count; the body's sections part by
// part (trace_parts.h, TraceSampling). A run whose bulk fits the sample is
// measured to the byte.

/// Every how-many-th of `count` items to format so that at most `max` are.
std::uint64_t sample_stride(std::uint64_t count, std::uint64_t max);
/// The first item sampled: the middle of the first stride, so that the
/// sample is not biased towards the start of each device's time (later jobs
/// have longer timestamps); 0 when every item is.
std::uint64_t sample_start(std::uint64_t stride);

/// The bytes of `count` items whose `sampled` formatted took `sampled_bytes`
/// (rounded to the nearest; 0 when none was sampled).
std::uint64_t scaled_bytes(std::uint64_t sampled_bytes, std::uint64_t sampled, std::uint64_t count);

/// The bytes `write_one(k)` appends to `buffer` over a sample of `count`
/// items (at most `max`, every sample_stride-th from sample_start), scaled
/// to all of them; `buffer` is left as it was. Both writers measure their
/// bulk sections this way.
template <typename Buffer, typename WriteOne>
std::uint64_t measure_sampled(Buffer& buffer, std::uint64_t count, std::uint64_t max,
                              WriteOne&& write_one) {
  const std::uint64_t stride = sample_stride(count, max);
  const std::size_t before = buffer.size();
  std::uint64_t sampled = 0;
  for (std::uint64_t k = sample_start(stride); k < count; k += stride) {
    write_one(static_cast<std::size_t>(k));
    ++sampled;
  }
  const std::uint64_t bytes = buffer.size() - before;
  buffer.resize(before);
  return scaled_bytes(bytes, sampled, count);
}

/// Each job type's kind (classify_job_type), classified once per type.
class TraceJobKinds {
 public:
  explicit TraceJobKinds(const Run& run);
  /// JobKind::other for a type id the run does not have.
  JobKind of(const Job& job) const {
    return job.type < by_type_.size() ? by_type_[job.type] : JobKind::other;
  }
  /// Whether some type of the run is of this kind.
  bool has(JobKind kind) const {
    return std::find(by_type_.begin(), by_type_.end(), kind) != by_type_.end();
  }

 private:
  std::vector<JobKind> by_type_;
};

/// One value of the "bubble ratio" counters: each kind's idle share of the
/// step window (indexed by BubbleKind), at the window's start; a run of
/// selected windows ends with a sample of zeros at its last window's end.
struct BubbleRatioSample {
  std::int64_t time_ns = 0;
  std::array<double, 3> share{0, 0, 0};
};

std::vector<BubbleRatioSample> bubble_ratio_samples(const Run& run, const Metrics& metrics,
                                                    const BubbleSummary& bubbles,
                                                    const StepSelection& selection);

}  // namespace pipescope
