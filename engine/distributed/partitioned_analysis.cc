#include "distributed/partitioned_analysis.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/job_role.h"
#include "analysis/schedule_detect.h"
#include "analysis/step_rule.h"
#include "distributed/wire.h"

namespace pipescope::distributed {

namespace {

/// The devices of `run` this rank read (the only ones with jobs here).
std::vector<std::size_t> local_devices(const Run& run) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!run.devices[d].jobs.empty()) out.push_back(d);
  }
  return out;
}

// ---- 1. step numbering ------------------------------------------------------

/// Every device's step counts, gathered from the ranks that read them.
std::vector<DeviceStepCounts> gather_step_counts(Exchange& exchange,
                                                 const std::vector<std::size_t>& mine,
                                                 const std::vector<DeviceStepCounts>& counts,
                                                 std::size_t devices) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.list(counts[d].steps);
    w.list(counts[d].begun);
    w.list(counts[d].present);
  }
  std::vector<DeviceStepCounts> all(devices);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= devices) throw WireError("step counts of a device not in the run");
      r.list(all[d].steps);
      r.list(all[d].begun);
      r.list(all[d].present);
    }
  }
  return all;
}

// ---- 2. windows ---------------------------------------------------------------

/// The run's step edges: every rank's devices' edges, combined.
StepEdges gather_edges(Exchange& exchange, const StepEdges& mine) {
  ByteWriter w;
  w.list(mine.first_start);
  w.list(mine.last_end);
  w.list(mine.has_job);
  StepEdges all(mine.has_job.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    StepEdges theirs;
    r.list(theirs.first_start);
    r.list(theirs.last_end);
    r.list(theirs.has_job);
    if (theirs.has_job.size() != all.has_job.size()) throw WireError("edges of another run");
    all.combine(theirs);
  }
  return all;
}

/// Σ over the ranks of a vector of counts of the same length.
std::vector<std::uint64_t> sum_counts(Exchange& exchange, const std::vector<std::uint64_t>& mine) {
  ByteWriter w;
  w.list(mine);
  std::vector<std::uint64_t> total(mine.size(), 0);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    std::vector<std::uint64_t> theirs;
    r.list(theirs);
    if (theirs.size() != total.size()) throw WireError("counts of another run");
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += theirs[i];
  }
  return total;
}

// ---- 4. the jobs to their parts -----------------------------------------------

/// One held job as it travels: the job, its index on its device, its step.
struct HeldJob {
  Job job;
  std::uint64_t index = 0;
  std::int32_t step = 0;
};

/// Sends every job of this rank's devices to the parts that need it
/// (device_part_indices) and returns what this rank's part holds.
PartJobs exchange_jobs(Exchange& exchange, const Run& local,
                       const std::vector<std::vector<std::int32_t>>& job_step,
                       const std::vector<std::size_t>& mine, const TypeKinds& kinds,
                       const StepPartition& plan) {
  const std::size_t ranks = static_cast<std::size_t>(exchange.size());
  std::vector<ByteWriter> out(ranks);
  for (ByteWriter& w : out) w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    const Device& device = local.devices[d];
    const std::vector<std::vector<std::size_t>> lists =
        device_part_indices(device, job_step[d], kinds, plan);
    for (std::size_t p = 0; p < ranks; ++p) {
      ByteWriter& w = out[p];
      w.put(static_cast<std::uint64_t>(d));
      w.put(static_cast<std::uint64_t>(lists[p].size()));
      for (const std::size_t i : lists[p]) {
        w.put(HeldJob{device.jobs[i], i, job_step[d][i]});
      }
    }
  }
  std::vector<std::string> messages(ranks);
  for (std::size_t p = 0; p < ranks; ++p) messages[p] = out[p].take();
  out.clear();

  // The part's run: every device's place, no job yet (as cut_part makes it).
  PartJobs part;
  part.run.types = local.types;
  part.run.first_step = local.first_step;
  part.run.segments = local.segments;
  part.run.time_resolution_ns = local.time_resolution_ns;
  part.run.devices.resize(local.devices.size());
  part.job_step.resize(local.devices.size());
  part.job_index.resize(local.devices.size());
  for (std::size_t d = 0; d < local.devices.size(); ++d) {
    const Device& from = local.devices[d];
    Device& to = part.run.devices[d];
    to.index = from.index;
    to.machine = from.machine;
    to.machine_name = from.machine_name;
    to.rank = from.rank;
    to.path = from.path;
    to.cut_ns = from.cut_ns;
  }
  const auto rank = static_cast<std::size_t>(exchange.rank());
  for (const std::string& message : exchange.all_to_all(std::move(messages))) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= part.run.devices.size()) throw WireError("jobs of a device not in the run");
      const auto count = r.get<std::uint64_t>();
      if (count > r.left() / sizeof(HeldJob)) throw WireError("message ends early");
      Device& to = part.run.devices[d];
      to.jobs.reserve(count);
      part.job_step[d].reserve(count);
      part.job_index[d].reserve(count);
      for (std::uint64_t i = 0; i < count; ++i) {
        const auto held = r.get<HeldJob>();
        to.jobs.push_back(held.job);
        part.job_step[d].push_back(held.step);
        part.job_index[d].push_back(held.index);
        if (plan.owner(static_cast<std::size_t>(held.step)) == rank) ++part.owned_jobs;
      }
    }
  }
  return part;
}

// ---- 5. complete steps and window times -----------------------------------------

/// mark_complete_steps, where only the owner of a step can count its jobs:
/// the questions the rule asks (which it asks whatever the answers) are
/// found first, their owners answer, and every rank marks with the answers.
void mark_complete(Exchange& exchange, const StepCounts& counts, const Run& local,
                   const PartJobs& part, const TypeKinds& kinds, const StepPartition& plan,
                   Metrics& metrics) {
  std::vector<std::int64_t> cut_ns;
  for (const Device& device : local.devices) cut_ns.push_back(device.cut_ns);
  // Marked twice: the first pass only collects the questions (the flags it
  // leaves are overwritten by the second).
  std::vector<std::pair<std::size_t, std::size_t>> questions;  // (device, step)
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        questions.emplace_back(d, step);
        return KindCounts{};
      },
      metrics);
  std::sort(questions.begin(), questions.end());
  questions.erase(std::unique(questions.begin(), questions.end()), questions.end());

  const auto rank = static_cast<std::size_t>(exchange.rank());
  ByteWriter w;
  for (const auto& [d, step] : questions) {
    if (plan.owner(step) != rank) continue;
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::uint64_t>(step));
    w.put(step_kind_counts(part.run.devices[d], part.job_step[d], step, kinds));
  }
  std::map<std::pair<std::size_t, std::size_t>, KindCounts> answers;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    while (!r.done()) {
      const auto d = r.get<std::uint64_t>();
      const auto step = r.get<std::uint64_t>();
      answers[{d, step}] = r.get<KindCounts>();
    }
  }
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        const auto it = answers.find({d, step});
        if (it == answers.end()) throw WireError("a step's job counts did not arrive");
        return it->second;
      },
      metrics);
}

/// The run's totals from every rank's sums of its windows.
void gather_totals(Exchange& exchange, const WindowSums& mine, Metrics& metrics) {
  ByteWriter w;
  w.list(mine.device);
  w.put(mine.window_ns);
  w.put(mine.idle_ns);
  w.put(mine.comm_ns);
  w.put(static_cast<std::uint64_t>(mine.incomplete));
  WindowSums all(mine.device.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    WindowSums theirs;
    r.list(theirs.device);
    theirs.window_ns = r.get<std::int64_t>();
    theirs.idle_ns = r.get<std::int64_t>();
    theirs.comm_ns = r.get<std::int64_t>();
    theirs.incomplete = r.get<std::uint64_t>();
    all.add(theirs);
  }
  finish_totals(all, metrics);
}

// ---- the pipeline analysis ----------------------------------------------------

