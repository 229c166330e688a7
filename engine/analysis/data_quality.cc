#include "analysis/data_quality.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>

#include "analysis/step_rule.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

constexpr std::int64_t kMinOutlierSpanNs = 10'000'000'000;  // 10 s
constexpr std::uint64_t kQuartileSample = std::uint64_t{1} << 20;

std::string job_label(const Run& run, const Job& job) {
  const std::string_view type =
      job.type < run.types.size() ? std::string_view(run.types.name(job.type)) : "?";
  return fmt::format("{} mb{} (line {})", type, job.micro_batch, job.line);
}

/// Forward, backward and optimizer jobs of each device (by position) in
/// each step: the jobs every stage of every schedule runs alike.
std::vector<std::vector<std::int64_t>> compute_jobs_per_step(const Run& run, const Metrics& metrics,
                                                             const TypeKinds& kinds) {
  std::vector<std::vector<std::int64_t>> counts(run.devices.size(),
                                                std::vector<std::int64_t>(metrics.steps.size(), 0));
  // Devices are independent: each counts its own row.
  tbb::parallel_for(
      std::size_t{0}, std::min(run.devices.size(), metrics.job_step.size()), [&](std::size_t d) {
        const auto& jobs = run.devices[d].jobs;
        for (std::size_t i = 0; i < jobs.size() && i < metrics.job_step[d].size(); ++i) {
          const JobKind kind = kinds.kind[jobs[i].type];
          const auto k = metrics.job_step[d][i];
          if (k >= 0 && (kind == JobKind::forward || kind == JobKind::backward ||
                         kind == JobKind::optimizer)) {
            ++counts[d][static_cast<std::size_t>(k)];
          }
        }
      });
  return counts;
}

/// Why incomplete step `k` is: the first device of its segment that never
/// started a later step, else the first kind a device ran fewer jobs of
/// than in the segment's previous complete step.
std::string why_incomplete(const Run& run, const Metrics& metrics, const TypeKinds& kinds,
                           std::size_t k) {
  const SegmentSteps* segment = nullptr;
  for (const SegmentSteps& s : metrics.segments) {
    if (k >= s.first && k < s.first + s.count) segment = &s;
  }
  if (segment == nullptr) return {};
  // A cut input: the first device that began no later step before its cut.
  for (const std::size_t d : segment->devices) {
    const Device& device = run.devices[d];
    if (device.cut_ns == Device::kNotCut) continue;
    const auto& steps = metrics.job_step[d];
    bool later = false;
    for (std::size_t i = 0; i < steps.size() && !later; ++i) {
      later = steps[i] >= 0 && static_cast<std::size_t>(steps[i]) > k &&
              static_cast<std::size_t>(steps[i]) < segment->first + segment->count &&
              device.jobs[i].start_ns < device.cut_ns;
    }
    if (!later) {
      return fmt::format("the input of device {} ({}) was cut before it began a later step",
                         device.index, device.path);
    }
  }
  const bool last = k + 1 == segment->first + segment->count;
  for (const std::size_t d : last ? std::vector<std::size_t>{} : segment->devices) {
    const auto& steps = metrics.job_step[d];
    const bool later = std::any_of(steps.begin(), steps.end(), [&](std::int32_t j) {
      return j >= 0 && static_cast<std::size_t>(j) > k &&
             static_cast<std::size_t>(j) < segment->first + segment->count;
    });
    if (!later) {
      return fmt::format("device {} never started a later step (its log ends in it)",
                         run.devices[d].index);
    }
  }
  std::optional<std::size_t> previous;
  for (std::size_t j = segment->first; j < k; ++j) {
    if (metrics.steps[j].complete) previous = j;
  }
  if (!previous) return "no complete step comes before it in its launch segment";
  for (const std::size_t d : segment->devices) {
    std::array<std::int64_t, 6> now{}, before{};
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto step = static_cast<std::size_t>(metrics.job_step[d][i]);
      const auto kind = static_cast<std::size_t>(kinds.kind[jobs[i].type]);
      if (step == k) ++now[kind];
      if (step == *previous) ++before[kind];
    }
    for (std::size_t kind = 0; kind < now.size(); ++kind) {
      if (now[kind] < before[kind]) {
        return fmt::format("device {} ran {} {} job{} in it, {} in step {}", run.devices[d].index,
                           now[kind], job_kind_name(static_cast<JobKind>(kind)),
                           now[kind] == 1 ? "" : "s", before[kind], step_label(metrics, *previous));
      }
    }
  }
  return {};
}

