#include "analysis/critical_path.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

namespace pipescope {

namespace {

/// The jobs on a chain so far: an open-addressing set of JobRef keys, its
/// memory reused from one step to the next (a node set per step was a
/// large share of the time on dense runs).
class ChainSet {
 public:
  void clear() {
    for (const std::size_t slot : used_) slots_[slot] = kEmpty;
    used_.clear();
  }

  void insert(std::uint64_t key) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    std::size_t i = find_slot(key);
    if (slots_[i] == key) return;
    slots_[i] = key;
    used_.push_back(i);
  }

  bool contains(std::uint64_t key) const {
    if (slots_.empty()) return false;
    return slots_[find_slot(key)] == key;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  std::size_t find_slot(std::uint64_t key) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
    while (slots_[i] != kEmpty && slots_[i] != key) i = (i + 1) & mask;
    return i;
  }

  void grow() {
    std::vector<std::uint64_t> keys;
    keys.reserve(used_.size());
    for (const std::size_t slot : used_) keys.push_back(slots_[slot]);
    slots_.assign(std::max<std::size_t>(64, slots_.size() * 2), kEmpty);
    used_.clear();
    for (const std::uint64_t key : keys) {
      const std::size_t i = find_slot(key);
      slots_[i] = key;
      used_.push_back(i);
    }
  }

  std::vector<std::uint64_t> slots_;
  std::vector<std::size_t> used_;
};

/// Which steps walk_paths walks and what it keeps of them.
struct WalkScope {
  /// Steps [first, last) of Metrics::steps; the run may hold other steps'
  /// jobs too (a part of the partitioned analysis), which are passed over.
  std::size_t first = 0;
  std::size_t last = std::numeric_limits<std::size_t>::max();
  /// When not null: which of those steps to walk.
  const std::vector<bool>* only = nullptr;
  /// The step whose path keeps its jobs in a summary, when the caller knows
  /// it (longest_critical_step over the whole run); else found here.
  std::optional<std::optional<std::size_t>> keep;
  /// The jobs' indices in the whole run (PartRun::job_index), for the
  /// JobRefs returned; null: the run's own.
  const JobIndices* job_index = nullptr;
};

/// The hops in (device, job) order, sorted on every thread (a few million
/// on a long run; equal hops are the same job, so the order is a serial
/// sort's).
void sort_hops(std::vector<JobRef>& hops) {
  tbb::parallel_sort(hops.begin(), hops.end(), [](const JobRef& a, const JobRef& b) {
    return std::tie(a.device, a.job) < std::tie(b.device, b.job);
  });
}

/// The job that ends each of steps [first, first + steps) (latest end;
/// ties: lower device, earlier job), indexed by k - first: each device's own
/// in parallel, then the devices in order.
std::vector<std::optional<JobRef>> step_ending_jobs(const Run& run, const Metrics& metrics,
                                                    std::size_t first, std::size_t steps) {
  const std::size_t devices = std::min(run.devices.size(), metrics.job_step.size());
  std::vector<std::vector<std::optional<JobRef>>> device_last(devices);
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    const auto& jobs = run.devices[d].jobs;
    auto& last = device_last[d];
    last.assign(steps, std::nullopt);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto k = static_cast<std::size_t>(metrics.job_step[d][i]);
      if (k < first || k - first >= steps) continue;
      auto& best = last[k - first];
      if (!best || jobs[i].end_ns > jobs[best->job].end_ns) {
        best = JobRef{static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(i)};
      }
    }
  });
  std::vector<std::optional<JobRef>> last(steps);
  for (std::size_t d = 0; d < devices; ++d) {
    for (std::size_t k = 0; k < steps; ++k) {
      const auto& mine = device_last[d][k];
      auto& best = last[k];
      if (mine && (!best || run.devices[mine->device].jobs[mine->job].end_ns >
                                run.devices[best->device].jobs[best->job].end_ns)) {
        best = mine;
      }
    }
  }
  return last;
}

/// The chain of step k back from the job that ends it (`ending`), into
/// `chain` (backwards; each job with whether the hop that reached it came
/// through a dependency): from each job to the input that arrived last or the
/// device's previous job of the step, whichever ended later (a tie to the
/// input). `on_chain` is scratch.
void walk_back(const Run& run, const Metrics& metrics, const Dependencies& deps,
               const std::vector<JobRole>& roles, JobRef ending, std::size_t k, ChainSet& on_chain,
               std::vector<std::pair<JobRef, bool>>& chain) {
  const std::size_t devices = std::min(run.devices.size(), metrics.job_step.size());
  auto job_of = [&](JobRef r) -> const Job& { return run.devices[r.device].jobs[r.job]; };
  chain.clear();
  JobRef at = ending;
  bool via = false;
  // A path is a chain of distinct jobs. On sound data each hop moves to an
  // earlier-ending job; with a wrong stage map the implied dependencies and
  // the devices' job orders can form a cycle, which must not be walked.
  on_chain.clear();
  auto key = [](JobRef r) { return (std::uint64_t{r.device} << 32) | r.job; };
  while (true) {
    chain.emplace_back(at, via);
    on_chain.insert(key(at));
    std::optional<JobRef> previous;
    if (at.job > 0 && metrics.job_step[at.device][at.job - 1] == static_cast<std::int32_t>(k)) {
      previous = JobRef{at.device, at.job - 1};
    }
    std::optional<JobRef> input = input_producer(run, deps, roles, at);
    if (input && (input->device >= devices ||
                  metrics.job_step[input->device][input->job] != static_cast<std::int32_t>(k))) {
      input.reset();
    }
    if (previous && on_chain.contains(key(*previous))) previous.reset();
    if (input && on_chain.contains(key(*input))) input.reset();
    // The input that arrived last released the job; on a tie, the dependency.
    if (input && (!previous || job_of(*input).end_ns >= job_of(*previous).end_ns)) {
      at = *input;
      via = true;
    } else if (previous) {
      at = *previous;
      via = false;
    } else {
      break;
    }
  }
}

/// What walk_paths keeps of the paths' jobs.
enum class PathJobs : std::uint8_t {
  every_path,    ///< every path's jobs
  longest_only,  ///< the longest complete step's, and every path's dependency hops
};

/// The entry points below.
CriticalPathSummary walk_paths(const Run& run, const Metrics& metrics, const StageMap& stages,
                               const Dependencies& deps, const std::vector<JobRole>& roles,
                               PathJobs keep, const WalkScope& scope = {}) {
  const bool summary = keep == PathJobs::longest_only;
  CriticalPathSummary out;
  std::vector<CriticalPath>& paths = out.paths;
  const std::size_t first = std::min(scope.first, metrics.steps.size());
  const std::size_t steps = std::min(scope.last, metrics.steps.size()) - first;  // walked
  const std::vector<bool>* only = scope.only;

  const std::vector<std::optional<JobRef>> last = step_ending_jobs(run, metrics, first, steps);

  const std::size_t p = stages.stage_count();
  // The longest complete step with a path, known before any is walked (as
  // the reports choose it: the first of equal windows).
  std::optional<std::size_t> longest_step;
  if (scope.keep) {
    longest_step = *scope.keep;
  } else {
    for (std::size_t j = 0; j < steps; ++j) {
      const std::size_t k = first + j;
      if (!last[j] || metrics.steps[k].window_ns() <= 0 || !metrics.steps[k].complete) continue;
      if (!longest_step ||
          metrics.steps[k].window_ns() > metrics.steps[*longest_step].window_ns()) {
        longest_step = k;
      }
    }
  }
  const auto global = [&](JobRef r) {
    return scope.job_index == nullptr
               ? r
               : JobRef{r.device, static_cast<std::uint32_t>((*scope.job_index)[r.device][r.job])};
  };
  std::vector<std::vector<JobRef>> hops(summary ? steps : 0);
  auto job_of = [&](JobRef r) -> const Job& { return run.devices[r.device].jobs[r.job]; };
  // Steps are independent: each path into its own slot, kept in step order.
  std::vector<std::optional<CriticalPath>> found(steps);
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, steps, 64),
      [&](const tbb::blocked_range<std::size_t>& range) {
        ChainSet on_chain;
        std::vector<std::pair<JobRef, bool>> chain;  // backwards
        for (std::size_t j = range.begin(); j != range.end(); ++j) {
          const std::size_t k = first + j;
          if (!last[j] || metrics.steps[k].window_ns() <= 0) continue;
          if (only != nullptr && (k >= only->size() || !(*only)[k])) continue;
          CriticalPath path;
          path.step = k;
          path.stage_ns.assign(p, 0);
          walk_back(run, metrics, deps, roles, *last[j], k, on_chain, chain);
          std::reverse(chain.begin(), chain.end());
          // A summary keeps the jobs of one path: the others' figures are
          // added up as their jobs are walked, and no list of them is made.
          const bool keep_jobs = !summary || k == longest_step;
          if (keep_jobs) path.jobs.reserve(chain.size());  // exactly: a path per step is kept
          for (std::size_t i = 0; i < chain.size(); ++i) {
            const JobRef r = chain[i].first;
            const Job& job = job_of(r);
            CriticalPathJob entry;
            entry.job = global(r);
            entry.stage = r.device < stages.stage_of.size() ? stages.stage_of[r.device] : 0;
            // The part of the job on the path. A blocking recv is posted early
            // and waits inside itself for its data: entered through its input,
            // only its time after that input ended is on the path (not a
            // negative wait for the time it was already waiting).
            std::int64_t on_path_from = job.start_ns;
            if (i > 0) {
              const std::int64_t input_end = job_of(chain[i - 1].first).end_ns;
              const bool waited_on_input = chain[i - 1].second;
              if (waited_on_input && is_comm_job(run, roles, r) && on_path_from < input_end) {
                on_path_from = std::min(input_end, job.end_ns);
              }
              entry.wait_ns = on_path_from - input_end;
            }
            // chain[i - 1].second says whether the backward hop that reached
            // job i - 1 came through a dependency, i.e. whether job i waited on
            // job i - 1 as its input.
            entry.via_dependency = i > 0 && chain[i - 1].second;
            path.wait_ns += entry.wait_ns;
            if (entry.stage >= 0 && static_cast<std::size_t>(entry.stage) < p) {
              path.stage_ns[static_cast<std::size_t>(entry.stage)] += job.end_ns - on_path_from;
            }
            if (summary && entry.via_dependency) hops[j].push_back(entry.job);
            if (keep_jobs) path.jobs.push_back(entry);
          }
          path.lead_in_ns = job_of(chain.front().first).start_ns - metrics.steps[k].start_ns;
          path.job_count = chain.size();
          found[j] = std::move(path);
        }
      });
  for (std::optional<CriticalPath>& path : found) {
    if (!path) continue;
    if (path->step == longest_step) out.longest = paths.size();
    paths.push_back(std::move(*path));
  }
  for (const std::vector<JobRef>& step_hops : hops) {
    out.via_dependency.insert(out.via_dependency.end(), step_hops.begin(), step_hops.end());
  }
  sort_hops(out.via_dependency);
  return out;
}

}  // namespace