/// The jobs of the run's first `steps` steps of every device, on every rank
/// (what the layout reads: layout.h kLayoutSteps), as head_part gives them.
PartJobs gather_head(Exchange& exchange, const Run& local,
                     const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<std::size_t>& mine, std::int32_t steps) {
  PartJobs head = head_part(local, job_step, steps);
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.list(head.run.devices[d].jobs);
    w.list(head.job_step[d]);
    w.list(head.job_index[d]);
  }
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= head.run.devices.size()) throw WireError("jobs of a device not in the run");
      r.list(head.run.devices[d].jobs);
      r.list(head.job_step[d]);
      r.list(head.job_index[d]);
    }
  }
  head.owned_jobs = 0;
  for (const Device& device : head.run.devices) head.owned_jobs += device.jobs.size();
  return head;
}

void put_detection(ByteWriter& w, const ScheduleDetection& d) {
  w.put(static_cast<std::uint8_t>(d.id.has_value()));
  if (d.id) w.put(*d.id);
  w.put(static_cast<std::uint8_t>(d.family.has_value()));
  if (d.family) w.put(*d.family);
  w.list(d.matches);
  w.put(static_cast<std::uint8_t>(d.exact));
  w.put(d.stages);
  w.put(d.micro_batches);
  w.put(d.chunks);
}

ScheduleDetection get_detection(ByteReader& r) {
  ScheduleDetection d;
  if (r.get<std::uint8_t>()) d.id = r.get<ScheduleId>();
  if (r.get<std::uint8_t>()) d.family = r.get<ScheduleFamily>();
  r.list(d.matches);
  d.exact = r.get<std::uint8_t>() != 0;
  d.stages = r.get<int>();
  d.micro_batches = r.get<int>();
  d.chunks = r.get<int>();
  return d;
}

/// The run's schedule from every range's votes and op sums, added in step
/// order (the earliest step's answer wins ties).
ScheduleReport gather_schedule(Exchange& exchange, const ScheduleVotes& votes, const OpSums& sums,
                               std::size_t stage_count, double bubble_ratio) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(votes.votes.size()));
  for (const ScheduleVotes::Vote& vote : votes.votes) {
    put_detection(w, vote.detection);
    w.put(vote.count);
  }
  w.put(votes.steps_examined);
  w.put(sums);
  ScheduleVotes all_votes;
  OpSums all_sums;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    ScheduleVotes theirs;
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      ScheduleVotes::Vote vote;
      vote.detection = get_detection(r);
      vote.count = r.get<std::int64_t>();
      theirs.votes.push_back(std::move(vote));
    }
    theirs.steps_examined = r.get<std::int64_t>();
    all_votes.add(theirs);
    all_sums.add(r.get<OpSums>());
  }
  return finish_schedule(all_votes, all_sums, stage_count, bubble_ratio);
}

void put_pairs(ByteWriter& w, const PairClocks& pairs) {
  w.put(static_cast<std::uint64_t>(pairs.size()));
  for (const auto& [key, pair] : pairs) {
    w.put(pair.machine_a);
    w.put(pair.machine_b);
    w.put(pair.dependencies);
    w.put(pair.violations_before);
    w.put(pair.violations_after);
    w.put(pair.beyond_noise_before);
    w.put(pair.beyond_noise_after);
    w.put(static_cast<std::uint8_t>(pair.lower_ns.has_value()));
    if (pair.lower_ns) w.put(*pair.lower_ns);
    w.put(static_cast<std::uint8_t>(pair.upper_ns.has_value()));
    if (pair.upper_ns) w.put(*pair.upper_ns);
  }
}

PairClocks get_pairs(ByteReader& r) {
  PairClocks pairs;
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    MachinePairClock pair;
    pair.machine_a = r.get<int>();
    pair.machine_b = r.get<int>();
    pair.dependencies = r.get<std::uint64_t>();
    pair.violations_before = r.get<std::uint64_t>();
    pair.violations_after = r.get<std::uint64_t>();
    pair.beyond_noise_before = r.get<std::uint64_t>();
    pair.beyond_noise_after = r.get<std::uint64_t>();
    if (r.get<std::uint8_t>()) pair.lower_ns = r.get<std::int64_t>();
    if (r.get<std::uint8_t>()) pair.upper_ns = r.get<std::int64_t>();
    pairs[{pair.machine_a, pair.machine_b}] = pair;
  }
  return pairs;
}

