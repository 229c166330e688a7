#include "distributed/partitioned_html.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "analysis/dependencies.h"
#include "analysis/job_kind.h"
#include "analysis/step_events.h"
#include "analysis/step_rule.h"
#include "distributed/job_rounds.h"
#include "distributed/wire.h"
#include "export/html_report_data.h"

namespace pipescope::distributed {

namespace {

constexpr std::uint32_t kNoProducer = std::numeric_limits<std::uint32_t>::max();

/// Whole-run job indices [first, last) of one device that rank 0 asks for.
/// `producers`: the producers of those jobs are asked for too (rank 0's own
/// bookkeeping: it is not sent).
struct ViewRequest {
  std::uint32_t device = 0;
  std::uint32_t first = 0;
  std::uint32_t last = 0;
  bool producers = true;
};

/// A job rank 0 received: its whole-run index and step, its producer as a
/// whole-run reference (device kNoProducer: none), and whether that
/// producer is to be asked for.
struct ViewJob {
  Job job;
  std::uint32_t index = 0;
  std::int32_t step = 0;
  std::uint32_t producer_device = kNoProducer;
  std::uint32_t producer_job = 0;
  bool wants_producer = false;
};

bool owns_view_step(const PartitionedAnalysis& a, std::int64_t k) {
  return k >= 0 && static_cast<std::size_t>(k) >= a.first && static_cast<std::size_t>(k) < a.last;
}

// ---- 1. the drawn steps' ranges ---------------------------------------------------

/// The whole-run jobs [first, last) of device d that the report reads for
/// step k, which this rank owns (nullopt: no job and no neighbour), with
/// one job more on each side (a walk from the edge looks at it). The part
/// holds every one of them (step_partition.h: the jobs of its steps, those
/// overlapping its span, its span's neighbours).
std::optional<ViewRequest> drawn_step_range(const PartitionedAnalysis& a, const TypeKinds& kinds,
                                            std::size_t d, std::size_t k) {
  const JobVector& jobs = a.part.run.devices[d].jobs;
  const std::vector<std::uint32_t>& index = a.part.job_index[d];
  const std::vector<std::int32_t>& job_step = a.part.job_step[d];
  const StepWindow& w = a.metrics.steps[k];
  const auto busy = [&](const Job& job) {
    return job.end_ns > job.start_ns &&
           !(job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm);
  };
  std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
  const auto take = [&](std::size_t i) {
    lo = std::min<std::uint64_t>(lo, index[i]);
    hi = std::max<std::uint64_t>(hi, std::uint64_t{index[i]} + 1);
  };
  // The jobs its bubbles name outside the window (bubbles.h): the busy job
  // with the latest end at or before its start (the first of equal ends),
  // and the first busy job from its end.
  std::optional<std::size_t> before, after;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    if (job_step[i] == static_cast<std::int32_t>(k) || html_draws_in_window(w, job)) take(i);
    if (!busy(job)) continue;
    if (job.end_ns <= w.start_ns && (!before || job.end_ns > jobs[*before].end_ns)) before = i;
    if (!after && job.start_ns >= w.end_ns) after = i;
  }
  if (before) take(*before);
  if (after) take(*after);
  if (hi == 0) return std::nullopt;
  const std::uint64_t count = a.read.device_jobs[d];
  return ViewRequest{static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(lo > 0 ? lo - 1 : 0),
                     static_cast<std::uint32_t>(std::min(hi + 1, count)), true};
}

/// Sorted by device, then first; overlapping or adjacent ranges of a device
/// joined (where `producers` agrees).
std::vector<ViewRequest> joined_requests(std::vector<ViewRequest> requests) {
  std::sort(requests.begin(), requests.end(), [](const ViewRequest& x, const ViewRequest& y) {
    return std::pair(x.device, x.first) < std::pair(y.device, y.first);
  });
  std::vector<ViewRequest> out;
  for (const ViewRequest& r : requests) {
    if (!out.empty() && out.back().device == r.device && out.back().producers == r.producers &&
        r.first <= out.back().last) {
      out.back().last = std::max(out.back().last, r.last);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

/// Step 1: the ranges of the drawn steps this rank owns go to every rank,
/// their device figures and split rows to rank 0 (into `metrics` and
/// `split`). Returns every rank's ranges, joined.
std::vector<ViewRequest> exchange_step_ranges(Exchange& exchange, const PartitionedAnalysis& a,
                                              const std::vector<std::size_t>& drawn,
                                              Metrics& metrics, BubbleSplit& split) {
  const TypeKinds kinds(a.part.run.types);
  ByteWriter ranges, figures;
  std::uint64_t count = 0, steps = 0;
  for (const std::size_t k : drawn) {
    if (!owns_view_step(a, static_cast<std::int64_t>(k))) continue;
    for (std::size_t d = 0; d < a.part.run.devices.size(); ++d) {
      if (const std::optional<ViewRequest> r = drawn_step_range(a, kinds, d, k)) {
        ranges.put(r->device);
        ranges.put(r->first);
        ranges.put(r->last);
        ++count;
      }
    }
    const std::size_t row = k - a.first;
    figures.put(static_cast<std::uint64_t>(k));
    figures.list(a.metrics.steps[k].devices);
    figures.list(row < a.split_inherent.size() ? a.split_inherent[row]
                                               : std::vector<std::int64_t>{});
    ++steps;
  }
  std::vector<std::string> out(static_cast<std::size_t>(exchange.size()));
  for (std::size_t p = 0; p < out.size(); ++p) {
    ByteWriter w;
    w.put(count);
    w.bytes(ranges.data().data(), ranges.size());
    w.put(p == 0 ? steps : std::uint64_t{0});
    if (p == 0) w.bytes(figures.data().data(), figures.size());
    out[p] = w.take();
  }
  std::vector<ViewRequest> all;
  for (const std::string& message : exchange.all_to_all(std::move(out))) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      ViewRequest q;
      q.device = r.get<std::uint32_t>();
      q.first = r.get<std::uint32_t>();
      q.last = r.get<std::uint32_t>();
      if (q.device >= a.read.device_jobs.size() || q.first >= q.last ||
          q.last > a.read.device_jobs[q.device]) {
        throw WireError("a range of jobs not in the run");
      }
      all.push_back(q);
    }
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto k = r.get<std::uint64_t>();
      if (k >= metrics.steps.size()) throw WireError("figures of a step not in the run");
      r.list(metrics.steps[k].devices);
      r.list(split.inherent[k]);
    }
    if (!r.done()) throw WireError("step ranges longer than expected");
  }
  return joined_requests(std::move(all));
}

// ---- 2. the jobs to rank 0 --------------------------------------------------------

/// Sends rank 0 the jobs of `requests` (joined) whose step this rank owns,
/// each with its producer; rank 0 appends them to `received` (by device).
void serve_requests(Exchange& exchange, const PartitionedAnalysis& a,
                    const std::vector<ViewRequest>& requests,
                    std::vector<std::vector<ViewJob>>& received) {
  const PartRun& part = a.part;
  JobRounds rounds;
  rounds.blocks.resize(static_cast<std::size_t>(exchange.size()));
  for (std::size_t r = 0; r < requests.size();) {
    const std::size_t d = requests[r].device;
    std::size_t end = r;
    while (end < requests.size() && requests[end].device == d) ++end;
    OutBlock block{d, {}};
    const std::vector<std::uint32_t>& index = part.job_index[d];
    for (std::size_t i = 0, q = r; i < index.size() && q < end; ++i) {
      while (q < end && requests[q].last <= index[i]) ++q;
      if (q < end && index[i] >= requests[q].first && owns_view_step(a, part.job_step[d][i])) {
        block.positions.push_back(static_cast<std::uint32_t>(i));
      }
    }
    if (!block.positions.empty()) rounds.blocks[0].push_back(std::move(block));
    r = end;
  }
  rounds.held = [&](std::size_t d, std::uint32_t at) {
    return HeldJob{part.run.devices[d].jobs[at], part.job_index[d][at], part.job_step[d][at]};
  };
  rounds.tail_bytes_per_job = 2 * sizeof(std::uint32_t);
  rounds.tail = [&](ByteWriter& w, std::size_t d, std::span<const std::uint32_t> piece) {
    for (const std::uint32_t at : piece) {
      const std::optional<JobRef> producer =
          a.pipeline.dependencies.producer_of(JobRef{static_cast<std::uint32_t>(d), at});
      w.put(producer ? producer->device : kNoProducer);
      w.put(producer ? part.job_index[producer->device][producer->job] : std::uint32_t{0});
    }
  };
  rounds.receive = [&](std::size_t d, std::uint64_t count, ByteReader& r) {
    if (d >= received.size()) throw WireError("jobs of a device not in the run");
    std::vector<ViewJob>& into = received[d];
    const std::size_t from = into.size();
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto held = r.get<HeldJob>();
      into.push_back({held.job, held.index, held.step, kNoProducer, 0, false});
    }
    for (std::size_t i = from; i < into.size(); ++i) {
      into[i].producer_device = r.get<std::uint32_t>();
      into[i].producer_job = r.get<std::uint32_t>();
    }
  };
  send_in_rounds(exchange, rounds);
}

