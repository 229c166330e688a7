// Micro-benchmarks of a PyTorch profiler trace's per-event path, the parts
// bench/kernel_order.sh and bench/kernel_trace.sh time together: the
// tokenizer (events cut from a chunk), read_plain_event on launches and
// kernels as bench/kernel_order.sh writes them and as Kineto does (several
// lines, "args" with a kernel's registers and grid), on CPU ops (dropped by
// their category), the exact time parser, and the launch join (kernels in
// time order, and a second stream's a step late).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/launch_join.h"
#include "ingest/torch_trace_event.h"
#include "ingest/trace_event_tokenizer.h"
#include "scan/decimal_time.h"

namespace pipescope {
namespace {

/// Events as bench/kernel_order.sh writes them: a launch, then a kernel.
std::string compact_launch(int i) {
  return fmt::format(
      R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, )"
      R"("ts": {}.{:03}, "dur": 0.150, "args": {{"correlation": {}, "External id": {}}}}})",
      1000 + i / 5, (i % 5) * 200, i + 2, i / 120);
}
std::string compact_kernel(int i) {
  return fmt::format(
      R"({{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_{}", "pid": 0, "tid": 13, )"
      R"("ts": {}.000, "dur": 4.000, "args": {{"correlation": {}, "stream": 13}}}})",
      i % 120, 1040 + 3 * i, i + 2);
}
/// As Kineto writes them (PyTorch 2.x): one key line after another.
std::string kineto_launch(int i) {
  return fmt::format(
      "{{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
      "2910249, \"tid\": 2919752,\n    \"ts\": 4458676983{:03}.767, \"dur\": 15.633,\n    "
      "\"args\": {{\n      \"External id\": {},      \"cbid\": 211, \"correlation\": {}\n    }}\n  "
      "}}",
      i % 1000, 12000 + i / 4, 57000 + i);
}
std::string kineto_kernel(int i) {
  return fmt::format(
      "{{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::vectorized_"
      "elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_"
      "internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor"
      "<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<"
      "char*, 2>)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": 4458676983{:03}.259, \"dur\": 2.176,\n   "
      " \"args\": {{\n      \"External id\": {},      \"queued\": 0, \"device\": 0, \"context\": "
      "1,      \"stream\": 7, \"correlation\": {},      \"registers per thread\": 16,      "
      "\"shared memory\": 0,      \"blocks per SM\": 0.009259,      \"warps per SM\": 0.037037,  "
      "    \"grid\": [1, 1, 1],      \"block\": [128, 1, 1],      \"est. achieved occupancy %\": "
      "0\n    }}\n  }}",
      i % 1000, 12000 + i / 4, 57000 + i);
}
std::string cpu_op(int i) {
  return fmt::format(
      "{{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul\", \"pid\": 2910249, "
      "\"tid\": 2910249,\n    \"ts\": 4458676983{:03}.767, \"dur\": 15.633,\n    \"args\": {{\n  "
      "    \"External id\": {},\"Record function id\": 0, \"Ev Idx\": {}\n    }}\n  }}",
      i % 1000, 12000 + i, i);
}

/// `n` events of `make` laid out as a chunk the tokenizer cut, with the
/// padding after each view.
struct Events {
  std::string bytes;
  std::vector<std::string_view> views;
};
template <typename Make>
Events events_of(int n, Make make) {
  Events e;
  std::vector<std::pair<std::size_t, std::size_t>> at;
  for (int i = 0; i < n; ++i) {
    const std::string ev = make(i);
    at.push_back({e.bytes.size(), ev.size()});
    e.bytes += ev;
    e.bytes += ",\n";
  }
  e.bytes.append(TraceEventTokenizer::kPadding, ' ');
  for (const auto& [begin, size] : at) e.views.emplace_back(e.bytes.data() + begin, size);
  return e;
}

void read_events(benchmark::State& state, const Events& events) {
  const EventFilter filter{};
  std::size_t bytes = 0;
  for (const std::string_view v : events.views) bytes += v.size();
  for (auto _ : state) {
    for (const std::string_view v : events.views) {
      PlainRecord r;
      benchmark::DoNotOptimize(read_plain_event(v, filter, r));
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(events.views.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

void BM_ReadPlainEvent_Compact(benchmark::State& state) {
  static const Events events =
      events_of(4096, [](int i) { return i % 2 ? compact_kernel(i) : compact_launch(i); });
  read_events(state, events);
}
BENCHMARK(BM_ReadPlainEvent_Compact);

void BM_ReadPlainEvent_Kineto(benchmark::State& state) {
  static const Events events =
      events_of(4096, [](int i) { return i % 2 ? kineto_kernel(i) : kineto_launch(i); });
  read_events(state, events);
}
BENCHMARK(BM_ReadPlainEvent_Kineto);

void BM_ReadPlainEvent_CpuOp(benchmark::State& state) {
  static const Events events = events_of(4096, cpu_op);
  read_events(state, events);
}
BENCHMARK(BM_ReadPlainEvent_CpuOp);

void BM_Tokenizer(benchmark::State& state) {
  const Events events =
      events_of(4096, [](int i) { return i % 2 ? compact_kernel(i) : compact_launch(i); });
  std::string doc = "{\"traceEvents\": [\n" +
                    events.bytes.substr(0, events.bytes.size() - TraceEventTokenizer::kPadding - 2);
  doc += "\n]}";
  const std::size_t size = doc.size();
  doc.append(TraceEventTokenizer::kPadding, ' ');
  std::size_t found = 0;
  for (auto _ : state) {
    TraceEventTokenizer tok({}, [&](std::string_view, std::uint64_t) { ++found; });
    tok.feed(doc.data(), size);
    tok.finish();
  }
  benchmark::DoNotOptimize(found);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}
BENCHMARK(BM_Tokenizer);

void BM_ParseMicros(benchmark::State& state) {
  std::vector<std::string> times;
  for (int i = 0; i < 1024; ++i)
    times.push_back(fmt::format("4458676983{:03}.{:03}", i, i * 7 % 1000));
  for (auto _ : state) {
    for (const std::string& t : times) benchmark::DoNotOptimize(parse_micros_to_ns(t));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(times.size()));
}
BENCHMARK(BM_ParseMicros);

/// 120 launches, then their kernels: all of the first stream's at once,
/// the second stream's (odd ones) `late` jobs later.
void join(benchmark::State& state, int late) {
  constexpr int kJobs = 240, kKernels = 120;
  for (auto _ : state) {
    LaunchJoin j;
    for (int job = 0; job < kJobs + late; ++job) {
      if (job < kJobs) {
        const std::int64_t base = std::int64_t{job} * kKernels;
        for (int k = 0; k < kKernels; ++k) j.on_launch(base + k, (base + k) * 200, 7, false);
        for (int k = 0; k < kKernels; k += 2)
          j.on_activity(base + k, base * 1000, base * 1000 + 5, -1);
      }
      if (job >= late) {
        const std::int64_t base = std::int64_t{job - late} * kKernels;
        for (int k = 1; k < kKernels; k += 2)
          j.on_activity(base + k, base * 1000, base * 1000 + 5, -1);
      }
    }
    benchmark::DoNotOptimize(j.pairs());
  }
  state.SetItemsProcessed(state.iterations() * kJobs * kKernels * 2);
}
void BM_LaunchJoin_InOrder(benchmark::State& state) { join(state, 0); }
BENCHMARK(BM_LaunchJoin_InOrder);
void BM_LaunchJoin_StreamAStepLate(benchmark::State& state) { join(state, 120); }
BENCHMARK(BM_LaunchJoin_StreamAStepLate);

}  // namespace
}  // namespace pipescope
