#include "distributed/partitioned_analysis.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "analysis/bottleneck.h"
#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/critical_path.h"
#include "analysis/data_quality.h"
#include "analysis/explanation.h"
#include "analysis/job_role.h"
#include "analysis/replicas.h"
#include "analysis/schedule_detect.h"
#include "analysis/step_rule.h"
#include "distributed/collectives.h"
#include "distributed/job_rounds.h"
#include "distributed/pair_evidence.h"
#include "distributed/wire.h"
#include "export/trace_layout.h"
#include "load/input_rules.h"
#include "model/malloc_control.h"

namespace pipescope::distributed {

namespace {

/// The devices of `run` this rank read (the only ones with jobs here).
std::vector<std::size_t> local_devices(const Run& run) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!run.devices[d].jobs.empty()) out.push_back(d);
  }
  return out;
}

// ---- 1. step numbering ------------------------------------------------------

/// Every device's step counts, gathered from the ranks that read them.
std::vector<DeviceStepCounts> gather_step_counts(Exchange& exchange,
                                                 const std::vector<std::size_t>& mine,
                                                 const std::vector<DeviceStepCounts>& counts,
                                                 std::size_t devices) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.list(counts[d].steps);
    w.list(counts[d].begun);
    w.list(counts[d].present);
    w.list(counts[d].begins_inside);
    w.list(counts[d].first_start);
    w.list(counts[d].last_end);
  }
  std::vector<DeviceStepCounts> all(devices);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= devices) throw WireError("step counts of a device not in the run");
      r.list(all[d].steps);
      r.list(all[d].begun);
      r.list(all[d].present);
      r.list(all[d].begins_inside);
      r.list(all[d].first_start);
      r.list(all[d].last_end);
    }
  }
  return all;
}

// ---- 2. windows ---------------------------------------------------------------

/// The run's step edges: every rank's devices' edges, combined.
StepEdges gather_edges(Exchange& exchange, const StepEdges& mine) {
  ByteWriter w;
  w.list(mine.first_start);
  w.list(mine.last_end);
  w.list(mine.has_job);
  StepEdges all(mine.has_job.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    StepEdges theirs;
    r.list(theirs.first_start);
    r.list(theirs.last_end);
    r.list(theirs.has_job);
    if (theirs.has_job.size() != all.has_job.size()) throw WireError("edges of another run");
    all.combine(theirs);
  }
  return all;
}

// ---- 4. the jobs to their parts -----------------------------------------------

/// Gives an array's 2 MiB pages back to the system as soon as every reader
/// of every element in them has had it (their contents are not read again;
/// the memory stays the owner's to free): need(i) counts one more reader of
/// element i, done(i) one fewer. A page partly outside the array is kept.
/// 2 MiB: a transparent huge page is given back whole.
class PageReleaser {
 public:
  PageReleaser(const void* data, std::size_t count, std::size_t element_bytes)
      : begin_(reinterpret_cast<std::uintptr_t>(data)),
        end_(begin_ + count * element_bytes),
        first_(begin_ / kPage * kPage),
        element_bytes_(element_bytes),
        left_((end_ - first_ + kPage - 1) / kPage, 0) {}

  void need(std::size_t i) { ++left_[page(i)]; }
  void done(std::size_t i) {
    const std::size_t p = page(i);
    if (--left_[p] > 0) return;
    const std::uintptr_t from = first_ + p * kPage;
    if (from >= begin_ && from + kPage <= end_) {
      ::madvise(reinterpret_cast<void*>(from), kPage, MADV_DONTNEED);
    }
  }

 private:
  static constexpr std::uintptr_t kPage = std::uintptr_t{2} << 20;
  std::size_t page(std::size_t i) const { return (begin_ + i * element_bytes_ - first_) / kPage; }
  std::uintptr_t begin_, end_, first_;
  std::size_t element_bytes_;
  std::vector<std::uint32_t> left_;
};

/// Every device's reader and job count, on every rank.
void gather_readers(Exchange& exchange, const Run& local, const std::vector<std::size_t>& mine,
                    ReadFacts& read) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::uint64_t>(local.devices[d].jobs.size()));
  }
  read.reader.assign(local.devices.size(), -1);
  read.device_jobs.assign(local.devices.size(), 0);
  int rank = 0;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      const auto jobs = r.get<std::uint64_t>();
      if (d >= read.reader.size()) throw WireError("jobs of a device not in the run");
      if (jobs > std::numeric_limits<std::uint32_t>::max()) {
        throw std::invalid_argument(fmt::format(
            "{}: {} jobs on one device; the analysis by parts takes at most 2^32 - 1 per device",
            local.devices[d].path, jobs));
      }
      read.reader[d] = rank;
      read.device_jobs[d] = jobs;
    }
    ++rank;
  }
}

/// What the summary and the traces read of this rank's devices' jobs, before
/// they go: compute jobs in steps, lane counts; and the lanes
/// that are not 0, by device (job index, lane).
std::vector<std::vector<JobLane>> read_facts(const Run& local,
                                             const std::vector<std::vector<std::int32_t>>& job_step,
                                             const std::vector<std::size_t>& mine,
                                             ReadFacts& read) {
  read.compute_in_steps.assign(local.devices.size(), 0);
  read.lane_count.assign(local.devices.size(), 1);
  std::vector<std::vector<JobLane>> lanes(local.devices.size());
  for (const std::size_t d : mine) {
    const Device& device = local.devices[d];
    read.compute_in_steps[d] = compute_jobs_in_steps(local, device, job_step[d]);
    const std::vector<int> of_job = trace_job_lanes(device.jobs, read.lane_count[d]);
    for (std::size_t i = 0; i < of_job.size(); ++i) {
      if (of_job[i] != 0) lanes[d].push_back({static_cast<std::uint32_t>(i), of_job[i]});
    }
  }
  return lanes;
}

/// Sends every job of this rank's devices to the parts that need it
/// (device_part_indices) and returns what this rank's part holds, with its
/// jobs' lanes in `part_lanes`. First each destination learns how many jobs
/// of each device it gets (so it reserves them once), then the jobs travel
/// in rounds; each device's jobs and steps are freed here once every
/// destination has had its share (the parts hold them now).
PartRun exchange_jobs(Exchange& exchange, Run& local,
                      std::vector<std::vector<std::int32_t>>& job_step,
                      const std::vector<std::size_t>& mine, const TypeKinds& kinds,
                      const StepPartition& plan, PartitionedAnalysis& out) {
  const std::size_t ranks = static_cast<std::size_t>(exchange.size());
  std::vector<std::vector<JobLane>> lanes = read_facts(local, job_step, mine, out.read);
  JobRounds rounds;
  rounds.blocks.resize(ranks);
  for (const std::size_t d : mine) {
    std::vector<std::vector<std::size_t>> wide =
        device_part_indices(local.devices[d], job_step[d], kinds, plan);
    for (std::size_t p = 0; p < ranks; ++p) {
      rounds.blocks[p].push_back({d, std::vector<std::uint32_t>(wide[p].begin(), wide[p].end())});
      std::vector<std::size_t>().swap(wide[p]);
    }
  }

  // The part's run: every device's place, no job yet (as cut_part makes it).
  PartRun part = empty_part(local);
  out.part_lanes.assign(local.devices.size(), {});

  // How many of each device's jobs every destination gets.
  {
    std::vector<std::string> counts(ranks);
    for (std::size_t p = 0; p < ranks; ++p) {
      ByteWriter w;
      for (const OutBlock& block : rounds.blocks[p]) {
        w.put(static_cast<std::uint64_t>(block.device));
        w.put(static_cast<std::uint64_t>(block.positions.size()));
      }
      counts[p] = w.take();
    }
    for (const std::string& message : exchange.all_to_all(std::move(counts))) {
      ByteReader r(message);
      while (!r.done()) {
        const auto d = r.get<std::uint64_t>();
        const auto n = r.get<std::uint64_t>();
        if (d >= part.run.devices.size()) throw WireError("jobs of a device not in the run");
        part.run.devices[d].jobs.reserve(part.run.devices[d].jobs.size() + n);
        part.job_step[d].reserve(part.job_step[d].size() + n);
        part.job_index[d].reserve(part.job_index[d].size() + n);
      }
    }
  }

  const auto rank = static_cast<std::size_t>(exchange.rank());
  // Each page of a read device's jobs and steps goes back to the system
  // once every destination has had its jobs (so a rank holds about one copy
  // of its jobs, read or part, while they travel).
  std::vector<std::size_t> k_of(local.devices.size(), 0);
  std::vector<PageReleaser> jobs_left, steps_left;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const std::size_t d = mine[k];
    k_of[d] = k;
    jobs_left.emplace_back(local.devices[d].jobs.data(), local.devices[d].jobs.size(), sizeof(Job));
    steps_left.emplace_back(job_step[d].data(), job_step[d].size(), sizeof(std::int32_t));
    for (std::size_t p = 0; p < ranks; ++p) {
      for (const std::uint32_t at : rounds.blocks[p][k].positions) {
        jobs_left[k].need(at);
        steps_left[k].need(at);
      }
    }
  }
  rounds.held = [&](std::size_t d, std::uint32_t at) {
    const HeldJob held{local.devices[d].jobs[at], at, job_step[d][at]};
    jobs_left[k_of[d]].done(at);
    steps_left[k_of[d]].done(at);
    return held;
  };
  // Each piece's jobs that are not on lane 0: (offset in the piece, lane).
  rounds.tail_bytes_per_job = 8;
  rounds.tail = [&](ByteWriter& w, std::size_t d, std::span<const std::uint32_t> piece) {
    const auto& of_device = lanes[d];
    auto it = std::lower_bound(
        of_device.begin(), of_device.end(), piece.front(),
        [](const JobLane& lane, std::uint32_t position) { return lane.position < position; });
    std::vector<JobLane> found;
    for (std::size_t i = 0; i < piece.size() && it != of_device.end(); ++i) {
      while (it != of_device.end() && it->position < piece[i]) ++it;
      if (it != of_device.end() && it->position == piece[i]) {
        found.push_back({static_cast<std::uint32_t>(i), it->lane});
      }
    }
    w.list(found);
  };
  // A device's jobs go once every destination has had its block of them.
  std::vector<std::size_t> waiting(mine.size(), ranks);
  rounds.sent = [&](std::size_t, std::size_t k) {
    if (--waiting[k] > 0) return;
    const std::size_t d = mine[k];
    JobVector().swap(local.devices[d].jobs);
    std::vector<std::int32_t>().swap(job_step[d]);
    std::vector<JobLane>().swap(lanes[d]);
  };
  rounds.receive = [&](std::size_t d, std::uint64_t count, ByteReader& r) {
    if (d >= part.run.devices.size()) throw WireError("jobs of a device not in the run");
    Device& to = part.run.devices[d];
    const std::size_t base = to.jobs.size();
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto held = r.get<HeldJob>();
      to.jobs.push_back(held.job);
      part.job_step[d].push_back(held.step);
      part.job_index[d].push_back(held.index);
      if (plan.owner(static_cast<std::size_t>(held.step)) == rank) ++part.owned_jobs;
    }
    std::vector<JobLane> found;
    r.list(found);
    for (const JobLane& lane : found) {
      if (lane.position >= count) throw WireError("a lane of a job not sent");
      out.part_lanes[d].push_back({static_cast<std::uint32_t>(base + lane.position), lane.lane});
    }
  };
  send_in_rounds(exchange, rounds);
  // What the rounds' buffers and the read devices' steps freed, back to the
  // system (glibc kept it in its heap: 56 MiB at 5.4 million jobs on a rank).
  release_free_memory();
  return part;
}

/// The clock redo's first step: every part sends the jobs of its own steps
/// (each job is some part's own exactly once) back to their devices'
/// readers, freeing each of its devices once sent, so that `local` holds
/// its devices' jobs again, on the part's (corrected) times.
void return_jobs(Exchange& exchange, PartitionedAnalysis& out, Run& local) {
  const std::size_t ranks = static_cast<std::size_t>(exchange.size());
  const auto rank = static_cast<std::size_t>(exchange.rank());
  PartRun& part = out.part;
  const ReadFacts& read = out.read;
  JobRounds rounds;
  rounds.blocks.resize(ranks);
  for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
    if (d >= read.reader.size() || read.reader[d] < 0) continue;
    OutBlock block{d, {}};
    for (std::size_t i = 0; i < part.job_step[d].size(); ++i) {
      if (out.plan.owner(static_cast<std::size_t>(part.job_step[d][i])) == rank) {
        block.positions.push_back(static_cast<std::uint32_t>(i));
      }
    }
    rounds.blocks[static_cast<std::size_t>(read.reader[d])].push_back(std::move(block));
  }
  std::vector<std::uint64_t> filled(local.devices.size(), 0);
  for (std::size_t d = 0; d < local.devices.size(); ++d) {
    if (!read.mine(d, exchange.rank())) continue;
    local.devices[d].jobs.resize(read.device_jobs[d]);
  }
  rounds.held = [&](std::size_t d, std::uint32_t at) {
    return HeldJob{part.run.devices[d].jobs[at], part.job_index[d][at], part.job_step[d][at]};
  };
  rounds.sent = [&](std::size_t p, std::size_t k) {
    const std::size_t d = rounds.blocks[p][k].device;
    JobVector().swap(part.run.devices[d].jobs);
    std::vector<std::int32_t>().swap(part.job_step[d]);
    std::vector<std::uint32_t>().swap(part.job_index[d]);
  };
  rounds.receive = [&](std::size_t d, std::uint64_t count, ByteReader& r) {
    if (d >= local.devices.size() || !read.mine(d, exchange.rank())) {
      throw WireError("jobs of a device this rank did not read");
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto held = r.get<HeldJob>();
      if (held.index >= local.devices[d].jobs.size()) throw WireError("a job beyond its device");
      local.devices[d].jobs[held.index] = held.job;
      ++filled[d];
    }
  };
  send_in_rounds(exchange, rounds);
  for (std::size_t d = 0; d < local.devices.size(); ++d) {
    if (read.mine(d, exchange.rank()) && filled[d] != read.device_jobs[d]) {
      throw WireError("a device's jobs did not all come back");
    }
  }
  out.part = PartRun();
}

// ---- 5. complete steps and window times -----------------------------------------

/// mark_complete_steps, where only the owner of a step can count its jobs:
/// the questions the rule asks (which it asks whatever the answers) are
/// found first, their owners answer (`own_counts` gives the counts of a
/// (device, step) this rank owns, nullopt for another's), and every rank
/// marks with the answers.
using OwnCounts = std::function<std::optional<KindCounts>(std::size_t, std::size_t)>;

void mark_complete_by_owners(Exchange& exchange, const StepCounts& counts,
                             std::span<const std::int64_t> cut_ns, const OwnCounts& own_counts,
                             Metrics& metrics) {
  // Marked twice: the first pass only collects the questions (the flags it
  // leaves are overwritten by the second).
  std::vector<std::pair<std::size_t, std::size_t>> questions;  // (device, step)
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        questions.emplace_back(d, step);
        return KindCounts{};
      },
      metrics);
  std::sort(questions.begin(), questions.end());
  questions.erase(std::unique(questions.begin(), questions.end()), questions.end());

  ByteWriter w;
  for (const auto& [d, step] : questions) {
    const std::optional<KindCounts> mine = own_counts(d, step);
    if (!mine) continue;
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::uint64_t>(step));
    w.put(*mine);
  }
  std::map<std::pair<std::size_t, std::size_t>, KindCounts> answers;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    while (!r.done()) {
      const auto d = r.get<std::uint64_t>();
      const auto step = r.get<std::uint64_t>();
      answers[{d, step}] = r.get<KindCounts>();
    }
  }
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        const auto it = answers.find({d, step});
        if (it == answers.end()) throw WireError("a step's job counts did not arrive");
        return it->second;
      },
      metrics);
}

/// The run's totals from every rank's sums of its windows.
void gather_totals(Exchange& exchange, const WindowSums& mine, Metrics& metrics) {
  ByteWriter w;
  w.list(mine.device);
  w.put(mine.window_ns);
  w.put(mine.idle_ns);
  w.put(mine.comm_ns);
  w.put(static_cast<std::uint64_t>(mine.incomplete));
  WindowSums all(mine.device.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    WindowSums theirs;
    r.list(theirs.device);
    theirs.window_ns = r.get<std::int64_t>();
    theirs.idle_ns = r.get<std::int64_t>();
    theirs.comm_ns = r.get<std::int64_t>();
    theirs.incomplete = r.get<std::uint64_t>();
    all.add(theirs);
  }
  finish_totals(all, metrics);
}

// ---- the pipeline analysis ----------------------------------------------------

/// The jobs of the run's first `steps` steps of every device, on every rank
/// (what the layout reads: layout.h kLayoutSteps), as head_part gives them.
PartRun gather_head(Exchange& exchange, const Run& local,
                    const std::vector<std::vector<std::int32_t>>& job_step,
                    const std::vector<std::size_t>& mine, std::int32_t steps) {
  PartRun head = head_part(local, job_step, steps);
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const std::size_t d : mine) {
    w.put(static_cast<std::uint64_t>(d));
    w.list(head.run.devices[d].jobs);
    w.list(head.job_step[d]);
    w.list(head.job_index[d]);
  }
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= head.run.devices.size()) throw WireError("jobs of a device not in the run");
      r.list(head.run.devices[d].jobs);
      r.list(head.job_step[d]);
      r.list(head.job_index[d]);
    }
  }
  head.owned_jobs = 0;
  for (const Device& device : head.run.devices) head.owned_jobs += device.jobs.size();
  return head;
}

void put_detection(ByteWriter& w, const ScheduleDetection& d) {
  w.put(static_cast<std::uint8_t>(d.id.has_value()));
  if (d.id) w.put(*d.id);
  w.put(static_cast<std::uint8_t>(d.family.has_value()));
  if (d.family) w.put(*d.family);
  w.list(d.matches);
  w.put(static_cast<std::uint8_t>(d.exact));
  w.put(d.stages);
  w.put(d.micro_batches);
  w.put(d.chunks);
}

ScheduleDetection get_detection(ByteReader& r) {
  ScheduleDetection d;
  if (r.get<std::uint8_t>()) d.id = r.get<ScheduleId>();
  if (r.get<std::uint8_t>()) d.family = r.get<ScheduleFamily>();
  r.list(d.matches);
  d.exact = r.get<std::uint8_t>() != 0;
  d.stages = r.get<int>();
  d.micro_batches = r.get<int>();
  d.chunks = r.get<int>();
  return d;
}

/// The run's schedule from every range's votes and op sums, added in step
/// order (the earliest step's answer wins ties).
ScheduleReport gather_schedule(Exchange& exchange, const ScheduleVotes& votes, const OpSums& sums,
                               std::size_t stage_count, double bubble_ratio) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(votes.votes.size()));
  for (const ScheduleVotes::Vote& vote : votes.votes) {
    put_detection(w, vote.detection);
    w.put(vote.count);
  }
  w.put(votes.steps_examined);
  w.put(sums);
  ScheduleVotes all_votes;
  OpSums all_sums;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    ScheduleVotes theirs;
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      ScheduleVotes::Vote vote;
      vote.detection = get_detection(r);
      vote.count = r.get<std::int64_t>();
      theirs.votes.push_back(std::move(vote));
    }
    theirs.steps_examined = r.get<std::int64_t>();
    all_votes.add(theirs);
    all_sums.add(r.get<OpSums>());
  }
  return finish_schedule(all_votes, all_sums, stage_count, bubble_ratio);
}

void put_pairs(ByteWriter& w, const PairClocks& pairs) {
  w.put(static_cast<std::uint64_t>(pairs.size()));
  for (const auto& [key, pair] : pairs) {
    w.put(pair.machine_a);
    w.put(pair.machine_b);
    w.put(pair.dependencies);
    w.put(pair.violations_before);
    w.put(pair.violations_after);
    w.put(pair.beyond_noise_before);
    w.put(pair.beyond_noise_after);
    w.put(static_cast<std::uint8_t>(pair.lower_ns.has_value()));
    if (pair.lower_ns) w.put(*pair.lower_ns);
    w.put(static_cast<std::uint8_t>(pair.upper_ns.has_value()));
    if (pair.upper_ns) w.put(*pair.upper_ns);
  }
}

PairClocks get_pairs(ByteReader& r) {
  PairClocks pairs;
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    MachinePairClock pair;
    pair.machine_a = r.get<int>();
    pair.machine_b = r.get<int>();
    pair.dependencies = r.get<std::uint64_t>();
    pair.violations_before = r.get<std::uint64_t>();
    pair.violations_after = r.get<std::uint64_t>();
    pair.beyond_noise_before = r.get<std::uint64_t>();
    pair.beyond_noise_after = r.get<std::uint64_t>();
    if (r.get<std::uint8_t>()) pair.lower_ns = r.get<std::int64_t>();
    if (r.get<std::uint8_t>()) pair.upper_ns = r.get<std::int64_t>();
    pairs[{pair.machine_a, pair.machine_b}] = pair;
  }
  return pairs;
}

/// Every rank's pair evidence added to `into`.
void gather_pairs(Exchange& exchange, const PairClocks& mine, PairClocks& into) {
  ByteWriter w;
  put_pairs(w, mine);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    add_pair_clocks(into, get_pairs(r));
  }
}

/// Each machine's first job start (machine_first_starts: its devices' first
/// jobs, which the parts that hold them know) over every rank's part.
std::vector<std::int64_t> gather_machine_firsts(Exchange& exchange, const PartRun& part) {
  Run firsts;  // each device's first job, where this part holds it
  firsts.devices.resize(part.run.devices.size());
  for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
    firsts.devices[d].machine = part.run.devices[d].machine;
    if (const Job* first = part.first_job(d)) firsts.devices[d].jobs.push_back(*first);
  }
  ByteWriter w;
  w.list(machine_first_starts(firsts));
  std::vector<std::int64_t> first;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    std::vector<std::int64_t> theirs;
    r.list(theirs);
    if (first.empty()) first = theirs;
    for (std::size_t m = 0; m < first.size() && m < theirs.size(); ++m) {
      first[m] = std::min(first[m], theirs[m]);
    }
  }
  return first;
}

/// The run's bubble summary: every range's sums and longest, merged in step
/// order; per_step only of this rank's windows.
BubbleSummary gather_bubbles(Exchange& exchange, BubbleSummary mine, std::size_t top_n) {
  ByteWriter w;
  w.list(mine.per_device);
  w.put(mine.total);
  w.list(mine.longest);
  BubbleSummary all;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    BubbleSummary theirs;
    r.list(theirs.per_device);
    theirs.total = r.get<BubbleTotals>();
    r.list(theirs.longest);
    append_bubble_summary(all, std::move(theirs), top_n);
  }
  all.per_step = std::move(mine.per_step);
  return all;
}

void replica_windows(Exchange& exchange, const Run& local,
                     const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<DeviceStepCounts>& counts, PartitionedAnalysis& out);

/// Every step's bubble ratio on every rank (one double per step: the
/// reports list them), from the ranks that own them.
void gather_step_ratios(Exchange& exchange, std::size_t first, std::vector<StepWindow>& steps,
                        std::size_t count) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(first));
  std::vector<double> ratios;
  for (std::size_t k = first; k < first + count; ++k) ratios.push_back(steps[k].bubble_ratio);
  w.list(ratios);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    const auto from = r.get<std::uint64_t>();
    r.list(ratios);
    if (from + ratios.size() > steps.size()) throw WireError("ratios of steps not in the run");
    for (std::size_t i = 0; i < ratios.size(); ++i) steps[from + i].bubble_ratio = ratios[i];
  }
}

/// Frees the device figures of the windows outside [first, last).
void keep_own_device_figures(std::vector<StepWindow>& windows, std::size_t first,
                             std::size_t last) {
  for (std::size_t k = 0; k < windows.size(); ++k) {
    if (k < first || k >= last) std::vector<DeviceStepTime>().swap(windows[k].devices);
  }
}

