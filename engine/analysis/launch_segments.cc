#include "analysis/launch_segments.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>

#include "analysis/step_rule.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

constexpr std::int64_t kMaxTime = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinTime = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kEvidenceItems = 4;

using Candidate = LaunchCandidate;

std::string where(const Device& device, std::uint64_t line) {
  return fmt::format("{}:{}", device.path, line);
}

/// step_start_line: a step-start line with jobs of the device on both sides
/// of it (in line order). The jobs before are those on earlier lines.
void step_start_candidates(const Device& device, std::vector<Candidate>& out,
                           std::vector<IgnoredLaunchSignal>& ignored) {
  const auto& marks = device.step_starts;
  if (device.jobs.empty() || marks.empty()) return;
  // Part p holds the jobs after p step-start lines (in line order).
  const std::size_t parts = marks.size() + 1;
  std::vector<std::int64_t> min_start(parts, kMaxTime), max_end(parts, kMinTime);
  for (const Job& job : device.jobs) {
    const auto p = static_cast<std::size_t>(
        std::lower_bound(marks.begin(), marks.end(), std::uint64_t{job.line},
                         [](const StepStartLine& m, std::uint64_t line) { return m.line < line; }) -
        marks.begin());
    min_start[p] = std::min(min_start[p], job.start_ns);
    max_end[p] = std::max(max_end[p], job.end_ns);
  }
  // Mark m separates parts <= m from parts > m.
  std::vector<std::int64_t> after(parts + 1, kMaxTime);
  for (std::size_t p = parts; p-- > 0;) after[p] = std::min(after[p + 1], min_start[p]);
  std::int64_t before = kMinTime;
  for (std::size_t m = 0; m < marks.size(); ++m) {
    before = std::max(before, max_end[m]);
    if (before == kMinTime || after[m + 1] == kMaxTime) continue;  // no job on one side
    if (before > after[m + 1]) {
      // The jobs on both sides of the line overlap in time: the same launch.
      ignored.push_back({LaunchSignal::step_start_line, where(device, marks[m].line)});
      continue;
    }
    out.push_back({before, after[m + 1],
                   marks[m].window ? LaunchSignal::profiler_window : LaunchSignal::step_start_line,
                   where(device, marks[m].line)});
  }
}

std::int64_t saturating_multiply(std::int64_t value, std::int64_t factor) {
  if (value > 0 && factor > 0 && value > kMaxTime / factor) return kMaxTime;
  return value * factor;
}

/// restart_after_gap: see the header.
void gap_candidates(const Device& device, const TypeKinds& kinds, const SegmentOptions& options,
                    std::vector<Candidate>& out) {
  const JobVector& jobs = device.jobs;
  const std::size_t n = jobs.size();
  if (n < 2) return;
  // Not zeroed: assign_steps writes every entry.
  const std::unique_ptr<std::int32_t[]> step_of(new std::int32_t[n]);
  const auto steps = static_cast<std::size_t>(
      assign_steps(jobs, 0, n, kinds, std::span<std::int32_t>(step_of.get(), n)));
  std::vector<std::int64_t> first(steps, kMaxTime), last(steps, kMinTime);
  std::vector<std::int64_t> fbo(steps, 0);  // forward, backward and optimizer jobs per step
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(step_of[i]);
    first[k] = std::min(first[k], jobs[i].start_ns);
    last[k] = std::max(last[k], jobs[i].end_ns);
    const JobKind kind = kinds.kind[jobs[i].type];
    fbo[k] += steers_steps(kind) && kind != JobKind::lr;
  }
  std::vector<std::int64_t> spans;
  for (std::size_t k = 0; k < steps; ++k) {
    if (last[k] > first[k]) spans.push_back(last[k] - first[k]);
  }
  // An actual span: the upper middle one of an even count.
  const std::int64_t median = upper_middle(spans);
  const std::int64_t threshold =
      std::max(options.min_gap_ns, saturating_multiply(median, options.gap_steps));

  std::optional<JobKind> previous;
  std::int64_t max_end = jobs[0].end_ns;
  for (std::size_t i = 0; i < n; ++i) {
    const Job& job = jobs[i];
    const JobKind kind = kinds.kind[job.type];
    if (i > 0 && job.start_ns > max_end && job.start_ns - max_end > threshold) {
      std::size_t j = i;
      while (j < n && !steers_steps(kinds.kind[jobs[j].type])) ++j;
      const bool starts_over =
          j < n && (kinds.kind[jobs[j].type] == JobKind::lr ||
                    (kinds.kind[jobs[j].type] == JobKind::forward && jobs[j].micro_batch == 0));
      // Cut mid-step: the job after the gap opens no step (it continues the
      // step in progress by the rule), or the step before the gap ran fewer
      // forward, backward and optimizer jobs than the step before it.
      const auto before = static_cast<std::size_t>(step_of[i - 1]);
      const bool cut =
          !opens_step(job, kind, previous) || (before > 0 && fbo[before] < fbo[before - 1]);
      if (starts_over && cut) {
        out.push_back(
            {max_end, job.start_ns, LaunchSignal::restart_after_gap, where(device, job.line)});
      }
    }
    if (steers_steps(kind)) previous = kind;
    max_end = std::max(max_end, job.end_ns);
  }
}

