// CommJobSplitter on runs of a few jobs, each split worked out by hand from
// the rule of comm_jobs.h: a comm job waits from its start to its peer's
// start (capped at its end), the rest is transfer; a recv without a logged
// send waits for its producer's end; a send without a logged recv is all
// transfer. Times in ns; dN.jI is job I (start order) of the device at
// position N.
#include "analysis/comm_jobs.h"

#include <gtest/gtest.h>

#include "analysis/metrics.h"
#include "support/hand_run.h"

namespace pipescope {
namespace {

using testing::add_job;

struct Split {
  pipescope::Run run;
  Metrics metrics;
  std::vector<JobRole> roles;
  Dependencies deps;
};

void analyse(Split& s) {
  s.run.finalize();
  s.metrics = compute_metrics(s.run);
  s.roles = classify_job_roles(s.run.types);
  s.deps = find_dependencies(s.run, s.metrics.job_step, one_stage_per_device(s.run.devices.size()),
                             s.roles);
}

JobRef ref(std::uint32_t d, std::uint32_t j) { return JobRef{d, j}; }

// P = 2, M = 1, both ends logged:
//   device 0 (stage 0): F0 [0,10) send_forward [10,14) recv_backward [14,40) B0 [40,50)
//   device 1 (stage 1): recv_forward [3,16) F0 [16,26) B0 [26,36) send_backward [36,38)
// d1.j0 (recv_forward): its data is d0.j0 (F0's producer), its peer d0.j1
// (the send after it): waits [3,10) = 7, transfers [10,16) = 6.
// d0.j1 (send_forward): data goes to d1.j1 (F0), whose run of comm jobs
// before it holds the recv d1.j0, which started at 3, before the send:
// no wait, transfer 4.
// d0.j2 (recv_backward): data d1.j2 (B0), peer d1.j3 (send at 36): waits
// [14,36) = 22, transfers 4. d1.j3 (send_backward): peer d0.j2 started at
// 14: no wait, transfer 2.
TEST(CommJobs, BothEndsLogged) {
  Split s;
  add_job(s.run, 0, "forward", 0, 0, 10);
  add_job(s.run, 0, "send_forward", 0, 10, 14);
  add_job(s.run, 0, "recv_backward", 0, 14, 40);
  add_job(s.run, 0, "backward", 0, 40, 50);
  add_job(s.run, 1, "recv_forward", 0, 3, 16);
  add_job(s.run, 1, "forward", 0, 16, 26);
  add_job(s.run, 1, "backward", 0, 26, 36);
  add_job(s.run, 1, "send_backward", 0, 36, 38);
  analyse(s);
  CommJobSplitter splitter(s.run, s.deps, s.roles);
  for (std::uint32_t d = 0; d < 2; ++d) {
    for (std::uint32_t j = 0; j < 4; ++j) splitter.add_consumer(ref(d, j));
  }

  CommJobSplit c = splitter.split(ref(1, 0));
  EXPECT_TRUE(c.comm);
  EXPECT_TRUE(c.receive);
  EXPECT_EQ(c.data, ref(0, 0));
  EXPECT_EQ(c.peer, ref(0, 1));
  EXPECT_EQ(c.wait_ns, 7);
  EXPECT_EQ(c.transfer_ns, 6);

  c = splitter.split(ref(0, 1));
  EXPECT_TRUE(c.comm);
  EXPECT_FALSE(c.receive);
  EXPECT_EQ(c.data, ref(1, 1));
  EXPECT_EQ(c.peer, ref(1, 0));
  EXPECT_EQ(c.wait_ns, 0);
  EXPECT_EQ(c.transfer_ns, 4);

  c = splitter.split(ref(0, 2));
  EXPECT_EQ(c.data, ref(1, 2));
  EXPECT_EQ(c.peer, ref(1, 3));
  EXPECT_EQ(c.wait_ns, 22);
  EXPECT_EQ(c.transfer_ns, 4);

  c = splitter.split(ref(1, 3));
  EXPECT_EQ(c.data, ref(0, 3));
  EXPECT_EQ(c.peer, ref(0, 2));
  EXPECT_EQ(c.wait_ns, 0);
  EXPECT_EQ(c.transfer_ns, 2);

  // Not a comm job.
  c = splitter.split(ref(0, 0));
  EXPECT_FALSE(c.comm);
  EXPECT_EQ(c.wait_ns + c.transfer_ns, 0);
}

// A send whose recv was posted after it: it waits for the recv.
//   device 0: F0 [0,10) send_forward [10,20) B0 [40,50)
//   device 1: recv_forward [15,21) F0 [21,30) B0 [30,38)
// d0.j1 waits [10,15) = 5, transfers 5; d1.j0 waits for the send, which
// started first: no wait, transfer 6.
TEST(CommJobs, ASendWaitsForALateRecv) {
  Split s;
  add_job(s.run, 0, "forward", 0, 0, 10);
  add_job(s.run, 0, "send_forward", 0, 10, 20);
  add_job(s.run, 0, "backward", 0, 40, 50);
  add_job(s.run, 1, "recv_forward", 0, 15, 21);
  add_job(s.run, 1, "forward", 0, 21, 30);
  add_job(s.run, 1, "backward", 0, 30, 38);
  analyse(s);
  CommJobSplitter splitter(s.run, s.deps, s.roles);
  for (std::uint32_t j = 0; j < 3; ++j) splitter.add_consumer(ref(1, j));
  CommJobSplit c = splitter.split(ref(0, 1));
  EXPECT_EQ(c.peer, ref(1, 0));
  EXPECT_EQ(c.wait_ns, 5);
  EXPECT_EQ(c.transfer_ns, 5);
  c = splitter.split(ref(1, 0));
  EXPECT_EQ(c.peer, ref(0, 1));
  EXPECT_EQ(c.wait_ns, 0);
  EXPECT_EQ(c.transfer_ns, 6);
}

// Only the receiving side logs comm jobs:
//   device 0: F0 [0,10) B0 [40,50)
//   device 1: recv_forward [2,12) F0 [12,20) B0 [20,28)
// d1.j0's data is d0.j0 and no send is logged: it waits until F0 ends at
// 10 (8 ns), transfers 2. A send without a logged recv (its consumer not
// added, or none logged) is all transfer.
TEST(CommJobs, WithoutTheOtherEnd) {
  Split s;
  add_job(s.run, 0, "forward", 0, 0, 10);
  add_job(s.run, 0, "backward", 0, 40, 50);
  add_job(s.run, 1, "recv_forward", 0, 2, 12);
  add_job(s.run, 1, "forward", 0, 12, 20);
  add_job(s.run, 1, "backward", 0, 20, 28);
  analyse(s);
  CommJobSplitter splitter(s.run, s.deps, s.roles);
  CommJobSplit c = splitter.split(ref(1, 0));
  EXPECT_EQ(c.data, ref(0, 0));
  EXPECT_FALSE(c.peer.has_value());
  EXPECT_EQ(c.wait_ns, 8);
  EXPECT_EQ(c.transfer_ns, 2);

  Split t;
  add_job(t.run, 0, "forward", 0, 0, 10);
  add_job(t.run, 0, "send_forward", 0, 10, 13);
  add_job(t.run, 0, "backward", 0, 40, 50);
  add_job(t.run, 1, "forward", 0, 14, 20);
  add_job(t.run, 1, "backward", 0, 20, 28);
  analyse(t);
  CommJobSplitter sends(t.run, t.deps, t.roles);
  c = sends.split(ref(0, 1));
  EXPECT_FALSE(c.data.has_value());  // the consumer was not added
  EXPECT_EQ(c.wait_ns, 0);
  EXPECT_EQ(c.transfer_ns, 3);
  sends.add_consumer(ref(1, 0));
  c = sends.split(ref(0, 1));
  EXPECT_EQ(c.data, ref(1, 0));
  EXPECT_FALSE(c.peer.has_value());
  EXPECT_EQ(c.transfer_ns, 3);
}

}  // namespace
}  // namespace pipescope
