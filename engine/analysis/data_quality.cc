#include "analysis/data_quality.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

#include "analysis/step_rule.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

constexpr std::int64_t kMinOutlierSpanNs = 10'000'000'000;  // 10 s
constexpr std::uint64_t kQuartileSample = std::uint64_t{1} << 20;
constexpr std::int64_t kNoEnd = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kShortExamples = 3;

std::string job_label(const TypeTable& types, const Job& job) {
  const std::string_view type =
      job.type < types.size() ? std::string_view(types.name(job.type)) : "?";
  return fmt::format("{} mb{} (line {})", type, job.micro_batch, job.line);
}

/// The jobs short_step counts: the ones every stage of every schedule runs alike.
bool counted_kind(JobKind kind) {
  return kind == JobKind::forward || kind == JobKind::backward || kind == JobKind::optimizer;
}

int stage_of(const StageMap& stages, std::size_t d) {
  return d < stages.stage_of.size() ? stages.stage_of[d] : -1;
}

/// The other devices of d's stage (positions below `devices`).
std::vector<std::size_t> peers_of(const StageMap& stages, std::size_t d, std::size_t devices) {
  std::vector<std::size_t> peers;
  const int stage = stage_of(stages, d);
  if (stage >= 0) {
    for (const std::size_t p : stages.devices[static_cast<std::size_t>(stage)]) {
      if (p != d && p < devices) peers.push_back(p);
    }
  }
  return peers;
}

bool in_segment(const SegmentSteps& segment, std::size_t d) {
  return std::find(segment.devices.begin(), segment.devices.end(), d) != segment.devices.end();
}

/// The first incomplete step, its segment and the segment's last complete
/// step before it: what incomplete_steps explains.
struct FirstIncomplete {
  std::size_t step = 0;
  const SegmentSteps* segment = nullptr;
  std::optional<std::size_t> previous;

  std::size_t segment_end() const { return segment->first + segment->count; }
};

std::optional<FirstIncomplete> first_incomplete(const Metrics& metrics) {
  if (metrics.incomplete_steps == 0) return std::nullopt;
  FirstIncomplete out;
  while (out.step < metrics.steps.size() && metrics.steps[out.step].complete) ++out.step;
  if (out.step == metrics.steps.size()) return std::nullopt;
  for (const SegmentSteps& s : metrics.segments) {
    if (out.step >= s.first && out.step < s.first + s.count) out.segment = &s;
  }
  if (out.segment != nullptr) {
    for (std::size_t j = out.segment->first; j < out.step; ++j) {
      if (metrics.steps[j].complete) out.previous = j;
    }
  }
  return out;
}

/// A part's jobs as the rules read them.
struct View {
  const QualityPart& part;

  std::size_t devices() const { return part.run.devices.size(); }
  std::span<const std::int32_t> steps(std::size_t d) const {
    return d < part.job_step.size() ? std::span<const std::int32_t>(part.job_step[d])
                                    : std::span<const std::int32_t>();
  }
  /// Job i's step when the part owns it.
  std::optional<std::size_t> owned_step(std::size_t d, std::size_t i) const {
    const auto s = steps(d);
    if (i >= s.size() || s[i] < 0) return std::nullopt;
    const auto k = static_cast<std::size_t>(s[i]);
    if (k < part.first || k >= part.last) return std::nullopt;
    return k;
  }
  /// Whether the part owns job i: the whole run owns every job.
  bool owns(std::size_t d, std::size_t i) const {
    return part.job_index == nullptr || owned_step(d, i).has_value();
  }
  std::uint64_t position(std::size_t d, std::size_t i) const {
    return part.job_index == nullptr ? i : (*part.job_index)[d][i];
  }
  /// The device's first and last own job (local positions); first > last: none.
  std::pair<std::size_t, std::size_t> own_range(std::size_t d) const {
    const std::size_t n = part.run.devices[d].jobs.size();
    if (part.job_index == nullptr) {
      return n == 0 ? std::pair<std::size_t, std::size_t>{1, 0} : std::pair{std::size_t{0}, n - 1};
    }
    std::size_t a = n, b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!owns(d, i)) continue;
      if (a == n) a = i;
      b = i;
    }
    return a == n ? std::pair<std::size_t, std::size_t>{1, 0} : std::pair{a, b};
  }
  /// Forward, backward and optimizer jobs of device d in each owned step, [k - first].
  std::vector<std::int64_t> counted(std::size_t d, const TypeKinds& kinds) const {
    const std::size_t range = part.last > part.first ? part.last - part.first : 0;
    std::vector<std::int64_t> out(range, 0);
    const auto& jobs = part.run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto k = owned_step(d, i);
      if (k && counted_kind(kinds.kind[jobs[i].type])) ++out[*k - part.first];
    }
    return out;
  }
};

