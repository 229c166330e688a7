// Micro-benchmarks of the scanning hot path: the job-line parser, the
// prefilter + parser over whole chunks (dense and sparse logs), the same with
// a --job-line regex (Hyperscan candidates, or RE2 on every line), newline
// counting, and the metrics. Throughput is reported as bytes or items/s.
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <string>

#include "analysis/metrics.h"
#include "scan/chunk_scanner.h"
#include "scan/job_line_parser.h"
#include "scan/job_line_regex.h"
#include "scan/prefilter.h"

namespace pipescope {
namespace {

std::string job_line(int i) {
  const std::int64_t start = 1697793307213760986 + std::int64_t{i} * 1'000'000;
  return fmt::format(
      "I1020 09:15:07.265326 22317 standalone_executor.cc:217] Profiler Info: Job ({}), type = "
      "forward, micro_batch_id = {}, job_start_time = {}.{:06}, job_end_time = {}.{:06}\n",
      i, i % 8, start / 1'000'000, start % 1'000'000, (start + 900'000) / 1'000'000,
      (start + 900'000) % 1'000'000);
}

/// ~8 MiB of log text with one job line per `noise + 1` lines.
std::string make_chunk(int noise) {
  std::string text;
  for (int i = 0; text.size() < (8u << 20); ++i) {
    for (int n = 0; n < noise; ++n) {
      text += "I1020 09:15:07.265326 22317 interpretercore.cc:237] New Executor is Running, step ";
      text += std::to_string(i);
      text += " with Profiler disabled\n";
    }
    text += job_line(i);
  }
  return text;
}

void BM_ParseJobLine(benchmark::State& state) {
  const std::string line = job_line(12345);
  std::string scratch;
  JobLine job;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse_job_line(line, job, scratch));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(line.size()));
}
BENCHMARK(BM_ParseJobLine);

void BM_ScanChunk(benchmark::State& state) {
  const std::string text = make_chunk(static_cast<int>(state.range(0)));
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  ChunkScan out;
  for (auto _ : state) {
    scan_chunk(text, prefilter, scratch, {}, out);
    benchmark::DoNotOptimize(out.jobs.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  state.counters["jobs"] = static_cast<double>(out.jobs.size());
}
// 0 = dense (job lines only), 49 = sparse (1 job line per 50 lines).
BENCHMARK(BM_ScanChunk)->Arg(0)->Arg(49)->Unit(benchmark::kMillisecond);

/// The same chunks with another framework's job lines (`--job-line`), times
/// in seconds: `[2024-05-01 10:00:00] rank0 forward mb=3 t0=... t1=...`.
std::string make_other_chunk(int noise) {
  std::string text;
  for (int i = 0; text.size() < (8u << 20); ++i) {
    for (int n = 0; n < noise; ++n) {
      text += "I1020 09:15:07.265326 22317 interpretercore.cc:237] New Executor is Running, step ";
      text += std::to_string(i);
      text += " with Profiler disabled\n";
    }
    const std::int64_t start = 1714557600123456 + std::int64_t{i} * 1'000;
    text += fmt::format("[2024-05-01 10:00:00] rank0 forward mb={} t0={}.{:06} t1={}.{:06}\n",
                        i % 8, start / 1'000'000, start % 1'000'000, (start + 900) / 1'000'000,
                        (start + 900) % 1'000'000);
  }
  return text;
}

/// The chunk scan with a --job-line regex: Hyperscan finds the candidate
/// lines (arg 1 = 0), or RE2 reads every line as a build without Hyperscan
/// does (arg 1 = 1).
void BM_ScanChunkJobLineRegex(benchmark::State& state) {
  const std::string text = make_other_chunk(static_cast<int>(state.range(0)));
  const JobLineRegex regex(
      R"(rank\d+ (?P<type>\w+) mb=(?P<mb>\d+) t0=(?P<start>[0-9.]+) t1=(?P<end>[0-9.]+))",
      TimeUnit::s, {},
      state.range(1) == 0 ? JobLineRegex::Search::hyperscan : JobLineRegex::Search::every_line);
  const Prefilter prefilter;
  Prefilter::Scratch scratch(prefilter);
  JobLineRegex::Scratch regex_scratch(regex);
  ChunkScanOptions options;
  options.job_line = &regex;
  options.job_line_scratch = &regex_scratch;
  ChunkScan out;
  for (auto _ : state) {
    scan_chunk(text, prefilter, scratch, options, out);
    benchmark::DoNotOptimize(out.jobs.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  state.counters["jobs"] = static_cast<double>(out.jobs.size());
  state.counters["hyperscan"] = regex.search() == JobLineRegex::Search::hyperscan ? 1 : 0;
}
BENCHMARK(BM_ScanChunkJobLineRegex)
    ->Args({0, 0})
    ->Args({49, 0})
    ->Args({0, 1})
    ->Args({49, 1})
    ->Unit(benchmark::kMillisecond);

void BM_CountNewlines(benchmark::State& state) {
  const std::string text = make_chunk(49);
  for (auto _ : state) benchmark::DoNotOptimize(count_newlines(text));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_CountNewlines)->Unit(benchmark::kMillisecond);

void BM_Metrics(benchmark::State& state) {
  // 8 devices, 1F1B-like sequences of 16 micro-batches per step.
  Run run;
  const TypeId f = run.types.intern("forward"), b = run.types.intern("backward"),
               o = run.types.intern("optimizer");
  const int steps = static_cast<int>(state.range(0));
  for (int d = 0; d < 8; ++d) {
    Device device;
    device.index = d;
    std::int64_t t = d * 1000;
    for (int s = 0; s < steps; ++s) {
      for (int m = 0; m < 16; ++m) {
        device.jobs.push_back({t, t + 900, m, m, f, 0});
        device.jobs.push_back({t + 1000, t + 2900, m, m, b, 0});
        t += 3000;
      }
      device.jobs.push_back({t, t + 500, 0, 0, o, 0});
      t += 1000;
    }
    run.devices.push_back(std::move(device));
  }
  run.finalize();
  for (auto _ : state) {
    const Metrics m = compute_metrics(run);
    benchmark::DoNotOptimize(m.bubble_ratio);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(run.job_count()));
}
BENCHMARK(BM_Metrics)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipescope
