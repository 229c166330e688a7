// The trace layout both exporters share: pids, tids, sort indices, lanes for
// overlapping jobs, the bubble lane and the names of processes and threads.
#include "export/trace_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipescope {
namespace {

Device make_device(int index, int machine, std::string machine_name,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& spans) {
  Device device;
  device.index = index;
  device.machine = machine;
  device.machine_name = std::move(machine_name);
  for (const auto& [start, end] : spans) {
    Job job;
    job.start_ns = start;
    job.end_ns = end;
    device.jobs.push_back(job);
  }
  return device;
}

TEST(TraceLayout, StepsProcessAndThread) {
  const TraceProcess process = TraceLayout::steps_process();
  EXPECT_EQ(process.pid, 1);  // never 0, the kernel's swapper in trace viewers
  EXPECT_EQ(process.sort_index, 0);
  EXPECT_EQ(process.name, "Steps");
  const TraceThread thread = TraceLayout::steps_thread();
  EXPECT_EQ(thread.pid, 1);
  EXPECT_EQ(thread.tid, 1);
  EXPECT_EQ(thread.name, "Steps");
  EXPECT_EQ(TraceLayout::bubble_ratio_track_name(BubbleKind::drain), "bubble ratio \xC2\xB7 drain");
}

TEST(TraceLayout, MachinesLanesAndBubbleLanes) {
  pipescope::Run run;
  run.devices = {
      make_device(4, 1, "", {{0, 10}, {5, 8}, {10, 20}}),  // lanes 0, 1, 0
      make_device(2, 0, "node-a", {{0, 10}}),
      make_device(3, 1, "", {}),
  };
  const TraceLayout layout(run, /*bubble_lanes=*/true);

  // By machine ordinal, each named after its first device.
  ASSERT_EQ(layout.machines().size(), 2u);
  EXPECT_EQ(layout.machines()[0].pid, 2);
  EXPECT_EQ(layout.machines()[0].sort_index, 1);
  EXPECT_EQ(layout.machines()[0].name, "node-a");
  EXPECT_EQ(layout.machines()[0].first_tid, 2 + 16);  // device 1's first lane
  EXPECT_EQ(layout.machines()[1].pid, 3);
  EXPECT_EQ(layout.machines()[1].name, "Machine 1");
  EXPECT_EQ(layout.machines()[1].first_tid, 2);

  // Device by device: job lanes, then the bubble lane; 16 slots per device.
  const std::vector<TraceThread>& threads = layout.threads();
  ASSERT_EQ(threads.size(), 3u + 2u + 2u);
  EXPECT_EQ(threads[0].name, "GPU 4 (machine 1)");
  EXPECT_EQ(threads[1].name, "GPU 4 (machine 1) \xC2\xB7 overlap 1");
  EXPECT_EQ(threads[2].name, "GPU 4 (machine 1) \xC2\xB7 bubbles");
  EXPECT_EQ(threads[3].name, "GPU 2 (machine 0)");
  EXPECT_EQ(threads[4].name, "GPU 2 (machine 0) \xC2\xB7 bubbles");
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(threads[t].pid, 3);
    EXPECT_EQ(threads[t].sort_index, static_cast<std::int64_t>(t));
    EXPECT_EQ(threads[t].tid, 2 + static_cast<std::int64_t>(t));
  }
  EXPECT_EQ(threads[3].pid, 2);
  EXPECT_EQ(threads[3].sort_index, 16);
  EXPECT_EQ(threads[5].sort_index, 32);
  EXPECT_EQ(threads[6].tid, 2 + 33);

  EXPECT_EQ(layout.job_lane(0, 0), 0u);
  EXPECT_EQ(layout.job_lane(0, 1), 1u);
  EXPECT_EQ(layout.job_lane(0, 2), 0u);
  EXPECT_EQ(layout.job_lane(1, 0), 3u);
  EXPECT_EQ(layout.bubble_lane(0), 2u);
  EXPECT_EQ(layout.bubble_lane(2), 6u);
}

TEST(TraceLayout, StrideGrowsWithTheBusiestDevice) {
  // 20 jobs overlapping at one instant need 20 lanes, plus the bubble lane.
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (std::int64_t i = 0; i < 20; ++i) spans.emplace_back(i, 100);
  pipescope::Run run;
  run.devices = {make_device(0, 0, "", spans), make_device(1, 0, "", {{0, 1}})};
  const TraceLayout with_bubbles(run, /*bubble_lanes=*/true);
  EXPECT_EQ(with_bubbles.threads().size(), 21u + 2u);
  EXPECT_EQ(with_bubbles.thread(with_bubbles.job_lane(0, 19)).name,
            "GPU 0 (machine 0) \xC2\xB7 overlap 19");
  EXPECT_EQ(with_bubbles.thread(with_bubbles.job_lane(1, 0)).sort_index, 21);
  const TraceLayout without(run, /*bubble_lanes=*/false);
  EXPECT_EQ(without.threads().size(), 20u + 1u);
  EXPECT_EQ(without.thread(without.job_lane(1, 0)).sort_index, 20);
  EXPECT_EQ(without.thread(without.job_lane(1, 0)).tid, 22);
}

}  // namespace
}  // namespace pipescope