/// Keeps the first kShortExamples of `from` and `into` by step.
void merge_short(std::vector<ShortStep>& into, const std::vector<ShortStep>& from) {
  into.insert(into.end(), from.begin(), from.end());
  std::sort(into.begin(), into.end(),
            [](const ShortStep& a, const ShortStep& b) { return a.step < b.step; });
  if (into.size() > kShortExamples) into.resize(kShortExamples);
}

/// Why incomplete step `focus.step` is: the first device of its segment that
/// began no later step before its cut, else (unless it is the segment's last
/// step) the first that never started a later step, else the first kind a
/// device ran fewer jobs of than in the segment's previous complete step.
std::string why_incomplete(const Run& run, const Metrics& metrics, const FirstIncomplete& focus,
                           std::span<const QualityEvidence> evidence) {
  const SegmentSteps* segment = focus.segment;
  if (segment == nullptr) return {};
  const auto any = [&](std::size_t d, bool DeviceQualityEvidence::*flag) {
    return std::any_of(evidence.begin(), evidence.end(), [&](const QualityEvidence& e) {
      return d < e.devices.size() && e.devices[d].*flag;
    });
  };
  for (const std::size_t d : segment->devices) {
    const Device& device = run.devices[d];
    if (device.cut_ns == Device::kNotCut) continue;
    if (!any(d, &DeviceQualityEvidence::later_before_cut)) {
      return fmt::format("the input of device {} ({}) was cut before it began a later step",
                         device.index, device.path);
    }
  }
  for (std::size_t i = 0; i < segment->devices.size() && i < segment->first_whole.size(); ++i) {
    const auto k = static_cast<std::int64_t>(focus.step - segment->first);
    if (k < segment->first_whole[i]) {
      const std::size_t d = segment->devices[i];
      return fmt::format(
          "the input of device {} ({}) begins {} step {}", run.devices[d].index,
          run.devices[d].path, segment->first_whole[i] > segment->lead[i] ? "inside" : "at",
          step_label(metrics, segment->first + static_cast<std::size_t>(segment->lead[i])));
    }
  }
  const bool last = focus.step + 1 == focus.segment_end();
  for (const std::size_t d : last ? std::vector<std::size_t>{} : segment->devices) {
    if (!any(d, &DeviceQualityEvidence::later)) {
      return fmt::format("device {} never started a later step (its log ends in it)",
                         run.devices[d].index);
    }
  }
  if (!focus.previous) return "no complete step comes before it in its launch segment";
  for (const std::size_t d : segment->devices) {
    KindCounts now{}, before{};
    for (const QualityEvidence& e : evidence) {
      if (d >= e.devices.size()) continue;
      for (std::size_t kind = 0; kind < now.size(); ++kind) {
        now[kind] += e.devices[d].in_first_incomplete[kind];
        before[kind] += e.devices[d].in_previous_complete[kind];
      }
    }
    for (std::size_t kind = 0; kind < now.size(); ++kind) {
      if (now[kind] < before[kind]) {
        return fmt::format("device {} ran {} {} job{} in it, {} in step {}", run.devices[d].index,
                           now[kind], job_kind_name(static_cast<JobKind>(kind)),
                           now[kind] == 1 ? "" : "s", before[kind],
                           step_label(metrics, *focus.previous));
      }
    }
  }
  return {};
}