/// The union of a device's job intervals (jobs in start order).
std::vector<std::pair<std::int64_t, std::int64_t>> busy_union(const Device& device) {
  std::vector<std::pair<std::int64_t, std::int64_t>> merged;
  for (const Job& job : device.jobs) {
    if (!merged.empty() && job.start_ns <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, job.end_ns);
    } else {
      merged.emplace_back(job.start_ns, job.end_ns);
    }
  }
  return merged;
}

/// Appends the intervals of `merged` (one device's busy union) that end
/// after `from` and start before `to`.
void append_inside(const std::vector<std::pair<std::int64_t, std::int64_t>>& merged,
                   std::int64_t from, std::int64_t to,
                   std::vector<std::pair<std::int64_t, std::int64_t>>& inside) {
  // The first interval that ends after `from`, and on while they start before `to`.
  auto it = std::lower_bound(merged.begin(), merged.end(), from,
                             [](const auto& iv, std::int64_t t) { return iv.second <= t; });
  for (; it != merged.end() && it->first < to; ++it) inside.push_back(*it);
}

/// The end of the longest time in [from, to] during which no device runs a
/// job, when it lasts at least `min_ns`: `inside` holds every device's busy
/// intervals that meet it, in any order.
std::optional<std::int64_t> all_idle_cut(std::vector<std::pair<std::int64_t, std::int64_t>> inside,
                                         std::int64_t from, std::int64_t to, std::int64_t min_ns) {
  std::sort(inside.begin(), inside.end());
  std::int64_t cursor = from, best_length = -1, best_end = 0;
  auto consider = [&](std::int64_t gap_end) {
    if (gap_end - cursor > best_length) {
      best_length = gap_end - cursor;
      best_end = gap_end;
    }
  };
  for (const auto& [start, end] : inside) {
    if (start > cursor) consider(std::min(start, to));
    cursor = std::max(cursor, end);
    if (cursor >= to) break;
  }
  if (cursor < to) consider(to);
  if (best_length < min_ns) return std::nullopt;
  return best_end;
}

/// N of the step-start line that opens `segment` on `device`: the last one
/// before the device's first job in it and after its jobs of earlier
/// segments (in line order).
std::optional<std::int64_t> opening_step(const Device& device, std::size_t segment) {
  const auto [first, last] = device.segment_jobs(segment);
  if (first == last) return std::nullopt;
  std::uint64_t min_line = std::numeric_limits<std::uint64_t>::max(), earlier_max = 0;
  for (std::size_t i = first; i < last; ++i)
    min_line = std::min<std::uint64_t>(min_line, device.jobs[i].line);
  for (std::size_t i = 0; i < first; ++i)
    earlier_max = std::max<std::uint64_t>(earlier_max, device.jobs[i].line);
  std::optional<std::int64_t> step;
  for (const StepStartLine& m : device.step_starts) {
    if (m.line < min_line && (first == 0 || m.line > earlier_max)) step = m.step;
  }
  return step;
}

}  // namespace

