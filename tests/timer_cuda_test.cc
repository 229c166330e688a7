// The job timer's CUDA backend: runs where a GPU is present, skipped (with
// the reason) where the CUDA toolkit was not found at build time or the
// machine has no usable GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "records/ivl_reader.h"
#include "temp_dir.h"
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

  std::vector<ivl::Record> records;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) records.push_back(block.record(i));
  };
  const ivl::ReadResult result = ivl::read_file(options.path, cb);
  ASSERT_TRUE(result.header_ok);
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
#endif

}  // namespace
}  // namespace pipescope
