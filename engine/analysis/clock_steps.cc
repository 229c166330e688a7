#include "analysis/clock_steps.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "analysis/step_rule.h"

namespace pipescope {

namespace {

/// Where a device's jobs, in the order they were written, jump back: the
/// first compute job that starts at least `min_step` before an earlier
/// compute job ended.
struct BackJump {
  /// The line of the first job in the new clock: it and every later line move.
  std::uint32_t line = 0;
  /// How far it starts before the latest earlier end (at most the step).
  std::int64_t overlap = 0;
  /// The jobs on either side: the one whose end was the latest before, and
  /// the first one after.
  std::size_t before = 0, after = 0;
  /// A job the step cut in two (its start before the step, its end after:
  /// it ends before it starts), if any.
  std::optional<std::size_t> cut_job;
};

/// Whether a job is one the clock steps read (a compute job: not comm).
bool read_for_steps(const Job& job, const TypeKinds& kinds) {
  return !(job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm);
}

/// Compute jobs of `device` in line order; empty when some job has no line.
std::vector<std::size_t> written_order(const Device& device, const TypeKinds& kinds) {
  std::vector<std::size_t> order;
  order.reserve(device.jobs.size());  // no copies as it grows
  for (std::size_t i = 0; i < device.jobs.size(); ++i) {
    const Job& job = device.jobs[i];
    if (job.line == 0) return {};
    if (!read_for_steps(job, kinds)) continue;
    order.push_back(i);
  }
  const auto by_line = [&](std::size_t a, std::size_t b) {
    return device.jobs[a].line < device.jobs[b].line;
  };
  // Usually the lines are in start order already: one pass, no sort.
  if (!std::is_sorted(order.begin(), order.end(), by_line)) {
    std::stable_sort(order.begin(), order.end(), by_line);
  }
  return order;
}

/// Whether `job`, after `previous` in line order, jumps back as only a clock
/// can: by `min_step` or more before the latest end so far, and to before
/// `previous` started, or after a `previous` that ends before it starts (the
/// step fell inside it). A shorter jump back is an overlap, which one
/// device's timer can give (docs/guide.md, "Clock steps").
bool clock_jumps_back(const Job& job, const Job& previous, std::int64_t latest_end,
                      std::int64_t min_step) {
  return job.start_ns < latest_end - min_step &&
         (job.start_ns < previous.start_ns || previous.end_ns < previous.start_ns);
}

std::optional<BackJump> first_back_jump(const Device& device, const std::vector<std::size_t>& order,
                                        std::int64_t min_step) {
  std::int64_t latest_end = std::numeric_limits<std::int64_t>::min();
  std::size_t latest = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Job& job = device.jobs[order[k]];
    if (k > 0 && clock_jumps_back(job, device.jobs[order[k - 1]], latest_end, min_step)) {
      BackJump jump{job.line, latest_end - job.start_ns, latest, order[k], std::nullopt};
      if (const Job& before = device.jobs[order[k - 1]]; before.end_ns < before.start_ns) {
        jump.cut_job = order[k - 1];
      }
      return jump;
    }
    // A job that ends before it starts (cut by the step) says nothing of
    // where the device's clock stood: its start does.
    if (std::max(job.end_ns, job.start_ns) >= latest_end) {
      latest_end = std::max(job.end_ns, job.start_ns);
      latest = order[k];
    }
  }
  return std::nullopt;
}

/// The usual time from the end of a job like `jump.before` (its type and
/// micro-batch) to the start of the next job like `jump.after`, on the same
/// side of the step, in the device's other steps: what the device did
/// between them (a job the step cut, which the reader drops for ending
/// before it starts, or an idle gap). The median, if any.
std::optional<std::int64_t> usual_gap(const Device& device, const std::vector<std::size_t>& order,
                                      const BackJump& jump) {
  const Job& p = device.jobs[jump.before];
  const Job& n = device.jobs[jump.after];
  std::vector<std::int64_t> gaps;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Job& a = device.jobs[order[k]];
    if (order[k] == jump.before || a.type != p.type || a.micro_batch != p.micro_batch) continue;
    // The next like `after` within a few lines, not across the step.
    for (std::size_t j = k + 1; j < order.size() && j <= k + 8; ++j) {
      const Job& b = device.jobs[order[j]];
      if ((a.line < jump.line) != (b.line < jump.line)) break;
      if (b.type == n.type && b.micro_batch == n.micro_batch) {
        if (b.start_ns >= a.end_ns) gaps.push_back(b.start_ns - a.end_ns);
        break;
      }
    }
  }
  if (gaps.empty()) return std::nullopt;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

/// The median length of the device's other jobs of the same type as job
/// `i` (their ends after their starts), if it has any.
std::optional<std::int64_t> usual_length(const Device& device, std::size_t i) {
  std::vector<std::int64_t> lengths;
  for (std::size_t k = 0; k < device.jobs.size(); ++k) {
    const Job& job = device.jobs[k];
    if (k != i && job.type == device.jobs[i].type && job.end_ns > job.start_ns) {
      lengths.push_back(job.end_ns - job.start_ns);
    }
  }
  if (lengths.empty()) return std::nullopt;
  std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
  return lengths[lengths.size() / 2];
}

/// How many times jobs given in line order jump back by min_step or more:
/// in a log written in time order, once per clock step.
class BackJumps {
 public:
  explicit BackJumps(std::int64_t min_step) : min_step_(min_step) {}

  void add(const Job& job) {
    if (previous_ != nullptr && clock_jumps_back(job, *previous_, latest_end_, min_step_)) {
      ++count_;
      latest_end_ = job.start_ns;  // on from the new clock
    }
    latest_end_ = std::max(latest_end_, std::max(job.end_ns, job.start_ns));
    previous_ = &job;
  }
  std::size_t count() const { return count_; }

 private:
  std::int64_t min_step_;
  std::size_t count_ = 0;
  std::int64_t latest_end_ = std::numeric_limits<std::int64_t>::min();
  const Job* previous_ = nullptr;
};

/// BackJumps of the device's jobs at `order`.
std::size_t back_jumps(const Device& device, const std::vector<std::size_t>& order,
                       std::int64_t min_step) {
  BackJumps jumps(min_step);
  for (const std::size_t i : order) jumps.add(device.jobs[i]);
  return jumps.count();
}

/// The most clock steps of one machine looked for: more jumps than this (or
/// a different number on its devices) means lines out of time order.
constexpr std::size_t kMaxSteps = 4;

/// Where a device's jobs, in line order, jump forward: the first compute job
/// that lasts at least `min_step` longer than its type usually does on the
/// device (the step fell inside it), or the first pair of consecutive
/// compute jobs with at least `min_step` more between them than usual (it
/// fell between them).
struct ForwardJump {
  std::uint32_t line = 0;  ///< the first line wholly in the new clock
  std::int64_t size = 0;   ///< the excess over the usual: the step, as this device sees it
  std::int64_t from = 0;   ///< the step lies in [from, to - size] (old clock)
  std::int64_t to = 0;
  std::optional<std::size_t> stretched_job;  ///< the job the step fell in
};

std::optional<ForwardJump> first_forward_jump(const Device& device,
                                              const std::vector<std::size_t>& order,
                                              std::int64_t min_step) {
  // The usual length of each type, and the usual time between each pair of
  // consecutive jobs (by type and micro-batch), over the whole device: one
  // pass each, so a device of millions of jobs is looked at in linear time.
  const auto median = [](std::vector<std::int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::map<TypeId, std::vector<std::int64_t>> lengths;
  using PairKey = std::tuple<TypeId, std::int64_t, TypeId, std::int64_t>;
  std::map<PairKey, std::vector<std::int64_t>> gaps;
  const auto key_of = [&](std::size_t k) {
    const Job& a = device.jobs[order[k]];
    const Job& b = device.jobs[order[k + 1]];
    return PairKey{a.type, a.micro_batch, b.type, b.micro_batch};
  };
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Job& job = device.jobs[order[k]];
    if (job.end_ns > job.start_ns) lengths[job.type].push_back(job.end_ns - job.start_ns);
    if (k + 1 < order.size()) {
      const std::int64_t gap = device.jobs[order[k + 1]].start_ns - job.end_ns;
      if (gap >= 0) gaps[key_of(k)].push_back(gap);
    }
  }
  std::map<TypeId, std::int64_t> usual_length_of;
  for (auto& [type, v] : lengths) {
    if (v.size() >= 3) usual_length_of[type] = median(v);
  }
  std::map<PairKey, std::int64_t> usual_gap_of;
  for (auto& [key, v] : gaps) {
    if (v.size() >= 3) usual_gap_of[key] = median(v);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Job& job = device.jobs[order[k]];
    const std::uint32_t next = k + 1 < order.size() ? device.jobs[order[k + 1]].line
                                                    : std::numeric_limits<std::uint32_t>::max();
    if (const auto u = usual_length_of.find(job.type); u != usual_length_of.end()) {
      const std::int64_t excess = job.end_ns - job.start_ns - u->second;
      if (excess >= min_step) return ForwardJump{next, excess, job.start_ns, job.end_ns, order[k]};
    }
    if (k + 1 == order.size()) break;
    const Job& after = device.jobs[order[k + 1]];
    const std::int64_t gap = after.start_ns - job.end_ns;
    if (const auto u = usual_gap_of.find(key_of(k)); u != usual_gap_of.end()) {
      if (gap - u->second >= min_step) {
        return ForwardJump{after.line, gap - u->second, job.end_ns, after.start_ns, std::nullopt};
      }
    }
  }
  return std::nullopt;
}

/// Each device's steps by the contract's rule (device-local numbering).
std::vector<std::vector<std::int32_t>> local_steps(const Run& run, const TypeKinds& kinds) {
  std::vector<std::vector<std::int32_t>> steps(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const JobVector& jobs = run.devices[d].jobs;
    steps[d].resize(jobs.size());
    assign_steps(jobs, 0, jobs.size(), kinds, steps[d]);
  }
  return steps;
}

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

/// How far the machine's steps begin after the other machines' (the median
/// over steps of the difference of their first starts), over the steps that
/// begin before `at` (before) or after it (!before); nullopt without such a
/// step. A clock step moves it by its size for good; a pause of one machine
/// (a fast replica waiting at the gradient all-reduce) does not.
std::optional<std::int64_t> machine_lead(const MachineStepStarts& first, std::int64_t at,
                                         bool before) {
  std::vector<std::int64_t> leads;
  for (const auto& [step, pair] : first) {
    if (pair.first == kNone || pair.second == kNone) continue;
    const std::int64_t begins = std::min(pair.first, pair.second);
    if (before ? begins < at : begins > at) leads.push_back(pair.first - pair.second);
  }
  if (leads.empty()) return std::nullopt;
  std::nth_element(leads.begin(), leads.begin() + leads.size() / 2, leads.end());
  return leads[leads.size() / 2];
}

/// A step forward of `machine` (see the header): found, checked against the
/// other machines, undone. Returns it, if any.
std::optional<ClockStep> undo_forward_step(Run& run, int machine,
                                           const std::vector<std::size_t>& devices,
                                           const TypeKinds& kinds,
                                           const ClockStepOptions& options) {
  std::vector<DeviceForwardStep> jumps;
  std::vector<ForwardJumpSpan> spans;
  for (const std::size_t d : devices) {
    const auto jump = device_forward_step(run.devices[d], kinds, options);
    if (!jump) return std::nullopt;  // every device of the machine at once
    jumps.push_back(*jump);
    spans.push_back(jump->span);
  }
  const std::optional<ForwardStepWindow> window = forward_step_window(spans);
  if (!window) return std::nullopt;
  const std::vector<std::vector<std::int32_t>> steps = local_steps(run, kinds);
  MachineStepStarts starts;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    add_step_starts(starts, run.devices[d], steps[d], run.devices[d].machine == machine);
  }
  if (!forward_step_moves_machine(starts, *window)) return std::nullopt;
  ClockStep step{machine, std::numeric_limits<std::int64_t>::max(), window->size, 0};
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceShift moved = shift_device_jobs(run.devices[devices[i]], jumps[i].line,
                                                -window->size, jumps[i].stretched_job);
    step.at_ns = std::min(step.at_ns, moved.first_start);
    step.jobs += moved.jobs;
  }
  return step;
}

}  // namespace

std::uint64_t device_back_jumps(const Device& device, const TypeKinds& kinds,
                                const ClockStepOptions& options) {
  // Usually the compute jobs' lines are in order already (written_order
  // would sort nothing): walked in place, with no index of them (8 bytes a
  // job of fresh memory, on every device of every run).
  std::uint32_t last_line = 0;
  bool in_order = true;
  for (const Job& job : device.jobs) {
    if (job.line == 0) return 0;  // no written order
    if (!read_for_steps(job, kinds)) continue;
    in_order = in_order && job.line >= last_line;
    last_line = job.line;
  }
  if (!in_order) return back_jumps(device, written_order(device, kinds), options.min_step_ns);
  BackJumps jumps(options.min_step_ns);
  for (const Job& job : device.jobs) {
    if (read_for_steps(job, kinds)) jumps.add(job);
  }
  return jumps.count();
}

std::optional<DeviceBackStep> device_back_step(const Device& device, const TypeKinds& kinds,
                                               const ClockStepOptions& options) {
  const std::vector<std::size_t> order = written_order(device, kinds);
  const std::optional<BackJump> jump = first_back_jump(device, order, options.min_step_ns);
  if (!jump) return std::nullopt;
  DeviceBackStep out{jump->line, jump->overlap, std::nullopt, jump->cut_job};
  if (jump->cut_job) {
    // The job the step cut ends (in the new clock) its usual length after
    // its start (in the old one) less the step.
    if (const auto usual = usual_length(device, *jump->cut_job)) {
      const Job& cut = device.jobs[*jump->cut_job];
      out.estimate = cut.start_ns + *usual - cut.end_ns;
    }
  } else if (const auto gap = usual_gap(device, order, *jump)) {
    // The overlap falls short of the step by what the device did between
    // the two jobs.
    out.estimate = jump->overlap + *gap;
  }
  return out;
}

std::int64_t back_step_size(const std::vector<DeviceBackStep>& parts) {
  // An overlap shows the whole step only on a device that went straight from
  // one job to the next across it; each device's usual gap there (or its cut
  // job's usual length) places it closer. The median of those, never below
  // what the overlaps prove.
  std::int64_t size = 0;
  std::vector<std::int64_t> estimates;
  for (const DeviceBackStep& part : parts) {
    size = std::max(size, part.overlap);
    if (part.estimate) estimates.push_back(*part.estimate);
  }
  if (!estimates.empty()) {
    std::nth_element(estimates.begin(), estimates.begin() + estimates.size() / 2, estimates.end());
    size = std::max(size, estimates[estimates.size() / 2]);
  }
  return size;
}

std::optional<DeviceForwardStep> device_forward_step(const Device& device, const TypeKinds& kinds,
                                                     const ClockStepOptions& options) {
  const auto jump =
      first_forward_jump(device, written_order(device, kinds), options.min_forward_step_ns);
  if (!jump) return std::nullopt;
  return DeviceForwardStep{{jump->size, jump->from, jump->to}, jump->line, jump->stretched_job};
}

DeviceShift shift_device_jobs(Device& device, std::uint32_t line, std::int64_t shift,
                              std::optional<std::size_t> mended_job) {
  DeviceShift out;
  for (Job& job : device.jobs) {
    if (job.line < line) continue;
    job.start_ns += shift;
    job.end_ns += shift;
    out.first_start = std::min(out.first_start, job.start_ns);
    ++out.jobs;
  }
  // The machine's log events were stamped by the same clock: those printed
  // after the step move with it.
  for (LogEvent& event : device.events) {
    if (event.line >= line) event.time_ns += shift;
  }
  if (mended_job) device.jobs[*mended_job].end_ns += shift;
  return out;
}

bool shows_back_step(const std::vector<std::uint64_t>& back_jumps) {
  if (back_jumps.empty()) return false;
  const std::uint64_t n = back_jumps.front();
  return n > 0 && n <= kMaxSteps &&
         std::all_of(back_jumps.begin(), back_jumps.end(), [n](std::uint64_t m) { return m == n; });
}

std::optional<ForwardStepWindow> forward_step_window(const std::vector<ForwardJumpSpan>& jumps) {
  if (jumps.empty()) return std::nullopt;
  std::vector<std::int64_t> sizes;
  for (const ForwardJumpSpan& j : jumps) sizes.push_back(j.size);
  std::nth_element(sizes.begin(), sizes.begin() + sizes.size() / 2, sizes.end());
  const std::int64_t size = sizes[sizes.size() / 2];
  // At one moment: some instant lies in every device's [from, to - size],
  // give or take a quarter of the step.
  ForwardStepWindow window{size, std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max()};
  for (const ForwardJumpSpan& j : jumps) {
    window.latest_from = std::max(window.latest_from, j.from);
    window.earliest_to = std::min(window.earliest_to, j.to - size);
  }
  if (window.latest_from > window.earliest_to + size / 4) return std::nullopt;
  return window;
}

