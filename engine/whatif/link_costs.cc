#include "whatif/link_costs.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "analysis/job_kind.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

double median_or_zero(std::vector<double> samples) { return samples.empty() ? 0 : median(samples); }

}  // namespace

LinkCosts measure_link_costs(const Run& run, const Metrics& metrics,
                             const PipelineAnalysis& pipeline, const std::vector<char>& replayed,
                             StagePlacement placement) {
  LinkCosts out;
  const int p = static_cast<int>(pipeline.stages.stage_count());
  const int v = std::max(1, pipeline.schedule.detection.chunks);
  if (p < 1) return out;
  // The rank of every global stage under the placement.
  std::vector<int> rank_of(static_cast<std::size_t>(p) * v, -1);
  for (int s = 0; s < p; ++s) {
    for (int c = 0; c < v; ++c) {
      const int g = global_stage(placement, p, s, c);
      if (g >= 0 && g < p * v) rank_of[g] = s;
    }
  }
  const auto global_of = [&](std::size_t d, const Job& job) {
    return global_stage(placement, p, pipeline.stages.stage_of[d], pipeline.roles[job.type].chunk);
  };
  const auto in_complete_step = [&](std::size_t d, std::size_t i) {
    if (!replayed[d]) return false;
    const std::int32_t k = metrics.job_step[d][i];
    return k >= 0 && static_cast<std::size_t>(k) < metrics.steps.size() &&
           metrics.steps[k].complete;
  };
  // The device works in a job the replay replays: an op, the optimizer, lr.
  std::vector<char> replayed_type(run.types.size(), 0);
  for (TypeId t = 0; t < run.types.size(); ++t) {
    const PipelineRole role = pipeline.roles[t].role;
    replayed_type[t] = pipeline.roles[t].compute() || role == PipelineRole::optimizer ||
                       classify_job_type(run.types.name(t)) == JobKind::lr;
  }

  // Launch overhead: consecutive compute jobs, the second one's input made on
  // its own device.
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!replayed[d] || pipeline.stages.stage_of[d] < 0) continue;
    const int stage = pipeline.stages.stage_of[d];
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 1; i < jobs.size(); ++i) {
      const Job& job = jobs[i];
      const Job& before = jobs[i - 1];
      const JobRole& role = pipeline.roles[job.type];
      if (!role.compute() || !pipeline.roles[before.type].compute()) continue;
      // The two ops of one overlapped action: the second is no launch.
      if (role.overlap && pipeline.roles[before.type].overlap) continue;
      if (!in_complete_step(d, i) || metrics.job_step[d][i - 1] != metrics.job_step[d][i]) continue;
      if (job.start_ns < before.end_ns) continue;
      const int g = global_of(d, job);
      const int from = role.role == PipelineRole::forward    ? g - 1
                       : role.role == PipelineRole::backward ? g + 1
                                                             : -1;  // a weight half: its own B
      const bool local = from < 0 || from >= p * v || rank_of[from] == stage;
      if (local)
        out.launch_overhead_samples.push_back(static_cast<double>(job.start_ns - before.end_ns));
    }
  }
  out.launch_overhead_ns = median_or_zero(out.launch_overhead_samples);

  // Latency: the pairs whose consumer's device was idle from the producer's end.
  for (const Dependency& dep : pipeline.dependencies) {
    if (dep.producer.device == dep.consumer.device) continue;
    if (!in_complete_step(dep.consumer.device, dep.consumer.job)) continue;
    const Job& producer = run.devices[dep.producer.device].jobs[dep.producer.job];
    const auto& jobs = run.devices[dep.consumer.device].jobs;
    const Job& consumer = jobs[dep.consumer.job];
    // A piece of an op (Paddle's backward-forward overlap) is no producer's
    // end nor consumer's start of the whole op: its pairs time no transfer.
    if (pipeline.roles[producer.type].piece >= 0 || pipeline.roles[consumer.type].piece >= 0) {
      continue;
    }
    // A pair whose global stages are not neighbours under this placement
    // (the dependencies are found for a looped one) is no transfer of the run.
    const int step = pipeline.roles[consumer.type].role == PipelineRole::forward ? 1 : -1;
    if (global_of(dep.consumer.device, consumer) !=
        global_of(dep.producer.device, producer) + step) {
      continue;
    }
    // The forward of an overlapped action sends its output after the action
    // (torch's _add_send_recv): at the end of the device's next op, its
    // backward.
    std::int64_t producer_end = producer.end_ns;
    if (const JobRole& made = pipeline.roles[producer.type];
        made.overlap && made.role == PipelineRole::forward) {
      const auto& mine = run.devices[dep.producer.device].jobs;
      for (std::size_t i = dep.producer.job + 1; i < mine.size(); ++i) {
        const JobRole& r = pipeline.roles[mine[i].type];
        if (!r.compute()) continue;
        if (r.overlap && r.role != PipelineRole::forward) producer_end = mine[i].end_ns;
        break;
      }
    }
    const bool same =
        run.devices[dep.producer.device].machine == run.devices[dep.consumer.device].machine;
    LinkSamples& kind = same ? out.same_machine : out.cross_machine;
    ++kind.pairs;
    // The device's previous job of the same step (send/recv and other jobs
    // skipped: their time is the latency's); none for a step's first job,
    // which may have waited for the host between steps instead.
    const auto& job_step = metrics.job_step[dep.consumer.device];
    std::optional<std::size_t> previous;
    for (std::size_t i = dep.consumer.job; i-- > 0;) {
      if (job_step[i] != job_step[dep.consumer.job]) break;
      if (replayed_type[jobs[i].type]) {
        previous = i;
        break;
      }
    }
    if (!previous || jobs[*previous].end_ns > producer_end) continue;
    const double gap = static_cast<double>(consumer.start_ns - producer_end);
    kind.samples.push_back(std::max(0.0, gap - out.launch_overhead_ns));
  }
  out.same_machine.ns = median_or_zero(out.same_machine.samples);
  out.cross_machine.ns = median_or_zero(out.cross_machine.samples);
  return out;
}

}  // namespace pipescope
