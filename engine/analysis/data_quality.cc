#include "analysis/data_quality.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

namespace pipescope {

namespace {

constexpr std::int64_t kMinOutlierSpanNs = 10'000'000'000;  // 10 s
constexpr std::uint64_t kQuartileSample = std::uint64_t{1} << 20;

std::string job_label(const Run& run, const Job& job) {
  const std::string_view type =
      job.type < run.types.size() ? std::string_view(run.types.name(job.type)) : "?";
  return fmt::format("{} mb{} (line {})", type, job.micro_batch, job.line);
}

}  // namespace

std::vector<QualityWarning> check_data_quality(const Run& run, const Metrics& metrics,
                                               const StageMap& stages) {
  std::vector<QualityWarning> out;
  const std::size_t windows = metrics.steps.size();

  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    std::uint64_t overlaps = 0, nonpositive = 0;
    const Job* first_overlap = nullptr;
    const Job* first_nonpositive = nullptr;
    std::int64_t max_end = std::numeric_limits<std::int64_t>::min();
    for (const Job& job : device.jobs) {
      if (job.end_ns <= job.start_ns) {
        if (nonpositive++ == 0) first_nonpositive = &job;
        continue;
      }
      if (job.start_ns < max_end && overlaps++ == 0) first_overlap = &job;
      max_end = std::max(max_end, job.end_ns);
    }
    if (overlaps > 0) {
      out.push_back({"overlap",
                     fmt::format("device {}: {} job{} overlap an earlier job of the device (first: "
                                 "{}); their overlap is counted as busy once",
                                 device.index, overlaps, overlaps == 1 ? "" : "s",
                                 job_label(run, *first_overlap)),
                     device.index, d < stages.stage_of.size() ? stages.stage_of[d] : -1, overlaps});
    }
    if (nonpositive > 0) {
      out.push_back({"nonpositive_length",
                     fmt::format("device {}: {} job{} with zero or negative length (first: {})",
                                 device.index, nonpositive, nonpositive == 1 ? "" : "s",
                                 job_label(run, *first_nonpositive)),
                     device.index, d < stages.stage_of.size() ? stages.stage_of[d] : -1,
                     nonpositive});
    }
    const auto steps = d < metrics.devices.size() ? metrics.devices[d].steps : 0;
    if (static_cast<std::size_t>(steps) < windows) {
      const auto missing = static_cast<std::uint64_t>(windows - static_cast<std::size_t>(steps));
      out.push_back(
          {"missing_steps",
           fmt::format("device {}: {} of {} steps{}", device.index, steps, windows,
                       device.jobs.empty() ? " (no job at all)" : " (its log ends early?)"),
           device.index, d < stages.stage_of.size() ? stages.stage_of[d] : -1, missing});
    }
  }

  // Job counts per step across the devices of each stage.
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    const auto& group = stages.devices[s];
    if (group.size() < 2) continue;
    std::vector<std::vector<std::uint64_t>> counts(group.size(),
                                                   std::vector<std::uint64_t>(windows, 0));
    for (std::size_t g = 0; g < group.size(); ++g) {
      const std::size_t d = group[g];
      if (d >= metrics.job_step.size()) continue;
      for (const std::int32_t k : metrics.job_step[d]) {
        if (static_cast<std::size_t>(k) < windows) ++counts[g][static_cast<std::size_t>(k)];
      }
    }
    std::uint64_t mismatched = 0;
    std::size_t first = 0;
    for (std::size_t k = 0; k < windows; ++k) {
      bool differ = false;
      for (std::size_t g = 1; g < group.size(); ++g) differ |= counts[g][k] != counts[0][k];
      if (differ && mismatched++ == 0) first = k;
    }
    if (mismatched > 0) {
      std::string detail;
      for (std::size_t g = 0; g < group.size(); ++g) {
        detail += fmt::format("{}device {}: {}", g == 0 ? "" : ", ", run.devices[group[g]].index,
                              counts[g][first]);
      }
      out.push_back({"job_count_mismatch",
                     fmt::format("stage {}: its devices ran different numbers of jobs in {} "
                                 "step{} (first: step {}, {})",
                                 s, mismatched, mismatched == 1 ? "" : "s",
                                 metrics.steps[first].step, detail),
                     -1, static_cast<int>(s), mismatched});
    }
  }

  // Timestamps far from the rest.
  // From at most kQuartileSample starts, taken at a fixed stride: the
  // quartiles of a long run barely move, and the copy stays small whatever
  // the run's size (a copy of every start was 8 bytes per job at the peak).
  std::uint64_t total = 0;
  for (const Device& device : run.devices) total += device.jobs.size();
  const std::uint64_t stride = std::max<std::uint64_t>(1, (total + kQuartileSample - 1) / kQuartileSample);
  std::vector<std::int64_t> starts;
  starts.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(total, kQuartileSample)));
  std::uint64_t seen = 0;
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      if (seen++ % stride == 0) starts.push_back(job.start_ns);
    }
  }
  if (starts.size() >= 2) {
    // Quartiles: robust however few jobs there are, and a stray job cannot
    // widen them.
    const std::size_t lo_rank = starts.size() / 4;
    const std::size_t hi_rank = starts.size() - 1 - starts.size() / 4;
    std::nth_element(starts.begin(), starts.begin() + lo_rank, starts.end());
    const std::int64_t lo = starts[lo_rank];
    std::nth_element(starts.begin(), starts.begin() + hi_rank, starts.end());
    const std::int64_t hi = starts[hi_rank];
    const std::int64_t span = std::max(hi - lo, kMinOutlierSpanNs);
    // Bounds saturate instead of overflowing near the ends of int64.
    const std::int64_t reach = span > std::numeric_limits<std::int64_t>::max() / 10
                                   ? std::numeric_limits<std::int64_t>::max()
                                   : span * 10;
    const std::int64_t low = lo < std::numeric_limits<std::int64_t>::min() + reach
                                 ? std::numeric_limits<std::int64_t>::min()
                                 : lo - reach;
    const std::int64_t high = hi > std::numeric_limits<std::int64_t>::max() - reach
                                  ? std::numeric_limits<std::int64_t>::max()
                                  : hi + reach;
    for (const Device& device : run.devices) {
      std::uint64_t far = 0;
      const Job* example = nullptr;
      for (const Job& job : device.jobs) {
        if (job.start_ns < low || job.start_ns > high) {
          if (far++ == 0) example = &job;
        }
      }
      if (far > 0) {
        out.push_back(
            {"time_outlier",
             fmt::format("device {}: {} job{} start far from all others (first: {})", device.index,
                         far, far == 1 ? "" : "s", job_label(run, *example)),
             device.index, -1, far});
      }
    }
  }
  return out;
}

}  // namespace pipescope