/// incomplete_steps, no_complete_step and short_step.
void add_step_findings(const Run& run, const Metrics& metrics, const StageMap& stages,
                       std::span<const QualityEvidence> evidence,
                       std::span<const QualityFindings> findings, std::vector<Warning>& out) {
  if (metrics.steps.empty()) return;
  if (metrics.incomplete_steps > 0) {
    std::string which;
    std::size_t listed = 0;
    for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
      if (metrics.steps[k].complete) continue;
      if (listed++ < 5)
        which += fmt::format("{}{}", which.empty() ? "" : ", ", step_label(metrics, k));
    }
    if (listed > 5) which += fmt::format(" and {} more", listed - 5);
    const std::optional<FirstIncomplete> focus = first_incomplete(metrics);
    const std::string why = focus ? why_incomplete(run, metrics, *focus, evidence) : std::string();
    out.push_back(
        {WarningCode::incomplete_steps,
         fmt::format("{} incomplete step{} ({}{}), left out of the totals, the ratios "
                     "and the gate (a launch cut short, a log that ends early or begins late)",
                     listed, listed == 1 ? "" : "s", which,
                     why.empty()
                         ? std::string()
                         : fmt::format("; step {}: {}", step_label(metrics, focus->step), why)),
         -1, -1, static_cast<std::uint64_t>(listed)});
    if (metrics.incomplete_steps == metrics.steps.size()) {
      out.push_back({WarningCode::no_complete_step,
                     "no step is complete: the totals and the bubble ratio cover no step and "
                     "read 0; only the steps' own figures are measured",
                     -1, -1, static_cast<std::uint64_t>(metrics.steps.size())});
    }
  }

  // short_step: a complete step in which a device ran fewer forward, backward
  // and optimizer jobs than its stage peers (the median of the other devices
  // of its stage in that step), or, alone in its stage, than its own median
  // complete step of the segment.
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const bool alone = peers_of(stages, d, run.devices.size()).empty();
    std::uint64_t short_steps = 0;
    std::vector<ShortStep> first;
    for (const QualityEvidence& e : evidence) {
      if (d >= e.devices.size()) continue;
      short_steps += e.devices[d].short_steps;
      merge_short(first, e.devices[d].first_short);
    }
    for (const QualityFindings& f : findings) {
      if (d >= f.devices.size()) continue;
      short_steps += f.devices[d].short_steps;
      merge_short(first, f.devices[d].first_short);
    }
    if (short_steps == 0) continue;
    std::string detail;
    for (const ShortStep& s : first) {
      detail += fmt::format("{}step {}: {} of {}, {} missing", detail.empty() ? "" : "; ",
                            step_label(metrics, s.step), s.count, s.expected, s.expected - s.count);
    }
    out.push_back(
        {WarningCode::short_step,
         fmt::format(
             "device {}: fewer forward, backward and optimizer jobs than {} in {} "
             "step{} ({}{}): a job line lost or cut, or jobs the rank did not log",
             run.devices[d].index, alone ? "its own other steps (the median)" : "its stage peers",
             short_steps, short_steps == 1 ? "" : "s", detail,
             short_steps > kShortExamples ? fmt::format("; {} more", short_steps - kShortExamples)
                                          : std::string()),
         run.devices[d].index, stage_of(stages, d), short_steps});
  }
}

}  // namespace

void JobExample::take(const JobExample& other) {
  if (other.position < position) *this = other;
}

namespace {

/// The quartile sample: every stride-th job of the devices' jobs taken in a
/// row (from the first), by whole-run position, so that every split samples
/// the same jobs. At most kQuartileSample: the quartiles of a long run
/// barely move, and the sample stays small whatever the run's size.
struct QuartileSampling {
  QuartileSampling(std::size_t devices, std::span<const std::uint64_t> device_jobs)
      : seen(devices, 0) {
    std::uint64_t total = 0;
    for (std::size_t d = 0; d < devices; ++d) {
      seen[d] = total;
      total += d < device_jobs.size() ? device_jobs[d] : 0;
    }
    stride = std::max<std::uint64_t>(1, (total + kQuartileSample - 1) / kQuartileSample);
  }

  /// Device d's first sampled job (an index into its jobs).
  std::uint64_t first_sampled(std::size_t d) const { return (stride - seen[d] % stride) % stride; }

  std::uint64_t stride = 1;
  /// By device: the jobs of the devices before it.
  std::vector<std::uint64_t> seen;
};

/// Device d's own jobs per step the part owns ([k - part.first]): the
/// forward, backward and optimizer ones, and all of them.
struct StepJobCounts {
  std::vector<std::int64_t> counted;
  std::vector<std::int64_t> all;
};

/// Counts device d's own jobs (e.jobs, `counts`) and, around the first
/// incomplete step, whether later steps have its jobs and of which kinds
/// it and the complete step before it hold.
void count_own_jobs(const View& view, const TypeKinds& kinds,
                    const std::optional<FirstIncomplete>& focus, std::size_t d,
                    StepJobCounts& counts, DeviceQualityEvidence& e) {
  const QualityPart& part = view.part;
  const Device& device = part.run.devices[d];
  const auto& jobs = device.jobs;
  const std::size_t range = part.last > part.first ? part.last - part.first : 0;
  counts.counted.assign(range, 0);
  counts.all.assign(range, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!view.owns(d, i)) continue;
    ++e.jobs;
    const auto k = view.owned_step(d, i);
    if (!k) continue;
    const JobKind job_kind = kinds.kind[jobs[i].type];
    ++counts.all[*k - part.first];
    if (counted_kind(job_kind)) ++counts.counted[*k - part.first];
    if (focus && focus->segment != nullptr) {
      const auto kind = static_cast<std::size_t>(job_kind);
      if (*k > focus->step && *k < focus->segment_end()) {
        e.later = true;
        e.later_before_cut = e.later_before_cut || jobs[i].start_ns < device.cut_ns;
      }
      if (*k == focus->step) ++e.in_first_incomplete[kind];
      if (focus->previous && *k == *focus->previous) ++e.in_previous_complete[kind];
    }
  }
}

