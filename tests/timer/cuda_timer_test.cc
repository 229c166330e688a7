// The job timer's CUDA backend, through the CUDA driver API it loads at run
// time, run twice: on the machine's driver (libcuda.so.1; skipped, with the
// reason, where there is no driver or no GPU) and on the stand-in driver of
// tests/timer/fake_cuda_driver.cc, where the "GPU" is the host, so the
// backend's own code (context, pool, anchoring, waiting for pending events)
// is exercised on every machine.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "records/ivl_reader.h"
#include "support/temp_dir.h"
#include "timer/cuda_backend.h"
#include "timer/cuda_driver.h"
#include "timer/job_timer.h"

namespace pipescope {
namespace {

namespace cu = timer::cu;

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

/// "driver": the machine's libcuda.so.1; "fake": the stand-in driver.
class CudaTimer : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "fake") {
      ::setenv("PIPESCOPE_CUDA_DRIVER", PIPESCOPE_FAKE_CUDA_DRIVER, 1);
    } else {
      ::unsetenv("PIPESCOPE_CUDA_DRIVER");
    }
    std::string why;
    if (!timer::cuda_timer_available(&why)) GTEST_SKIP() << "no usable GPU: " << why;
    driver_ = cu::load_driver(&why);
    ASSERT_TRUE(driver_) << why;
  }
  void TearDown() override { ::unsetenv("PIPESCOPE_CUDA_DRIVER"); }

  /// A stream created through the driver (in the timer's context: call after
  /// the timer exists, which makes a context current when none was).
  cu::Stream stream() {
    cu::Stream s = nullptr;
    EXPECT_EQ(driver_->cuStreamCreate(&s, 0), cu::kSuccess);
    streams_.push_back(s);
    return s;
  }
  void destroy_streams() {
    for (cu::Stream s : streams_) driver_->cuStreamDestroy(s);
    streams_.clear();
  }

  std::shared_ptr<const cu::Driver> driver_;
  std::vector<cu::Stream> streams_;
};

TEST_P(CudaTimer, RecordsGpuIntervals) {
  testing::TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "gpu.ivl";
  options.rank = 1;
  const cu::Driver& d = *driver_;
  // Work without kernels: host-to-device copies of 64 MiB take measurable
  // GPU time on each stream.
  const std::size_t bytes = std::size_t{64} << 20;
  std::int64_t before = 0;
  std::int64_t after = 0;
  {
    auto timer = timer::make_cuda_timer(options);
    cu::Stream a = stream();
    cu::Stream b = stream();
    cu::DevicePtr device = 0;
    void* host = nullptr;
    ASSERT_EQ(d.cuMemAlloc(&device, bytes), cu::kSuccess);
    ASSERT_EQ(d.cuMemAllocHost(&host, bytes), cu::kSuccess);
    const auto copy = timer->job_type("forward");
    before = timer::realtime_ns();
    for (int step = 0; step < 3; ++step) {
      for (int mb = 0; mb < 4; ++mb) {
        cu::Stream s = mb % 2 == 0 ? a : b;
        timer->begin(copy, mb, s);
        ASSERT_EQ(d.cuMemcpyHtoDAsync(device, host, bytes, s), cu::kSuccess);
        timer->end(s);
      }
      timer->flush();
      EXPECT_LT(timer->backend().anchor_uncertainty_ns(), 1'000'000);
    }
    after = timer::realtime_ns();
    timer->close();
    d.cuMemFree(device);
    d.cuMemFreeHost(host);
    destroy_streams();
  }

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

void sleep_on_stream(void* data) {
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
TEST_P(CudaTimer, IntervalsBracketHostTimedWorkOnTheStream) {
  testing::TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "host_spans.ivl";
  constexpr int kSteps = 4;
  constexpr int kJobs = 5;
  std::vector<HostSpan> spans(kSteps * kJobs);
  std::vector<std::int64_t> uncertainty;  // of the anchor each step's times use
  {
    auto timer = timer::make_cuda_timer(options);
    cu::Stream s = stream();
    const auto type = timer->job_type("forward");
    for (int step = 0; step < kSteps; ++step) {
      uncertainty.push_back(timer->backend().anchor_uncertainty_ns());
      for (int job = 0; job < kJobs; ++job) {
        HostSpan& span = spans[step * kJobs + job];
        span.sleep_ns = (1 + job) * 1'000'000;  // 1..5 ms
        timer->begin(type, job, s);
        ASSERT_EQ(driver_->cuLaunchHostFunc(s, sleep_on_stream, &span), cu::kSuccess);
        timer->end(s);
      }
      timer->flush();
    }
    timer->close();
    destroy_streams();
  }

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
  std::printf(
      "%s: anchor uncertainty of step 0: %lld ns; worst recorded end before the host's: %lld ns\n",
      GetParam(), static_cast<long long>(uncertainty[0]), static_cast<long long>(worst_early));
}

// More marks in one step than the pool was created with: the pool grows and
// every job is still recorded, in order, on its stream.
TEST_P(CudaTimer, PoolGrowsPastItsInitialSize) {
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

INSTANTIATE_TEST_SUITE_P(Drivers, CudaTimer, ::testing::Values("driver", "fake"),
                         [](const auto& info) { return std::string(info.param); });

// Without a usable driver the backend cannot be made, and says why.
TEST(CudaDriver, MissingOrDeviceLessDriverIsReportedWithTheReason) {
  std::string why;
  EXPECT_FALSE(cu::load_driver(&why, "/nonexistent/libcuda.so.1"));
  EXPECT_NE(why.find("cannot load the CUDA driver"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libcuda.so.1"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(cu::load_driver(&why, PIPESCOPE_FAKE_CUDA_DRIVER_NO_DEVICE));
  EXPECT_NE(why.find("cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"),
            std::string::npos)
      << why;
  ::setenv("PIPESCOPE_CUDA_DRIVER", PIPESCOPE_FAKE_CUDA_DRIVER_NO_DEVICE, 1);
  why.clear();
  EXPECT_FALSE(timer::cuda_timer_available(&why));
  EXPECT_NE(why.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << why;
  try {
    timer::make_cuda_backend();
    ADD_FAILURE() << "no exception";
  } catch (const cu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << e.what();
  }
  ::unsetenv("PIPESCOPE_CUDA_DRIVER");
}

}  // namespace
}  // namespace pipescope
