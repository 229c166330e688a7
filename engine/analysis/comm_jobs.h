// Wait and transfer of a communication job (a logged send or recv), split as
// the kernel view splits a NCCL kernel (docs/guide.md, "The kernel view"): a
// comm job waits from its start to the start of its peer, the comm job at
// the other end of the same transfer (capped at its end); the rest of it is
// transfer. Peers are found through the dependencies (dependencies.h), so
// only within one step and one pipeline replica:
//
//   recv R   its data is the job P of another stage that R's input comes from
//            (input_producer: the dependency of the job the run of comm jobs
//            around R feeds); its peer is the send logged right after P on
//            P's device (in the run of comm jobs that follows P). Without a
//            logged send, P's end stands for the send's start: the data
//            cannot leave before it is made.
//   send S   its data goes to the job C of another stage that depends on the
//            compute job S follows (the last job before S's run of comm
//            jobs); its peer is the recv logged right before C (in the run
//            of comm jobs that precedes C). Without a logged recv, nothing
//            is known to hold S back: all of it is transfer.
//
// Usage:
//   CommJobSplitter splitter(run, deps, roles);
//   for (JobRef j : jobs_of_the_steps_asked) splitter.add_consumer(j);
//   CommJobSplit s = splitter.split(job);   // s.wait_ns + s.transfer_ns == duration
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "model/run.h"

namespace pipescope {

struct CommJobSplit {
  /// False when the job is not a comm job (nothing else is set).
  bool comm = false;
  /// A receive (its type begins with "recv"); else a send.
  bool receive = false;
  /// The job of another stage whose data it moves: a recv's producer, a
  /// send's consumer; nullopt when the dependencies do not say.
  std::optional<JobRef> data;
  /// The comm job at the other end, when logged.
  std::optional<JobRef> peer;
  /// wait_ns + transfer_ns == the job's duration (0 for a negative one).
  std::int64_t wait_ns = 0;
  std::int64_t transfer_ns = 0;
};

class CommJobSplitter {
 public:
  /// The references must outlive the splitter.
  CommJobSplitter(const Run& run, const Dependencies& deps, const std::vector<JobRole>& roles);

  /// Makes `job`, when it depends on a job of another stage, findable from
  /// that producer: a send's data and peer are found only when its consumer
  /// was added (add the jobs of the steps whose sends are split).
  void add_consumer(JobRef job);

  /// The split of `job` (see above).
  CommJobSplit split(JobRef job) const;

 private:
  const Job& job_of(JobRef r) const { return run_.devices[r.device].jobs[r.job]; }
  bool is_receive(JobRef r) const;

  const Run& run_;
  const Dependencies& deps_;
  const std::vector<JobRole>& roles_;
  /// Producer (device << 32 | job) -> its consumer.
  std::unordered_map<std::uint64_t, JobRef> consumer_of_;
};

}  // namespace pipescope
