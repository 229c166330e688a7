#include "analysis/step_partition.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace pipescope {

std::size_t StepPartition::owner(std::size_t step) const {
  // The last part whose first step is at or before `step`; empty parts share
  // their first step with the next one, which is the owner.
  const auto it = std::upper_bound(bounds.begin(), bounds.end() - 1, step);
  return static_cast<std::size_t>(it - bounds.begin()) - 1;
}

std::span<StepWindow> StepPartition::windows(std::vector<StepWindow>& steps,
                                             std::size_t part) const {
  return std::span<StepWindow>(steps).subspan(bounds[part], bounds[part + 1] - bounds[part]);
}

std::size_t StepPartition::first_overlapping(std::int64_t t) const {
  // Spans are ordered (an empty part's span sits at its neighbours' edge):
  // the first one ending after t.
  const auto it = std::upper_bound(span_end.begin(), span_end.end(), t);
  return static_cast<std::size_t>(it - span_end.begin());
}

void StepPartition::widen(std::span<const StepWindow> other) {
  for (std::size_t q = 0; q < parts(); ++q) {
    const std::size_t first = bounds[q], last = std::min(bounds[q + 1], other.size());
    if (first >= last || span_start[q] == span_end[q]) continue;
    span_start[q] = std::min(span_start[q], other[first].start_ns);
    span_end[q] = std::max(span_end[q], other[last - 1].end_ns);
  }
  // Spans stay ordered for the search (first_overlapping): each part's end
  // is at least the ends before it.
  for (std::size_t q = 1; q < parts(); ++q) span_end[q] = std::max(span_end[q], span_end[q - 1]);
}

StepPartition partition_steps(std::span<const std::uint64_t> jobs_per_step,
                              std::span<const StepWindow> steps, std::size_t parts) {
  if (parts == 0) throw std::invalid_argument("partition_steps: no part");
  if (jobs_per_step.size() != steps.size()) {
    throw std::invalid_argument("partition_steps: one job count per step");
  }
  std::uint64_t total = 0;
  for (const std::uint64_t n : jobs_per_step) total += n;
  StepPartition plan;
  plan.bounds.assign(parts + 1, steps.size());
  plan.bounds[0] = 0;
  // Part p ends after the first step at which the jobs so far reach
  // p/parts of the total (compared as integers: so * parts >= total * p).
  std::uint64_t so_far = 0;
  std::size_t p = 1;
  for (std::size_t k = 0; k < steps.size() && p < parts; ++k) {
    so_far += jobs_per_step[k];
    while (p < parts && static_cast<unsigned __int128>(so_far) * parts >=
                            static_cast<unsigned __int128>(total) * p) {
      plan.bounds[p++] = k + 1;
    }
  }
  plan.span_start.resize(parts);
  plan.span_end.resize(parts);
  std::int64_t edge = steps.empty() ? 0 : steps.front().start_ns;
  for (std::size_t q = 0; q < parts; ++q) {
    const std::size_t first = plan.bounds[q], last = plan.bounds[q + 1];
    if (first == last) {
      plan.span_start[q] = plan.span_end[q] = edge;
      continue;
    }
    plan.span_start[q] = steps[first].start_ns;
    plan.span_end[q] = steps[last - 1].end_ns;
    edge = plan.span_end[q];
  }
  return plan;
}

std::pair<std::size_t, std::size_t> span_neighbours(const Device& device, const TypeKinds& kinds,
                                                    const StepPartition& plan, std::size_t part) {
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::pair<std::size_t, std::size_t> out{kNone, kNone};
  if (plan.bounds[part] == plan.bounds[part + 1]) return out;  // no window, no bubble
  const std::int64_t start = plan.span_start[part], end = plan.span_end[part];
  const auto busy = [&](const Job& job) {
    return job.end_ns > job.start_ns &&
           !(job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm);
  };
  const auto& jobs = device.jobs;
  // Jobs are in start order: those that may end by `start` begin before it.
  std::int64_t latest = 0;
  for (std::size_t i = 0; i < jobs.size() && jobs[i].start_ns < start; ++i) {
    if (!busy(jobs[i]) || jobs[i].end_ns > start) continue;
    if (out.first == kNone || jobs[i].end_ns > latest) {
      out.first = i;
      latest = jobs[i].end_ns;
    }
  }
  const auto after =
      std::lower_bound(jobs.begin(), jobs.end(), end,
                       [](const Job& job, std::int64_t t) { return job.start_ns < t; });
  for (auto it = after; it != jobs.end(); ++it) {
    if (busy(*it)) {
      out.second = static_cast<std::size_t>(it - jobs.begin());
      break;
    }
  }
  return out;
}