/// The whole run's sampled job starts of device d, written from `slot` on
/// (its slice of the sample): only the sampled jobs are read.
void sample_starts(const View& view, const QuartileSampling& sampling, std::size_t d,
                   std::int64_t* slot) {
  const auto& jobs = view.part.run.devices[d].jobs;
  const std::uint64_t n = jobs.size();
  for (std::uint64_t i = sampling.first_sampled(d); i < n; i += sampling.stride) {
    *slot++ = jobs[static_cast<std::size_t>(i)].start_ns;
  }
}

/// A part's sampled starts of device d's own jobs.
std::vector<std::int64_t> sampled_own_starts(const View& view, const QuartileSampling& sampling,
                                             std::size_t d) {
  std::vector<std::int64_t> mine;
  const auto& jobs = view.part.run.devices[d].jobs;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (view.owns(d, i) && (sampling.seen[d] + view.position(d, i)) % sampling.stride == 0) {
      mine.push_back(jobs[i].start_ns);
    }
  }
  return mine;
}

/// Device d's first and last own job and, for a part of several, what lies
/// between them: the latest end there, and where each other part's step
/// first appears (quality_fences finds other parts' first jobs among them).
void place_own_range(const View& view, const TypeKinds& kinds, std::size_t d,
                     DeviceQualityEvidence& e) {
  const auto [a, b] = view.own_range(d);
  if (a > b) return;
  e.first_job = view.position(d, a);
  e.last_job = view.position(d, b);
  if (view.part.job_index == nullptr) return;  // no other part
  // Between its first and last own job the part holds every job of the
  // device.
  const auto& jobs = view.part.run.devices[d].jobs;
  const auto steps = view.steps(d);
  std::unordered_set<std::int32_t> marked;
  std::int64_t latest = kNoEnd;
  for (std::size_t i = a; i <= b; ++i) {
    if (!view.owns(d, i) && i < steps.size() && steps[i] >= 0 && marked.insert(steps[i]).second) {
      e.marks.push_back({static_cast<std::size_t>(steps[i]), view.position(d, i), latest});
    }
    // Communication jobs overlap nothing (find_quality's walk).
    if (jobs[i].end_ns > jobs[i].start_ns && kinds.kind[jobs[i].type] != JobKind::comm) {
      latest = std::max(latest, jobs[i].end_ns);
    }
  }
  e.latest_end = latest;
}

/// Job counts per step across the devices of each stage (all of a step's
/// jobs are its owner's): the steps whose devices differ.
std::vector<StageQualityEvidence> stage_count_evidence(const QualityPart& part,
                                                       const StageMap& stages,
                                                       const std::vector<StepJobCounts>& counts) {
  const std::size_t devices = counts.size();
  const std::size_t range = part.last > part.first ? part.last - part.first : 0;
  std::vector<StageQualityEvidence> out(stages.stage_count());
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    const auto& group = stages.devices[s];
    if (group.size() < 2) continue;
    const auto count = [&](std::size_t g, std::size_t k) -> std::uint64_t {
      return group[g] < devices ? static_cast<std::uint64_t>(counts[group[g]].all[k]) : 0;
    };
    StageQualityEvidence& e = out[s];
    for (std::size_t k = 0; k < range; ++k) {
      bool differ = false;
      for (std::size_t g = 1; g < group.size(); ++g) differ |= count(g, k) != count(0, k);
      if (differ && e.mismatched++ == 0) {
        e.first = part.first + k;
        for (std::size_t g = 0; g < group.size(); ++g) e.counts.push_back(count(g, k));
      }
    }
  }
  return out;
}

/// Device d's short steps against its stage peers (all of a step's jobs are
/// its owner's) or, alone in its stage, the histogram its median is
/// selected from.
void short_step_evidence(const QualityPart& part, const Metrics& metrics, const StageMap& stages,
                         const std::vector<StepJobCounts>& counts, std::size_t d,
                         DeviceQualityEvidence& e) {
  const std::vector<std::size_t> peers = peers_of(stages, d, counts.size());
  if (peers.empty()) e.own_counts.resize(metrics.segments.size());
  for (std::size_t s = 0; s < metrics.segments.size(); ++s) {
    const SegmentSteps& segment = metrics.segments[s];
    if (!in_segment(segment, d)) continue;
    const std::size_t from = std::max(segment.first, part.first);
    const std::size_t to = std::min(segment.first + segment.count, part.last);
    std::map<std::int64_t, std::uint64_t> histogram;
    std::vector<std::int64_t> theirs;
    for (std::size_t k = from; k < to; ++k) {
      if (!metrics.steps[k].complete) continue;
      const std::int64_t count = counts[d].counted[k - part.first];
      if (peers.empty()) {
        ++histogram[count];
        continue;
      }
      theirs.clear();
      for (const std::size_t p : peers) theirs.push_back(counts[p].counted[k - part.first]);
      const std::int64_t expected = upper_middle(theirs);
      if (count >= expected) continue;
      if (e.short_steps++ < kShortExamples) e.first_short.push_back({k, count, expected});
    }
    for (const auto& [value, steps] : histogram) e.own_counts[s].push_back({value, steps});
  }
}

}  // namespace

QualityEvidence quality_evidence(const QualityPart& part, const Metrics& metrics,
                                 const StageMap& stages,
                                 std::span<const std::uint64_t> device_jobs) {
  const View view{part};
  const std::size_t devices = view.devices();
  const TypeKinds kinds(part.run.types);
  QualityEvidence out;
  out.first = part.first;
  out.last = part.last;
  out.devices.resize(devices);
  const QuartileSampling sampling(devices, device_jobs);
  const std::optional<FirstIncomplete> focus = first_incomplete(metrics);
  std::vector<StepJobCounts> counts(devices);
  // The whole run's sample is written in place, each device into its own
  // slice of out.sample (no per-device lists grown and then concatenated:
  // a million starts at most, 8 MB, held once); a part's is gathered per
  // device, as only it knows which jobs it owns.
  std::vector<std::size_t> slice_at(devices + 1, 0);
  if (part.job_index == nullptr) {
    for (std::size_t d = 0; d < devices; ++d) {
      const std::uint64_t n = part.run.devices[d].jobs.size();
      const std::uint64_t first = sampling.first_sampled(d);
      slice_at[d + 1] =
          slice_at[d] + (n > first ? (n - first + sampling.stride - 1) / sampling.stride : 0);
    }
    out.sample.resize(slice_at[devices]);
  }
  std::vector<std::vector<std::int64_t>> samples(part.job_index == nullptr ? 0 : devices);
  // Devices are independent: each one's row is its own.
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    DeviceQualityEvidence& e = out.devices[d];
    count_own_jobs(view, kinds, focus, d, counts[d], e);
    if (part.job_index == nullptr) {
      sample_starts(view, sampling, d, out.sample.data() + slice_at[d]);
    } else {
      samples[d] = sampled_own_starts(view, sampling, d);
    }
    place_own_range(view, kinds, d, e);
  });
  out.stages = stage_count_evidence(part, stages, counts);
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    short_step_evidence(part, metrics, stages, counts, d, out.devices[d]);
  });

  for (auto& mine : samples) out.sample.insert(out.sample.end(), mine.begin(), mine.end());
  // Sorted for the other parts' questions (how many at most x); the one part
  // of a whole run is asked none.
  if (part.job_index != nullptr) tbb::parallel_sort(out.sample.begin(), out.sample.end());
  return out;
}

QualityFences quality_fences(std::span<QualityEvidence> parts, const Metrics& metrics,
                             const StageMap& stages) {
  QualityFences out;
  std::size_t devices = 0;
  for (const QualityEvidence& e : parts) devices = std::max(devices, e.devices.size());
  const auto device_of = [&](std::size_t p, std::size_t d) -> const DeviceQualityEvidence* {
    return d < parts[p].devices.size() ? &parts[p].devices[d] : nullptr;
  };

  // The latest end before each part's first job of a device. Taken in the
  // order of those first jobs: a part whose own range ended before it gives
  // its latest end whole; one whose range reaches past it holds that first
  // job and gives its latest end up to it (the mark of the part's step).
  // Every earlier position is some part's own job, inside that part's range,
  // so these pieces cover exactly the jobs before it.
  out.latest_end_before.assign(parts.size(), std::vector<std::int64_t>(devices, kNoEnd));
  for (std::size_t d = 0; d < devices; ++d) {
    std::vector<std::size_t> order;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const DeviceQualityEvidence* e = device_of(p, d);
      if (e != nullptr && e->first_job != kNoPosition) order.push_back(p);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return device_of(a, d)->first_job < device_of(b, d)->first_job;
    });
    std::int64_t closed = kNoEnd;
    std::vector<std::size_t> open;
    for (const std::size_t p : order) {
      const std::uint64_t first = device_of(p, d)->first_job;
      std::int64_t latest = kNoEnd;
      std::erase_if(open, [&](std::size_t s) {
        const DeviceQualityEvidence* e = device_of(s, d);
        if (e->last_job >= first) return false;
        closed = std::max(closed, e->latest_end);
        return true;
      });
      latest = closed;
      for (const std::size_t s : open) {
        for (const StepMark& mark : device_of(s, d)->marks) {
          if (mark.step >= parts[p].first && mark.step < parts[p].last) {
            latest = std::max(latest, mark.latest_end);
            break;  // marks are in position order: this is the part's first job
          }
        }
      }
      out.latest_end_before[p][d] = latest;
      open.push_back(p);
    }
  }

  // Each lone device's median complete step of each segment, selected by
  // counting over the parts' histograms.
  out.own_median.resize(devices);
  for (std::size_t d = 0; d < devices; ++d) {
    if (!peers_of(stages, d, devices).empty()) continue;
    out.own_median[d].assign(metrics.segments.size(), 0);
    for (std::size_t s = 0; s < metrics.segments.size(); ++s) {
      std::uint64_t n = 0;
      std::int64_t lo = 0, hi = 0;
      for (std::size_t p = 0; p < parts.size(); ++p) {
        const DeviceQualityEvidence* e = device_of(p, d);
        if (e == nullptr || s >= e->own_counts.size() || e->own_counts[s].empty()) continue;
        const auto& mine = e->own_counts[s];
        if (n == 0 || mine.front().value < lo) lo = mine.front().value;
        if (n == 0 || mine.back().value > hi) hi = mine.back().value;
        for (const CountSteps& c : mine) n += c.steps;
      }
      if (n == 0) continue;
      out.own_median[d][s] =
          select_rank_by_count(upper_middle_rank(n), lo, hi, [&](std::int64_t x) {
            std::uint64_t at_most = 0;
            for (std::size_t p = 0; p < parts.size(); ++p) {
              const DeviceQualityEvidence* e = device_of(p, d);
              if (e == nullptr || s >= e->own_counts.size()) continue;
              for (const CountSteps& c : e->own_counts[s]) {
                if (c.value <= x) at_most += c.steps;
              }
            }
            return at_most;
          });
    }
  }

  // Timestamps far from the rest: the quartiles of the sample (robust however
  // few jobs there are, and a stray job cannot widen them), selected by
  // counting over the parts' sorted samples.
  std::uint64_t n = 0;
  std::int64_t lo_value = 0, hi_value = 0;
  for (const QualityEvidence& e : parts) {
    if (e.sample.empty()) continue;
    const auto [low, high] = std::minmax_element(e.sample.begin(), e.sample.end());
    if (n == 0 || *low < lo_value) lo_value = *low;
    if (n == 0 || *high > hi_value) hi_value = *high;
    n += e.sample.size();
  }
  if (n >= 2) {
    const QuartileRanks ranks = quartile_ranks(static_cast<std::size_t>(n));
    std::int64_t lo = 0, hi = 0;
    if (parts.size() == 1) {
      // One part: the same ranks selected in place (linear time, where
      // sorting the sample is not).
      std::vector<std::int64_t>& sample = parts.front().sample;
      lo = select_rank(sample, ranks.lower);
      hi = select_rank(sample, ranks.upper);
    } else {
      const auto at_most = [&](std::int64_t x) {
        std::uint64_t count = 0;
        for (const QualityEvidence& e : parts) {
          count += static_cast<std::uint64_t>(
              std::upper_bound(e.sample.begin(), e.sample.end(), x) - e.sample.begin());
        }
        return count;
      };
      lo = select_rank_by_count(ranks.lower, lo_value, hi_value, at_most);
      hi = select_rank_by_count(ranks.upper, lo_value, hi_value, at_most);
    }
    const std::int64_t span = std::max(hi - lo, kMinOutlierSpanNs);
    // Bounds saturate instead of overflowing near the ends of int64.
    const std::int64_t reach = span > std::numeric_limits<std::int64_t>::max() / 10
                                   ? std::numeric_limits<std::int64_t>::max()
                                   : span * 10;
    out.far_jobs = true;
    out.low_ns = lo < std::numeric_limits<std::int64_t>::min() + reach
                     ? std::numeric_limits<std::int64_t>::min()
                     : lo - reach;
    out.high_ns = hi > std::numeric_limits<std::int64_t>::max() - reach
                      ? std::numeric_limits<std::int64_t>::max()
                      : hi + reach;
  }
  return out;
}

