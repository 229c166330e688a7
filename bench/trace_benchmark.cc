// Micro-benchmarks of the trace writers: the native Perfetto protobuf
// (trace.pftrace) and the Chrome JSON trace, on the same synthetic run, so
// their events/s and bytes per job can be compared. Files go to the system
// temp folder (page cache: this measures the writers, not the disk). And
// their size estimates (export/trace_size.h), which `analyze` runs before a
// trace it writes without --steps.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/chrome_trace.h"
#include "export/perfetto_trace.h"
#include "model/run.h"

namespace pipescope {
namespace {

// 8 devices of 1F1B-like jobs: forward/backward alternating over 8
// micro-batches, 1 ms each with a 0.1 ms gap, an optimizer every 16 jobs.
Run make_run(std::int64_t jobs_per_device) {
  Run run;
  const TypeId forward = run.types.intern("forward");
  const TypeId backward = run.types.intern("backward");
  const TypeId optimizer = run.types.intern("optimizer");
  for (int d = 0; d < 8; ++d) {
    Device device;
    device.index = d;
    device.machine = d / 4;
    device.rank = d % 4;
    std::int64_t t = 1697793307213760986 + std::int64_t{d} * 1'000'000;
    for (std::int64_t i = 0; i < jobs_per_device; ++i) {
      Job job;
      job.start_ns = t;
      job.end_ns = t + 1'000'000 + (i % 7) * 1'000;
      job.job_id = i;
      job.micro_batch = (i / 2) % 8;
      job.type = i % 16 == 15 ? optimizer : (i % 2 == 0 ? forward : backward);
      job.line = static_cast<std::uint32_t>(50 * i + 17);
      device.jobs.push_back(job);
      t = job.end_ns + 100'000;
    }
    run.devices.push_back(std::move(device));
  }
  run.finalize();
  return run;
}

template <typename Write>
void run_writer(benchmark::State& state, Write write, const char* file_name) {
  const Run run = make_run(state.range(0));
  const Metrics metrics = compute_metrics(run);
  const std::string path =
      (std::filesystem::temp_directory_path() /
       (std::string("pipescope-bench-") + std::to_string(::getpid()) + file_name))
          .string();
  TraceOptions options;
  for (auto _ : state) write(run, metrics, options, path);
  const auto jobs = static_cast<std::int64_t>(run.job_count());
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  // One slice per job (a BEGIN/END packet pair in Perfetto, one "X" event in JSON).
  state.SetItemsProcessed(state.iterations() * jobs);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["bytes_per_job"] = static_cast<double>(bytes) / static_cast<double>(jobs);
}

void BM_PerfettoTraceWrite(benchmark::State& state) {
  run_writer(state, write_perfetto_trace, ".pftrace");
}
BENCHMARK(BM_PerfettoTraceWrite)->Arg(1 << 14)->Unit(benchmark::kMillisecond);

void BM_ChromeTraceWrite(benchmark::State& state) {
  run_writer(state, write_chrome_trace, ".json");
}
BENCHMARK(BM_ChromeTraceWrite)->Arg(1 << 14)->Unit(benchmark::kMillisecond);

// With pipeline analysis, as `analyze` estimates: every bubble is counted.
template <typename Estimate>
void run_estimate(benchmark::State& state, Estimate estimate) {
  const Run run = make_run(state.range(0));
  const Metrics metrics = compute_metrics(run);
  const PipelineAnalysis pipeline;
  TraceOptions options;
  options.pipeline = &pipeline;
  std::uint64_t bytes = 0;
  for (auto _ : state) benchmark::DoNotOptimize(bytes = estimate(run, metrics, options));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(run.job_count()));
  state.counters["estimated_bytes"] = static_cast<double>(bytes);
}

void BM_PerfettoTraceEstimate(benchmark::State& state) {
  run_estimate(state, [](const Run& run, const Metrics& metrics, const TraceOptions& options) {
    return estimate_perfetto_trace_bytes(run, metrics, options);
  });
}
BENCHMARK(BM_PerfettoTraceEstimate)->Arg(1 << 14)->Arg(1 << 19)->Unit(benchmark::kMillisecond);

void BM_ChromeTraceEstimate(benchmark::State& state) {
  run_estimate(state, [](const Run& run, const Metrics& metrics, const TraceOptions& options) {
    return estimate_chrome_trace_bytes(run, metrics, options);
  });
}
BENCHMARK(BM_ChromeTraceEstimate)->Arg(1 << 14)->Arg(1 << 19)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipescope
