#include "whatif/replay.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "analysis/job_kind.h"
#include "analysis/job_role.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

struct NamedSchedule {
  ScheduleId id;
  std::string_view name;
};

// The names `simulate` takes for the same lists (simulate/schedule.h).
constexpr std::array<NamedSchedule, 14> kNames = {{
    {ScheduleId::paddle_fthenb, "fthenb"},
    {ScheduleId::paddle_1f1b, "1f1b"},
    {ScheduleId::paddle_eager_1f1b, "eager1f1b"},
    {ScheduleId::paddle_vpp, "vpp"},
    {ScheduleId::paddle_vpp_split_backward, "vpp-split-backward"},
    {ScheduleId::paddle_zbh1, "zbh1"},
    {ScheduleId::dygraph_1f1b, "dygraph-1f1b"},
    {ScheduleId::dygraph_interleave, "dygraph-interleave"},
    {ScheduleId::torch_gpipe, "torch-gpipe"},
    {ScheduleId::torch_1f1b, "torch-1f1b"},
    {ScheduleId::torch_interleaved_1f1b, "torch-interleaved1f1b"},
    {ScheduleId::torch_interleaved_zero_bubble, "torch-interleavedzerobubble"},
    {ScheduleId::torch_zbv_zero_bubble, "torch-zbvzerobubble"},
    {ScheduleId::torch_dualpipev, "torch-dualpipev"},
}};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// splitmix64: reproducible draws whatever the standard library.
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : state_(seed) {}
  /// An index below n (n > 0).
  std::uint64_t index(std::size_t n) { return n <= 1 ? 0 : next() % n; }
  /// A sample of `v` (0 when empty).
  double pick(const std::vector<double>& v) {
    if (v.empty()) return 0;
    if (v.size() == 1) return v.front();
    return v[next() % v.size()];
  }

 private:
  std::uint64_t next() {
    std::uint64_t x = (state_ += 0x9E3779B97F4A7C15ULL);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }
  std::uint64_t state_;
};

using Lists = std::vector<std::vector<ScheduleStep>>;

std::optional<Lists> job_lists(const Scenario& scenario, int stages) {
  Lists lists;
  for (int s = 0; s < stages; ++s) {
    auto list =
        schedule_job_list(scenario.schedule, stages, scenario.micro_batches, scenario.chunks, s);
    if (!list) return std::nullopt;
    lists.push_back(std::move(*list));
  }
  return lists;
}

std::string list_names(bool (*keep)(const ScheduleEntry&)) {
  std::string out;
  for (const NamedSchedule& n : kNames) {
    if (!keep(schedule_entry(n.id))) continue;
    out += (out.empty() ? "" : ", ") + std::string(n.name);
  }
  return out;
}

/// Pearson's correlation of two series; NaN when one has no spread.
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = mean(x), my = mean(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return std::nan("");
  return sxy / std::sqrt(sxx * syy);
}

/// The per-micro-batch rows of WhatifInputs and whether the stages share a
/// pattern: each stage's first replayed device, the complete steps in which
/// every stage ran the same micro-batches (at least 3).
template <typename Complete>
void measure_micro_batch_pattern(const Run& run, const Metrics& metrics,
                                 const PipelineAnalysis& pipeline,
                                 const std::vector<char>& replayed, const Complete& complete,
                                 WhatifInputs& in) {
  using Row = WhatifInputs::CostRow;
  const int p = in.measured.stages;
  in.micro_batch_correlation = std::nan("");
  // The first kPatternSteps complete steps' rows (P × M each): enough to
  // draw from, and a bounded memory on a long run.
  constexpr std::size_t kPatternSteps = 256;
  std::vector<char> sampled(metrics.steps.size(), 0);
  for (std::size_t k = 0, n = 0; k < metrics.steps.size() && n < kPatternSteps; ++k) {
    if (metrics.steps[k].complete) sampled[k] = 1, ++n;
  }
  // (step, micro-batch) -> sums and counts of its ops, per stage; each kind's
  // mean op times V is the row's, as each job times V is a sample of the
  // stage (its chunks may run different kinds: DualPipeV's B on one, I and W
  // on the other).
  struct Sums {
    std::array<double, 4> ns{0, 0, 0, 0};
    std::array<int, 4> count{0, 0, 0, 0};
  };
  const double v = in.measured.chunks;
  std::vector<std::map<std::pair<std::int32_t, std::int64_t>, Sums>> by_stage(p);
  for (int s = 0; s < p; ++s) {
    for (std::size_t d : pipeline.stages.devices[s]) {
      if (!replayed[d]) continue;
      const auto& jobs = run.devices[d].jobs;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (!complete(d, i) || !sampled[static_cast<std::size_t>(metrics.job_step[d][i])]) continue;
        const JobRole& role = pipeline.roles[jobs[i].type];
        if (!role.compute() || role.joined) continue;
        Sums& sums = by_stage[s][{metrics.job_step[d][i], jobs[i].micro_batch}];
        const std::size_t kind = role.role == PipelineRole::forward  ? 0
                                 : role.role == PipelineRole::weight ? 3
                                 : role.split_backward               ? 2
                                                                     : 1;
        sums.ns[kind] += static_cast<double>(jobs[i].duration_ns());
        if (role.piece <= 0) ++sums.count[kind];  // an op's pieces count once
      }
      break;  // the stage's first replayed device
    }
  }
  // The steps every stage ran with the same micro-batches.
  std::map<std::int32_t, std::vector<std::int64_t>> step_mbs;
  for (const auto& [key, row] : by_stage[0]) step_mbs[key.first].push_back(key.second);
  for (const auto& [step, mbs] : step_mbs) {
    if (static_cast<int>(mbs.size()) != in.measured.micro_batches) continue;
    std::vector<std::vector<Row>> rows;
    bool full = true;
    for (const std::int64_t mb : mbs) {
      std::vector<Row>& r = rows.emplace_back(p);
      for (int s = 0; s < p && full; ++s) {
        const auto it = by_stage[s].find({step, mb});
        // A micro-batch of the stage without its forward or a backward (an
        // F+B job timed whole stands for neither) is no row.
        if (it == by_stage[s].end() || it->second.count[0] == 0 ||
            (it->second.count[1] == 0 && (it->second.count[2] == 0 || it->second.count[3] == 0))) {
          full = false;
        } else {
          const Sums& sums = it->second;
          double* kinds[4] = {&r[s].forward, &r[s].backward, &r[s].backward_input, &r[s].weight};
          for (std::size_t k = 0; k < 4; ++k) {
            if (sums.count[k] > 0) *kinds[k] = sums.ns[k] / sums.count[k] * v;
          }
        }
      }
    }
    if (full) in.rows.push_back(std::move(rows));
  }
  const int m = in.measured.micro_batches;
  if (in.rows.empty() || m < 3 || p < 2) return;
  std::vector<std::vector<double>> mean_cost(p, std::vector<double>(m, 0));
  for (const auto& rows : in.rows) {
    for (int j = 0; j < m; ++j) {
      for (int s = 0; s < p; ++s) {
        const Row& r = rows[j][s];
        mean_cost[s][j] += r.forward + r.backward + r.backward_input + r.weight;
      }
    }
  }
  std::vector<double> correlations;
  for (int a = 0; a < p; ++a) {
    for (int b = a + 1; b < p; ++b) {
      const double c = correlation(mean_cost[a], mean_cost[b]);
      if (std::isnan(c)) return;
      correlations.push_back(c);
    }
  }
  in.micro_batch_correlation = median(correlations);
  in.shared_pattern = in.micro_batch_correlation >= kSharedPatternCorrelation;
}

/// The measured run's shape: its detected schedule, P, M, V, and its median
/// complete step. Throws std::invalid_argument when there is nothing to
/// replay.
MeasuredRun measure_run_shape(const Metrics& metrics, const PipelineAnalysis& pipeline) {
  const ScheduleDetection& detection = pipeline.schedule.detection;
  const int p = static_cast<int>(pipeline.stages.stage_count());
  if (p < 1 || detection.stages == 0 || detection.micro_batches == 0) {
    throw std::invalid_argument(
        "no step in which every stage ran forward and backward jobs: nothing to replay");
  }
  MeasuredRun measured;
  measured.id = detection.exact ? detection.id : std::nullopt;
  measured.schedule = measured.id ? std::string(whatif_schedule_name(*measured.id))
                                  : std::string(detection_name(detection));
  measured.stages = p;
  measured.micro_batches = detection.micro_batches;
  measured.chunks = std::max(1, detection.chunks);
  measured.bubble_ratio = metrics.bubble_ratio;
  std::vector<std::int64_t> windows;
  for (const StepWindow& step : metrics.steps) {
    if (step.complete) windows.push_back(step.window_ns());
  }
  measured.complete_steps = windows.size();
  if (windows.empty()) throw std::invalid_argument("no complete step: nothing to replay");
  measured.step_ns = median_ns_exact(windows);
  return measured;
}

/// The jobs a replay is measured from: the replayed devices' jobs of
/// complete steps. Several replicas: the slowest one is replayed, its
/// devices alone (named in `measured`).
struct ReplayedJobs {
  ReplayedJobs(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
               MeasuredRun& measured)
      : metrics(metrics), replayed(run.devices.size(), 1) {
    if (pipeline.replicas.slowest < 0) return;
    const ReplicaStats& slowest =
        pipeline.replicas.replicas[static_cast<std::size_t>(pipeline.replicas.slowest)];
    measured.replica = slowest.replica;
    measured.replicas = static_cast<int>(pipeline.replicas.replicas.size());
    std::fill(replayed.begin(), replayed.end(), 0);
    for (const std::size_t d : slowest.devices) replayed[d] = 1;
  }

  /// Whether job i of the device at position d is one.
  bool operator()(std::size_t d, std::size_t i) const {
    if (!replayed[d]) return false;
    const std::int32_t k = metrics.job_step[d][i];
    return k >= 0 && static_cast<std::size_t>(k) < metrics.steps.size() &&
           metrics.steps[k].complete;
  }

  const Metrics& metrics;
  /// By device position: 1 for a replayed device.
  std::vector<char> replayed;
};

/// Adds the replayed jobs of the device at position d to its stage's
/// samples `out`: op costs times V (a job is a sample of the stage), an op's
/// pieces as one sample, F+B actions timed whole, and the share of each
/// piece of an op (from the stage's first device with pieces).
void sample_device(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                   const ReplayedJobs& complete, std::size_t d, WhatifInputs& in,
                   StageSamples& out) {
  const double v = in.measured.chunks;
  const auto& jobs = run.devices[d].jobs;
  // The pieces of one op (JobRole::piece) are one sample: their sum.
  std::map<std::tuple<std::int32_t, int, std::int64_t>, double> pieces;
  // Each piece's time, by role (0 forward, 1 backward) and piece.
  std::array<std::map<int, double>, 2> piece_ns;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!complete(d, i)) continue;
    const Job& job = jobs[i];
    const double ns = static_cast<double>(job.duration_ns());
    const JobRole& role = pipeline.roles[job.type];
    if (role.joined) {
      // One sample per action, from its forward's job (both hold it).
      if (role.role == PipelineRole::forward && role.chunk >= 0) {
        if (out.joined.size() <= static_cast<std::size_t>(role.chunk)) {
          out.joined.resize(static_cast<std::size_t>(role.chunk) + 1);
        }
        out.joined[static_cast<std::size_t>(role.chunk)].push_back(ns);
        in.joined = true;
      }
      continue;
    }
    if (role.piece >= 0) {
      pieces[{metrics.job_step[d][i], static_cast<int>(role.role), job.micro_batch}] += ns;
      piece_ns[role.role == PipelineRole::forward ? 0 : 1][role.piece] += ns;
      in.pieces = std::max(in.pieces, role.piece + 1);
      continue;
    }
    switch (role.role) {
      case PipelineRole::forward:
        out.forward.push_back(ns * v);
        break;
      case PipelineRole::backward:
        (role.split_backward ? out.backward_input : out.backward).push_back(ns * v);
        break;
      case PipelineRole::weight:
        out.weight.push_back(ns * v);
        break;
      case PipelineRole::optimizer:
        out.optimizer.push_back(ns);
        break;
      default:
        if (classify_job_type(run.types.name(job.type)) == JobKind::lr) out.lr.push_back(ns);
        break;
    }
  }
  for (const auto& [key, ns] : pieces) {
    (std::get<1>(key) == static_cast<int>(PipelineRole::forward) ? out.forward : out.backward)
        .push_back(ns * v);
  }
  // The shares of the stage's first replayed device with pieces (every op
  // of a role has the same pieces: the programs are cut once).
  for (int r = 0; r < 2; ++r) {
    std::vector<double>& share = r == 0 ? out.forward_piece_share : out.backward_piece_share;
    if (!share.empty() || piece_ns[r].empty()) continue;
    double total = 0;
    for (const auto& [k, ns] : piece_ns[r]) total += ns;
    const int count = piece_ns[r].rbegin()->first + 1;
    if (total <= 0 || static_cast<int>(piece_ns[r].size()) != count) continue;
    for (const auto& [k, ns] : piece_ns[r]) share.push_back(ns / total);
  }
}