/// incomplete_steps, no_complete_step and short_step.
void add_step_findings(const Run& run, const Metrics& metrics, const StageMap& stages,
                       std::vector<Warning>& out) {
  if (metrics.steps.empty()) return;
  const TypeKinds kinds(run.types);
  if (metrics.incomplete_steps > 0) {
    std::string which;
    std::size_t listed = 0;
    std::optional<std::size_t> first;
    for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
      if (metrics.steps[k].complete) continue;
      if (!first) first = k;
      if (listed++ < 5)
        which += fmt::format("{}{}", which.empty() ? "" : ", ", step_label(metrics, k));
    }
    if (listed > 5) which += fmt::format(" and {} more", listed - 5);
    const std::string why = why_incomplete(run, metrics, kinds, *first);
    out.push_back(
        {WarningCode::incomplete_steps,
         fmt::format("{} incomplete step{} ({}{}), left out of the totals, the ratios "
                     "and the gate (a launch cut short, or a log that ends early)",
                     listed, listed == 1 ? "" : "s", which,
                     why.empty() ? std::string()
                                 : fmt::format("; step {}: {}", step_label(metrics, *first), why)),
         -1, -1, static_cast<std::uint64_t>(listed)});
    if (metrics.incomplete_steps == metrics.steps.size()) {
      out.push_back({WarningCode::no_complete_step,
                     "no step is complete: the totals and the bubble ratio cover no step and "
                     "read 0; only the steps' own figures are measured",
                     -1, -1, static_cast<std::uint64_t>(metrics.steps.size())});
    }
  }

  // short_step: a complete step in which a device ran fewer forward, backward
  // and optimizer jobs than its stage peers (the median of the other devices
  // of its stage in that step), or, alone in its stage, than its own median
  // complete step of the segment.
  const auto counts = compute_jobs_per_step(run, metrics, kinds);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const int stage = d < stages.stage_of.size() ? stages.stage_of[d] : -1;
    std::vector<std::size_t> peers;
    if (stage >= 0) {
      for (const std::size_t p : stages.devices[static_cast<std::size_t>(stage)]) {
        if (p != d && p < run.devices.size()) peers.push_back(p);
      }
    }
    std::uint64_t short_steps = 0;
    std::string detail;
    for (const SegmentSteps& segment : metrics.segments) {
      if (std::find(segment.devices.begin(), segment.devices.end(), d) == segment.devices.end()) {
        continue;
      }
      std::int64_t own_median = 0;
      if (peers.empty()) {
        std::vector<std::int64_t> own;
        for (std::size_t k = segment.first; k < segment.first + segment.count; ++k) {
          if (metrics.steps[k].complete) own.push_back(counts[d][k]);
        }
        own_median = upper_middle(own);
      }
      for (std::size_t k = segment.first; k < segment.first + segment.count; ++k) {
        if (!metrics.steps[k].complete) continue;
        std::int64_t expected = own_median;
        if (!peers.empty()) {
          std::vector<std::int64_t> theirs;
          for (const std::size_t p : peers) theirs.push_back(counts[p][k]);
          expected = upper_middle(theirs);
        }
        if (counts[d][k] >= expected) continue;
        if (short_steps++ < 3) {
          detail +=
              fmt::format("{}step {}: {} of {}, {} missing", detail.empty() ? "" : "; ",
                          step_label(metrics, k), counts[d][k], expected, expected - counts[d][k]);
        }
      }
    }
    if (short_steps == 0) continue;
    out.push_back(
        {WarningCode::short_step,
         fmt::format("device {}: fewer forward, backward and optimizer jobs than {} in {} "
                     "step{} ({}{}): a job line lost or cut, or jobs the rank did not log",
                     run.devices[d].index,
                     peers.empty() ? "its own other steps (the median)" : "its stage peers",
                     short_steps, short_steps == 1 ? "" : "s", detail,
                     short_steps > 3 ? fmt::format("; {} more", short_steps - 3) : std::string()),
         run.devices[d].index, stage, short_steps});
  }
}

}  // namespace