void add_step_starts(MachineStepStarts& into, const Device& device,
                     const std::vector<std::int32_t>& steps, bool on_machine) {
  for (std::size_t i = 0; i < device.jobs.size(); ++i) {
    auto [it, added] = into.try_emplace(steps[i], kNone, kNone);
    std::int64_t& slot = on_machine ? it->second.first : it->second.second;
    slot = std::min(slot, device.jobs[i].start_ns);
  }
}

void add_step_starts(MachineStepStarts& into, const MachineStepStarts& more) {
  for (const auto& [step, pair] : more) {
    auto [it, added] = into.try_emplace(step, kNone, kNone);
    it->second.first = std::min(it->second.first, pair.first);
    it->second.second = std::min(it->second.second, pair.second);
  }
}

bool forward_step_moves_machine(const MachineStepStarts& starts, const ForwardStepWindow& window) {
  // For good: the machine's steps begin `size` later, relative to the other
  // machines', after it than before it.
  const std::int64_t size = window.size;
  const auto lead_before = machine_lead(starts, window.latest_from, true);
  const auto lead_after = machine_lead(starts, window.earliest_to + size, false);
  if (!lead_before || !lead_after) return false;
  const std::int64_t moved = *lead_after - *lead_before;
  return moved >= size / 2 && moved <= size + size / 2;
}

std::vector<ClockStep> undo_clock_steps(Run& run, const ClockStepOptions& options) {
  const TypeKinds kinds(run.types);
  std::map<int, std::vector<std::size_t>> machines;  // machine -> device positions
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!run.devices[d].jobs.empty()) machines[run.devices[d].machine].push_back(d);
  }
  std::vector<ClockStep> steps;
  bool moved = false;
  for (const auto& [machine, devices] : machines) {
    // Several steps of one machine are undone one at a time, earliest first.
    for (int round = 0; round < kMaxBackRounds; ++round) {
      // A log whose lines are not in time order (some versions print a
      // step's jobs by id) jumps back many times, and differently on each
      // device: no clock's doing. A clock step makes every device of the
      // machine jump back the same number of times.
      // (The devices are read side by side: each count is its own. `on`:
      // clang before 16 lets no lambda capture a structured binding.)
      const std::vector<std::size_t>& on = devices;
      std::vector<std::uint64_t> counts(on.size());
      tbb::parallel_for(std::size_t{0}, on.size(), [&](std::size_t i) {
        counts[i] = device_back_jumps(run.devices[on[i]], kinds, options);
      });
      if (!shows_back_step(counts)) break;
      // Every device of the machine at once, or it is no clock's doing.
      std::vector<std::optional<DeviceBackStep>> found(on.size());
      tbb::parallel_for(std::size_t{0}, on.size(), [&](std::size_t i) {
        found[i] = device_back_step(run.devices[on[i]], kinds, options);
      });
      std::vector<DeviceBackStep> parts;
      for (const std::optional<DeviceBackStep>& part : found) {
        if (!part) break;
        parts.push_back(*part);
      }
      if (parts.size() < devices.size()) break;
      const std::int64_t size = back_step_size(parts);
      ClockStep step{machine, std::numeric_limits<std::int64_t>::max(), -size, 0};
      for (std::size_t i = 0; i < devices.size(); ++i) {
        const DeviceShift shifted =
            shift_device_jobs(run.devices[devices[i]], parts[i].line, size, parts[i].cut_job);
        step.at_ns = std::min(step.at_ns, shifted.first_start);
        step.jobs += shifted.jobs;
      }
      steps.push_back(step);
      moved = true;
    }
  }
  // Steps forward, once the steps back are undone: they need the other
  // machines to compare with.
  if (machines.size() >= 2) {
    for (const auto& [machine, devices] : machines) {
      for (int round = 0; round < kMaxForwardRounds; ++round) {
        const auto step = undo_forward_step(run, machine, devices, kinds, options);
        if (!step) break;
        steps.push_back(*step);
        moved = true;
        run.finalize();
      }
    }
  }
  finish_clock_steps(run, moved, steps);
  return steps;
}

void finish_clock_steps(Run& run, bool moved, std::vector<ClockStep>& steps) {
  if (moved) run.finalize();
  std::sort(steps.begin(), steps.end(), [](const ClockStep& a, const ClockStep& b) {
    return a.machine != b.machine ? a.machine < b.machine : a.at_ns < b.at_ns;
  });
}

}  // namespace pipescope
