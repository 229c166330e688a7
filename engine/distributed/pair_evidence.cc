#include "distributed/pair_evidence.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "distributed/collectives.h"
#include "distributed/wire.h"

namespace pipescope::distributed {

HeldJobs held_by_reader(const Run& local) {
  return [&local](std::size_t d, std::uint64_t begin, std::uint64_t end,
                  const std::function<void(std::uint64_t, const Job&)>& f) {
    if (d >= local.devices.size()) return;
    const JobVector& jobs = local.devices[d].jobs;
    for (std::uint64_t i = begin; i < end && i < jobs.size(); ++i) f(i, jobs[i]);
  };
}

HeldJobs held_by_part(const PartRun& part, const StepPartition& plan, std::size_t rank) {
  return [&part, &plan, rank](std::size_t d, std::uint64_t begin, std::uint64_t end,
                              const std::function<void(std::uint64_t, const Job&)>& f) {
    if (d >= part.job_index.size()) return;
    const std::vector<std::uint32_t>& index = part.job_index[d];
    auto i = static_cast<std::size_t>(
        std::lower_bound(index.begin(), index.end(), begin,
                         [](std::uint32_t v, std::uint64_t t) { return v < t; }) -
        index.begin());
    for (; i < index.size() && index[i] < end; ++i) {
      // Only the part's own jobs: each job is one part's own.
      if (plan.owner(static_cast<std::size_t>(part.job_step[d][i])) != rank) continue;
      f(index[i], part.run.devices[d].jobs[i]);
    }
  };
}

StageJobEvidence exchange_stage_evidence(
    Exchange& exchange, const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
    const std::vector<std::uint64_t>& job_counts, std::int64_t my_origin, const HeldJobs& held) {
  StageJobEvidence evidence;
  evidence.job_counts = job_counts;
  evidence.origin = gather_min(exchange, my_origin);
  auto merged = std::make_shared<std::map<std::pair<std::size_t, std::size_t>, JobPairEvidence>>();
  evidence.compare = [merged](std::size_t x, std::size_t y) {
    const auto it = merged->find({x, y});
    if (it == merged->end()) throw std::logic_error("a stage map check compared devices not asked");
    return it->second;
  };
  if (pairs.empty()) return evidence;

  std::vector<std::size_t> compared;
  std::uint64_t longest = 0;
  for (const auto& [x, y] : pairs) {
    if (x >= job_counts.size() || y >= job_counts.size()) {
      throw std::logic_error("a stage map check compared devices not in the run");
    }
    compared.push_back(x);
    compared.push_back(y);
    longest = std::max({longest, job_counts[x], job_counts[y]});
  }
  std::sort(compared.begin(), compared.end());
  compared.erase(std::unique(compared.begin(), compared.end()), compared.end());
  const auto ranks = static_cast<std::uint64_t>(exchange.size());
  const auto me = static_cast<std::uint64_t>(exchange.rank());
  const std::uint64_t window =
      std::max<std::uint64_t>(ranks, job_round_bytes() * ranks / (compared.size() * sizeof(Job)));
  for (std::uint64_t begin = 0; begin < longest || begin == 0; begin += window) {
    const std::uint64_t end = std::min(longest, begin + window);
    const auto lo = [&](std::uint64_t r) {
      return begin +
             static_cast<std::uint64_t>(static_cast<unsigned __int128>(end - begin) * r / ranks);
    };
    // The range of an index: the last r with lo(r) <= index.
    const auto range_of = [&](std::uint64_t index) {
      std::uint64_t r = (index - begin) * ranks / std::max<std::uint64_t>(end - begin, 1);
      while (r + 1 < ranks && lo(r + 1) <= index) ++r;
      while (r > 0 && lo(r) > index) --r;
      return static_cast<std::size_t>(r);
    };
    std::vector<ByteWriter> to(static_cast<std::size_t>(ranks));
    for (const std::size_t d : compared) {
      held(d, begin, end, [&](std::uint64_t index, const Job& job) {
        ByteWriter& w = to[range_of(index)];
        w.put(static_cast<std::uint64_t>(d));
        w.put(index);
        w.put(job);
      });
    }
    std::vector<std::string> out(static_cast<std::size_t>(ranks));
    for (std::size_t r = 0; r < out.size(); ++r) out[r] = to[r].take();
    to.clear();
    // This range's jobs of every compared device, in index order (a device
    // ends where its jobs do).
    const std::uint64_t first = lo(me), last = lo(me + 1);
    std::map<std::size_t, std::vector<Job>> range;
    std::map<std::size_t, std::uint64_t> got;
    for (const std::size_t d : compared) {
      range[d].resize(std::min(last, job_counts[d]) - std::min(first, job_counts[d]));
    }
    for (const std::string& message : exchange.all_to_all(std::move(out))) {
      ByteReader r(message);
      while (!r.done()) {
        const auto d = static_cast<std::size_t>(r.get<std::uint64_t>());
        const auto i = r.get<std::uint64_t>();
        const Job job = r.get<Job>();
        const auto it = range.find(d);
        if (it == range.end() || i < first || i - first >= it->second.size()) {
          throw WireError("a job of a device or index this range does not compare");
        }
        it->second[i - first] = job;
        ++got[d];
      }
    }
    for (const std::size_t d : compared) {
      if (got[d] != range[d].size()) throw WireError("a compared job did not arrive");
    }
    ByteWriter w;
    for (const auto& [x, y] : pairs) w.put(compare_job_range(range[x], range[y], first));
    range.clear();
    for (const std::string& message : exchange.all_gather(w.take())) {
      ByteReader r(message);
      for (const auto& pair : pairs) {
        const auto part = r.get<JobPairEvidence>();
        const auto [it, fresh] = merged->try_emplace(pair, part);
        if (!fresh) merge_job_pair_evidence(it->second, part);
      }
    }
    if (longest == 0) break;
  }
  return evidence;
}

}  // namespace pipescope::distributed