/// Steps 1 to 5 of the header: the metrics, the ranges and the jobs held.
/// `decide_layout` runs once the steps are numbered and before the jobs
/// travel (the replicas' windows widen the ranges' spans).
void partitioned_metrics(
    Exchange& exchange, Run& local, PartitionedAnalysis& out,
    const std::function<void(const std::vector<std::vector<std::int32_t>>&)>& decide_layout) {
  out.metrics = Metrics();
  Metrics& m = out.metrics;
  const TypeKinds kinds(local.types);
  const std::size_t devices = local.devices.size();
  const std::size_t segments = std::max<std::size_t>(1, local.segments.size());
  const std::vector<std::size_t> mine = local_devices(local);

  gather_readers(exchange, local, mine, out.read);

  // 1. Each device numbers its steps; the segments need every device's.
  std::vector<std::vector<std::int32_t>> job_step(devices);
  std::vector<DeviceStepCounts> counts(devices);
  for (const std::size_t d : mine) {
    job_step[d].resize(local.devices[d].jobs.size());
    counts[d] = number_device_steps(local.devices[d], kinds, segments, job_step[d]);
  }
  const std::vector<DeviceStepCounts> all_counts =
      gather_step_counts(exchange, mine, counts, devices);
  const StepCounts step_counts = combine_device_steps(local, all_counts, m);
  for (const std::size_t d : mine)
    offset_device_steps(local.devices[d], d, m.segments, job_step[d]);

  // 2. The windows, from every device's edges.
  StepEdges edges(step_counts.steps);
  std::vector<std::uint64_t> jobs_per_step(step_counts.steps, 0);
  for (const std::size_t d : mine) {
    edges.combine(device_step_edges(local.devices[d], job_step[d], step_counts.steps));
    for (const std::int32_t k : job_step[d]) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  const StepEdges all_edges = gather_edges(exchange, edges);
  place_windows(all_edges, devices, m);
  out.step_has_job = all_edges.has_job;

  // 3. The ranges, balanced by jobs.
  out.plan = partition_steps(sum_counts(exchange, jobs_per_step), m.steps,
                             static_cast<std::size_t>(exchange.size()));
  const auto rank = static_cast<std::size_t>(exchange.rank());
  out.first = out.plan.bounds[rank];
  out.last = out.plan.bounds[rank + 1];

  // The layout, and each replica's windows: a replica may begin a step
  // before the run's window does, so the spans widen to hold its jobs.
  decide_layout(job_step);
  replica_windows(exchange, local, job_step, all_counts, out);
  for (const ReplicaWindows& replica : out.replica_windows) {
    std::vector<StepWindow> in_run_steps = m.steps;  // the run's own where the replica has none
    for (std::size_t k = 0; k < replica.to_global.size(); ++k) {
      in_run_steps[replica.to_global[k]] = replica.metrics.steps[k];
    }
    out.plan.widen(in_run_steps);
  }

  // 4. Every job to the ranks that need it.
  out.part = PartRun();
  out.part = exchange_jobs(exchange, local, job_step, mine, kinds, out.plan, out);

  // 5. Complete steps, this rank's windows, the run's totals.
  std::vector<std::int64_t> cut_ns;
  for (const Device& device : local.devices) cut_ns.push_back(device.cut_ns);
  mark_complete_by_owners(
      exchange, step_counts, cut_ns,
      [&](std::size_t d, std::size_t step) -> std::optional<KindCounts> {
        if (out.plan.owner(step) != rank) return std::nullopt;
        return step_kind_counts(out.part.run.devices[d], out.part.job_step[d], step, kinds);
      },
      m);
  const std::span<StepWindow> own = out.plan.windows(m.steps, rank);
  add_window_times(out.part.run.devices, kinds, own);
  gather_totals(exchange, sum_windows(own, devices), m);
  gather_step_ratios(exchange, out.first, m.steps, own.size());
  // Each window's device figures stay with its owner: steps x devices of
  // them on every rank would outgrow its share of the jobs at scale.
  keep_own_device_figures(m.steps, out.first, out.last);
  for (ReplicaWindows& replica : out.replica_windows) {
    std::size_t a = 0;
    while (a < replica.to_global.size() && replica.to_global[a] < out.first) ++a;
    std::size_t b = a;
    while (b < replica.to_global.size() && replica.to_global[b] < out.last) ++b;
    keep_own_device_figures(replica.metrics.steps, a, b);
  }
}

/// Of the dependencies found among the part's jobs (`found`), those whose
/// consumer is in this rank's steps, in its part's job indices: on each
/// device the jobs of a range of steps, kept in found's compact form.
Dependencies own_dependencies(const PartitionedAnalysis& out, const Dependencies& found) {
  const PartRun& part = out.part;
  std::vector<std::pair<std::size_t, std::size_t>> jobs(part.job_step.size());
  for (std::size_t d = 0; d < jobs.size(); ++d) {
    const std::vector<std::int32_t>& steps = part.job_step[d];
    if (!std::is_sorted(steps.begin(), steps.end())) {
      // Not a device's steps in job order: the dependencies one by one.
      std::vector<Dependency> own;
      for (const Dependency& dep : found) {
        const auto step =
            static_cast<std::size_t>(part.job_step[dep.consumer.device][dep.consumer.job]);
        if (step >= out.first && step < out.last) own.push_back(dep);
      }
      return Dependencies(own);
    }
    const auto at = [&](std::size_t k) {
      return static_cast<std::size_t>(
          std::lower_bound(steps.begin(), steps.end(), static_cast<std::int64_t>(k),
                           [](std::int32_t s, std::int64_t v) { return s < v; }) -
          steps.begin());
    };
    jobs[d] = {at(out.first), at(out.last)};
  }
  return found.consumers_in(jobs);
}

/// The part's job steps in `metrics.job_step` for the length of a call that
/// reads them there (the analyses take a Metrics with every window and the
/// held jobs' steps), without copying either.
class PartSteps {
 public:
  explicit PartSteps(PartitionedAnalysis& out) : out_(out) {
    out_.metrics.job_step.swap(out_.part.job_step);
  }
  ~PartSteps() { out_.metrics.job_step.swap(out_.part.job_step); }
  PartSteps(const PartSteps&) = delete;
  PartSteps& operator=(const PartSteps&) = delete;

 private:
  PartitionedAnalysis& out_;
};

/// The stage statistics: moments added on every rank, the medians and p95
/// selected by counting, one exchange per round for every cell at once.
BottleneckReport gather_bottleneck(Exchange& exchange, const StageDurations& mine,
                                   const StageMap& stages, std::size_t windows) {
  const std::size_t p = stages.stage_count();
  ByteWriter w;
  const StageMoments moments = duration_moments(mine, p);
  w.list(moments);
  StageMoments all(p);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    StageMoments theirs;
    r.list(theirs);
    add_moments(all, theirs);
  }
  return bottleneck_from_moments(
      all,
      [&](std::span<const DurationCell> asked) {
        std::vector<std::uint64_t> counts(asked.size());
        for (std::size_t i = 0; i < asked.size(); ++i) {
          counts[i] = count_at_most(mine, asked[i].stage, asked[i].role, asked[i].x);
        }
        return sum_counts(exchange, counts);
      },
      stages, windows);
}

/// The run's op costs, from every range's.
OpCostSums gather_op_costs(Exchange& exchange, const OpCostSums& mine) {
  ByteWriter w;
  w.put(mine);
  OpCostSums all;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    all.add(r.get<OpCostSums>());
  }
  return all;
}

/// The split's whole-run figures from every range's evidence and rows
/// (assemble_split over their sums); `inherent` is left empty: each range
/// keeps its own rows.
BubbleSplit gather_split(Exchange& exchange, const SplitEvidence& evidence, const SplitRows& rows,
                         const StageMap& stages, std::size_t devices) {
  ByteWriter w;
  w.list(evidence.receive_wait_ns);
  w.list(evidence.send_wait_ns);
  w.put(static_cast<std::uint8_t>(rows.failed));
  w.list(rows.device_inherent);
  w.put(rows.inherent_ns);
  w.put(rows.idle_ns);
  std::vector<SplitEvidence> all_evidence;
  std::vector<SplitRows> all_rows;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    SplitEvidence e;
    r.list(e.receive_wait_ns);
    r.list(e.send_wait_ns);
    SplitRows row;
    row.failed = r.get<std::uint8_t>() != 0;
    r.list(row.device_inherent);
    row.inherent_ns = r.get<std::int64_t>();
    row.idle_ns = r.get<std::int64_t>();
    all_evidence.push_back(std::move(e));
    all_rows.push_back(std::move(row));
  }
  return assemble_split(all_evidence, std::move(all_rows), stages, devices);
}

/// The longest complete step's path, with its jobs, from its owner; and the
/// index of every range's first path (paths are one per non-empty window).
struct PathsOfRun {
  std::optional<CriticalPath> longest;
  std::size_t paths_before = 0;  ///< paths of the ranges before this one
};

PathsOfRun gather_longest_path(Exchange& exchange, const CriticalPathSummary& mine) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.paths.size()));
  w.put(static_cast<std::uint8_t>(mine.longest.has_value()));
  if (mine.longest) {
    const CriticalPath& path = mine.paths[*mine.longest];
    w.put(static_cast<std::uint64_t>(path.step));
    w.list(path.jobs);
    w.put(static_cast<std::uint64_t>(path.job_count));
    w.put(path.lead_in_ns);
    w.put(path.wait_ns);
    w.list(path.stage_ns);
  }
  PathsOfRun out;
  std::size_t before = 0;
  const auto rank = static_cast<std::size_t>(exchange.rank());
  std::size_t r = 0;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader reader(message);
    const auto paths = reader.get<std::uint64_t>();
    if (r++ == rank) out.paths_before = before;
    before += paths;
    if (!reader.get<std::uint8_t>()) continue;
    CriticalPath path;
    path.step = reader.get<std::uint64_t>();
    reader.list(path.jobs);
    path.job_count = reader.get<std::uint64_t>();
    path.lead_in_ns = reader.get<std::int64_t>();
    path.wait_ns = reader.get<std::int64_t>();
    reader.list(path.stage_ns);
    out.longest = std::move(path);
  }
  return out;
}

void put_example(ByteWriter& w, const JobExample& e) {
  w.put(e.position);
  w.str(e.label);
}

JobExample get_example(ByteReader& r) {
  JobExample e;
  e.position = r.get<std::uint64_t>();
  e.label = r.str();
  return e;
}

void put_evidence(ByteWriter& w, const QualityEvidence& e) {
  w.put(static_cast<std::uint64_t>(e.first));
  w.put(static_cast<std::uint64_t>(e.last));
  w.put(static_cast<std::uint64_t>(e.devices.size()));
  for (const DeviceQualityEvidence& d : e.devices) {
    w.put(d.jobs);
    w.put(d.first_job);
    w.put(d.last_job);
    w.put(d.latest_end);
    w.list(d.marks);
    w.put(d.short_steps);
    w.list(d.first_short);
    w.put(static_cast<std::uint64_t>(d.own_counts.size()));
    for (const auto& counts : d.own_counts) w.list(counts);
    w.put(static_cast<std::uint8_t>(d.later));
    w.put(static_cast<std::uint8_t>(d.later_before_cut));
    w.put(d.in_first_incomplete);
    w.put(d.in_previous_complete);
  }
  w.put(static_cast<std::uint64_t>(e.stages.size()));
  for (const StageQualityEvidence& stage : e.stages) {
    w.put(stage.mismatched);
    w.put(static_cast<std::uint64_t>(stage.first));
    w.list(stage.counts);
  }
  w.list(e.sample);
}

QualityEvidence get_evidence(ByteReader& r) {
  QualityEvidence e;
  e.first = r.get<std::uint64_t>();
  e.last = r.get<std::uint64_t>();
  e.devices.resize(r.get<std::uint64_t>());
  for (DeviceQualityEvidence& d : e.devices) {
    d.jobs = r.get<std::uint64_t>();
    d.first_job = r.get<std::uint64_t>();
    d.last_job = r.get<std::uint64_t>();
    d.latest_end = r.get<std::int64_t>();
    r.list(d.marks);
    d.short_steps = r.get<std::uint64_t>();
    r.list(d.first_short);
    d.own_counts.resize(r.get<std::uint64_t>());
    for (auto& counts : d.own_counts) r.list(counts);
    d.later = r.get<std::uint8_t>() != 0;
    d.later_before_cut = r.get<std::uint8_t>() != 0;
    d.in_first_incomplete = r.get<KindCounts>();
    d.in_previous_complete = r.get<KindCounts>();
  }
  e.stages.resize(r.get<std::uint64_t>());
  for (StageQualityEvidence& stage : e.stages) {
    stage.mismatched = r.get<std::uint64_t>();
    stage.first = r.get<std::uint64_t>();
    r.list(stage.counts);
  }
  r.list(e.sample);
  return e;
}

void put_findings(ByteWriter& w, const QualityFindings& f) {
  w.put(static_cast<std::uint64_t>(f.devices.size()));
  for (const DeviceQualityFindings& d : f.devices) {
    w.put(d.overlaps);
    put_example(w, d.first_overlap);
    w.put(d.nonpositive);
    put_example(w, d.first_nonpositive);
    w.put(d.far);
    put_example(w, d.first_far);
    w.put(d.short_steps);
    w.list(d.first_short);
  }
}

QualityFindings get_findings(ByteReader& r) {
  QualityFindings f;
  f.devices.resize(r.get<std::uint64_t>());
  for (DeviceQualityFindings& d : f.devices) {
    d.overlaps = r.get<std::uint64_t>();
    d.first_overlap = get_example(r);
    d.nonpositive = r.get<std::uint64_t>();
    d.first_nonpositive = get_example(r);
    d.far = r.get<std::uint64_t>();
    d.first_far = get_example(r);
    d.short_steps = r.get<std::uint64_t>();
    r.list(d.first_short);
  }
  return f;
}

/// check_data_quality by ranges (data_quality.h): every range's evidence on
/// every rank, the fences decided there, every range's findings, combined.
std::vector<Warning> gather_quality(Exchange& exchange, const PartitionedAnalysis& out) {
  const std::vector<std::uint64_t>& device_jobs = out.read.device_jobs;
  const QualityPart part{out.part.run, out.part.job_step, &out.part.job_index, out.first, out.last};
  ByteWriter w;
  put_evidence(w, quality_evidence(part, out.metrics, out.pipeline.stages, device_jobs));
  std::vector<QualityEvidence> evidence;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    evidence.push_back(get_evidence(r));
  }
  const QualityFences fences = quality_fences(evidence, out.metrics, out.pipeline.stages);
  put_findings(w, quality_findings(part, out.metrics, out.pipeline.stages, fences,
                                   static_cast<std::size_t>(exchange.rank())));
  std::vector<QualityFindings> findings;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    findings.push_back(get_findings(r));
  }
  return quality_warnings(out.part.run, out.metrics, out.pipeline.stages, evidence, findings);
}

/// Each replica's numbering, windows and steps in the run's numbering, from
/// its devices' counts and edges (gathered from the ranks that read them).
void replica_windows(Exchange& exchange, const Run& local,
                     const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<DeviceStepCounts>& counts, PartitionedAnalysis& out) {
  out.replica_windows.clear();
  const Layout& layout = out.pipeline.layout;
  std::size_t with_devices = 0;
  for (const auto& devices : layout.replicas) with_devices += !devices.empty();
  if (with_devices < 2) return;
  const Metrics& m = out.metrics;
  ByteWriter w;
  std::vector<ReplicaWindows> replicas;
  std::vector<StepEdges> edges;
  // Every device's counts are known on every rank (gathered for the run's
  // numbering): each replica numbers its steps alike everywhere.
  for (std::size_t r = 0; r < layout.replicas.size(); ++r) {
    if (layout.replicas[r].empty()) continue;
    ReplicaWindows rep;
    rep.index = static_cast<int>(r);
    rep.devices = layout.replicas[r];
    Run shape;  // what combine_device_steps reads: the devices' number, the segments
    shape.devices.resize(rep.devices.size());
    shape.segments = local.segments;
    shape.first_step = local.first_step;
    std::vector<DeviceStepCounts> mine;
    for (const std::size_t d : rep.devices) mine.push_back(counts[d]);
    rep.counts = combine_device_steps(shape, mine, rep.metrics);
    for (std::size_t s = 0; s < rep.metrics.segments.size(); ++s) {
      for (std::size_t j = 0; j < rep.metrics.segments[s].count; ++j) {
        rep.to_global.push_back(m.segments[s].first + j);
      }
    }
    // This rank's devices' edges in the replica's numbering.
    StepEdges own(rep.counts.steps);
    for (std::size_t i = 0; i < rep.devices.size(); ++i) {
      const Device& device = local.devices[rep.devices[i]];
      const auto& steps = job_step[rep.devices[i]];
      for (std::size_t s = 0; s < rep.metrics.segments.size(); ++s) {
        const auto [first, last] = device.segment_jobs(s);
        // The device's own step numbers, then the replica's lead for it
        // (its devices lined up among themselves, as in one process).
        const std::int64_t from = static_cast<std::int64_t>(m.segments[s].first) +
                                  segment_lead(m.segments[s], rep.devices[i]);
        const std::int64_t to = static_cast<std::int64_t>(rep.metrics.segments[s].first) +
                                segment_lead(rep.metrics.segments[s], i);
        for (std::size_t j = first; j < last && j < steps.size(); ++j) {
          const std::int64_t k = steps[j] - from + to;
          if (k < 0 || static_cast<std::size_t>(k) >= rep.counts.steps) continue;
          own.add(static_cast<std::size_t>(k), device.jobs[j]);
        }
      }
    }
    edges.push_back(std::move(own));
    replicas.push_back(std::move(rep));
  }
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    place_windows(gather_edges(exchange, edges[i]), replicas[i].devices.size(),
                  replicas[i].metrics);
  }
  out.replica_windows = std::move(replicas);
}

/// Each replica's figures, computed by the run's own ranges: its window
/// times from the jobs each range holds, its completeness from the owners'
/// counts, its stage statistics selected across ranges.
ReplicaSummary partitioned_replicas(Exchange& exchange, const Run& local,
                                    PartitionedAnalysis& out) {
  ReplicaSummary summary;
  const TypeKinds kinds(local.types);
  const auto rank = static_cast<std::size_t>(exchange.rank());
  for (ReplicaWindows& rep : out.replica_windows) {
    // Completeness: the owners of the steps the rule asks about answer.
    std::vector<std::int64_t> cut_ns;
    for (const std::size_t d : rep.devices) cut_ns.push_back(local.devices[d].cut_ns);
    mark_complete_by_owners(
        exchange, rep.counts, cut_ns,
        [&](std::size_t i, std::size_t step) -> std::optional<KindCounts> {
          const std::size_t k = rep.to_global[step];
          if (out.plan.owner(k) != rank) return std::nullopt;
          const std::size_t d = rep.devices[i];
          return step_kind_counts(out.part.run.devices[d], out.part.job_step[d], k, kinds);
        },
        rep.metrics);
    // Its steps this range owns, and its devices' jobs here.
    std::size_t a = 0;
    while (a < rep.to_global.size() && rep.to_global[a] < out.first) ++a;
    std::size_t b = a;
    while (b < rep.to_global.size() && rep.to_global[b] < out.last) ++b;
    // The replica's devices of the part lent to a run of their own (not
    // copied) until this replica is measured.
    const LentReplicaRun lent(out.part.run, out.pipeline.layout, rep.devices);
    const ReplicaRun& here = lent.get();
    const std::span<StepWindow> own = std::span<StepWindow>(rep.metrics.steps).subspan(a, b - a);
    add_window_times(here.run.devices, kinds, own);
    gather_totals(exchange, sum_windows(own, rep.devices.size()), rep.metrics);
    std::vector<std::vector<std::int32_t>> steps_here;
    for (const std::size_t d : rep.devices) steps_here.push_back(out.part.job_step[d]);
    BottleneckReport bottleneck = gather_bottleneck(
        exchange,
        stage_durations(here.run, steps_here, out.first, out.last, here.stages, out.pipeline.roles),
        here.stages, rep.metrics.steps.size());
    add_replica(summary, replica_stats(rep.index, rep.devices, rep.metrics, std::move(bottleneck)));
  }
  return summary;
}

/// The bubble split of a partitioned run: the run's op costs summed over the
/// ranges, then each range's rows of its own steps (out.split_inherent), and
/// the run's split gathered from them.
void split_partitioned_bubbles(Exchange& exchange, PartitionedAnalysis& out, std::size_t devices) {
  const PartSteps steps(out);
  const SplitEvidence evidence = split_evidence(out.part.run, out.metrics, out.pipeline.stages,
                                                out.pipeline.roles, out.first, out.last);
  const OpCostSums run_sums = gather_op_costs(exchange, evidence.run_sums);
  SplitRows rows =
      split_rows(evidence, run_sums, out.metrics.steps, out.pipeline.stages, out.pipeline.schedule);
  out.pipeline.split = gather_split(exchange, evidence, rows, out.pipeline.stages, devices);
  out.split_inherent = std::move(rows.inherent);
}

}  // namespace