/// Every rank's pair evidence added to `into`.
void gather_pairs(Exchange& exchange, const PairClocks& mine, PairClocks& into) {
  ByteWriter w;
  put_pairs(w, mine);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    add_pair_clocks(into, get_pairs(r));
  }
}

/// Each machine's first job start over every rank's devices.
std::vector<std::int64_t> gather_machine_firsts(Exchange& exchange, const Run& local) {
  ByteWriter w;
  w.list(machine_first_starts(local));
  std::vector<std::int64_t> first;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    std::vector<std::int64_t> theirs;
    r.list(theirs);
    if (first.empty()) first = theirs;
    for (std::size_t m = 0; m < first.size() && m < theirs.size(); ++m) {
      first[m] = std::min(first[m], theirs[m]);
    }
  }
  return first;
}

/// The run's bubble summary: every range's sums and longest, merged in step
/// order; per_step only of this rank's windows.
BubbleSummary gather_bubbles(Exchange& exchange, BubbleSummary mine, std::size_t top_n) {
  ByteWriter w;
  w.list(mine.per_device);
  w.put(mine.total);
  w.list(mine.longest);
  BubbleSummary all;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    BubbleSummary theirs;
    r.list(theirs.per_device);
    theirs.total = r.get<BubbleTotals>();
    r.list(theirs.longest);
    append_bubble_summary(all, std::move(theirs), top_n);
  }
  all.per_step = std::move(mine.per_step);
  return all;
}

/// Steps 1 to 5 of the header: the metrics, the ranges and the jobs held.
void partitioned_metrics(Exchange& exchange, const Run& local, PartitionedAnalysis& out) {
  out.metrics = Metrics();
  Metrics& m = out.metrics;
  const TypeKinds kinds(local.types);
  const std::size_t devices = local.devices.size();
  const std::size_t segments = std::max<std::size_t>(1, local.segments.size());
  const std::vector<std::size_t> mine = local_devices(local);

  // 1. Each device numbers its steps; the segments need every device's.
  std::vector<std::vector<std::int32_t>>& job_step = out.local_job_step;
  job_step.assign(devices, {});
  std::vector<DeviceStepCounts> counts(devices);
  for (const std::size_t d : mine) {
    job_step[d].resize(local.devices[d].jobs.size());
    counts[d] = number_device_steps(local.devices[d], kinds, segments, job_step[d]);
  }
  const StepCounts step_counts =
      combine_device_steps(local, gather_step_counts(exchange, mine, counts, devices), m);
  for (const std::size_t d : mine) offset_device_steps(local.devices[d], m.segments, job_step[d]);

  // 2. The windows, from every device's edges.
  StepEdges edges(step_counts.steps);
  std::vector<std::uint64_t> jobs_per_step(step_counts.steps, 0);
  for (const std::size_t d : mine) {
    edges.combine(device_step_edges(local.devices[d], job_step[d], step_counts.steps));
    for (const std::int32_t k : job_step[d]) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  const StepEdges all_edges = gather_edges(exchange, edges);
  place_windows(all_edges, devices, m);
  out.step_has_job = all_edges.has_job;

  // 3. The ranges, balanced by jobs.
  out.plan = partition_steps(sum_counts(exchange, jobs_per_step), m.steps,
                             static_cast<std::size_t>(exchange.size()));
  const auto rank = static_cast<std::size_t>(exchange.rank());
  out.first = out.plan.bounds[rank];
  out.last = out.plan.bounds[rank + 1];

  // 4. Every job to the ranks that need it.
  out.part = PartJobs();
  out.part = exchange_jobs(exchange, local, job_step, mine, kinds, out.plan);

  // 5. Complete steps, this rank's windows, the run's totals.
  mark_complete(exchange, step_counts, local, out.part, kinds, out.plan, m);
  const std::span<StepWindow> own = out.plan.windows(m.steps, rank);
  add_window_times(out.part.run.devices, kinds, own);
  gather_totals(exchange, sum_windows(own, devices), m);
}

/// The dependencies whose consumer is in this rank's steps, in its part's
/// job indices.
Dependencies own_dependencies(const PartitionedAnalysis& out, const StagePlacement placement) {
  const PartJobs& part = out.part;
  std::vector<Dependency> own;
  for (const Dependency& dep :
       find_dependencies(part.run, part.job_step, out.stages, out.roles, placement)) {
    const auto step =
        static_cast<std::size_t>(part.job_step[dep.consumer.device][dep.consumer.job]);
    if (step >= out.first && step < out.last) own.push_back(dep);
  }
  return Dependencies(own);
}

}  // namespace