std::vector<std::vector<std::size_t>> device_part_indices(const Device& device,
                                                          std::span<const std::int32_t> job_step,
                                                          const TypeKinds& kinds,
                                                          const StepPartition& plan) {
  const std::size_t n = std::min(device.jobs.size(), job_step.size());
  const std::size_t parts = plan.parts();
  const auto& jobs = device.jobs;
  // Each part's first and last job of its own steps on this device.
  std::vector<std::size_t> lo(parts, n), hi(parts, 0);
  // The jobs a part needs for their time only, ascending (one pass).
  std::vector<std::vector<std::size_t>> extra(parts);
  for (std::size_t i = 0; i < n; ++i) {
    const auto step = static_cast<std::size_t>(job_step[i]);
    const std::size_t own = plan.owner(step);
    lo[own] = std::min(lo[own], i);
    hi[own] = i + 1;
    plan.for_each_recipient(jobs[i].start_ns, jobs[i].end_ns, step, [&](std::size_t p) {
      if (p != own) extra[p].push_back(i);
    });
  }
  // span_neighbours for every part at once: the busy job (not comm, not of
  // zero length) with the latest end at or before the span's start (ties:
  // the first in start order), and the first busy job starting at or after
  // its end.
  const auto busy = [&](std::size_t i) {
    const Job& job = jobs[i];
    return job.end_ns > job.start_ns &&
           !(job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm);
  };
  // 32-bit positions: a device of 4 billion jobs (190 GB) is no device.
  std::vector<std::uint32_t> by_end;
  if (parts > 1) {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (busy(i)) by_end.push_back(static_cast<std::uint32_t>(i));
    }
    std::sort(by_end.begin(), by_end.end(), [&](std::uint32_t a, std::uint32_t b) {
      return jobs[a].end_ns != jobs[b].end_ns ? jobs[a].end_ns < jobs[b].end_ns : a < b;
    });
  }
  std::vector<std::vector<std::size_t>> out(parts);
  for (std::size_t q = 0; q < parts; ++q) {
    std::vector<std::size_t>& list = out[q];
    for (std::size_t i = lo[q]; i < hi[q]; ++i) list.push_back(i);
    for (const std::size_t i : extra[q]) {
      if (i < lo[q] || i >= hi[q]) list.push_back(i);
    }
    std::vector<std::size_t>().swap(extra[q]);
    if (plan.bounds[q] != plan.bounds[q + 1] && parts > 1) {
      const std::int64_t start = plan.span_start[q], end = plan.span_end[q];
      auto it =
          std::upper_bound(by_end.begin(), by_end.end(), start,
                           [&](std::int64_t t, std::uint32_t i) { return t < jobs[i].end_ns; });
      if (it != by_end.begin()) {
        const std::int64_t latest = jobs[*std::prev(it)].end_ns;
        const auto first =
            std::lower_bound(by_end.begin(), it, latest,
                             [&](std::uint32_t i, std::int64_t t) { return jobs[i].end_ns < t; });
        if (*first < n) list.push_back(*first);
      }
      const auto after =
          std::lower_bound(jobs.begin(), jobs.end(), end,
                           [](const Job& job, std::int64_t t) { return job.start_ns < t; });
      for (auto j = static_cast<std::size_t>(after - jobs.begin()); j < n; ++j) {
        if (busy(j)) {
          list.push_back(j);
          break;
        }
      }
    }
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return out;
}

std::vector<std::size_t> part_job_indices(const Device& device,
                                          std::span<const std::int32_t> job_step,
                                          const TypeKinds& kinds, const StepPartition& plan,
                                          std::size_t part) {
  return std::move(device_part_indices(device, job_step, kinds, plan)[part]);
}

PartRun empty_part(const Run& run) {
  PartRun out;
  out.run.types = run.types;
  out.run.first_step = run.first_step;
  out.run.segments = run.segments;
  out.run.time_resolution_ns = run.time_resolution_ns;
  out.run.devices.resize(run.devices.size());
  out.job_step.resize(run.devices.size());
  out.job_index.resize(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& from = run.devices[d];
    Device& to = out.run.devices[d];
    to.index = from.index;
    to.machine = from.machine;
    to.machine_name = from.machine_name;
    to.rank = from.rank;
    to.path = from.path;
    to.cut_ns = from.cut_ns;
  }
  return out;
}

PartRun head_part(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                  std::int32_t steps) {
  PartRun out = empty_part(run);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size() && i < job_step[d].size(); ++i) {
      if (job_step[d][i] < 0 || job_step[d][i] >= steps) continue;
      out.run.devices[d].jobs.push_back(jobs[i]);
      out.job_step[d].push_back(job_step[d][i]);
      out.job_index[d].push_back(i);
      ++out.owned_jobs;
    }
  }
  return out;
}

PartRun cut_part(const Run& run, const TypeKinds& kinds,
                 const std::vector<std::vector<std::int32_t>>& job_step, const StepPartition& plan,
                 std::size_t part) {
  PartRun out = empty_part(run);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& from = run.devices[d];
    Device& to = out.run.devices[d];
    for (const std::size_t i : part_job_indices(from, job_step[d], kinds, plan, part)) {
      to.jobs.push_back(from.jobs[i]);
      out.job_step[d].push_back(job_step[d][i]);
      out.job_index[d].push_back(i);
      if (plan.owner(static_cast<std::size_t>(job_step[d][i])) == part) ++out.owned_jobs;
    }
  }
  return out;
}

}  // namespace pipescope