/// Every stage's samples (in.stages), from its replayed devices. Throws
/// std::invalid_argument for a stage without a forward or a backward.
void sample_stages(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                   const ReplayedJobs& complete, WhatifInputs& in) {
  const int p = in.measured.stages;
  in.stages.resize(p);
  for (int s = 0; s < p; ++s) {
    StageSamples& out = in.stages[s];
    bool placed = false;
    for (std::size_t d : pipeline.stages.devices[s]) {
      if (!complete.replayed[d]) continue;
      if (!placed) out.machine = run.devices[d].machine, placed = true;
      sample_device(run, metrics, pipeline, complete, d, in, out);
    }
    if (!out.backward_input.empty()) in.split_backward = true;
  }
  for (int s = 0; s < p; ++s) {
    const StageSamples& st = in.stages[s];
    const bool backward =
        !st.backward.empty() || (!st.backward_input.empty() && !st.weight.empty());
    if (st.forward.empty() || !backward) {
      throw std::invalid_argument(
          fmt::format("stage {} has no {} job in a complete step: nothing to replay", s,
                      st.forward.empty() ? "forward" : "backward (whole, or both halves)"));
    }
  }
}

/// How overlapped actions are replayed, and the notes on F+B actions timed
/// whole and on ops cut into pieces.
void note_actions(const PipelineAnalysis& pipeline, WhatifInputs& in) {
  // The overlapped F+B actions of a DualPipeV run logged as jobs of their own
  // (no OVERLAP_F_B mark) sent each output at its op's end.
  const bool marked = std::any_of(pipeline.roles.begin(), pipeline.roles.end(),
                                  [](const JobRole& r) { return r.overlap; });
  in.overlap_actions = marked || in.measured.id != ScheduleId::torch_dualpipev;
  if (in.joined) {
    in.notes.push_back(
        "the trace shows no boundary inside some OVERLAP_F_B actions (one F+B job each): a "
        "DualPipeV scenario replays such an action as one job of its measured duration (which "
        "holds any wait for the backward's input), started once the forward's input is there "
        "and ended no earlier than the backward's input; every other scenario takes the "
        "stage's own forwards and backwards outside those actions");
  }
  if (in.pieces > 0) {
    in.notes.push_back(fmt::format(
        "the run cuts its steady-phase backwards and forwards into {} pieces run interleaved "
        "(Paddle's backward-forward overlap, forward(chunkK) and backward(chunkK)): each op's "
        "cost is the sum of its pieces; Paddle's 1F1B scenarios run each (backward, forward) "
        "pair of the steady phase so, each piece its measured share of its op and a launch of "
        "its own, the backward's output sent after its last piece and the forward's after its "
        "own; every other scenario runs each op whole",
        in.pieces));
  }
}

/// The link costs, global stages placed as the measured schedule places
/// them (looped when it is none of the table's), and a note for a kind of
/// link without a latency of its own.
void measure_links(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                   const std::vector<char>& replayed, WhatifInputs& in) {
  const StagePlacement placement =
      in.measured.id ? schedule_entry(*in.measured.id).placement : StagePlacement::looped;
  in.links = measure_link_costs(run, metrics, pipeline, replayed, placement);
  const auto note_latency = [&](const LinkSamples& kind, const LinkSamples& other,
                                std::string_view name, std::string_view other_name) {
    if (kind.pairs > 0 && kind.samples.empty()) {
      in.notes.push_back(fmt::format(
          "no consumer waited for data {} ({} dependent pair{}, each consumer busy when its "
          "input came): that latency is hidden by the schedule and taken as 0",
          name, kind.pairs, kind.pairs == 1 ? "" : "s"));
    } else if (kind.pairs == 0 && !other.samples.empty()) {
      in.notes.push_back(
          fmt::format("no dependent pair {}: a scenario's transfers {} take the latency {}", name,
                      name, other_name));
    }
  };
  note_latency(in.links.same_machine, in.links.cross_machine, "within a machine",
               "across machines");
  note_latency(in.links.cross_machine, in.links.same_machine, "across machines",
               "within a machine");
}

/// By TypeId: a job the replay replays, an op, the optimizer or lr
/// (send/recv and other jobs are not device time of the replay).
std::vector<char> replayed_types(const Run& run, const PipelineAnalysis& pipeline) {
  std::vector<char> replayed_type(run.types.size(), 0);
  for (TypeId t = 0; t < run.types.size(); ++t) {
    replayed_type[t] = pipeline.roles[t].compute() ||
                       pipeline.roles[t].role == PipelineRole::optimizer ||
                       classify_job_type(run.types.name(t)) == JobKind::lr;
  }
  return replayed_type;
}

/// The optimizer's wait: its start − the end of the previous replayed job of
/// its step, less the launch overhead.
void measure_optimizer_waits(const Run& run, const Metrics& metrics,
                             const PipelineAnalysis& pipeline, const ReplayedJobs& complete,
                             const std::vector<char>& replayed_type, WhatifInputs& in) {
  const double overhead = in.links.launch_overhead_ns;
  for (int s = 0; s < in.measured.stages; ++s) {
    for (std::size_t d : pipeline.stages.devices[s]) {
      if (!complete.replayed[d]) continue;
      const auto& jobs = run.devices[d].jobs;
      for (std::size_t i = 1; i < jobs.size(); ++i) {
        if (!complete(d, i) || pipeline.roles[jobs[i].type].role != PipelineRole::optimizer) {
          continue;
        }
        for (std::size_t j = i; j-- > 0;) {
          if (metrics.job_step[d][j] != metrics.job_step[d][i]) break;
          if (!replayed_type[jobs[j].type]) continue;
          const double wait = static_cast<double>(jobs[i].start_ns - jobs[j].end_ns) - overhead;
          in.stages[s].optimizer_wait.push_back(std::max(0.0, wait));
          break;
        }
      }
    }
  }
}