// ---- 3. what a walk would read beyond them ----------------------------------------

/// The job of `held` (sorted by index) with whole-run index `index`, or null.
const ViewJob* find_view_job(const std::vector<ViewJob>& held, std::uint32_t index) {
  const auto it = std::lower_bound(held.begin(), held.end(), index,
                                   [](const ViewJob& j, std::uint32_t i) { return j.index < i; });
  return it != held.end() && it->index == index ? &*it : nullptr;
}

/// Sorts what arrived, marks whose producers are wanted (those asked for
/// with `producers`), and returns what is still missing (step 3 of the
/// header): one index asked for once at most (`asked`, by device).
std::vector<ViewRequest> missing_jobs(std::vector<std::vector<ViewJob>>& held,
                                      const std::vector<ViewRequest>& asked_now,
                                      const PartitionedAnalysis& a,
                                      std::vector<std::vector<std::uint32_t>>& asked) {
  for (std::vector<ViewJob>& jobs : held) {
    std::sort(jobs.begin(), jobs.end(),
              [](const ViewJob& x, const ViewJob& y) { return x.index < y.index; });
  }
  for (const ViewRequest& r : asked_now) {
    if (!r.producers) continue;
    std::vector<ViewJob>& jobs = held[r.device];
    auto it = std::lower_bound(jobs.begin(), jobs.end(), r.first,
                               [](const ViewJob& j, std::uint32_t i) { return j.index < i; });
    for (; it != jobs.end() && it->index < r.last; ++it) it->wants_producer = true;
  }
  const std::vector<JobRole>& roles = a.pipeline.roles;
  const auto comm = [&](const Job& job) {
    return job.type < roles.size() && roles[job.type].role == PipelineRole::comm;
  };
  std::vector<ViewRequest> wants;  // one job each
  const auto want = [&](std::uint32_t d, std::uint64_t i, bool producers) {
    if (i < a.read.device_jobs[d] &&
        find_view_job(held[d], static_cast<std::uint32_t>(i)) == nullptr &&
        !std::binary_search(asked[d].begin(), asked[d].end(), static_cast<std::uint32_t>(i))) {
      wants.push_back(
          {d, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i + 1), producers});
    }
  };
  for (std::uint32_t d = 0; d < held.size(); ++d) {
    const std::vector<ViewJob>& jobs = held[d];
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const ViewJob& j = jobs[i];
      // A run of comm jobs at an edge goes on to the next compute job.
      const bool starts = i == 0 || jobs[i - 1].index + 1 != j.index;
      const bool ends = i + 1 == jobs.size() || jobs[i + 1].index != j.index + 1;
      if (starts && j.index > 0 && comm(j.job)) want(d, j.index - 1, j.wants_producer);
      if (ends && comm(j.job)) want(d, std::uint64_t{j.index} + 1, j.wants_producer);
      // A recv's data: its producer, and the jobs after it (the peer send).
      if (j.wants_producer && j.producer_device < held.size()) {
        want(j.producer_device, j.producer_job, false);
        want(j.producer_device, std::uint64_t{j.producer_job} + 1, false);
      }
    }
  }
  for (const ViewRequest& w : wants) asked[w.device].push_back(w.first);
  for (std::vector<std::uint32_t>& list : asked) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  // A job wanted both ways wants its producer.
  std::sort(wants.begin(), wants.end(), [](const ViewRequest& x, const ViewRequest& y) {
    return std::tuple(x.device, x.first, !x.producers) <
           std::tuple(y.device, y.first, !y.producers);
  });
  wants.erase(std::unique(wants.begin(), wants.end(),
                          [](const ViewRequest& x, const ViewRequest& y) {
                            return x.device == y.device && x.first == y.first;
                          }),
              wants.end());
  return joined_requests(std::move(wants));
}

/// Rank 0's requests to every rank (every rank learns whether there are
/// any: the rounds end together).
std::vector<ViewRequest> broadcast_requests(Exchange& exchange,
                                            const std::vector<ViewRequest>& mine,
                                            std::size_t devices) {
  ByteWriter w;
  if (exchange.rank() == 0) {
    w.put(static_cast<std::uint64_t>(mine.size()));
    for (const ViewRequest& r : mine) {
      w.put(r.device);
      w.put(r.first);
      w.put(r.last);
      w.put(static_cast<std::uint8_t>(r.producers));
    }
  }
  const std::string rank0 = exchange.all_gather(w.take()).front();
  ByteReader r(rank0);
  std::vector<ViewRequest> out(r.get<std::uint64_t>());
  for (ViewRequest& q : out) {
    q.device = r.get<std::uint32_t>();
    q.first = r.get<std::uint32_t>();
    q.last = r.get<std::uint32_t>();
    q.producers = r.get<std::uint8_t>() != 0;
    if (q.device >= devices || q.first >= q.last) throw WireError("a request of no job");
  }
  return out;
}

// ---- 4. the view ------------------------------------------------------------------

/// The whole run's windows and totals without the windows' device figures
/// (this rank's steps' grow with the run; the drawn steps' are set apart).
Metrics view_windows(const Metrics& m) {
  Metrics out;
  out.steps.reserve(m.steps.size());
  for (const StepWindow& w : m.steps) {
    out.steps.push_back({.step = w.step,
                         .segment = w.segment,
                         .complete = w.complete,
                         .start_ns = w.start_ns,
                         .end_ns = w.end_ns,
                         .devices = {},
                         .bubble_ratio = w.bubble_ratio});
  }
  out.segments = m.segments;
  out.devices = m.devices;
  out.bubble_ratio = m.bubble_ratio;
  out.total_window_ns = m.total_window_ns;
  out.comm_ns = m.comm_ns;
  out.incomplete_steps = m.incomplete_steps;
  return out;
}

/// The whole-run analysis without what grows with the run: this rank's
/// windows' bubble times, its steps' dependencies and critical paths (the
/// report reads none of them but the drawn steps', made from the view).
PipelineAnalysis whole_run_pipeline(const PipelineAnalysis& a) {
  PipelineAnalysis out;
  out.layout = a.layout;
  out.stages = a.stages;
  out.replicas = a.replicas;
  out.roles = a.roles;
  out.schedule = a.schedule;
  out.bubbles.per_device = a.bubbles.per_device;
  out.bubbles.total = a.bubbles.total;
  out.bubbles.longest = a.bubbles.longest;
  out.bubbles.longest_folded = a.bubbles.longest_folded;
  out.split = a.split;  // its rows are the owners' (split_inherent), not here
  out.bottleneck = a.bottleneck;
  out.clock = a.clock;
  out.warnings = a.warnings;
  out.explanation = a.explanation;
  return out;
}

/// The jobs received, as the view's devices, steps and dependencies; each
/// device's are freed once placed.
void place_view_jobs(HtmlView& view, std::vector<std::vector<ViewJob>>&& held) {
  const std::size_t devices = held.size();
  view.job_index.assign(devices, {});
  view.metrics.job_step.assign(devices, {});
  for (std::size_t d = 0; d < devices; ++d) {
    for (const ViewJob& j : held[d]) view.job_index[d].push_back(j.index);
  }
  // A dependency whose producer is not in the view is left out: no walk of
  // the report reads it (step 3 of the header).
  std::vector<Dependency> deps;
  for (std::size_t d = 0; d < devices; ++d) {
    JobVector& jobs = view.run.devices[d].jobs;
    jobs.reserve(held[d].size());
    view.metrics.job_step[d].reserve(held[d].size());
    for (std::size_t i = 0; i < held[d].size(); ++i) {
      const ViewJob& j = held[d][i];
      jobs.push_back(j.job);
      view.metrics.job_step[d].push_back(j.step);
      if (j.producer_device >= devices) continue;
      const std::vector<std::uint32_t>& at = view.job_index[j.producer_device];
      const auto it = std::lower_bound(at.begin(), at.end(), j.producer_job);
      if (it == at.end() || *it != j.producer_job) continue;
      deps.push_back({{j.producer_device, static_cast<std::uint32_t>(it - at.begin())},
                      {static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(i)}});
    }
    std::vector<ViewJob>().swap(held[d]);
  }
  view.pipeline.dependencies = Dependencies(deps);
}

}  // namespace