QualityFindings quality_findings(const QualityPart& part, const Metrics& metrics,
                                 const StageMap& stages, const QualityFences& fences,
                                 std::size_t index) {
  const View view{part};
  const std::size_t devices = view.devices();
  const TypeKinds kinds(part.run.types);
  // The two jobs of an F+B action timed whole share its interval by design.
  std::vector<char> joined(part.run.types.size(), 0);
  for (TypeId t = 0; t < part.run.types.size(); ++t) {
    joined[t] = part.run.types.name(t).ends_with(kJoinedMark);
  }
  QualityFindings out;
  out.devices.resize(devices);
  const auto example = [&](std::size_t d, std::size_t i) {
    return JobExample{view.position(d, i), job_label(part.run.types, part.run.devices[d].jobs[i])};
  };
  // Devices are independent: each one's row is its own.
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    DeviceQualityFindings& f = out.devices[d];
    const auto& jobs = part.run.devices[d].jobs;
    const auto [a, b] = view.own_range(d);  // a > b: no own job
    // Overlapping and non-positive jobs: a walk over every job between the
    // first and last own one (all held), from the latest end before them.
    std::int64_t latest =
        index < fences.latest_end_before.size() && d < fences.latest_end_before[index].size()
            ? fences.latest_end_before[index][d]
            : kNoEnd;
    for (std::size_t i = a; i <= b; ++i) {
      const Job& job = jobs[i];
      const bool own = view.owns(d, i);
      if (job.end_ns <= job.start_ns) {
        if (own && f.nonpositive++ == 0) f.first_nonpositive = example(d, i);
        continue;
      }
      // Communication jobs (sends, receives) run on streams of their own,
      // beside compute by design: they overlap nothing, and nothing them.
      if (kinds.kind[job.type] == JobKind::comm) continue;
      if (joined[job.type] && i > a && joined[jobs[i - 1].type] &&
          jobs[i - 1].start_ns == job.start_ns && jobs[i - 1].end_ns == job.end_ns) {
        continue;
      }
      if (own && job.start_ns < latest && f.overlaps++ == 0) f.first_overlap = example(d, i);
      latest = std::max(latest, job.end_ns);
    }
    if (fences.far_jobs) {
      for (std::size_t i = a; i <= b; ++i) {
        if (!view.owns(d, i)) continue;
        if (jobs[i].start_ns < fences.low_ns || jobs[i].start_ns > fences.high_ns) {
          if (f.far++ == 0) f.first_far = example(d, i);
        }
      }
    }
    // Short steps of a device alone in its stage, against its segment's
    // median (a step of its range where the device ran no job is one too).
    if (!peers_of(stages, d, devices).empty() || d >= fences.own_median.size()) return;
    const std::vector<std::int64_t> counted = view.counted(d, kinds);
    for (std::size_t s = 0; s < metrics.segments.size() && s < fences.own_median[d].size(); ++s) {
      const SegmentSteps& segment = metrics.segments[s];
      if (!in_segment(segment, d)) continue;
      const std::int64_t expected = fences.own_median[d][s];
      const std::size_t from = std::max(segment.first, part.first);
      const std::size_t to = std::min(segment.first + segment.count, part.last);
      for (std::size_t k = from; k < to; ++k) {
        if (!metrics.steps[k].complete) continue;
        const std::int64_t count = counted[k - part.first];
        if (count >= expected) continue;
        if (f.short_steps++ < kShortExamples) f.first_short.push_back({k, count, expected});
      }
    }
  });
  return out;
}