/// Step overhead on stage 0: its optimizer end (or last job end) to the
/// first job of its next complete step in the same segment, less the launch
/// overhead the replay adds to that job.
void measure_step_overhead(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                           const ReplayedJobs& complete, const std::vector<char>& replayed_type,
                           WhatifInputs& in) {
  const double overhead = in.links.launch_overhead_ns;
  struct StepEnds {
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
    std::int64_t optimizer_end = -1;
  };
  for (std::size_t d : pipeline.stages.devices[0]) {
    std::map<std::int32_t, StepEnds> ends;
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!complete(d, i) || !replayed_type[jobs[i].type]) continue;
      const std::int32_t k = metrics.job_step[d][i];
      auto [it, fresh] = ends.try_emplace(k, StepEnds{jobs[i].start_ns, jobs[i].end_ns, -1});
      StepEnds& e = it->second;
      if (!fresh) {
        e.first_start = std::min(e.first_start, jobs[i].start_ns);
        e.last_end = std::max(e.last_end, jobs[i].end_ns);
      }
      if (pipeline.roles[jobs[i].type].role == PipelineRole::optimizer) {
        e.optimizer_end = std::max(e.optimizer_end, jobs[i].end_ns);
      }
    }
    for (auto it = ends.begin(); it != ends.end(); ++it) {
      const auto next = std::next(it);
      if (next == ends.end() || next->first != it->first + 1 ||
          metrics.steps[next->first].segment != metrics.steps[it->first].segment) {
        continue;
      }
      const std::int64_t end =
          it->second.optimizer_end >= 0 ? it->second.optimizer_end : it->second.last_end;
      in.step_overhead.push_back(
          std::max(0.0, static_cast<double>(next->second.first_start - end) - overhead));
    }
  }
}

/// What the replay of the measured schedule is held to: per stage, the mean
/// busy and idle time of its replayed devices per complete step.
void measure_replayed_figures(const Metrics& metrics, const PipelineAnalysis& pipeline,
                              const std::vector<char>& replayed, MeasuredRun& measured) {
  const int p = measured.stages;
  measured.replayed_bubble_ratio =
      pipeline.replicas.slowest >= 0
          ? pipeline.replicas.replicas[static_cast<std::size_t>(pipeline.replicas.slowest)]
                .bubble_ratio
          : metrics.bubble_ratio;
  measured.stage_busy_ns.assign(p, 0);
  measured.stage_idle_ns.assign(p, 0);
  for (int s = 0; s < p; ++s) {
    std::size_t n = 0;
    for (const StepWindow& step : metrics.steps) {
      if (!step.complete) continue;
      for (std::size_t d : pipeline.stages.devices[s]) {
        if (!replayed[d] || d >= step.devices.size()) continue;
        measured.stage_busy_ns[s] += static_cast<double>(step.devices[d].busy_ns);
        measured.stage_idle_ns[s] += static_cast<double>(step.devices[d].idle_ns);
        ++n;
      }
    }
    if (n > 0) {
      measured.stage_busy_ns[s] /= static_cast<double>(n);
      measured.stage_idle_ns[s] /= static_cast<double>(n);
    }
  }
}

}  // namespace

std::string_view whatif_schedule_name(ScheduleId id) {
  for (const NamedSchedule& n : kNames) {
    if (n.id == id) return n.name;
  }
  return {};
}

std::optional<ScheduleId> parse_whatif_schedule(std::string_view name) {
  for (const NamedSchedule& n : kNames) {
    if (iequal(n.name, name)) return n.id;
  }
  return std::nullopt;
}

std::vector<ScheduleId> whatif_schedules() {
  std::vector<ScheduleId> out;
  for (const NamedSchedule& n : kNames) out.push_back(n.id);
  return out;
}

WhatifInputs measure_whatif_inputs(const Run& run, const Metrics& metrics,
                                   const PipelineAnalysis& pipeline) {
  WhatifInputs in;
  in.measured = measure_run_shape(metrics, pipeline);
  const ReplayedJobs complete(run, metrics, pipeline, in.measured);
  sample_stages(run, metrics, pipeline, complete, in);
  note_actions(pipeline, in);
  measure_micro_batch_pattern(run, metrics, pipeline, complete.replayed, complete, in);
  measure_links(run, metrics, pipeline, complete.replayed, in);
  const std::vector<char> replayed_type = replayed_types(run, pipeline);
  measure_optimizer_waits(run, metrics, pipeline, complete, replayed_type, in);
  measure_step_overhead(run, metrics, pipeline, complete, replayed_type, in);
  measure_replayed_figures(metrics, pipeline, complete.replayed, in.measured);
  return in;
}

std::string scenario_problem(const Scenario& scenario, int stages) {
  const std::string_view name = whatif_schedule_name(scenario.schedule);
  const ScheduleEntry& entry = schedule_entry(scenario.schedule);
  if (name.empty() || !entry.has_job_list) {
    return fmt::format("{} has no job list that is a function of P, M and V", entry.name);
  }
  const int v = scenario.chunks;
  if (v < entry.min_chunks || v > entry.max_chunks) {
    if (entry.max_chunks == 1) {
      return fmt::format(
          "{} runs one model chunk per stage, so V must be 1 (got V={}); the schedules that "
          "take V > 1 are {} (any V that divides the model), and {} (V = 2)",
          name, v, list_names([](const ScheduleEntry& e) {
            return e.max_chunks > 1 && e.placement == StagePlacement::looped;
          }),
          list_names(
              [](const ScheduleEntry& e) { return e.placement == StagePlacement::v_shape; }));
    }
    if (entry.min_chunks == entry.max_chunks) {
      return fmt::format("{} runs exactly {} model chunks per stage (got V={})", name,
                         entry.min_chunks, v);
    }
    return fmt::format("{} takes V from {} to {} (got V={})", name, entry.min_chunks,
                       entry.max_chunks, v);
  }
  if (stages < 1 || scenario.micro_batches < 1) {
    return fmt::format("P and M must be at least 1 (got P={}, M={})", stages,
                       scenario.micro_batches);
  }
  if (job_lists(scenario, stages)) return {};
  std::vector<int> works;
  const int limit = std::max(4 * scenario.micro_batches, 4 * stages);
  for (int m = 1; m <= limit && works.size() < 8; ++m) {
    if (job_lists({scenario.schedule, m, v}, stages)) works.push_back(m);
  }
  std::string list;
  for (int m : works) list += (list.empty() ? "" : ", ") + std::to_string(m);
  return fmt::format(
      "{} ({} {}) does not run P={}, M={}, V={}: it needs {}; {}", name, entry.framework,
      entry.name, stages, scenario.micro_batches, v, entry.requirement,
      works.empty() ? fmt::format("no M up to {} works with P={}, V={}", limit, stages, v)
                    : fmt::format("with P={}, V={} it runs M = {}{}", stages, v, list,
                                  works.size() == 8 ? ", ..." : ""));
}

