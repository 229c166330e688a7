#include "export/html_report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <optional>

#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/comm_jobs.h"
#include "analysis/critical_path.h"
#include "analysis/explanation.h"
#include "analysis/job_kind.h"
#include "analysis/job_role.h"
#include "export/json_writer.h"
#include "export/summary_figures.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

/// The first window (index into metrics.steps) that ends after `t`.
std::size_t first_window_after(const Metrics& metrics, std::int64_t t) {
  return static_cast<std::size_t>(
      std::lower_bound(metrics.steps.begin(), metrics.steps.end(), t,
                       [](const StepWindow& w, std::int64_t at) { return w.end_ns <= at; }) -
      metrics.steps.begin());
}

std::int32_t step_of_job(const Metrics& metrics, std::size_t d, std::size_t i) {
  if (d >= metrics.job_step.size() || i >= metrics.job_step[d].size()) return -1;
  return metrics.job_step[d][i];
}

/// Calls f(step, job) for every (step, job) of device d that embedding the
/// step would draw: the step's own jobs and the other jobs that overlap its
/// window; each job once per step, jobs in ascending order.
template <typename F>
void for_each_step_job(const Metrics& metrics, const Device& device, std::size_t d, F&& f) {
  const std::size_t steps = metrics.steps.size();
  for (std::size_t i = 0; i < device.jobs.size(); ++i) {
    const Job& job = device.jobs[i];
    const std::int32_t own = step_of_job(metrics, d, i);
    bool own_done = own < 0 || static_cast<std::size_t>(own) >= steps;
    for (std::size_t k = first_window_after(metrics, job.start_ns);
         k < steps && metrics.steps[k].start_ns < job.end_ns; ++k) {
      if (!html_draws_in_window(metrics.steps[k], job)) continue;
      own_done = own_done || static_cast<std::int32_t>(k) == own;
      f(k, i);
    }
    if (!own_done) f(static_cast<std::size_t>(own), i);
  }
}

/// A machine's clock correction of the job view (subtracted from its times).
std::int64_t job_clock_offset(const HtmlOptions& options, int machine) {
  if (options.pipeline == nullptr) return 0;
  for (const MachineClock& m : options.pipeline->clock.machines) {
    if (m.machine == machine) return m.offset_ns;
  }
  return 0;
}

/// The device position of each kernel-view rank (-1: no such device).
std::vector<int> rank_devices(const Run& run, const KernelView& view) {
  std::vector<int> out;
  for (const KernelRankView& r : view.ranks) {
    int position = -1;
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      if (run.devices[d].index == r.device) position = static_cast<int>(d);
    }
    out.push_back(position);
  }
  return out;
}

/// A NCCL kernel's times on the job view's clock.
struct NcclSlice {
  std::int64_t start = 0;
  std::int64_t transfer_from = 0;
  std::int64_t end = 0;
  int waited_on = -1;
  std::size_t rank = 0;  // index into KernelView::ranks
  std::size_t slice = 0;
};

/// Calls f(step, slice) for every NCCL kernel of the kernel view that
/// starts in a step window, with its device position.
template <typename F>
void for_each_nccl(const Run& run, const Metrics& metrics, const HtmlOptions& options, F&& f) {
  if (options.kernels == nullptr || !options.kernels->available) return;
  const KernelView& view = *options.kernels;
  const std::vector<int> devices = rank_devices(run, view);
  for (std::size_t r = 0; r < view.ranks.size(); ++r) {
    if (devices[r] < 0) continue;
    const KernelRankView& rank = view.ranks[r];
    // Back to the trace's clock, then onto the job view's.
    const std::int64_t shift = rank.clock_offset_ns - job_clock_offset(options, rank.machine);
    for (std::size_t s = 0; s < rank.comm.size(); ++s) {
      const KernelCommSlice& c = rank.comm[s];
      NcclSlice slice{c.start + shift, c.transfer_from + shift, c.end + shift, c.waited_on, r, s};
      const std::size_t k = first_window_after(metrics, slice.start);
      if (k < metrics.steps.size() && metrics.steps[k].start_ns <= slice.start) {
        f(k, static_cast<std::size_t>(devices[r]), slice);
      }
    }
  }
}

/// The run's job count: the facts' when given (the run then holds only
/// some of its jobs).
std::uint64_t html_run_jobs(const Run& run, const HtmlOptions& options) {
  return options.facts != nullptr ? static_cast<std::uint64_t>(options.facts->jobs())
                                  : run.job_count();
}

void put_ints(fmt::memory_buffer& out, std::string_view key, const std::vector<std::int64_t>& v) {
  fmt::format_to(std::back_inserter(out), "\"{}\":[", key);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    fmt::format_to(std::back_inserter(out), "{}", v[i]);
  }
  out.push_back(']');
}

void put_string(fmt::memory_buffer& out, std::string_view key, std::string_view value) {
  fmt::format_to(std::back_inserter(out), "\"{}\":", key);
  append_json_string(out, value);
}

/// One embedded step's device: its jobs (indices into Device::jobs, sorted)
/// and the arrays written for it.
struct DeviceSlice {
  std::vector<std::uint32_t> jobs;
  std::vector<std::int64_t> bubbles, comm, nccl;
  /// Local index of device job `j`, or -1 when it is not embedded here.
  std::int64_t local(std::uint32_t j) const {
    const auto it = std::lower_bound(jobs.begin(), jobs.end(), j);
    return it != jobs.end() && *it == j ? it - jobs.begin() : -1;
  }
};

}  // namespace

const char* html_kind_color(JobKind kind) {
  switch (kind) {
    case JobKind::forward:
      return "#4e79a7";
    case JobKind::backward:
      return "#59a14f";
    case JobKind::optimizer:
      return "#f28e2b";
    case JobKind::comm:
      return "#9d9d9d";
    case JobKind::other:
      return "#b07aa1";
    case JobKind::lr:
      return "#edc948";
  }
  return "#b07aa1";
}

const char* html_compute_color(PipelineRole role, std::int32_t chunk) {
  static constexpr const char* kForward[] = {"#4e79a7", "#2b5d8c", "#6f94c2", "#1d4470"};
  static constexpr const char* kBackward[] = {"#59a14f", "#3b7d33", "#74b86a", "#2a5e24"};
  static constexpr const char* kWeight[] = {"#499894", "#2f7672", "#66b3ae", "#215955"};
  const auto i = static_cast<std::size_t>(chunk < 0 ? 0 : chunk % 4);
  switch (role) {
    case PipelineRole::forward:
      return kForward[i];
    case PipelineRole::backward:
      return kBackward[i];
    case PipelineRole::weight:
      return kWeight[i];
    default:
      return nullptr;
  }
}

std::string html_device_label(const Device& d) {
  return fmt::format("GPU {} (m{})", d.index, d.machine);
}

HtmlDeviceRows html_device_rows(const Run& run, const Metrics& metrics,
                                const PipelineAnalysis* pipeline, std::size_t max_rows) {
  const std::size_t n = run.devices.size();
  HtmlDeviceRows out;
  const auto stage_of = [&](std::size_t d) {
    return pipeline != nullptr && d < pipeline->stages.stage_of.size()
               ? pipeline->stages.stage_of[d]
               : -1;
  };
  const auto busy = [&](std::size_t d) {
    return d < metrics.devices.size() ? metrics.devices[d].busy_ns : std::int64_t{0};
  };
  const auto idle = [&](std::size_t d) {
    return d < metrics.devices.size() ? metrics.devices[d].idle_ns : std::int64_t{0};
  };
  const auto within = [](std::int64_t lo, std::int64_t hi) {
    return static_cast<double>(hi) <= static_cast<double>(lo) * kHtmlFoldTolerance;
  };
  // By stage, then busy time: a row takes the next device while its busy
  // and idle time stay within 1% of the row's least.
  std::vector<std::size_t> order(n);
  for (std::size_t d = 0; d < n; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (stage_of(a) != stage_of(b)) return stage_of(a) < stage_of(b);
    return busy(a) < busy(b);
  });
  std::int64_t busy_lo = 0, idle_lo = 0, idle_hi = 0;
  for (const std::size_t d : order) {
    const bool joins =
        !out.rows.empty() && stage_of(d) >= 0 && stage_of(out.rows.back().front()) == stage_of(d) &&
        within(busy_lo, busy(d)) && within(std::min(idle_lo, idle(d)), std::max(idle_hi, idle(d)));
    if (joins) {
      out.rows.back().push_back(d);
      idle_lo = std::min(idle_lo, idle(d));
      idle_hi = std::max(idle_hi, idle(d));
    } else {
      out.rows.push_back({d});
      busy_lo = busy(d);
      idle_lo = idle_hi = idle(d);
    }
  }
  for (std::vector<std::size_t>& row : out.rows) std::sort(row.begin(), row.end());
  std::sort(out.rows.begin(), out.rows.end());
  out.drawn = std::min(out.rows.size(), max_rows);
  out.drawn_device.assign(n, false);
  for (std::size_t r = 0; r < out.drawn; ++r) out.drawn_device[out.rows[r].front()] = true;
  return out;
}