std::vector<Warning> quality_warnings(const Run& run, const Metrics& metrics,
                                      const StageMap& stages,
                                      std::span<const QualityEvidence> evidence,
                                      std::span<const QualityFindings> findings) {
  std::vector<Warning> out;
  const std::size_t windows = metrics.steps.size();
  struct Sum {
    std::uint64_t count = 0;
    JobExample first;
  };
  const auto sum = [&](std::size_t d, std::uint64_t DeviceQualityFindings::*count,
                       JobExample DeviceQualityFindings::*first) {
    Sum s;
    for (const QualityFindings& f : findings) {
      if (d >= f.devices.size() || f.devices[d].*count == 0) continue;
      s.count += f.devices[d].*count;
      s.first.take(f.devices[d].*first);
    }
    return s;
  };

  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    const auto overlaps =
        sum(d, &DeviceQualityFindings::overlaps, &DeviceQualityFindings::first_overlap);
    const auto nonpositive =
        sum(d, &DeviceQualityFindings::nonpositive, &DeviceQualityFindings::first_nonpositive);
    if (overlaps.count > 0) {
      out.push_back({WarningCode::overlap,
                     fmt::format("device {}: {} job{} overlap an earlier job of the device (first: "
                                 "{}); their overlap is counted as busy once",
                                 device.index, overlaps.count, overlaps.count == 1 ? "" : "s",
                                 overlaps.first.label),
                     device.index, stage_of(stages, d), overlaps.count});
    }
    if (nonpositive.count > 0) {
      out.push_back({WarningCode::nonpositive_length,
                     fmt::format("device {}: {} job{} with zero or negative length (first: {})",
                                 device.index, nonpositive.count, nonpositive.count == 1 ? "" : "s",
                                 nonpositive.first.label),
                     device.index, stage_of(stages, d), nonpositive.count});
    }
    const auto steps = d < metrics.devices.size() ? metrics.devices[d].steps : 0;
    if (static_cast<std::size_t>(steps) < windows) {
      std::uint64_t jobs = 0;
      for (const QualityEvidence& e : evidence)
        jobs += d < e.devices.size() ? e.devices[d].jobs : 0;
      const auto missing = static_cast<std::uint64_t>(windows - static_cast<std::size_t>(steps));
      // Where the device's input begins, when after its first segment began.
      std::string begins;
      std::int64_t lead_steps = 0;
      for (const SegmentSteps& segment : metrics.segments) {
        const auto at = std::lower_bound(segment.devices.begin(), segment.devices.end(), d);
        if (at == segment.devices.end() || *at != d) continue;
        const auto i = static_cast<std::size_t>(at - segment.devices.begin());
        if (i < segment.first_whole.size() && segment.first_whole[i] > 0) {
          begins = fmt::format(
              "its input begins {} step {}",
              segment.first_whole[i] > segment.lead[i] ? "inside" : "at",
              step_label(metrics, segment.first + static_cast<std::size_t>(segment.lead[i])));
          lead_steps = segment.lead[i];
        }
        break;
      }
      const bool ends_early = static_cast<std::size_t>(steps + lead_steps) < windows;
      std::string why = jobs == 0 ? "no job at all" : begins;
      if (jobs != 0 && ends_early)
        why += fmt::format("{}its log ends early?", why.empty() ? "" : "; ");
      out.push_back({WarningCode::missing_steps,
                     fmt::format("device {}: {} of {} steps{}", device.index, steps, windows,
                                 why.empty() ? "" : fmt::format(" ({})", why)),
                     device.index, stage_of(stages, d), missing});
    }
  }

  // Job counts per step across the devices of each stage.
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    const auto& group = stages.devices[s];
    if (group.size() < 2) continue;
    std::uint64_t mismatched = 0;
    const StageQualityEvidence* first = nullptr;
    for (const QualityEvidence& e : evidence) {
      if (s >= e.stages.size() || e.stages[s].mismatched == 0) continue;
      mismatched += e.stages[s].mismatched;
      if (first == nullptr || e.stages[s].first < first->first) first = &e.stages[s];
    }
    if (mismatched == 0) continue;
    std::string detail;
    for (std::size_t g = 0; g < group.size(); ++g) {
      detail += fmt::format("{}device {}: {}", g == 0 ? "" : ", ", run.devices[group[g]].index,
                            g < first->counts.size() ? first->counts[g] : 0);
    }
    out.push_back({WarningCode::job_count_mismatch,
                   fmt::format("stage {}: its devices ran different numbers of jobs in {} "
                               "step{} (first: step {}, {})",
                               s, mismatched, mismatched == 1 ? "" : "s",
                               metrics.steps[first->first].step, detail),
                   -1, static_cast<int>(s), mismatched});
  }

  add_step_findings(run, metrics, stages, evidence, findings, out);

  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const auto far = sum(d, &DeviceQualityFindings::far, &DeviceQualityFindings::first_far);
    if (far.count == 0) continue;
    const Device& device = run.devices[d];
    out.push_back({WarningCode::time_outlier,
                   fmt::format("device {}: {} job{} start far from all others (first: {})",
                               device.index, far.count, far.count == 1 ? "" : "s", far.first.label),
                   device.index, -1, far.count});
  }
  return out;
}

std::vector<Warning> check_data_quality(const Run& run, const Metrics& metrics,
                                        const StageMap& stages) {
  // One part that holds the whole run.
  const QualityPart whole{run, metrics.job_step, nullptr, 0, metrics.steps.size()};
  std::vector<std::uint64_t> device_jobs;
  for (const Device& device : run.devices) device_jobs.push_back(device.jobs.size());
  QualityEvidence evidence = quality_evidence(whole, metrics, stages, device_jobs);
  const QualityFences fences = quality_fences({&evidence, 1}, metrics, stages);
  const QualityFindings findings = quality_findings(whole, metrics, stages, fences, 0);
  return quality_warnings(run, metrics, stages, {&evidence, 1}, {&findings, 1});
}

}  // namespace pipescope