std::vector<Scenario> sweep_scenarios(int stages, int micro_batches) {
  std::vector<Scenario> out;
  std::vector<Lists> kept;
  for (ScheduleId id : whatif_schedules()) {
    for (int factor : {1, 2, 4}) {
      for (int v : {1, 2, 4}) {
        const Scenario scenario{id, micro_batches * factor, v};
        if (!scenario_problem(scenario, stages).empty()) continue;
        auto lists = job_lists(scenario, stages);
        const StagePlacement placement = schedule_entry(id).placement;
        bool duplicate = false;
        for (std::size_t i = 0; i < out.size(); ++i) {
          duplicate = duplicate ||
                      (out[i].micro_batches == scenario.micro_batches && out[i].chunks == v &&
                       schedule_entry(out[i].schedule).placement == placement && kept[i] == *lists);
        }
        if (duplicate) continue;
        out.push_back(scenario);
        kept.push_back(std::move(*lists));
      }
    }
  }
  return out;
}

std::vector<std::string> scenario_extrapolations(const WhatifInputs& inputs,
                                                 const Scenario& scenario) {
  std::vector<std::string> out;
  if (scenario.chunks != inputs.measured.chunks) out.emplace_back("V");
  bool split = false;
  for (int s = 0; s < inputs.measured.stages && !split; ++s) {
    const auto list = schedule_job_list(scenario.schedule, inputs.measured.stages,
                                        scenario.micro_batches, scenario.chunks, s);
    if (!list) continue;
    split = std::any_of(list->begin(), list->end(),
                        [](const ScheduleStep& op) { return op.role == PipelineRole::weight; });
  }
  if (split && !inputs.split_backward) out.emplace_back("split backward");
  return out;
}

int replayed_steps(const ReplayOptions& options, const MeasuredRun& measured) {
  if (options.steps > 0) return options.steps;
  return static_cast<int>(std::clamp<std::size_t>(measured.complete_steps, 1, kMaxReplaySteps));
}

