#include "analysis/comm_jobs.h"

#include <algorithm>

#include "analysis/job_kind.h"

namespace pipescope {

namespace {

std::uint64_t key_of(JobRef r) { return (std::uint64_t{r.device} << 32) | r.job; }

}  // namespace

CommJobSplitter::CommJobSplitter(const Run& run, const Dependencies& deps,
                                 const std::vector<JobRole>& roles)
    : run_(run), deps_(deps), roles_(roles) {}

void CommJobSplitter::add_consumer(JobRef job) {
  if (const auto producer = deps_.producer_of(job)) consumer_of_.emplace(key_of(*producer), job);
}

bool CommJobSplitter::is_receive(JobRef r) const {
  const TypeId t = job_of(r).type;
  return t < run_.types.size() && is_receive_type(run_.types.name(t));
}

CommJobSplit CommJobSplitter::split(JobRef job) const {
  CommJobSplit out;
  if (job.device >= run_.devices.size() || job.job >= run_.devices[job.device].jobs.size() ||
      !is_comm_job(run_, roles_, job)) {
    return out;
  }
  out.comm = true;
  out.receive = is_receive(job);
  const Job& self = job_of(job);
  const std::int64_t duration = std::max<std::int64_t>(self.duration_ns(), 0);
  // Waiting ends at `until`, within the job.
  const auto wait_until = [&](std::int64_t until) {
    out.wait_ns = std::clamp<std::int64_t>(until - self.start_ns, 0, duration);
  };
  if (out.receive) {
    out.data = input_producer(run_, deps_, roles_, job);
    if (out.data) {
      // The first send in the run of comm jobs right after the producer.
      const auto& jobs = run_.devices[out.data->device].jobs;
      for (std::size_t k = out.data->job + 1; k < jobs.size(); ++k) {
        const JobRef next{out.data->device, static_cast<std::uint32_t>(k)};
        if (!is_comm_job(run_, roles_, next)) break;
        if (!is_receive(next)) {
          out.peer = next;
          break;
        }
      }
      wait_until(out.peer ? job_of(*out.peer).start_ns : job_of(*out.data).end_ns);
    }
  } else {
    // The compute job the send follows, and the job that consumes its output.
    std::optional<JobRef> made;
    for (std::size_t k = job.job; k-- > 0;) {
      const JobRef before{job.device, static_cast<std::uint32_t>(k)};
      if (!is_comm_job(run_, roles_, before)) {
        made = before;
        break;
      }
    }
    if (made) {
      if (const auto it = consumer_of_.find(key_of(*made)); it != consumer_of_.end()) {
        out.data = it->second;
      }
    }
    if (out.data) {
      // The last recv in the run of comm jobs right before the consumer.
      for (std::size_t k = out.data->job; k-- > 0;) {
        const JobRef before{out.data->device, static_cast<std::uint32_t>(k)};
        if (!is_comm_job(run_, roles_, before)) break;
        if (is_receive(before)) {
          out.peer = before;
          break;
        }
      }
    }
    if (out.peer) wait_until(job_of(*out.peer).start_ns);
  }
  out.transfer_ns = duration - out.wait_ns;
  return out;
}

}  // namespace pipescope
