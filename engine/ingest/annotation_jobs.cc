#include "ingest/annotation_jobs.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ingest/job_pattern.h"
#include "ingest/torch_trace_event.h"
#include "model/errors.h"
#include "model/job.h"

namespace pipescope {

namespace {

/// How a `PP:` label of an overlapped F+B action ends.
constexpr std::string_view kOverlapActionSuffix = ")OVERLAP_F_B";

struct KernelSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

}  // namespace

bool annotation_job_name(std::string_view name, const JobPattern* pattern) {
  if (pattern) return pattern->match(name).has_value();
  return name.starts_with(kPipelinePrefix);
}

void AnnotationJobs::add_range(Range range) {
  Annotation& a = cpu_.emplace_back();
  a.overlap = !pattern_ && range.name.ends_with(kOverlapActionSuffix);
  a.range = std::move(range);
}

void AnnotationJobs::add_gpu_range(Range range) { gpu_.emplace_back().range = std::move(range); }

/// The host range holding host time `ts`, or npos: the latest-starting range
/// that holds it, looking back a few (ranges may nest or overlap: an OVERLAP
/// pair, a pattern's ranges). `hint`: where the last search ended.
std::size_t AnnotationJobs::span_at(std::int64_t ts, std::size_t& hint) const {
  // The first range starting after ts: at the hint when the times run on.
  std::size_t after = hint;
  if (after > span_index_.size() || (after > 0 && span_index_[after - 1].first > ts) ||
      (after < span_index_.size() && span_index_[after].first <= ts)) {
    after = static_cast<std::size_t>(
        std::upper_bound(span_index_.begin(), span_index_.end(),
                         std::pair{ts, std::numeric_limits<std::size_t>::max()}) -
        span_index_.begin());
    hint = after;
  }
  for (std::size_t back = 0; back < 4 && back < after; ++back) {
    const std::size_t span = span_index_[after - 1 - back].second;
    if (cpu_[span].range.end >= ts) return span;
  }
  return std::string::npos;
}

void AnnotationJobs::place(const PairList& pairs) {
  if (cpu_.empty() || pairs.empty()) return;
  if (span_index_.size() != cpu_.size()) {
    span_index_.clear();
    for (std::size_t i = 0; i < cpu_.size(); ++i) span_index_.push_back({cpu_[i].range.start, i});
    std::sort(span_index_.begin(), span_index_.end());
  }
  std::size_t hint = 0;
  pairs.for_each([&](const LaunchPair& p) {
    const std::size_t span = span_at(p.launch, hint);
    if (span == std::string::npos) return;
    Annotation& a = cpu_[span];
    a.kernel_start = std::min(a.kernel_start, p.start);
    a.kernel_end = std::max(a.kernel_end, p.end);
    // An OVERLAP_F_B range keeps its kernels with their launches.
    if (a.overlap) a.launched.push_back({p.launch, p.thread, p.start, p.end});
  });
}

void AnnotationJobs::forget_activities() {
  for (Annotation& a : cpu_) {
    a.kernel_start = std::numeric_limits<std::int64_t>::max();
    a.kernel_end = std::numeric_limits<std::int64_t>::min();
    a.launched.clear();
  }
}

void AnnotationJobs::assemble(std::int64_t base_ns, Output& out,
                              const std::function<void(const Timed&)>& on_timed,
                              std::optional<std::int64_t>* lowest_stage) {
  std::sort(steps_.begin(), steps_.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  if (pattern_ && !pattern_->has_micro_batch() && steps_.empty() && !cpu_.empty()) {
    throw InputError(fmt::format(
        "{}: the job pattern has no 'mb' group, so steps must come from {}s, and this {} has none",
        out.path, out.step_span, out.input));
  }
  Timed timed = timed_actions(out);
  if (on_timed) {
    on_timed(timed);
  } else if (timed.host_timed > 0) {
    out.note(0, fmt::format("{} of {} jobs are host-timed: no GPU span or kernel was found for "
                            "them, so their times are the CPU's launch spans, not the GPU's",
                            timed.host_timed, timed.pending.size()));
    // Counted per input here; the format makes one warning of them.
    out.notes.push_back(
        {WarningCode::host_timed_jobs, std::string(out.path), -1, -1, timed.host_timed});
  }
  split_overlaps(timed.pending, out);
  const std::vector<std::int64_t> stages = rank_stages(timed.pending, lowest_stage);
  emit_jobs(timed.pending, stages, base_ns, out);
  // The first step: the one holding the first job, else the first span.
  if (!out.first_step && !steps_.empty()) out.first_step = steps_.front().step;
  if (out.first_step) out.device.step_starts.push_back({0, *out.first_step});
}

/// The action(s) a host range's name stands for; empty when none.
std::vector<TraceAction> AnnotationJobs::actions_of(const Annotation& a, Output& out) {
  if (pattern_) {
    if (auto action = pattern_->match(a.range.name)) return {*action};
    return {};
  }
  auto actions =
      parse_pipeline_action(std::string_view(a.range.name).substr(kPipelinePrefix.size()));
  if (actions.empty()) {
    out.malformed(a.range.offset,
                  fmt::format("'{}' is no pipeline action; skipped", a.range.name.substr(0, 80)));
  }
  return actions;
}

/// Each job's interval, in order of preference: the GPU range (matched to
/// the host range by External id, else by name and order) when it covers
/// the activities launched inside the host range; else the span of those
/// activities; else the host range (host-timed).
AnnotationJobs::Timed AnnotationJobs::timed_actions(Output& out) {
  // GPU ranges by (name, External id), and by name in order without one.
  std::map<std::pair<std::string_view, std::int64_t>, const Range*> gpu_by_id;
  std::map<std::string_view, std::vector<const Range*>> gpu_by_name;
  for (const Annotation& a : gpu_) {
    const Range& g = a.range;
    if (g.external_id >= 0)
      gpu_by_id.emplace(std::pair{std::string_view(g.name), g.external_id}, &g);
    gpu_by_name[g.name].push_back(&g);
  }
  std::map<std::string_view, std::size_t> next_of_name;
  auto gpu_span_of = [&](const Range& cpu) -> const Range* {
    const Range* gpu = nullptr;
    if (cpu.external_id >= 0) {
      if (const auto it = gpu_by_id.find({cpu.name, cpu.external_id}); it != gpu_by_id.end()) {
        gpu = it->second;
      }
    }
    if (gpu == nullptr) {
      const auto it = gpu_by_name.find(cpu.name);
      std::size_t& next = next_of_name[cpu.name];
      if (it != gpu_by_name.end() && next < it->second.size() &&
          it->second[next]->external_id < 0) {
        gpu = it->second[next];
      }
    }
    ++next_of_name[cpu.name];
    return gpu;
  };

  Timed timed;
  std::vector<Pending>& pending = timed.pending;
  for (const Annotation& a : cpu_) {
    const Range& cpu = a.range;
    std::vector<TraceAction> actions = actions_of(a, out);
    if (actions.empty()) continue;
    const Range* gpu = gpu_span_of(cpu);
    // Activities launched from inside the host range.
    const std::int64_t kernel_start = a.kernel_start, kernel_end = a.kernel_end;
    const bool kernels = kernel_start <= kernel_end;
    std::int64_t start = cpu.start, end = cpu.end;
    if (gpu != nullptr && (!kernels || (gpu->start <= kernel_start && gpu->end >= kernel_end))) {
      start = gpu->start;
      end = gpu->end;
    } else if (kernels) {
      start = kernel_start;
      end = kernel_end;
    } else {
      timed.host_timed += actions.size();
      timed.first_host_timed = std::min(timed.first_host_timed, cpu.start);
    }
    const bool pair = actions.size() == 2;
    for (std::size_t k = 0; k < actions.size(); ++k) {
      pending.push_back({std::move(actions[k]), start, end, cpu.start, cpu.ordinal,
                         pair ? static_cast<int>(k) + 1 : 0,
                         static_cast<std::size_t>(&a - cpu_.data())});
    }
  }
  return timed;
}
/// An OVERLAP_F_B action (DualPipeV: the forward of one micro-batch, then
/// the full backward of another) is one profiler range; its two jobs are
/// timed apart where the range's kernels show the boundary. torch's
/// _step_microbatches runs the forward on the range's own thread, so the
/// forward's kernels are launched from it; the backward runs through
/// autograd's engine, which evaluates a CUDA graph's nodes on its device
/// thread (`autograd::engine::evaluate_function: ...`), so the backward's
/// kernels are launched from another thread, after the forward's. The
/// backward begins at the first launch from another thread: the forward is
/// its kernels launched from the range's thread before that (the first
/// kernel's start to the last one's end on the GPU), the backward every
/// kernel launched from then on. Where the kernels show no boundary (no
/// kernel joined to the range: a CPU-only or cut trace; every kernel
/// launched from the range's thread; the two sets overlapping on the GPU),
/// the action is one F+B job: both jobs keep the range's whole interval and
/// are typed so (JobRole::joined), so that no duration is given to either op
/// alone. A note counts each case.
void AnnotationJobs::split_overlaps(std::vector<Pending>& pending, Output& out) {
  std::uint64_t pairs = 0, no_kernel = 0, one_thread = 0, overlapping = 0, other_order = 0;
  for (std::size_t i = 0; i + 1 < pending.size(); ++i) {
    Pending& first = pending[i];
    Pending& second = pending[i + 1];
    if (first.overlap != 1 || second.overlap != 2) continue;
    ++pairs;
    ++i;
    const auto join = [&](std::uint64_t& why) {
      ++why;
      first.joined = second.joined = true;
    };
    if (first.action.type != "forward" || !second.action.type.starts_with("backward")) {
      join(other_order);
      continue;
    }
    const Annotation& range = cpu_[first.span];
    if (range.launched.empty() || range.range.thread < 0) {
      join(no_kernel);
      continue;
    }
    std::int64_t boundary = std::numeric_limits<std::int64_t>::max();
    for (const LaunchedKernel& k : range.launched) {
      if (k.thread != range.range.thread) boundary = std::min(boundary, k.launch);
    }
    KernelSpan forward{std::numeric_limits<std::int64_t>::max(),
                       std::numeric_limits<std::int64_t>::min()};
    KernelSpan backward = forward;
    for (const LaunchedKernel& k : range.launched) {
      KernelSpan& into = k.launch < boundary ? forward : backward;
      into.start = std::min(into.start, k.start);
      into.end = std::max(into.end, k.end);
    }
    if (forward.start > forward.end || backward.start > backward.end) {
      join(one_thread);
      continue;
    }
    if (forward.end > backward.start) {
      join(overlapping);
      continue;
    }
    first.start = forward.start;
    first.end = forward.end;
    second.start = backward.start;
    second.end = backward.end;
  }
  if (pairs == 0) return;
  const std::uint64_t joined = no_kernel + one_thread + overlapping + other_order;
  std::string how = fmt::format(
      "{} OVERLAP_F_B action{} (a forward, then a backward, in one profiler range): ", pairs,
      pairs == 1 ? "" : "s");
  if (joined < pairs) {
    how += fmt::format(
        "{} timed apart by the range's kernels (the forward's launched from the range's "
        "thread, the backward's from autograd's, after them)",
        pairs - joined);
  }
  if (joined > 0) {
    std::string why;
    const auto reason = [&](std::uint64_t n, std::string_view text) {
      if (n > 0) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, text);
    };
    reason(no_kernel, "with no kernel joined to the range");
    reason(one_thread, "with its kernels launched from one thread only");
    reason(overlapping, "whose forward's and backward's kernels overlap on the GPU");
    reason(other_order, "not a forward followed by a backward");
    how += fmt::format(
        "{}{} kept as one F+B job each, no boundary shown inside ({}): both jobs hold the "
        "whole range and are typed forwardC(F+B) and backwardC(F+B), neither op timed alone",
        joined < pairs ? "; " : "", joined, why);
  }
  out.note(0, how);
}

/// The stages this rank ran, in order (a stage's place among them is its
/// chunk); gives the lowest to `lowest_stage`, when asked.
std::vector<std::int64_t> AnnotationJobs::rank_stages(const std::vector<Pending>& pending,
                                                      std::optional<std::int64_t>* lowest_stage) {
  std::set<std::int64_t> stages;
  for (const Pending& p : pending) {
    if (p.action.stage >= 0 && p.action.chunk < 0) stages.insert(p.action.stage);
  }
  std::vector<std::int64_t> list(stages.begin(), stages.end());
  if (!list.empty() && lowest_stage != nullptr) *lowest_stage = list.front();
  return list;
}

/// Jobs in host order: each one's chunk (given, else its stage's place),
/// its micro-batch (given, else numbered per step span, type and chunk for a
/// pattern without `mb`), and its type (compute types named with the chunk
/// when the rank holds several).
void AnnotationJobs::emit_jobs(std::vector<Pending>& pending,
                               const std::vector<std::int64_t>& stages, std::int64_t base_ns,
                               Output& out) {
  const bool chunked =
      stages.size() > 1 || std::any_of(pending.begin(), pending.end(),
                                       [](const Pending& p) { return p.action.chunk >= 0; });
  auto step_of = [&](std::int64_t t) -> const StepSpan* {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                               [](std::int64_t v, const StepSpan& s) { return v < s.start; });
    if (it == steps_.begin()) return nullptr;
    --it;
    return t <= it->end ? &*it : nullptr;
  };
  // The two jobs of an OVERLAP_F_B range share its host start: by start then.
  std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.host_start, a.start, a.overlap) < std::tie(b.host_start, b.start, b.overlap);
  });
  std::map<std::tuple<const StepSpan*, std::string, std::int64_t>, std::int64_t> counters;
  std::uint64_t outside = 0;
  const bool count_mb = pattern_ && !pattern_->has_micro_batch();
  // Jobs before the first ProfilerStep#N span ran in step N−1, which began
  // before the trace (a profiler started mid-step): the first step is that.
  if (!pending.empty() && !steps_.empty() && pending.front().host_start < steps_.front().start) {
    out.first_step = steps_.front().step - 1;
  }
  for (Pending& p : pending) {
    std::int64_t chunk = p.action.chunk;
    if (chunk < 0 && p.action.stage >= 0) {
      chunk = std::lower_bound(stages.begin(), stages.end(), p.action.stage) - stages.begin();
    }
    if (chunk < 0) chunk = 0;
    const StepSpan* step = step_of(p.host_start);
    if (!out.first_step && step != nullptr) out.first_step = step->step;
    if (count_mb) {
      if (step == nullptr) {
        ++outside;
        continue;
      }
      p.action.micro_batch = counters[{step, p.action.type, chunk}]++;
    }
    const bool compute = p.action.type == "forward" || p.action.type.starts_with("backward");
    std::string type =
        chunked && compute ? fmt::format("{}{}", p.action.type, chunk) : p.action.type;
    if (p.overlap != 0 && compute) type += p.joined ? kJoinedMark : kOverlapMark;
    Job& job = out.device.jobs.emplace_back();
    job.start_ns = base_ns + p.start;
    job.end_ns = base_ns + p.end;
    job.micro_batch = std::max<std::int64_t>(p.action.micro_batch, 0);
    job.job_id = static_cast<std::int64_t>(out.device.jobs.size() - 1);
    job.type = out.types.intern(type);
    job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.ordinal, UINT32_MAX));
  }
  if (outside > 0) {
    out.stats.malformed += outside;
    out.note(0, fmt::format("{} jobs lie outside every {}, which number the micro-batches of a "
                            "pattern without 'mb'; skipped",
                            outside, out.step_span));
  }
  out.stats.matched += out.device.jobs.size();
}

/// The files' host-timed notes made one warning for the run, on the first
/// result: host-timed jobs put the host's launch times in place of the
/// GPU's, so the busy time and bubbles they give are not the GPU's, however
/// exact the arithmetic. Only inputs still analysed (has_device) count.
void merge_host_timed_notes(std::vector<FileResult>& results, std::string_view inputs) {
  std::uint64_t host_timed = 0, jobs = 0, traces = 0;
  std::string example;
  std::size_t analysed = 0;
  for (FileResult& r : results) {
    if (r.has_device) {
      ++analysed;
      jobs += r.stats.matched;
    }
    for (auto it = r.notes.begin(); it != r.notes.end();) {
      if (it->code != WarningCode::host_timed_jobs) {
        ++it;
        continue;
      }
      if (r.has_device) {
        host_timed += it->count;
        ++traces;
        if (example.empty()) example = it->message;
      }
      it = r.notes.erase(it);
    }
  }
  if (host_timed > 0) {
    results.front().notes.push_back(
        {WarningCode::host_timed_jobs,
         fmt::format("{} of {} jobs, in {} of {} {} (first: {}), are host-timed: no GPU span "
                     "or kernel was found for them, so their intervals are the CPU's launch "
                     "spans and their busy and idle time is the host's view, not the GPU's "
                     "(profile with CUDA activities on, or label GPU ranges)",
                     host_timed, jobs, traces, analysed, inputs, example),
         -1, -1, host_timed});
  }
}

}  // namespace pipescope