HtmlView gather_html_view(Exchange& exchange, const LocalLoad& load,
                          const PartitionedAnalysis& analysis,
                          const std::vector<std::size_t>& drawn) {
  const bool root = exchange.rank() == 0;
  const Run& run = load.run;
  HtmlView view;
  if (root) {
    view.metrics = view_windows(analysis.metrics);
    view.pipeline = whole_run_pipeline(analysis.pipeline);
    view.pipeline.split.inherent.resize(view.metrics.steps.size());
  }
  std::vector<ViewRequest> requests =
      exchange_step_ranges(exchange, analysis, drawn, view.metrics, view.pipeline.split);
  std::vector<std::vector<ViewJob>> held(root ? run.devices.size() : 0);
  std::vector<std::vector<std::uint32_t>> asked(held.size());
  while (!requests.empty()) {
    serve_requests(exchange, analysis, requests, held);
    std::vector<ViewRequest> next;
    if (root) next = missing_jobs(held, requests, analysis, asked);
    requests = broadcast_requests(exchange, next, analysis.read.device_jobs.size());
  }
  if (!root) return view;
  view.run.types = run.types;
  view.run.first_step = run.first_step;
  view.run.segments = run.segments;
  view.run.time_resolution_ns = run.time_resolution_ns;
  view.run.event_kinds = run.event_kinds;
  view.run.events_off = run.events_off;
  for (const Device& device : run.devices) {
    Device& place = view.run.devices.emplace_back();
    place.index = device.index;
    place.machine = device.machine;
    place.machine_name = device.machine_name;
    place.rank = device.rank;
    place.path = device.path;
    place.cut_ns = device.cut_ns;
    place.events = device.events;
  }
  place_view_jobs(view, std::move(held));
  return view;
}

void write_partitioned_html(Exchange& exchange, const LocalLoad& load,
                            const PartitionedAnalysis& analysis, const SummaryJobFacts& facts,
                            const HtmlOptions& options, const std::string& path) {
  const HtmlView view = gather_html_view(exchange, load, analysis, options.steps);
  if (exchange.rank() != 0) return;
  // Placed as write_partitioned_summary places them: on the windows, from
  // every device's events.
  const StepEvents placed =
      load.run.event_kinds.empty() ? StepEvents{} : place_step_events(load.run, analysis.metrics);
  HtmlOptions drawn = options;
  drawn.pipeline = &view.pipeline;
  drawn.kernels = nullptr;
  drawn.facts = &facts;
  drawn.events = &placed;
  drawn.embed_drawn_only = true;
  write_html_report(view.run, view.metrics, drawn, path);
}

}  // namespace pipescope::distributed