std::vector<Warning> check_data_quality(const Run& run, const Metrics& metrics,
                                        const StageMap& stages) {
  std::vector<Warning> out;
  const std::size_t windows = metrics.steps.size();

  // Overlapping and non-positive jobs: each device's walked in parallel, the
  // warnings then written in device order.
  struct JobChecks {
    std::uint64_t overlaps = 0, nonpositive = 0;
    const Job* first_overlap = nullptr;
    const Job* first_nonpositive = nullptr;
  };
  std::vector<JobChecks> checks(run.devices.size());
  tbb::parallel_for(std::size_t{0}, run.devices.size(), [&](std::size_t d) {
    JobChecks& c = checks[d];
    std::int64_t max_end = std::numeric_limits<std::int64_t>::min();
    for (const Job& job : run.devices[d].jobs) {
      if (job.end_ns <= job.start_ns) {
        if (c.nonpositive++ == 0) c.first_nonpositive = &job;
        continue;
      }
      if (job.start_ns < max_end && c.overlaps++ == 0) c.first_overlap = &job;
      max_end = std::max(max_end, job.end_ns);
    }
  });
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    const auto [overlaps, nonpositive, first_overlap, first_nonpositive] = checks[d];
    if (overlaps > 0) {
      out.push_back({WarningCode::overlap,
                     fmt::format("device {}: {} job{} overlap an earlier job of the device (first: "
                                 "{}); their overlap is counted as busy once",
                                 device.index, overlaps, overlaps == 1 ? "" : "s",
                                 job_label(run, *first_overlap)),
                     device.index, d < stages.stage_of.size() ? stages.stage_of[d] : -1, overlaps});
    }
    if (nonpositive > 0) {
      out.push_back({WarningCode::nonpositive_length,
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
          {WarningCode::missing_steps,
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
      out.push_back({WarningCode::job_count_mismatch,
                     fmt::format("stage {}: its devices ran different numbers of jobs in {} "
                                 "step{} (first: step {}, {})",
                                 s, mismatched, mismatched == 1 ? "" : "s",
                                 metrics.steps[first].step, detail),
                     -1, static_cast<int>(s), mismatched});
    }
  }

  add_step_findings(run, metrics, stages, out);

  // Timestamps far from the rest.
  // From at most kQuartileSample starts, taken at a fixed stride: the
  // quartiles of a long run barely move, and the copy stays small whatever
  // the run's size (a copy of every start was 8 bytes per job at the peak).
  std::uint64_t total = 0;
  for (const Device& device : run.devices) total += device.jobs.size();
  const std::uint64_t stride =
      std::max<std::uint64_t>(1, (total + kQuartileSample - 1) / kQuartileSample);
  std::vector<std::int64_t> starts;
  starts.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(total, kQuartileSample)));
  // Every stride-th job of the devices' jobs taken in a row (from the first):
  // only the sampled jobs are read.
  std::uint64_t seen = 0;  // jobs of the devices before this one
  for (const Device& device : run.devices) {
    const std::uint64_t n = device.jobs.size();
    for (std::uint64_t i = (stride - seen % stride) % stride; i < n; i += stride) {
      starts.push_back(device.jobs[static_cast<std::size_t>(i)].start_ns);
    }
    seen += n;
  }
  if (starts.size() >= 2) {
    // Quartiles: robust however few jobs there are, and a stray job cannot
    // widen them.
    const QuartileRanks ranks = quartile_ranks(starts.size());
    const std::int64_t lo = select_rank(starts, ranks.lower);
    const std::int64_t hi = select_rank(starts, ranks.upper);
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
            {WarningCode::time_outlier,
             fmt::format("device {}: {} job{} start far from all others (first: {})", device.index,
                         far, far == 1 ? "" : "s", job_label(run, *example)),
             device.index, -1, far});
      }
    }
  }
  return out;
}

}  // namespace pipescope