DeviceLaunchEvidence device_launch_evidence(const Device& device, const TypeKinds& kinds,
                                            const SegmentOptions& options) {
  DeviceLaunchEvidence out;
  step_start_candidates(device, out.candidates, out.ignored);
  gap_candidates(device, kinds, options, out.candidates);
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> busy_between(const Device& device,
                                                                std::int64_t from,
                                                                std::int64_t to) {
  std::vector<std::pair<std::int64_t, std::int64_t>> inside;
  append_inside(busy_union(device), from, to, inside);
  return inside;
}

LaunchCuts decide_launch_cuts(const std::vector<DeviceLaunchEvidence>& devices,
                              const BusyBetween& busy, const SegmentOptions& options) {
  LaunchCuts out;
  for (const DeviceLaunchEvidence& device : devices) {
    for (const IgnoredLaunchSignal& signal : device.ignored) out.ignored.push_back(signal);
  }
  // Candidates come per device, step-start lines first: each device is
  // named once per cut, by its strongest sign.
  for (const DeviceLaunchEvidence& device : devices) {
    std::vector<std::int64_t> named;  // cuts this device is already named at
    for (const Candidate& c : device.candidates) {
      // A profiling window needs no long gap: the time between windows
      // was simply not traced (any all-idle moment will do).
      const auto at =
          all_idle_cut(busy(c.stop_ns, c.restart_ns), c.stop_ns, c.restart_ns,
                       c.found_by == LaunchSignal::profiler_window ? 0 : options.min_gap_ns);
      if (!at) {
        out.ignored.push_back({c.found_by, c.where});
        continue;
      }
      auto same = std::find_if(out.cuts.begin(), out.cuts.end(),
                               [&](const LaunchCut& k) { return k.at == *at; });
      if (same == out.cuts.end()) {
        out.cuts.push_back({*at, c.found_by, {}});
        same = out.cuts.end() - 1;
      } else if (c.found_by == LaunchSignal::step_start_line ||
                 c.found_by == LaunchSignal::profiler_window) {
        same->found_by = c.found_by;
      }
      if (std::find(named.begin(), named.end(), *at) == named.end()) {
        same->evidence.push_back(c.where);
        named.push_back(*at);
      }
    }
  }
  std::sort(out.cuts.begin(), out.cuts.end(),
            [](const LaunchCut& a, const LaunchCut& b) { return a.at < b.at; });
  return out;
}

void cut_device(Device& device, const std::vector<LaunchCut>& cuts) {
  device.segment_begin.assign(cuts.size() + 1, 0);
  for (std::size_t s = 1; s <= cuts.size(); ++s) {
    device.segment_begin[s] = static_cast<std::size_t>(
        std::lower_bound(device.jobs.begin(), device.jobs.end(), cuts[s - 1].at,
                         [](const Job& job, std::int64_t t) { return job.start_ns < t; }) -
        device.jobs.begin());
  }
}

std::vector<SegmentNumbering> device_segment_numbering(const Device& device, const TypeKinds& kinds,
                                                       std::size_t segments) {
  std::vector<SegmentNumbering> out(segments);
  for (std::size_t s = 0; s < segments; ++s) {
    out[s].opening_step = opening_step(device, s);
    if (segments > 1) {
      const auto [first, last] = device.segment_jobs(s);
      std::vector<std::int32_t> step_of(last - first);
      out[s].steps = assign_steps(device.jobs, first, last, kinds, step_of);
    }
  }
  return out;
}

void add_segment_numbering(std::vector<SegmentNumbering>& into,
                           const std::vector<SegmentNumbering>& device) {
  if (into.empty()) into.resize(device.size());
  for (std::size_t s = 0; s < into.size() && s < device.size(); ++s) {
    const auto& n = device[s].opening_step;
    if (n && (!into[s].opening_step || *n < *into[s].opening_step)) into[s].opening_step = n;
    into[s].steps = std::max(into[s].steps, device[s].steps);
  }
}

void number_launch_segments(LaunchCuts&& cuts, const std::vector<SegmentNumbering>& numbering,
                            const SegmentOptions& options, Run& run) {
  run.segments.assign(cuts.cuts.size() + 1, LaunchSegment{});
  for (std::size_t s = 0; s < run.segments.size(); ++s) {
    LaunchSegment& segment = run.segments[s];
    segment.index = static_cast<int>(s);
    if (s > 0) {
      segment.found_by = cuts.cuts[s - 1].found_by;
      auto& evidence = cuts.cuts[s - 1].evidence;
      if (evidence.size() > kEvidenceItems) {
        const std::size_t more = evidence.size() - kEvidenceItems;
        evidence.resize(kEvidenceItems);
        evidence.push_back(fmt::format("{} more", more));
      }
      segment.evidence = std::move(evidence);
    }
  }
  // Numbering: each segment from its own step-start lines, else on from the
  // previous segment's last step.
  std::int64_t next = run.first_step.value_or(0);
  for (std::size_t s = 0; s < run.segments.size(); ++s) {
    LaunchSegment& segment = run.segments[s];
    std::optional<std::int64_t> marked =
        s < numbering.size() ? numbering[s].opening_step : std::nullopt;
    const std::int32_t steps = s < numbering.size() ? numbering[s].steps : 0;
    if (s == 0 && options.first_step) marked.reset();
    segment.numbered_by_line = marked.has_value();
    segment.first_step = s == 0 && options.first_step ? *options.first_step : marked.value_or(next);
    next = segment.first_step + steps;
  }
  if (run.segments.front().numbered_by_line || options.first_step) {
    run.first_step = run.segments.front().first_step;
  }
}

std::vector<IgnoredLaunchSignal> split_launch_segments(Run& run, const SegmentOptions& options) {
  run.segments.clear();
  const TypeKinds kinds(run.types);
  // Devices are independent: each one's candidates (and the step-start
  // lines it ignores) found in parallel, then taken in device order.
  std::vector<DeviceLaunchEvidence> evidence(run.devices.size());
  tbb::parallel_for(std::size_t{0}, run.devices.size(), [&](std::size_t d) {
    evidence[d] = device_launch_evidence(run.devices[d], kinds, options);
  });
  const bool any = std::any_of(evidence.begin(), evidence.end(),
                               [](const auto& e) { return !e.candidates.empty(); });
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> unions;
  if (any) {
    for (const Device& device : run.devices) unions.push_back(busy_union(device));
  }
  LaunchCuts cuts = decide_launch_cuts(
      evidence,
      [&](std::int64_t from, std::int64_t to) {
        std::vector<std::pair<std::int64_t, std::int64_t>> inside;
        for (const auto& merged : unions) append_inside(merged, from, to, inside);
        return inside;
      },
      options);
  std::vector<IgnoredLaunchSignal> ignored = std::move(cuts.ignored);
  for (Device& device : run.devices) cut_device(device, cuts.cuts);
  std::vector<SegmentNumbering> numbering;
  for (const Device& device : run.devices) {
    add_segment_numbering(numbering, device_segment_numbering(device, kinds, cuts.cuts.size() + 1));
  }
  number_launch_segments(std::move(cuts), numbering, options, run);
  return ignored;
}

void select_launch_segment(Run& run, std::size_t position) {
  std::vector<char> in_segment;
  for (const Device& device : run.devices) {
    const auto [first, last] = device.segment_jobs(position);
    in_segment.push_back(first < last ? 1 : 0);
  }
  select_launch_segment(run, position, in_segment);
}

void select_launch_segment(Run& run, std::size_t position, const std::vector<char>& in_segment) {
  if (position >= run.segments.size()) {
    throw std::out_of_range(
        fmt::format("no segment at position {} of {}", position, run.segments.size()));
  }
  const LaunchSegment chosen = run.segments[position];
  std::vector<Device> kept;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    Device& device = run.devices[d];
    if (!in_segment[d]) {
      run.left_out.push_back({device.index, device.machine, device.machine_name, device.rank,
                              device.path, "not_in_segment"});
      continue;
    }
    const auto [first, last] = device.segment_jobs(position);
    device.jobs.erase(device.jobs.begin() + static_cast<std::ptrdiff_t>(last), device.jobs.end());
    device.jobs.erase(device.jobs.begin(),
                      device.jobs.begin() + static_cast<std::ptrdiff_t>(first));
    device.segment_begin.assign(1, 0);
    kept.push_back(std::move(device));
  }
  run.devices = std::move(kept);
  run.segments.assign(1, chosen);
  run.first_step = chosen.first_step;
}

}  // namespace pipescope