namespace {

/// What every replay of one scenario holds fixed: its job lists and shape,
/// and the measured costs that are not drawn. Latencies and overheads are the
/// measured medians, not drawn: a replay's spread is its cost spread alone.
struct ReplayPlan {
  const WhatifInputs& inputs;
  Lists lists;
  int p = 0;        ///< stages (ranks)
  int v = 1;        ///< chunks per stage
  int m = 0;        ///< micro-batches
  int g_count = 0;  ///< global stages, p × v
  StagePlacement placement = StagePlacement::looped;
  std::vector<int> rank_of{};  ///< by global stage
  double share = 0;            ///< ReplayOptions::weight_share
  std::uint64_t seed = 0;
  /// A kind of link the run had no pair of takes the other kind's latency.
  double same = 0;
  double cross = 0;
  std::int64_t same_ns = 0;
  std::int64_t cross_ns = 0;
  std::int64_t launch_ns = 0;
  double overhead = 0;  ///< between steps
  std::vector<std::int64_t> optimizer_wait_ns{};
  /// Costs drawn per micro-batch from one measured step on every stage.
  bool shared = false;
  /// Paddle's 1F1B scenario of a run with backward-forward overlap pieces.
  bool piece_units = false;
  /// A DualPipeV scenario of a DualPipeV run with F+B actions timed whole.
  bool joined_actions = false;
  /// Whether a stage's list frees a micro-batch's activations with a weight op.
  std::vector<bool> has_weight{};
};

/// The plan of `scenario`; throws std::invalid_argument for a scenario the
/// table cannot run on the measured stages or a weight share outside (0, 1).
ReplayPlan plan_replay(const WhatifInputs& inputs, const Scenario& scenario,
                       const ReplayOptions& options) {
  const int p = inputs.measured.stages;
  if (const std::string problem = scenario_problem(scenario, p); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  if (!(options.weight_share > 0 && options.weight_share < 1)) {
    throw std::invalid_argument(
        fmt::format("the weight share must be between 0 and 1, got {}", options.weight_share));
  }
  ReplayPlan plan{inputs, *job_lists(scenario, p)};
  plan.p = p;
  plan.v = scenario.chunks;
  plan.m = scenario.micro_batches;
  plan.placement = schedule_entry(scenario.schedule).placement;
  plan.g_count = p * plan.v;
  plan.rank_of.assign(plan.g_count, 0);
  for (int s = 0; s < p; ++s) {
    for (int c = 0; c < plan.v; ++c) plan.rank_of[global_stage(plan.placement, p, s, c)] = s;
  }
  plan.share = options.weight_share;
  plan.seed = options.seed;
  const LinkCosts& links = inputs.links;
  plan.same = links.same_machine.pairs == 0 && links.cross_machine.pairs > 0
                  ? links.cross_machine.ns
                  : links.same_machine.ns;
  plan.cross = links.cross_machine.pairs == 0 && links.same_machine.pairs > 0
                   ? links.same_machine.ns
                   : links.cross_machine.ns;
  plan.same_ns = std::llround(plan.same);
  plan.cross_ns = std::llround(plan.cross);
  plan.launch_ns = std::llround(links.launch_overhead_ns);
  const auto median_of = [](std::vector<double> v) { return v.empty() ? 0.0 : median(v); };
  plan.overhead = median_of(inputs.step_overhead);
  plan.optimizer_wait_ns.assign(p, 0);
  for (int s = 0; s < p; ++s) {
    plan.optimizer_wait_ns[s] = std::llround(median_of(inputs.stages[s].optimizer_wait));
  }
  plan.shared = inputs.shared_pattern && !inputs.rows.empty();
  plan.piece_units = inputs.pieces > 1 && scenario.schedule == ScheduleId::paddle_1f1b;
  plan.joined_actions = inputs.joined && scenario.schedule == ScheduleId::torch_dualpipev &&
                        inputs.measured.id == ScheduleId::torch_dualpipev;
  plan.has_weight.assign(p, false);
  for (int s = 0; s < p; ++s) {
    for (const ScheduleStep& op : plan.lists[s])
      plan.has_weight[s] = plan.has_weight[s] || op.role == PipelineRole::weight;
  }
  return plan;
}

// A stage's whole backwards where it logged them, else its two halves; a
// half where it logged them, else its share of a whole one.
double whole_backward(const StageSamples& c, Draws& d) {
  return !c.backward.empty() ? d.pick(c.backward) : d.pick(c.backward_input) + d.pick(c.weight);
}
double input_half(const StageSamples& c, Draws& d, double share) {
  return !c.backward_input.empty() ? d.pick(c.backward_input) : d.pick(c.backward) * (1 - share);
}
double weight_half(const StageSamples& c, Draws& d, double share) {
  return !c.weight.empty() ? d.pick(c.weight) : d.pick(c.backward) * share;
}
/// A drawn cost as a job's length: whole nanoseconds, at least one.
std::int64_t at_least_1ns(double x) { return std::max<std::int64_t>(1, std::llround(x)); }

/// The predicted timeline of a plan: its steps one after the other, each
/// stage running its job list in order, an op as soon as its input is there
/// and the stage is free. The same draws for any number of steps.
class TimelineReplay {
 public:
  /// `in_flight_max`: each stage's most micro-batches in flight (in whole
  /// stages: a chunk counts 1/V), set by run().
  TimelineReplay(const ReplayPlan& plan, std::vector<double>& in_flight_max)
      : plan_(plan), in_(plan.inputs), draws_(plan.seed), in_flight_max_(in_flight_max) {}

  Run run(int steps) {
    in_flight_max_.assign(plan_.p, 0);
    run_.devices.resize(plan_.p);
    for (int s = 0; s < plan_.p; ++s) {
      Device& d = run_.devices[s];
      d.index = s;
      d.machine = in_.stages[s].machine;
      d.rank = s;
      d.path = fmt::format("stage {}", s);
    }
    stage_start_.assign(plan_.p, 0);
    for (int step = 0; step < steps; ++step) {
      begin_step();
      play_step();
      end_step();
    }
    run_.finalize();
    return std::move(run_);
  }

 private:
  static constexpr std::int64_t kNotYet = -1;

  /// An output held back until its overlapped action ends (torch sends both
  /// outputs of an OVERLAP_F_B action after it).
  struct Held {
    PipelineRole role;
    int g, neighbour;
    std::int64_t micro_batch;
  };

  /// Fresh step state, the lr jobs, and with a shared pattern the measured
  /// step each block of M measured micro-batches takes its costs from.
  void begin_step() {
    const int p = plan_.p;
    f_ready_.assign(static_cast<std::size_t>(plan_.g_count) * plan_.m, kNotYet);
    b_ready_.assign(static_cast<std::size_t>(plan_.g_count) * plan_.m, kNotYet);
    free_at_ = stage_start_;
    in_flight_.assign(p, 0);
    for (int s = 0; s < p; ++s) {
      if (in_.stages[s].lr.empty()) continue;
      const std::int64_t start = free_at_[s] + plan_.launch_ns;
      const std::int64_t end = start + at_least_1ns(draws_.pick(in_.stages[s].lr));
      run_.devices[s].jobs.push_back({start, end, job_id_++, 0, run_.types.intern("lr"), 0});
      free_at_[s] = end;
    }
    block_row_.clear();
    if (plan_.shared) {
      const int mm = in_.measured.micro_batches;
      for (int b = 0; b * mm < plan_.m; ++b) {
        block_row_.push_back(static_cast<std::size_t>(draws_.index(in_.rows.size())));
      }
    }
    next_.assign(p, 0);
    remaining_ = 0;
    for (const auto& list : plan_.lists) remaining_ += list.size();
    held_.assign(p, std::nullopt);
  }

  /// Every op of the step: each stage plays its list as far as its inputs
  /// allow, round after round, until none is left.
  void play_step() {
    while (remaining_ > 0) {
      bool progress = false;
      for (int s = 0; s < plan_.p; ++s) {
        while (next_[s] < plan_.lists[s].size()) {
          const int played = pieces_apply(s)     ? play_piece_pair(s)
                             : joined_applies(s) ? play_joined_action(s)
                                                 : play_op(s);
          if (played == 0) break;  // waits for an input
          next_[s] += static_cast<std::size_t>(played);
          remaining_ -= static_cast<std::size_t>(played);
          progress = true;
        }
      }
      if (!progress) throw std::logic_error("what-if replay deadlocked (schedule table bug)");
    }
  }

  /// The optimizer jobs, and where the next step starts.
  void end_step() {
    for (int s = 0; s < plan_.p; ++s) {
      std::int64_t end = free_at_[s];
      if (!in_.stages[s].optimizer.empty()) {
        const std::int64_t start = free_at_[s] + plan_.launch_ns + plan_.optimizer_wait_ns[s];
        end = start + at_least_1ns(draws_.pick(in_.stages[s].optimizer));
        run_.devices[s].jobs.push_back(
            {start, end, job_id_++, 0, run_.types.intern("optimizer"), 0});
      }
      stage_start_[s] = end + std::llround(plan_.overhead);
    }
  }

  std::size_t slot(int g, std::int64_t mb) const {
    return static_cast<std::size_t>(g) * plan_.m + static_cast<std::size_t>(mb);
  }

  std::string type_name(std::string_view base, int chunk) const {
    return plan_.v > 1 ? fmt::format("{}{}", base, chunk) : std::string(base);
  }

  const WhatifInputs::CostRow& row_of(int s, std::int64_t mb) const {
    const int mm = in_.measured.micro_batches;
    return in_.rows[block_row_[static_cast<std::size_t>(mb / mm)]]
                   [static_cast<std::size_t>(mb % mm)][static_cast<std::size_t>(s)];
  }

  /// Sends `role`'s output of global stage g (micro-batch mb) to
  /// `neighbour`, leaving at `end`.
  void send(int s, PipelineRole role, int g, int neighbour, std::int64_t mb, std::int64_t end) {
    if (neighbour < 0) return;
    std::int64_t arrival = end;
    if (plan_.rank_of[neighbour] != s) {
      const bool same_machine =
          in_.stages[plan_.rank_of[neighbour]].machine == in_.stages[s].machine;
      arrival += same_machine ? plan_.same_ns : plan_.cross_ns;
    }
    (role == PipelineRole::forward ? f_ready_ : b_ready_)[slot(g, mb)] = arrival;
  }

  /// When op's input is there (kNotYet: not yet known), and the global
  /// stage its output goes to (-1: none).
  std::pair<std::int64_t, int> input_of(int s, const ScheduleStep& op) const {
    const int g = global_stage(plan_.placement, plan_.p, s, op.chunk);
    std::int64_t ready = 0;
    int neighbour = -1;
    if (op.role == PipelineRole::forward) {
      if (g > 0) ready = f_ready_[slot(g - 1, op.micro_batch)];
      if (g < plan_.g_count - 1) neighbour = g + 1;
    } else if (op.role == PipelineRole::backward) {
      if (g < plan_.g_count - 1) ready = b_ready_[slot(g + 1, op.micro_batch)];
      if (g > 0) neighbour = g - 1;
    }
    return {ready, neighbour};
  }

  /// A micro-batch enters the stage (its forward ran).
  void enter(int s) {
    ++in_flight_[s];
    in_flight_max_[s] = std::max(in_flight_max_[s], static_cast<double>(in_flight_[s]) / plan_.v);
  }

  /// A steady-phase (backward, forward) pair of Paddle's 1F1B with
  /// backward-forward overlap is next on stage s.
  bool pieces_apply(int s) const {
    const auto& list = plan_.lists[s];
    const std::size_t at = next_[s];
    const ScheduleStep& op = list[at];
    const StageSamples& c = in_.stages[s];
    return plan_.piece_units && op.role == PipelineRole::backward && !op.split &&
           at + 1 < list.size() && list[at + 1].role == PipelineRole::forward &&
           c.forward_piece_share.size() == static_cast<std::size_t>(in_.pieces) &&
           c.backward_piece_share.size() == static_cast<std::size_t>(in_.pieces);
  }

  /// Plays the pair pieces_apply() found: their pieces interleaved, backward
  /// piece 0 first, each waiting for its op's input at its first piece; each
  /// output sent after its op's last piece. 2, or 0 while an input is not
  /// there.
  int play_piece_pair(int s) {
    const StageSamples& c = in_.stages[s];
    const ScheduleStep& op = plan_.lists[s][next_[s]];
    const ScheduleStep& fwd = plan_.lists[s][next_[s] + 1];
    const auto [b_in, b_to] = input_of(s, op);
    const auto [f_in, f_to] = input_of(s, fwd);
    if (b_in == kNotYet || f_in == kNotYet) return 0;
    double b_cost = 0, f_cost = 0;
    if (plan_.shared) {
      const WhatifInputs::CostRow& r = row_of(s, op.micro_batch);
      b_cost = r.backward > 0 ? r.backward : r.backward_input + r.weight;
      f_cost = row_of(s, fwd.micro_batch).forward;
    } else {
      b_cost = whole_backward(c, draws_);
      f_cost = draws_.pick(c.forward);
    }
    std::int64_t t = free_at_[s], b_end = 0, f_end = 0;
    for (int k = 0; k < in_.pieces; ++k) {
      for (const ScheduleStep* o : {&op, &fwd}) {
        const bool backward = o == &op;
        const std::int64_t ready = k > 0 ? 0 : backward ? b_in : f_in;
        const std::int64_t start = std::max(t + plan_.launch_ns, ready);
        const double piece_share = (backward ? c.backward_piece_share
                                             : c.forward_piece_share)[static_cast<std::size_t>(k)];
        t = start + at_least_1ns((backward ? b_cost : f_cost) * piece_share / plan_.v);
        (backward ? b_end : f_end) = t;
        run_.devices[s].jobs.push_back(
            {start, t, job_id_++, o->micro_batch,
             run_.types.intern(fmt::format("{}(chunk{})", backward ? "backward" : "forward", k)),
             0});
      }
    }
    send(s, PipelineRole::backward, global_stage(plan_.placement, plan_.p, s, op.chunk), b_to,
         op.micro_batch, b_end);
    send(s, PipelineRole::forward, global_stage(plan_.placement, plan_.p, s, fwd.chunk), f_to,
         fwd.micro_batch, f_end);
    enter(s);
    --in_flight_[s];
    free_at_[s] = t;
    return 2;
  }

  /// An F+B action the run timed as one job is next on stage s.
  bool joined_applies(int s) const {
    const auto& list = plan_.lists[s];
    const ScheduleStep& op = list[next_[s]];
    const StageSamples& c = in_.stages[s];
    return plan_.joined_actions && op.overlap_next && next_[s] + 1 < list.size() &&
           static_cast<std::size_t>(op.chunk) < c.joined.size() &&
           !c.joined[static_cast<std::size_t>(op.chunk)].empty();
  }

  /// Plays the action joined_applies() found: one job of a measured
  /// duration, from when the forward's input is there, ended no earlier than
  /// the backward's input; both outputs at its end. 2, or 0 while an input is
  /// not there.
  int play_joined_action(int s) {
    const StageSamples& c = in_.stages[s];
    const ScheduleStep& op = plan_.lists[s][next_[s]];
    const ScheduleStep& second = plan_.lists[s][next_[s] + 1];
    const auto [f_in, f_to] = input_of(s, op);
    const auto [b_in, b_to] = input_of(s, second);
    if (f_in == kNotYet || b_in == kNotYet) return 0;
    const std::int64_t start = std::max(free_at_[s] + plan_.launch_ns, f_in);
    const std::int64_t end = std::max(
        start + at_least_1ns(draws_.pick(c.joined[static_cast<std::size_t>(op.chunk)])), b_in);
    for (const ScheduleStep* o : {&op, &second}) {
      const std::string_view base = o->role == PipelineRole::forward ? "forward" : "backward";
      run_.devices[s].jobs.push_back(
          {start, end, job_id_++, o->micro_batch,
           run_.types.intern(type_name(base, o->chunk) + std::string(kJoinedMark)), 0});
      send(s, o->role, global_stage(plan_.placement, plan_.p, s, o->chunk), o == &op ? f_to : b_to,
           o->micro_batch, end);
    }
    enter(s);
    if (!second.split || !plan_.has_weight[s]) --in_flight_[s];
    free_at_[s] = end;
    return 2;
  }

  /// Plays stage s's next op alone: 1, or 0 while its input is not there
  /// (its cost drawn all the same, as every replay draws it).
  int play_op(int s) {
    const StageSamples& c = in_.stages[s];
    const auto& list = plan_.lists[s];
    const ScheduleStep& op = list[next_[s]];
    const int g = global_stage(plan_.placement, plan_.p, s, op.chunk);
    const double share = plan_.share;
    std::int64_t ready = 0;
    double cost = 0;
    std::string_view base;
    int neighbour = -1;  // the global stage this op's output goes to
    if (op.role == PipelineRole::forward) {
      if (g > 0) ready = f_ready_[slot(g - 1, op.micro_batch)];
      if (g < plan_.g_count - 1) neighbour = g + 1;
      cost = plan_.shared ? row_of(s, op.micro_batch).forward : draws_.pick(c.forward);
      base = "forward";
    } else if (op.role == PipelineRole::backward) {
      if (g < plan_.g_count - 1) ready = b_ready_[slot(g + 1, op.micro_batch)];
      if (g > 0) neighbour = g - 1;
      if (plan_.shared) {
        const WhatifInputs::CostRow& r = row_of(s, op.micro_batch);
        const double whole = r.backward > 0 ? r.backward : r.backward_input + r.weight;
        cost = !op.split ? whole : r.backward_input > 0 ? r.backward_input : whole * (1 - share);
      } else {
        cost = op.split ? input_half(c, draws_, share) : whole_backward(c, draws_);
      }
      base = op.split ? "backward_b" : "backward";
    } else {
      if (plan_.shared) {
        const WhatifInputs::CostRow& r = row_of(s, op.micro_batch);
        cost = r.weight > 0 ? r.weight : r.backward * share;
      } else {
        cost = weight_half(c, draws_, share);
      }
      base = "backward_w";
    }
    if (ready == kNotYet) return 0;
    // The second op of an OVERLAP_F_B action runs inside it, launched with
    // the first: no launch overhead of its own.
    const bool inside = next_[s] > 0 && list[next_[s] - 1].overlap_next;
    const std::int64_t start = std::max(free_at_[s] + (inside ? 0 : plan_.launch_ns), ready);
    const std::int64_t end = start + at_least_1ns(cost / plan_.v);
    run_.devices[s].jobs.push_back(
        {start, end, job_id_++, op.micro_batch, run_.types.intern(type_name(base, op.chunk)), 0});
    if (op.overlap_next && in_.overlap_actions) {
      held_[s] = Held{op.role, g, neighbour, op.micro_batch};
    } else {
      send(s, op.role, g, neighbour, op.micro_batch, end);
    }
    if (inside && held_[s]) {
      send(s, held_[s]->role, held_[s]->g, held_[s]->neighbour, held_[s]->micro_batch, end);
      held_[s].reset();
    }
    if (op.role == PipelineRole::forward) {
      enter(s);
    } else if (op.role == PipelineRole::weight || !op.split || !plan_.has_weight[s]) {
      --in_flight_[s];
    }
    free_at_[s] = end;
    return 1;
  }

  const ReplayPlan& plan_;
  const WhatifInputs& in_;
  Draws draws_;
  std::vector<double>& in_flight_max_;
  Run run_;
  std::int64_t job_id_ = 0;
  std::vector<std::int64_t> stage_start_;
  // The step being played.
  std::vector<std::int64_t> f_ready_, b_ready_;  // by slot(): an input's arrival, or kNotYet
  std::vector<std::int64_t> free_at_;
  std::vector<int> in_flight_;
  std::vector<std::size_t> block_row_;
  std::vector<std::size_t> next_;  // each stage's next op in its list
  std::size_t remaining_ = 0;
  std::vector<std::optional<Held>> held_;
};

Run replay_timeline(const ReplayPlan& plan, int steps, std::vector<double>& in_flight_max) {
  return TimelineReplay(plan, in_flight_max).run(steps);
}

/// The spread of `out`: the steps of a replay long enough to show the cost
/// spread, less its first and last (which differ from the others without
/// any: the first follows no step, the last is followed by none).
void set_step_spread(Prediction& out, const ReplayPlan& plan, const Metrics& replayed, int steps) {
  std::vector<double> unused;
  const Metrics longer = steps >= kSpreadSteps + 2
                             ? replayed
                             : compute_metrics(replay_timeline(plan, kSpreadSteps + 2, unused));
  std::vector<std::int64_t> inner;
  for (std::size_t k = 1; k + 1 < longer.steps.size(); ++k) {
    if (longer.steps[k].complete) inner.push_back(longer.steps[k].window_ns());
  }
  if (!inner.empty()) {
    out.step_p10_ns = static_cast<double>(select_rank(inner, rounded_rank(inner.size(), 10)));
    out.step_p90_ns = static_cast<double>(select_rank(inner, rounded_rank(inner.size(), 90)));
  }
}

/// The mean costs the plan's replays draw from.
UsedCosts used_costs(const ReplayPlan& plan) {
  UsedCosts used;
  const bool split_out = std::any_of(plan.lists.begin(), plan.lists.end(), [](const auto& list) {
    return std::any_of(list.begin(), list.end(), [](const ScheduleStep& op) { return op.split; });
  });
  const int v = plan.v;
  const double share = plan.share;
  for (int s = 0; s < plan.p; ++s) {
    const StageSamples& c = plan.inputs.stages[s];
    const double whole =
        !c.backward.empty() ? mean(c.backward) : mean(c.backward_input) + mean(c.weight);
    used.forward_ns.push_back(mean(c.forward) / v);
    if (split_out) {
      used.backward_ns.push_back(
          (!c.backward_input.empty() ? mean(c.backward_input) : whole * (1 - share)) / v);
      used.weight_ns.push_back((!c.weight.empty() ? mean(c.weight) : whole * share) / v);
    } else {
      used.backward_ns.push_back(whole / v);
      used.weight_ns.push_back(0);
    }
    used.optimizer_ns.push_back(mean(c.optimizer));
    used.optimizer_wait_ns.push_back(static_cast<double>(plan.optimizer_wait_ns[s]));
  }
  used.latency_same_machine_ns = plan.same;
  used.latency_cross_machine_ns = plan.cross;
  used.launch_overhead_ns = plan.inputs.links.launch_overhead_ns;
  used.step_overhead_ns = plan.overhead;
  return used;
}

}  // namespace

Replay replay_scenario(const WhatifInputs& inputs, const Scenario& scenario,
                       const ReplayOptions& options) {
  const ReplayPlan plan = plan_replay(inputs, scenario, options);
  Replay replay;
  replay.prediction.extrapolates = scenario_extrapolations(inputs, scenario);
  std::vector<double> in_flight_max;
  const int steps = replayed_steps(options, inputs.measured);
  Run run = replay_timeline(plan, steps, in_flight_max);
  replay.metrics = compute_metrics(run);
  Prediction& out = replay.prediction;
  out.scenario = scenario;
  std::vector<std::int64_t> windows;
  for (const StepWindow& step : replay.metrics.steps) {
    if (step.complete) windows.push_back(step.window_ns());
  }
  out.step_ns = median_ns_exact(windows);
  out.bubble_ratio = replay.metrics.bubble_ratio;
  out.step_ns_per_micro_batch = out.step_ns / plan.m;
  out.in_flight_max = std::move(in_flight_max);
  set_step_spread(out, plan, replay.metrics, steps);
  out.costs = used_costs(plan);
  replay.run = std::move(run);
  return replay;
}

}  // namespace pipescope