std::vector<CriticalPath> critical_paths(const Run& run, const Metrics& metrics,
                                         const StageMap& stages, const Dependencies& deps,
                                         const std::vector<JobRole>& roles) {
  return walk_paths(run, metrics, stages, deps, roles, PathJobs::every_path).paths;
}

std::vector<CriticalPath> critical_paths_of_steps(const Run& run, const Metrics& metrics,
                                                  const StageMap& stages, const Dependencies& deps,
                                                  const std::vector<JobRole>& roles,
                                                  const std::vector<std::size_t>& steps) {
  std::vector<bool> only(metrics.steps.size(), false);
  for (const std::size_t k : steps) {
    if (k < only.size()) only[k] = true;
  }
  WalkScope scope;
  scope.only = &only;
  return walk_paths(run, metrics, stages, deps, roles, PathJobs::every_path, scope).paths;
}

CriticalPathSummary summarize_critical_paths(const Run& run, const Metrics& metrics,
                                             const StageMap& stages, const Dependencies& deps,
                                             const std::vector<JobRole>& roles) {
  return walk_paths(run, metrics, stages, deps, roles, PathJobs::longest_only);
}

std::optional<std::size_t> longest_critical_step(std::span<const StepWindow> steps,
                                                 const std::vector<char>& has_job) {
  std::optional<std::size_t> longest;
  for (std::size_t k = 0; k < steps.size() && k < has_job.size(); ++k) {
    if (!has_job[k] || steps[k].window_ns() <= 0 || !steps[k].complete) continue;
    if (!longest || steps[k].window_ns() > steps[*longest].window_ns()) longest = k;
  }
  return longest;
}

CriticalPathSummary summarize_critical_path_range(const Run& run, const Metrics& metrics,
                                                  const StageMap& stages, const Dependencies& deps,
                                                  const std::vector<JobRole>& roles,
                                                  std::size_t first, std::size_t last,
                                                  std::optional<std::size_t> keep_jobs_of,
                                                  const JobIndices* job_index) {
  WalkScope scope;
  scope.first = first;
  scope.last = last;
  scope.keep = keep_jobs_of;
  scope.job_index = job_index;
  return walk_paths(run, metrics, stages, deps, roles, PathJobs::longest_only, scope);
}

void append_critical_paths(CriticalPathSummary& into, CriticalPathSummary&& part) {
  if (part.longest) into.longest = into.paths.size() + *part.longest;
  for (CriticalPath& path : part.paths) into.paths.push_back(std::move(path));
  into.via_dependency.insert(into.via_dependency.end(), part.via_dependency.begin(),
                             part.via_dependency.end());
  sort_hops(into.via_dependency);
}

}  // namespace pipescope