PartitionedAnalysis analyze_partitioned(Exchange& exchange, Run& local,
                                        const PipelineOptions& options) {
  PartitionedAnalysis out;
  out.pipeline.roles = classify_job_roles(local.types);
  // The layout from the run's head (on every rank), decided once: it reads
  // the order of each device's jobs, which no clock offset changes.
  bool decided = false;
  const auto decide_layout = [&](const std::vector<std::vector<std::int32_t>>& job_step) {
    if (decided) return;
    const PartRun head = gather_head(exchange, local, job_step, local_devices(local), kLayoutSteps);
    // `--stages auto` guesses from every job, compared where the devices
    // were read (the guess's pairs: devices of one machine and job count).
    std::optional<StageJobEvidence> evidence;
    if (options.stages.form == StageSpec::Form::automatic && !options.layout) {
      std::int64_t origin = std::numeric_limits<std::int64_t>::max();
      for (const Device& device : local.devices) {
        if (!device.jobs.empty()) origin = std::min(origin, device.jobs.front().start_ns);
      }
      const std::vector<std::uint64_t>& counts = out.read.device_jobs;
      evidence = exchange_stage_evidence(
          exchange, stage_check_pairs(local, one_stage_per_device(local.devices.size()), counts),
          counts, origin, held_by_reader(local));
    }
    out.pipeline.layout = choose_layout(head.run, head.job_step, out.pipeline.roles, options,
                                        evidence ? &*evidence : nullptr);
    out.pipeline.stages = out.pipeline.layout.stages;
    decided = true;
  };
  partitioned_metrics(exchange, local, out, decide_layout);
  const Metrics& m = out.metrics;
  const auto rank = static_cast<std::size_t>(exchange.rank());

  // The schedule from every range's votes.
  const auto detect_schedule = [&] {
    const PartRun& part = out.part;
    return gather_schedule(
        exchange,
        vote_schedules(part.run, part.job_step, m.steps, out.first, out.last, out.pipeline.stages,
                       out.pipeline.roles),
        op_sums(part.run, out.pipeline.roles, &part.job_step, out.first, out.last),
        out.pipeline.stages.stage_count(), m.bubble_ratio);
  };
  out.pipeline.schedule = detect_schedule();
  const StagePlacement placement = detected_placement(out.pipeline.schedule);

  // The clocks: every range's evidence, decided once; with offsets applied,
  // the windows move and the jobs are sent again.
  const ClockOptions clock = clock_options(options, out.pipeline.layout);
  const std::int64_t noise = clock_noise_ns(local, clock);
  // The dependencies among the part's jobs, found once: its own steps'
  // give the clock evidence, all of them the critical paths' walks.
  const auto find_part_dependencies = [&] {
    return find_dependencies(out.part.run, out.part.job_step, out.pipeline.stages,
                             out.pipeline.roles, placement);
  };
  Dependencies found = find_part_dependencies();
  Dependencies deps = own_dependencies(out, found);
  PairClocks evidence;
  gather_pairs(exchange, pair_clocks(out.part.run, deps, noise), evidence);
  ClockDecision decision = decide_clock_offsets(evidence, machine_clock_names(local), noise, clock);
  if (decision.to_apply) {
    const std::vector<std::int64_t> offsets = decision.offsets;
    apply_clock_offsets(local, offsets);
    apply_clock_offsets(out.part.run, offsets);
    // Each range recounts its own dependencies; the sums are the run's.
    PairClocks mine;
    count_violations_after(out.part.run, deps, noise, mine);
    PairClocks after = pairs_for_recount(decision.report);
    gather_pairs(exchange, mine, after);
    out.pipeline.clock = finish_clock_decision(std::move(decision), after);
    if (!out.pipeline.clock.applied) {
      apply_clock_offsets(local, negated(offsets));
      apply_clock_offsets(out.part.run, negated(offsets));
    } else {
      // The windows move: the jobs go back to their readers (on corrected
      // times) and travel again.
      return_jobs(exchange, out, local);
      partitioned_metrics(exchange, local, out, decide_layout);
      out.pipeline.schedule = detect_schedule();
      found = find_part_dependencies();
      deps = own_dependencies(out, found);
    }
  } else {
    out.pipeline.clock = std::move(decision.report);
  }
  add_clock_pieces(local.clock_steps, gather_machine_firsts(exchange, out.part),
                   out.pipeline.clock);
  out.pipeline.dependencies = std::move(deps);

  // Bubbles: this rank's windows, the run's sums and longest.
  out.pipeline.bubbles =
      gather_bubbles(exchange,
                     summarize_bubble_windows(
                         out.part.run.devices, &out.part.job_index, local.types,
                         out.plan.windows(out.metrics.steps, rank), out.first, options.top_bubbles),
                     options.top_bubbles);

  // Critical paths of this range's steps; the longest complete step's, with
  // its jobs, on every rank.
  {
    const PartSteps steps(out);
    out.paths = summarize_critical_path_range(
        out.part.run, out.metrics, out.pipeline.stages, found, out.pipeline.roles, out.first,
        out.last, longest_critical_step(m.steps, out.step_has_job), &out.part.job_index);
  }
  // The walks were the dependencies' last reader: they go before the stage
  // statistics hold a duration per job.
  found = Dependencies();
  release_free_memory();
  PathsOfRun longest = gather_longest_path(exchange, out.paths);
  if (longest.longest) out.pipeline.critical_paths.push_back(std::move(*longest.longest));
  out.paths_before = longest.paths_before;

  // Each replica's figures; the run's bottleneck is then the slowest one's.
  out.pipeline.replicas = partitioned_replicas(exchange, local, out);

  // The stage statistics, selected across the ranges.
  out.pipeline.bottleneck =
      gather_bottleneck(exchange,
                        stage_durations(out.part.run, out.part.job_step, out.first, out.last,
                                        out.pipeline.stages, out.pipeline.roles),
                        out.pipeline.stages, m.steps.size());
  release_free_memory();  // the durations (a value per job) are gone

  split_partitioned_bubbles(exchange, out, local.devices.size());

  // The data-quality warnings: evidence of every range, fences once,
  // findings of every range, combined.
  out.pipeline.warnings = gather_quality(exchange, out);

  // The run's bottleneck is the one of the replica that bounds its step.
  if (out.pipeline.replicas.slowest >= 0) {
    out.pipeline.bottleneck =
        out.pipeline.replicas.replicas[static_cast<std::size_t>(out.pipeline.replicas.slowest)]
            .bottleneck;
  }
  // The sentence, from the combined figures.
  out.pipeline.explanation =
      explain_bubbles(local, m, out.pipeline.schedule, out.pipeline.split, out.pipeline.bottleneck);
  return out;
}

}  // namespace pipescope::distributed
