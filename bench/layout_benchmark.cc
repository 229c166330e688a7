// The cost of finding a hybrid-parallel layout (analysis/layout.h) on large
// runs: 4,096 ranks as pp=8 × dp=64 × tp=8 (Paddle's dp,pp,tp order), 2
// steps of 1F1B with 16 micro-batches, each replica a pipeline simulated
// with its own seed, each tensor-parallel peer a copy launched a few
// microseconds later. The run is built once; the rows time detection alone
// and the whole analysis (clock check, metrics, replicas, bottleneck, ...).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include "analysis/layout.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "simulate/simulator.h"

namespace pipescope {
namespace {

Run hybrid_run(int pp, int dp, int tp) {
  const LayoutShape shape{pp, dp, tp, {LayoutAxis::dp, LayoutAxis::pp, LayoutAxis::tp}};
  Run run;
  run.devices.resize(static_cast<std::size_t>(shape.ranks()));
  for (int r = 0; r < dp; ++r) {
    sim::SimConfig config;
    config.shape = {sim::ScheduleKind::one_f_one_b, pp, 16, 1};
    config.steps = 2;
    config.seed = 1 + static_cast<std::uint64_t>(r);
    const sim::SimulatedRun simulated = sim::simulate(config);
    for (int s = 0; s < pp; ++s) {
      for (int t = 0; t < tp; ++t) {
        const std::int64_t rank = (static_cast<std::int64_t>(r) * pp + s) * tp + t;
        Device& device = run.devices[static_cast<std::size_t>(rank)];
        device.index = static_cast<int>(rank);
        device.machine = static_cast<int>(rank / 8);
        device.rank = static_cast<int>(rank % 8);
        device.machine_name = fmt::format("machine{}", device.machine);
        std::uint32_t line = 0;
        for (const sim::SimJob& job : simulated.jobs[static_cast<std::size_t>(s)]) {
          Job j;
          j.start_ns = job.start_ns + t * 2'000;
          j.end_ns = job.end_ns;
          j.micro_batch = job.micro_batch;
          j.job_id = line;
          j.line = ++line;
          j.type = run.types.intern(sim::job_type_name(job, false, sim::ChunkNaming::digit));
          device.jobs.push_back(j);
        }
      }
    }
  }
  run.finalize();
  return run;
}

const Run& large_run() {
  static const Run run = hybrid_run(8, 64, 8);
  return run;
}

void BM_DetectLayout(benchmark::State& state) {
  const Run& run = large_run();
  const Metrics metrics = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  for (auto _ : state) {
    const Layout layout = detect_layout(run, metrics.job_step, roles);
    if (layout.shape.pp != 8 || layout.shape.dp != 64 || layout.shape.tp != 8) {
      state.SkipWithError("wrong layout");
    }
    benchmark::DoNotOptimize(layout.stages.stage_count());
  }
  state.counters["ranks"] = static_cast<double>(run.devices.size());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(run.job_count()));
}
BENCHMARK(BM_DetectLayout)->Unit(benchmark::kMillisecond);

void BM_AnalyzeHybridRun(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Run run = large_run();
    state.ResumeTiming();
    const AnalyzedRun a = analyze_run(run, PipelineOptions{});
    benchmark::DoNotOptimize(a.metrics.bubble_ratio);
  }
  state.counters["ranks"] = static_cast<double>(large_run().devices.size());
}
BENCHMARK(BM_AnalyzeHybridRun)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipescope
