// The job timer's CUDA backend: runs where a GPU is present, skipped (with
// the reason) where the CUDA toolkit was not found at build time or the
// machine has no usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "records/ivl_reader.h"
#include "support/temp_dir.h"
#include "timer/job_timer.h"
#ifdef PIPESCOPE_HAVE_CUDA_TIMER
#include <cuda_runtime_api.h>

#include "timer/cuda_backend.h"
#endif

namespace pipescope {
namespace {

#ifndef PIPESCOPE_HAVE_CUDA_TIMER
TEST(CudaTimer, RecordsGpuIntervals) {
  GTEST_SKIP() << "built without the CUDA toolkit: the CUDA job timer is not compiled";
}
#else

std::vector<ivl::Record> read_records(const std::string& path) {
  std::vector<ivl::Record> records;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) records.push_back(block.record(i));
  };
  const ivl::ReadResult result = ivl::read_file(path, cb);
  EXPECT_TRUE(result.header_ok);
  EXPECT_EQ(result.problems, 0u);
  return records;
}

TEST(CudaTimer, RecordsGpuIntervals) {
  std::string why;
  if (!timer::cuda_timer_available(&why)) GTEST_SKIP() << "no usable GPU: " << why;
  testing::TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "gpu.ivl";
  options.rank = 1;
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&b), cudaSuccess);
  // Work without kernels: host-to-device copies of 64 MiB take measurable
  // GPU time on each stream.
  const std::size_t bytes = std::size_t{64} << 20;
  void* device = nullptr;
  void* host = nullptr;
  ASSERT_EQ(cudaMalloc(&device, bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host, bytes), cudaSuccess);
  std::int64_t before = 0;
  std::int64_t after = 0;
  {
    auto timer = timer::make_cuda_timer(options);
    const auto copy = timer->job_type("forward");
    before = timer::realtime_ns();
    for (int step = 0; step < 3; ++step) {
      for (int mb = 0; mb < 4; ++mb) {
        cudaStream_t s = mb % 2 == 0 ? a : b;
        timer->begin(copy, mb, s);
        ASSERT_EQ(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
        timer->end(s);
      }
      timer->flush();
      EXPECT_LT(timer->backend().anchor_uncertainty_ns(), 1'000'000);
    }
    after = timer::realtime_ns();
    timer->close();
  }
  cudaFree(device);
  cudaFreeHost(host);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);

  const std::vector<ivl::Record> records = read_records(options.path);
  ASSERT_EQ(records.size(), 12u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const ivl::Record& r = records[i];
    EXPECT_GT(r.end_ns - r.start_ns, 1'000) << i;  // a 64 MiB copy takes well over 1 us
    EXPECT_GE(r.start_ns, before - 1'000'000) << i;
    EXPECT_LE(r.end_ns, after + 1'000'000) << i;
    EXPECT_EQ(r.stream, static_cast<std::uint32_t>(i % 2)) << i;
    EXPECT_EQ(r.step, static_cast<std::int32_t>(i / 4)) << i;
  }
  // Copies on one stream run in order.
  for (std::size_t i = 2; i < records.size(); ++i) {
    if (records[i].step == records[i - 2].step) {
      EXPECT_GE(records[i].start_ns + 1'000, records[i - 2].end_ns) << i;
    }
  }
}

/// What a host function enqueued on a stream saw: the wall clock when the
/// stream reached it and when it returned.
struct HostSpan {
  std::int64_t sleep_ns = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

void CUDART_CB sleep_on_stream(void* data) {
  auto* span = static_cast<HostSpan*>(data);
  span->start_ns = timer::realtime_ns();
  std::this_thread::sleep_for(std::chrono::nanoseconds(span->sleep_ns));
  span->end_ns = timer::realtime_ns();
}


// The accuracy of the clock anchoring, checked against the host's own wall
// clock: a host function enqueued between begin() and end() holds the stream
// for a known, host-timed span, and the GPU-timestamped interval must contain
// it. The begin event completes before the stream reaches the function and
// the end event after it returns, so in true time start <= span.start and
// end >= span.end; the recorded times may be off by the anchor's uncertainty
// and the event timer's resolution (about 0.5 us), nothing more.
TEST(CudaTimer, IntervalsBracketHostTimedWorkOnTheStream) {
  std::string why;
  if (!timer::cuda_timer_available(&why)) GTEST_SKIP() << "no usable GPU: " << why;
  testing::TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "host_spans.ivl";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  constexpr int kSteps = 4;
  constexpr int kJobs = 5;
  std::vector<HostSpan> spans(kSteps * kJobs);
  std::vector<std::int64_t> uncertainty;  // of the anchor each step's times use
  {
    auto timer = timer::make_cuda_timer(options);
    const auto type = timer->job_type("forward");
    for (int step = 0; step < kSteps; ++step) {
      uncertainty.push_back(timer->backend().anchor_uncertainty_ns());
      for (int job = 0; job < kJobs; ++job) {
        HostSpan& span = spans[step * kJobs + job];
        span.sleep_ns = (1 + job) * 1'000'000;  // 1..5 ms
        timer->begin(type, job, stream);
        ASSERT_EQ(cudaLaunchHostFunc(stream, sleep_on_stream, &span), cudaSuccess);
        timer->end(stream);
      }
      timer->flush();
    }
    timer->close();
  }
  cudaStreamDestroy(stream);

  const std::vector<ivl::Record> records = read_records(options.path);
  ASSERT_EQ(records.size(), spans.size());
  std::int64_t worst_early = 0;  // how far a recorded end fell before the host's end
  for (std::size_t i = 0; i < records.size(); ++i) {
    const ivl::Record& r = records[i];
    const HostSpan& span = spans[i];
    const std::int64_t slack = uncertainty[i / kJobs] + 2'000;  // + event resolution
    EXPECT_LE(r.start_ns, span.start_ns + slack) << i;
    EXPECT_GE(r.end_ns, span.end_ns - slack) << i;
    // The stream does nothing else, so the interval is the function's span
    // plus launch latencies: well under a millisecond more.
    EXPECT_LE((r.end_ns - r.start_ns) - (span.end_ns - span.start_ns), 1'000'000) << i;
    EXPECT_EQ(r.micro_batch, static_cast<std::int32_t>(i % kJobs)) << i;
    worst_early = std::max(worst_early, span.end_ns - r.end_ns);
  }
  std::printf("anchor uncertainty of step 0: %lld ns; worst recorded end before the host's: %lld ns\n",
              static_cast<long long>(uncertainty[0]), static_cast<long long>(worst_early));
}

// More marks in one step than the pool was created with: the pool grows and
// every job is still recorded, in order, on its stream.
TEST(CudaTimer, PoolGrowsPastItsInitialSize) {
  std::string why;
  if (!timer::cuda_timer_available(&why)) GTEST_SKIP() << "no usable GPU: " << why;
  testing::TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "many.ivl";
  options.marks_per_step = 8;
  constexpr int kJobs = 3000;  // 6000 marks in one step
  {
    auto timer = timer::make_cuda_timer(options);
    const auto type = timer->job_type("backward");
    for (int job = 0; job < kJobs; ++job) {
      timer->begin(type, job, nullptr);  // the legacy default stream
      timer->end(nullptr);
    }
    timer->flush();
    timer->close();
  }
  const std::vector<ivl::Record> records = read_records(options.path);
  ASSERT_EQ(records.size(), static_cast<std::size_t>(kJobs));
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].micro_batch, static_cast<std::int32_t>(i)) << i;
    EXPECT_LE(records[i].start_ns, records[i].end_ns) << i;
    if (i > 0) {
      EXPECT_GE(records[i].start_ns, records[i - 1].end_ns - 2'000) << i;
    }
  }
}
#endif

}  // namespace
}  // namespace pipescope