std::string html_row_label(const Run& run, const std::vector<std::size_t>& row) {
  const std::string first = html_device_label(run.devices[row.front()]);
  return row.size() == 1 ? first : fmt::format("{} \u00d7{}", first, row.size());
}

std::string html_row_alike(const Run& run, const Metrics& metrics,
                           const std::vector<std::size_t>& row) {
  std::vector<std::int64_t> indices;
  double lo = 1, hi = 0;
  for (const std::size_t d : row) {
    indices.push_back(run.devices[d].index);
    const double u = d < metrics.devices.size() ? metrics.devices[d].utilization : 0.0;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  std::sort(indices.begin(), indices.end());
  return fmt::format("{} devices ({}), utilization {}-{}", row.size(),
                     describe_number_ranges(indices), percent(lo), percent(hi));
}

std::string describe_number_ranges(const std::vector<std::int64_t>& numbers) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(numbers[i]);
    if (j > i) out += fmt::format("-{}", numbers[j]);
    i = j + 1;
  }
  return out;
}

std::string describe_step_indices(const Metrics& metrics, const std::vector<std::size_t>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1 &&
           metrics.steps[steps[j + 1]].segment == metrics.steps[steps[i]].segment) {
      ++j;
    }
    if (!out.empty()) out += ", ";
    out += step_label(metrics, steps[i]);
    if (j > i) out += fmt::format("-{}", metrics.steps[steps[j]].step);
    i = j + 1;
  }
  return out;
}

std::vector<std::uint64_t> html_step_costs(const Run& run, const Metrics& metrics,
                                           const HtmlOptions& options) {
  std::vector<std::uint64_t> costs(metrics.steps.size(), 0);
  const HtmlDeviceRows rows = html_device_rows(run, metrics, options.pipeline, options.max_rows);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!rows.drawn_device[d]) continue;
    for_each_step_job(metrics, run.devices[d], d, [&](std::size_t k, std::size_t) { ++costs[k]; });
  }
  for_each_nccl(run, metrics, options, [&](std::size_t k, std::size_t d, const NcclSlice&) {
    if (rows.drawn_device[d]) ++costs[k];
  });
  return costs;
}

std::vector<std::size_t> choose_embedded_steps(const std::vector<std::uint64_t>& costs,
                                               const std::vector<std::size_t>& drawn,
                                               std::uint64_t max_jobs, bool others) {
  std::vector<bool> taken(costs.size(), false);
  std::uint64_t total = 0;
  const auto take = [&](std::size_t k) {
    if (k >= costs.size() || taken[k] || costs[k] > max_jobs - total) return;
    taken[k] = true;
    total += costs[k];
  };
  for (const std::size_t k : drawn) take(k);
  for (std::size_t k = 0; others && k < costs.size(); ++k) take(k);
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < costs.size(); ++k) {
    if (taken[k]) out.push_back(k);
  }
  return out;
}

/// Comm jobs of the embedded steps: local index, wait, transfer, the data's
/// job and the peer (device, local index; -1 -1: not known or not embedded
/// here), into each slice's `comm`.
void fill_comm_jobs(std::vector<std::vector<DeviceSlice>>& parts, const Run& run,
                    const Dependencies& deps, const std::vector<JobRole>& roles) {
  CommJobSplitter splitter(run, deps, roles);
  for (std::size_t e = 0; e < parts.size(); ++e) {
    for (std::size_t d = 0; d < parts[e].size(); ++d) {
      for (const std::uint32_t j : parts[e][d].jobs) {
        splitter.add_consumer(JobRef{static_cast<std::uint32_t>(d), j});
      }
    }
  }
  for (std::size_t e = 0; e < parts.size(); ++e) {
    for (std::size_t d = 0; d < parts[e].size(); ++d) {
      DeviceSlice& part = parts[e][d];
      for (std::size_t l = 0; l < part.jobs.size(); ++l) {
        const JobRef ref{static_cast<std::uint32_t>(d), part.jobs[l]};
        if (!is_comm_job(run, roles, ref)) continue;
        const CommJobSplit s = splitter.split(ref);
        const auto place = [&](const std::optional<JobRef>& r) {
          const std::int64_t local =
              r && r->device < parts[e].size() ? parts[e][r->device].local(r->job) : -1;
          part.comm.push_back(local >= 0 ? r->device : -1);
          part.comm.push_back(local);
        };
        part.comm.insert(part.comm.end(), {static_cast<std::int64_t>(l), s.wait_ns, s.transfer_ns});
        place(s.data);
        place(s.peer);
      }
    }
  }
}

/// "types": each job type's name, kind, role, colour and chunk.
void put_types(fmt::memory_buffer& out, const Run& run, const std::vector<JobRole>& roles) {
  const auto put = [&](std::string_view text) { out.append(text); };
  for (TypeId t = 0; t < run.types.size(); ++t) {
    const std::string& name = run.types.name(t);
    const JobKind kind = classify_job_type(name);
    const JobRole role = t < roles.size() ? roles[t] : JobRole{};
    const char* shade = html_compute_color(role.role, role.chunk);
    put(t == 0 ? "{" : ",{");
    put_string(out, "name", name);
    put(",");
    put_string(out, "kind", job_kind_name(kind));
    put(",");
    put_string(out, "role", pipeline_role_name(role.role));
    put(",");
    put_string(out, "color", shade != nullptr ? shade : html_kind_color(kind));
    fmt::format_to(std::back_inserter(out), ",\"chunk\":{},\"chunked\":{}}}", role.chunk,
                   role.chunked ? "true" : "false");
  }
}

/// "devices": each device's row, label, path, place and global rank.
void put_devices(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
                 const HtmlOptions& options, const HtmlDeviceRows& rows) {
  const auto put = [&](std::string_view text) { out.append(text); };
  const PipelineAnalysis* a = options.pipeline;
  const std::size_t devices = run.devices.size();
  // row_of[d]: the row device d belongs to.
  std::vector<std::size_t> row_of(devices, 0);
  for (std::size_t r = 0; r < rows.rows.size(); ++r) {
    for (const std::size_t d : rows.rows[r]) row_of[d] = r;
  }
  for (std::size_t d = 0; d < devices; ++d) {
    const Device& device = run.devices[d];
    const int stage = a != nullptr && d < a->stages.stage_of.size() ? a->stages.stage_of[d] : -1;
    put(d == 0 ? "{" : ",{");
    const std::vector<std::size_t>& row = rows.rows[row_of[d]];
    if (!rows.drawn_device[d]) {
      put("\"row\":false,");
    } else if (row.size() > 1) {
      // "drawn for 8 devices, 0-7 (utilization 46.9%-47.1%)"
      put_string(out, "alike", html_row_alike(run, metrics, row));
      put(",");
    }
    put_string(out, "label", html_row_label(run, row));
    put(",");
    put_string(out, "path", device.path);
    fmt::format_to(std::back_inserter(out), ",\"index\":{},\"machine\":{},\"rank\":{},\"stage\":{}",
                   device.index, device.machine, device.rank, stage);
    int global_rank = -1;
    if (options.kernels != nullptr) {
      for (const KernelRankView& r : options.kernels->ranks) {
        if (r.device == device.index) global_rank = r.global_rank;
      }
    }
    fmt::format_to(std::back_inserter(out), ",\"global_rank\":{}}}", global_rank);
  }
}

/// One embedded step (`step`: its device slices; `k`: its index into
/// Metrics::steps): its window, figures, every device's jobs, bubbles, comm
/// jobs and NCCL kernels, the foreign jobs' step labels and its critical
/// path (`path`: where the walk through `paths` stands).
void put_step(fmt::memory_buffer& out, const Run& run, const Metrics& metrics,
              const PipelineAnalysis* a, const std::vector<DeviceSlice>& step, std::size_t k,
              std::int64_t origin, const std::vector<CriticalPath>& paths, std::size_t& path) {
  const auto put = [&](std::string_view text) { out.append(text); };
  const StepWindow& w = metrics.steps[k];
  put_string(out, "label", step_label(metrics, k));
  fmt::format_to(std::back_inserter(out),
                 ",\"index\":{},\"step\":{},\"segment\":{},\"start\":{},\"window\":{},"
                 "\"complete\":{},\"bubble_ratio\":",
                 k, w.step, w.segment, w.start_ns - origin, w.window_ns(),
                 w.complete ? "true" : "false");
  append_json_double(out, w.bubble_ratio);
  std::int64_t inherent = -1;
  if (a != nullptr && a->split.known && k < a->split.inherent.size() && w.complete) {
    inherent = 0;
    for (const std::int64_t ns : a->split.inherent[k]) inherent += ns;
  }
  std::uint64_t jobs = 0;
  for (const DeviceSlice& part : step) jobs += part.jobs.size();
  fmt::format_to(std::back_inserter(out), ",\"inherent\":{},\"jobs\":{},\"devices\":[", inherent,
                 jobs);
  for (std::size_t d = 0; d < step.size(); ++d) {
    const DeviceSlice& part = step[d];
    const JobVector& all = run.devices[d].jobs;
    std::vector<std::int64_t> start, duration, type, micro_batch, line, foreign;
    for (std::size_t l = 0; l < part.jobs.size(); ++l) {
      const Job& job = all[part.jobs[l]];
      start.push_back(job.start_ns - w.start_ns);
      duration.push_back(job.duration_ns());
      type.push_back(job.type);
      micro_batch.push_back(job.micro_batch);
      line.push_back(job.line);
      const std::int32_t own = step_of_job(metrics, d, part.jobs[l]);
      if (own != static_cast<std::int32_t>(k)) {
        foreign.push_back(static_cast<std::int64_t>(l));
        foreign.push_back(own);
      }
    }
    put(d == 0 ? "{" : ",{");
    put_ints(out, "start", start);
    put(",");
    put_ints(out, "dur", duration);
    put(",");
    put_ints(out, "type", type);
    put(",");
    put_ints(out, "mb", micro_batch);
    put(",");
    put_ints(out, "line", line);
    put(",");
    put_ints(out, "foreign", foreign);
    put(",");
    put_ints(out, "bubbles", part.bubbles);
    put(",");
    put_ints(out, "comm", part.comm);
    put(",");
    put_ints(out, "nccl", part.nccl);
    put("}");
  }
  put("],\"foreign_labels\":{");
  // Labels of the steps the foreign jobs belong to.
  std::vector<std::int64_t> others;
  for (std::size_t d = 0; d < step.size(); ++d) {
    const DeviceSlice& part = step[d];
    for (std::size_t l = 0; l < part.jobs.size(); ++l) {
      const std::int32_t own = step_of_job(metrics, d, part.jobs[l]);
      if (own != static_cast<std::int32_t>(k) && own >= 0 &&
          static_cast<std::size_t>(own) < metrics.steps.size()) {
        others.push_back(own);
      }
    }
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  for (std::size_t i = 0; i < others.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "{}\"{}\":", i == 0 ? "" : ",", others[i]);
    append_json_string(out, step_label(metrics, static_cast<std::size_t>(others[i])));
  }
  put("},");
  // The critical path: device, local index, wait before it, whether it
  // was entered through a dependency.
  std::vector<std::int64_t> critical;
  while (path < paths.size() && paths[path].step < k) ++path;
  if (path < paths.size() && paths[path].step == k) {
    for (const CriticalPathJob& j : paths[path].jobs) {
      const std::int64_t local =
          j.job.device < step.size() ? step[j.job.device].local(j.job.job) : -1;
      if (local < 0) continue;
      critical.insert(critical.end(), {static_cast<std::int64_t>(j.job.device), local, j.wait_ns,
                                       j.via_dependency ? 1 : 0});
    }
  }
  put_ints(out, "critical", critical);
}

/// NCCL kernels of the embedded steps, into each slice's `nccl`: start,
/// transfer from, end (from the step's start), the global rank waited on
/// (-1: none), the op's index into the list returned ("ops").
std::vector<std::string> fill_nccl(std::vector<std::vector<DeviceSlice>>& parts, const Run& run,
                                   const Metrics& metrics, const HtmlOptions& options,
                                   const HtmlDeviceRows& rows,
                                   const std::vector<std::int64_t>& slot) {
  std::vector<std::string> ops;
  std::map<std::string, std::size_t> op_ids;
  for_each_nccl(run, metrics, options, [&](std::size_t k, std::size_t d, const NcclSlice& s) {
    if (slot[k] < 0 || !rows.drawn_device[d]) return;
    const KernelRankView& rank = options.kernels->ranks[s.rank];
    std::string op = "nccl";
    std::string group;
    if (rank.source < run.kernels.size()) {
      const RankKernels& rk = run.kernels[rank.source];
      const std::size_t kernel = rank.comm[s.slice].kernel;
      if (kernel < rk.comm.size()) {
        if (!rk.comm[kernel].collective.empty()) op = rk.comm[kernel].collective;
        group = rk.comm[kernel].group_description.empty() ? rk.comm[kernel].group_name
                                                          : rk.comm[kernel].group_description;
      }
    }
    if (!rank.comm[s.slice].has_peers) op += " (no peer in the traces)";
    const std::string name = group.empty() ? op : op + " \u00b7 " + group;
    const auto [it, fresh] = op_ids.try_emplace(name, ops.size());
    if (fresh) ops.push_back(name);
    const std::int64_t start = metrics.steps[k].start_ns;
    std::vector<std::int64_t>& out = parts[static_cast<std::size_t>(slot[k])][d].nccl;
    out.insert(out.end(), {s.start - start, s.transfer_from - start, s.end - start, s.waited_on,
                           static_cast<std::int64_t>(it->second)});
  });

  return ops;
}

std::string html_timeline_json(const Run& run, const Metrics& metrics, const HtmlOptions& options,
                               const std::vector<std::size_t>& embedded) {
  const PipelineAnalysis* a = options.pipeline;
  const std::size_t devices = run.devices.size();
  const std::vector<JobRole> roles = a != nullptr && a->roles.size() == run.types.size()
                                         ? a->roles
                                         : classify_job_roles(run.types);
  // slot[k]: position of step k among the embedded, or -1.
  std::vector<std::int64_t> slot(metrics.steps.size(), -1);
  for (std::size_t e = 0; e < embedded.size(); ++e) {
    slot[embedded[e]] = static_cast<std::int64_t>(e);
  }
  // Only the devices whose rows are drawn carry jobs (html_device_rows); a
  // reference to another device's job is "not embedded here".
  const HtmlDeviceRows rows = html_device_rows(run, metrics, a, options.max_rows);
  std::vector<std::vector<DeviceSlice>> parts(embedded.size(), std::vector<DeviceSlice>(devices));
  for (std::size_t d = 0; d < devices; ++d) {
    if (!rows.drawn_device[d]) continue;
    for_each_step_job(metrics, run.devices[d], d, [&](std::size_t k, std::size_t i) {
      if (slot[k] >= 0) {
        parts[static_cast<std::size_t>(slot[k])][d].jobs.push_back(static_cast<std::uint32_t>(i));
      }
    });
  }
  const auto local_of = [&](std::size_t e, JobRef r) -> std::int64_t {
    return r.device < devices ? parts[e][r.device].local(r.job) : -1;
  };

  // Bubbles: start, length, kind, inherent (-1: unknown), the jobs before
  // and after (local indices, -1: none here), and the input of the job
  // after on another stage (device, local index; -1 -1: none).
  static const Dependencies kNoDependencies;
  const Dependencies& deps = a != nullptr ? a->dependencies : kNoDependencies;
  const auto each_drawn_bubble = [&](const std::function<void(const Bubble&)>& visit) {
    for (std::size_t d = 0; d < devices; ++d) {
      if (rows.drawn_device[d]) for_each_device_bubble(run, metrics, d, visit);
    }
  };
  each_drawn_bubble([&](const Bubble& b) {
    if (b.step >= slot.size() || slot[b.step] < 0) return;
    const auto e = static_cast<std::size_t>(slot[b.step]);
    std::vector<std::int64_t>& out = parts[e][b.device].bubbles;
    const std::int64_t start = metrics.steps[b.step].start_ns;
    std::optional<std::int64_t> inherent;
    if (a != nullptr) inherent = bubble_inherent_ns(a->split, metrics, b);
    const auto local = [&](std::int64_t j) -> std::int64_t {
      return j < 0 ? -1
                   : local_of(e, JobRef{static_cast<std::uint32_t>(b.device),
                                        static_cast<std::uint32_t>(j)});
    };
    std::int64_t input_device = -1, input_local = -1;
    if (b.job_after >= 0 && a != nullptr) {
      const JobRef after{static_cast<std::uint32_t>(b.device),
                         static_cast<std::uint32_t>(b.job_after)};
      if (const auto in = input_producer(run, deps, roles, after)) {
        input_local = local_of(e, *in);
        if (input_local >= 0) input_device = in->device;
      }
    }
    out.insert(out.end(), {b.start_ns - start, b.length_ns(), static_cast<std::int64_t>(b.kind),
                           inherent.value_or(-1), local(b.job_before), local(b.job_after),
                           input_device, input_local});
  });

  if (a != nullptr) fill_comm_jobs(parts, run, deps, roles);

  const std::vector<std::string> ops = fill_nccl(parts, run, metrics, options, rows, slot);

  const std::vector<CriticalPath> paths =
      a != nullptr ? critical_paths_of_steps(run, metrics, a->stages, deps, roles, embedded)
                   : std::vector<CriticalPath>{};

  fmt::memory_buffer out;
  const auto put = [&](std::string_view text) { out.append(text); };
  std::uint64_t embedded_jobs = 0;
  for (const auto& step : parts) {
    for (const DeviceSlice& part : step) embedded_jobs += part.jobs.size() + part.nccl.size() / 5;
  }
  fmt::format_to(std::back_inserter(out),
                 "{{\"version\":1,\"max_jobs\":{},\"embedded_jobs\":{},\"run_jobs\":{},"
                 "\"run_steps\":{},\"kernels\":{},\"split\":{},",
                 options.max_embedded_jobs, embedded_jobs, html_run_jobs(run, options),
                 metrics.steps.size(),
                 options.kernels != nullptr && options.kernels->available ? "true" : "false",
                 a != nullptr && a->split.known ? "true" : "false");
  put("\"types\":[");
  put_types(out, run, roles);
  put("],\"devices\":[");
  put_devices(out, run, metrics, options, rows);
  put("],\"bottleneck\":");
  if (a != nullptr && has_bottleneck(a->bottleneck)) {
    fmt::format_to(std::back_inserter(out),
                   "{{\"stage\":{},\"imbalance\":", a->bottleneck.slowest_stage);
    append_json_double(out, a->bottleneck.imbalance);
    put("}");
  } else {
    put("null");
  }
  put(",\"ops\":[");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) put(",");
    append_json_string(out, ops[i]);
  }
  // The default choice's steps (html_report.h), by index into Metrics::steps.
  const std::vector<std::size_t> defaults = choose_html_steps(metrics, "");
  std::int64_t median = -1, slowest = -1;
  if (!defaults.empty()) {
    const auto window = [&](std::size_t k) { return metrics.steps[k].window_ns(); };
    const std::size_t a_step = defaults.front(), b_step = defaults.back();
    const bool b_slower = window(b_step) >= window(a_step);
    median = static_cast<std::int64_t>(b_slower ? a_step : b_step);
    slowest = static_cast<std::int64_t>(b_slower ? b_step : a_step);
    if (defaults.size() == 1) median = slowest;
  }
  fmt::format_to(std::back_inserter(out), "],\"median\":{},\"slowest\":{}", median, slowest);
  // The drawn steps, as positions among the embedded.
  put(",\"drawn\":[");
  bool first = true;
  for (const std::size_t k : options.steps) {
    if (k >= slot.size() || slot[k] < 0) continue;
    if (!first) out.push_back(',');
    fmt::format_to(std::back_inserter(out), "{}", slot[k]);
    first = false;
  }
  put("],\"steps\":[");
  const std::int64_t origin = metrics.steps.empty() ? 0 : metrics.steps.front().start_ns;
  std::size_t path = 0;
  for (std::size_t e = 0; e < embedded.size(); ++e) {
    put(e == 0 ? "{" : ",\n{");
    put_step(out, run, metrics, a, parts[e], embedded[e], origin, paths, path);
    put("}");
  }
  put("]}");
  // '<' only occurs inside strings, where \u003c is the same character.
  std::string json;
  json.reserve(out.size() + 64);
  for (const char c : out) {
    if (c == '<') {
      json += "\\u003c";
    } else {
      json += c;
    }
  }
  return json;
}

}  // namespace pipescope