PartitionedAnalysis analyze_partitioned(Exchange& exchange, Run& local,
                                        const PipelineOptions& options) {
  PartitionedAnalysis out;
  partitioned_metrics(exchange, local, out);
  const Metrics& m = out.metrics;
  const auto rank = static_cast<std::size_t>(exchange.rank());

  // The layout from the run's head, on every rank; the schedule from every
  // range's votes.
  out.roles = classify_job_roles(local.types);
  {
    const PartJobs head =
        gather_head(exchange, local, out.local_job_step, local_devices(local), kLayoutSteps);
    out.layout = choose_layout(head.run, head.job_step, out.roles, options);
  }
  out.stages = out.layout.stages;
  const auto detect_schedule = [&] {
    const PartJobs& part = out.part;
    return gather_schedule(exchange,
                           vote_schedules(part.run, part.job_step, m.steps, out.first, out.last,
                                          out.stages, out.roles),
                           op_sums(part.run, out.roles, &part.job_step, out.first, out.last),
                           out.stages.stage_count(), m.bubble_ratio);
  };
  out.schedule = detect_schedule();
  const StagePlacement placement = detected_placement(out.schedule);

  // The clocks: every range's evidence, decided once; with offsets applied,
  // the windows move and the jobs are sent again.
  const ClockOptions clock = clock_options(options, out.layout);
  const std::int64_t noise = clock_noise_ns(local, clock);
  Dependencies deps = own_dependencies(out, placement);
  PairClocks evidence;
  gather_pairs(exchange, pair_clocks(out.part.run, deps, noise), evidence);
  ClockDecision decision = decide_clock_offsets(evidence, machine_clock_names(local), noise, clock);
  if (decision.to_apply) {
    const std::vector<std::int64_t> offsets = decision.offsets;
    apply_clock_offsets(local, offsets);
    apply_clock_offsets(out.part.run, offsets);
    // Each range recounts its own dependencies; the sums are the run's.
    PairClocks mine;
    count_violations_after(out.part.run, deps, noise, mine);
    PairClocks after = pairs_for_recount(decision.report);
    gather_pairs(exchange, mine, after);
    out.clock = finish_clock_decision(std::move(decision), after);
    if (!out.clock.applied) {
      apply_clock_offsets(local, negated(offsets));
      apply_clock_offsets(out.part.run, negated(offsets));
    } else {
      partitioned_metrics(exchange, local, out);
      out.schedule = detect_schedule();
      deps = own_dependencies(out, placement);
    }
  } else {
    out.clock = std::move(decision.report);
  }
  add_clock_pieces(local.clock_steps, gather_machine_firsts(exchange, local), out.clock);
  out.dependencies = std::move(deps);

  // Bubbles: this rank's windows, the run's sums and longest.
  out.bubbles =
      gather_bubbles(exchange,
                     summarize_bubble_windows(
                         out.part.run.devices, &out.part.job_index, local.types,
                         out.plan.windows(out.metrics.steps, rank), out.first, options.top_bubbles),
                     options.top_bubbles);
  return out;
}

}  // namespace pipescope::distributed
