#include "ingest/torch_trace_file_reader.h"

#include <fmt/core.h>
#include <simdjson.h>
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "ingest/torch_trace_reader.h"
#include "ingest/trace_event_tokenizer.h"
#include "model/errors.h"
#include "model/job.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

/// How a `PP:` label of an overlapped F+B action ends.
constexpr std::string_view kOverlapActionSuffix = ")OVERLAP_F_B";

}  // namespace

TorchTraceFileReader::TorchTraceFileReader(const InputFile& input, const ReadOptions& read,
                                           const TorchTraceOptions& options,
                                           std::optional<std::int64_t>* lowest_stage)
    : input_(input),
      read_(read),
      options_(options),
      lowest_stage_(lowest_stage),
      out_(empty_result_for(input)),
      pattern_(options.job_pattern.get()),
      tokenizer_(std::make_unique<TraceEventTokenizer>(
          std::vector<std::string>{"baseTimeNanoseconds"},
          [this](std::string_view event, std::uint64_t offset) {
            filling_->add(event, offset, tokenizer_->events());
          },
          [this](std::string_view, std::string_view value) {
            filling_->values.push_back({filling_->events.size(), std::string(value)});
          })) {}

TorchTraceFileReader::~TorchTraceFileReader() = default;

bool TorchTraceFileReader::end_pass(const PassEnd& end) {
  if (end.pass > 0) {  // the second pass: its matches placed, every span known
    place_pairs();
    second_pass_ = false;
    return false;
  }
  first_pass_end(end);
  place_pairs();
  if (!read_again_ || end.unreadable) return false;
  start_second_pass();
  return true;
}

/// The first pass's end: the file's statistics, and what stopped it.
void TorchTraceFileReader::first_pass_end(const PassEnd& end) {
  TraceEventTokenizer& tokenizer = *tokenizer_;
  if (end.unreadable) {
    out_.stats.unreadable = true;
    out_.stats.error = end.error;
    note(0, end.error);
  } else if (!end.error.empty()) {
    out_.stats.error = end.error;
    note(0, fmt::format("{}; every complete event before it was read", end.error));
  } else {
    tokenizer.finish();
    if (!tokenizer.error().empty()) {
      out_.stats.error =
          fmt::format("byte offset {}: {}", tokenizer.error_offset(), tokenizer.error());
      note(0, out_.stats.error);
    }
  }
  out_.stats.bytes = tokenizer.bytes();
  out_.stats.lines = tokenizer.events();
  out_.stats.oversized = tokenizer.oversized();
  // Ended inside the events (cut short, or compressed data that broke off):
  // the GPU activities, which Kineto writes after the CPU events, go first.
  if (!end.unreadable && !tokenizer.complete() && tokenizer.in_events()) {
    cut_offset_ = tokenizer.bytes();
  }
}

FileResult TorchTraceFileReader::result() {
  if (kernels_.any()) {
    RankKernels kernels = kernels_.finish(base_ns_, join_);
    kernels.path = input_.path;
    kernels.device = input_.device;
    kernels.machine = input_.machine;
    const TraceDistributedInfo info = torch_trace_distributed_info(input_.path);
    kernels.global_rank = info.rank.value_or(-1);
    kernels.world_size = info.world_size.value_or(0);
    if (cut_offset_ && gpu_latest_start_ != std::numeric_limits<std::int64_t>::min()) {
      kernels.cut_ns = base_ns_ + gpu_latest_start_;
    }
    out_.kernels.push_back(std::move(kernels));
  }
  require_steps_for_pattern();
  std::vector<Pending> pending = timed_actions();
  split_overlaps(pending);
  const std::vector<std::int64_t> stages = rank_stages(pending);
  emit_jobs(pending, stages);
  record_steps();
  if (!out_.device.jobs.empty()) {
    out_.stats.time_base = base_given_ ? TimeBase::given : TimeBase::missing;
  }
  return std::move(out_);
}

void TorchTraceFileReader::note(std::uint64_t offset, std::string message) {
  if (out_.diagnostics.size() >= read_.diagnostics_per_file) return;
  out_.diagnostics.push_back(
      {input_.path, 0,
       offset == 0 ? std::move(message) : fmt::format("byte offset {}: {}", offset, message)});
}

void TorchTraceFileReader::malformed(std::uint64_t offset, std::string message) {
  if (second_pass_) return;  // counted in the first
  ++out_.stats.malformed;
  note(offset, std::move(message));
}

void TorchTraceFileReader::on_base_time(std::string_view value) {
  std::int64_t base = 0;
  // Up to year 2096: a base and a time after it never overflow.
  if (parse_json_int(trim_json_token(value), base) && base >= 0 &&
      base <= 4'000'000'000'000'000'000) {
    base_ns_ = base;
    base_given_ = true;
  } else {
    note(0, fmt::format("baseTimeNanoseconds '{}' is not an integer in 0..4e18; times "
                        "are taken as absolute microseconds",
                        value.substr(0, 40)));
  }
}

bool TorchTraceFileReader::tokenize(ReadChunk& chunk) {
  auto& batch = static_cast<EventBatch&>(*chunk.state);
  batch.bytes = chunk.data();
  batch.size = chunk.size;
  filling_ = &batch;
  tokenizer_->feed(chunk.data(), chunk.size);
  filling_ = nullptr;
  return tokenizer_->error().empty();
}

/// The chunk's events read side by side with other chunks': launches and
/// plain kernels by one pass over their bytes, the rest by simdjson.
void TorchTraceFileReader::parse(ReadChunk& chunk) {
  auto& batch = static_cast<EventBatch&>(*chunk.state);
  const EventFilter filter{second_pass_, pattern_};
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    const std::string_view event = batch.view(i);
    PlainRecord record;
    switch (read_plain_event(event, filter, record)) {
      case PlainRead::dropped:
        continue;
      case PlainRead::plain:
        batch.records.push_back(record);
        continue;
      case PlainRead::other:
        break;
    }
    auto parsed = parse_event(event, batch.events[i].offset, batch.events[i].ordinal,
                              parsers_.local(), filter);
    if (!parsed) continue;
    parsed->index = i;
    batch.records.emplace_back();  // kind none: this one
    batch.parsed.push_back(std::move(*parsed));
  }
}

/// Applies one batch's events (and the top-level values found among them)
/// in file order, then places the matches found, or holds them (step 2 of
/// the header).
void TorchTraceFileReader::apply(ReadChunk& chunk) {
  auto& batch = static_cast<EventBatch&>(*chunk.state);
  std::size_t value = 0, parsed = 0;
  const std::vector<PlainRecord>& records = batch.records;
  for (std::size_t i = 0; i < records.size(); ++i) {
    // The join's table is larger than the caches when a buffer is late:
    // its entries are asked for a few events ahead.
    constexpr std::size_t kAhead = 8;
    if (i + kAhead < records.size()) join_.prefetch(records[i + kAhead].correlation);
    const PlainRecord& r = records[i];
    if (r.kind != EventClass::none) {
      apply(r);
      continue;
    }
    // The values matter only to the order of the diagnostics, which come
    // from the parsed events alone.
    ParsedEvent& e = batch.parsed[parsed++];
    for (; value < batch.values.size() && batch.values[value].before <= e.index; ++value) {
      on_base_time(batch.values[value].text);
    }
    apply(e);
  }
  for (; value < batch.values.size(); ++value) on_base_time(batch.values[value].text);
  if (second_pass_ || (!late_span_ && !read_again_)) {
    place_pairs();
  } else if (!read_again_ && join_.pairs() * sizeof(LaunchPair) > options_.trace_held_bytes) {
    read_again_ = true;  // too many to hold: the kernels are read again
    join_ = LaunchJoin();
  }
}

void TorchTraceFileReader::apply(const PlainRecord& r) {
  if (r.kind == EventClass::kernel) {
    gpu_latest_start_ = std::max(gpu_latest_start_, r.start);
    if (read_again_ && !second_pass_) return;
    kernels_.on_compute(r.start, r.end, r.gpu, r.correlation >= 0);
    if (r.correlation >= 0) join_.on_activity(r.correlation, r.start, r.end, -1);
  } else {
    if (read_again_ && !second_pass_) return;
    join_.on_launch(r.correlation, r.start, r.thread, r.graph);
  }
}

void TorchTraceFileReader::apply(ParsedEvent& e) {
  if (!e.malformed.empty()) {
    malformed(e.offset, std::move(e.malformed));
    return;
  }
  switch (e.kind) {
    case EventClass::cpu_annotation:
    case EventClass::gpu_annotation: {
      if (second_pass_) return;  // read in the first
      if (e.step) {
        steps_.push_back({e.start, e.end, *e.step});
        kernels_.on_step_span(e.start, e.end, *e.step);
        on_span(e.start, true);
        return;
      }
      auto& list = e.kind == EventClass::cpu_annotation ? cpu_ : gpu_;
      Annotation& a = list.emplace_back();
      a.name = std::move(e.name);
      a.start = e.start;
      a.end = e.end;
      a.external_id = e.external_id;
      a.ordinal = e.ordinal;
      a.offset = e.offset;
      a.thread = e.thread;
      a.overlap = !pattern_ && e.kind == EventClass::cpu_annotation &&
                  a.name.ends_with(kOverlapActionSuffix);
      if (e.kind == EventClass::cpu_annotation) on_span(e.start, false);
      return;
    }
    case EventClass::kernel: {
      gpu_latest_start_ = std::max(gpu_latest_start_, e.start);
      if (read_again_ && !second_pass_) return;
      const long comm = kernels_.on_activity(e);
      if (e.correlation >= 0) join_.on_activity(e.correlation, e.start, e.end, comm);
      return;
    }
    case EventClass::launch:
      if (read_again_ && !second_pass_) return;
      join_.on_launch(e.correlation, e.start, e.thread, e.graph);
      return;
    case EventClass::comm_call:
      if (read_again_ && !second_pass_) return;
      kernels_.on_comm_call(e);
      return;
    case EventClass::none:
      return;
  }
}

// Kernels are joined to their launches as they come (launch_join.h), and
// the matches placed in the spans holding the launches once those spans are
// known. Kineto writes the CPU events (the spans among them) first, then the
// runtime calls and kernels: a span after the first launch makes the
// matches wait for the end of the file.

/// A job's CPU span or a step span read (`start`: its host start): a span
/// after the first launch holds the matches from then on; one that would
/// have held a match already placed (it starts at or before that match's
/// launch, or, a step span, before every step span placed with) makes the
/// kernels be read again.
void TorchTraceFileReader::on_span(std::int64_t start, bool step) {
  if (join_.any_launch()) late_span_ = true;
  if (placed_ && !read_again_ && (start <= latest_placed_ || (step && start < earliest_step_))) {
    read_again_ = true;
    join_ = LaunchJoin();
  }
  if (step) earliest_step_ = std::min(earliest_step_, start);
}

/// The CPU span holding host time `ts`, or npos: the latest-starting span
/// that holds it, looking back a few (spans may nest or overlap: an OVERLAP
/// pair, a pattern's ranges). `hint`: where the last search ended.
std::size_t TorchTraceFileReader::span_at(std::int64_t ts, std::size_t& hint) const {
  // The first span starting after ts: at the hint when the times run on.
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
    if (cpu_[span].end >= ts) return span;
  }
  return std::string::npos;
}

void TorchTraceFileReader::add_kernel(std::size_t span, std::int64_t start, std::int64_t end) {
  cpu_[span].kernel_start = std::min(cpu_[span].kernel_start, start);
  cpu_[span].kernel_end = std::max(cpu_[span].kernel_end, end);
}

/// Places the matches held in the spans known now: each activity in the
/// job's CPU span and the step span that hold its launch.
void TorchTraceFileReader::place_pairs() {
  if (join_.pairs() == 0 && join_.comm_launches().empty()) return;
  if (!cpu_.empty()) {
    if (span_index_.size() != cpu_.size()) {
      span_index_.clear();
      for (std::size_t i = 0; i < cpu_.size(); ++i) span_index_.push_back({cpu_[i].start, i});
      std::sort(span_index_.begin(), span_index_.end());
    }
    std::size_t hint = 0;
    for (const PairList* pairs : {&join_.both(), &join_.job_view_only()}) {
      pairs->for_each([&](const LaunchPair& p) {
        const std::size_t span = span_at(p.launch, hint);
        if (span == std::string::npos) return;
        add_kernel(span, p.start, p.end);
        // An OVERLAP_F_B range keeps its kernels with their launches.
        if (cpu_[span].overlap) cpu_[span].launched.push_back({p.launch, p.thread, p.start, p.end});
      });
    }
  }
  kernels_.place(join_.both());
  kernels_.place(join_.kernel_view_only());
  kernels_.place(join_.comm_launches());
  // (A communication kernel's pair is among the kernel view's.)
  latest_placed_ = std::max(latest_placed_, join_.latest_paired_launch());
  placed_ = true;
  join_.clear_pairs();
}

/// Reads the file again for its kernels, launches and communication calls,
/// every span known (the first pass stopped joining them: on_span, apply).
/// Makes the next pass read the kernels again, every span known.
void TorchTraceFileReader::start_second_pass() {
  second_pass_ = true;
  for (Annotation& a : cpu_) {
    a.kernel_start = std::numeric_limits<std::int64_t>::max();
    a.kernel_end = std::numeric_limits<std::int64_t>::min();
    a.launched.clear();
  }
  join_ = LaunchJoin();
  kernels_.reset();
  for (const StepSpan& s : steps_) kernels_.on_step_span(s.start, s.end, s.step);
  // The top-level values were read in the first pass.
  tokenizer_ = std::make_unique<TraceEventTokenizer>(
      std::vector<std::string>{}, [this](std::string_view event, std::uint64_t offset) {
        filling_->add(event, offset, tokenizer_->events());
      });
}

/// The action(s) a CPU annotation's name stands for; empty when none.
std::vector<TraceAction> TorchTraceFileReader::actions_of(const Annotation& a) {
  if (pattern_) {
    if (auto action = pattern_->match(a.name)) return {*action};
    return {};
  }
  auto actions = parse_pipeline_action(std::string_view(a.name).substr(kPipelinePrefix.size()));
  if (actions.empty()) {
    malformed(a.offset, fmt::format("'{}' is no pipeline action; skipped", a.name.substr(0, 80)));
  }
  return actions;
}

// ---------------------------------------------------------------- assembly

void TorchTraceFileReader::require_steps_for_pattern() {
  std::sort(steps_.begin(), steps_.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  if (pattern_ && !pattern_->has_micro_batch() && steps_.empty() && !cpu_.empty()) {
    throw InputError(fmt::format(
        "{}: the job pattern has no 'mb' group, so steps must come from ProfilerStep#N spans, "
        "and this trace has none",
        input_.path));
  }
}

/// Each job's interval, in order of preference: the GPU span (matched to
/// the CPU span by External id, else by name and order) when it covers the
/// kernels launched inside the CPU span; else the span of those kernels;
/// else the CPU span, and the jobs are counted host-timed (one note).
std::vector<TorchTraceFileReader::Pending> TorchTraceFileReader::timed_actions() {
  // GPU spans by (name, External id), and by name in order without one.
  std::map<std::pair<std::string_view, std::int64_t>, const Annotation*> gpu_by_id;
  std::map<std::string_view, std::vector<const Annotation*>> gpu_by_name;
  for (const Annotation& g : gpu_) {
    if (g.external_id >= 0)
      gpu_by_id.emplace(std::pair{std::string_view(g.name), g.external_id}, &g);
    gpu_by_name[g.name].push_back(&g);
  }
  std::map<std::string_view, std::size_t> next_of_name;
  auto gpu_span_of = [&](const Annotation& cpu) -> const Annotation* {
    const Annotation* gpu = nullptr;
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

  std::vector<Pending> pending;
  std::uint64_t host_timed = 0;
  std::int64_t first_host_timed = std::numeric_limits<std::int64_t>::max();
  for (const Annotation& cpu : cpu_) {
    std::vector<TraceAction> actions = actions_of(cpu);
    if (actions.empty()) continue;
    const Annotation* gpu = gpu_span_of(cpu);
    // Kernels launched from inside the CPU span.
    const std::int64_t kernel_start = cpu.kernel_start, kernel_end = cpu.kernel_end;
    const bool kernels = kernel_start <= kernel_end;
    std::int64_t start = cpu.start, end = cpu.end;
    if (gpu != nullptr && (!kernels || (gpu->start <= kernel_start && gpu->end >= kernel_end))) {
      start = gpu->start;
      end = gpu->end;
    } else if (kernels) {
      start = kernel_start;
      end = kernel_end;
    } else {
      host_timed += actions.size();
      first_host_timed = std::min(first_host_timed, cpu.start);
    }
    const bool pair = actions.size() == 2;
    for (std::size_t k = 0; k < actions.size(); ++k) {
      pending.push_back({std::move(actions[k]), start, end, cpu.start, cpu.ordinal,
                         pair ? static_cast<int>(k) + 1 : 0,
                         static_cast<std::size_t>(&cpu - cpu_.data())});
    }
  }
  if (cut_offset_) {
    note_cut(pending, host_timed, first_host_timed);
  } else if (host_timed > 0) {
    note(0, fmt::format("{} of {} jobs are host-timed: no GPU span or kernel was found for "
                        "them, so their times are the CPU's launch spans, not the GPU's",
                        host_timed, pending.size()));
    // Counted per file here; read_torch_traces makes one warning of them.
    out_.notes.push_back({WarningCode::host_timed_jobs, input_.path, -1, -1, host_timed});
  }
  return pending;
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
void TorchTraceFileReader::split_overlaps(std::vector<Pending>& pending) {
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
    if (range.launched.empty() || range.thread < 0) {
      join(no_kernel);
      continue;
    }
    std::int64_t boundary = std::numeric_limits<std::int64_t>::max();
    for (const LaunchedKernel& k : range.launched) {
      if (k.thread != range.thread) boundary = std::min(boundary, k.launch);
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
  note(0, how);
}

/// A trace cut inside its events: where its record ends in time, and one
/// warning saying what was lost. Kineto writes the CPU events first, then
/// the runtime calls and GPU activities in time order, then the GPU
/// annotations and last `baseTimeNanoseconds`: a cut loses the GPU's view of
/// the latest jobs first. The record ends at the latest GPU activity read,
/// or earlier at the first job that kept no GPU time (its host start: a
/// later step that begins after it cannot count as begun), and at the first
/// job when no GPU activity survived at all.
void TorchTraceFileReader::note_cut(const std::vector<Pending>& pending, std::uint64_t host_timed,
                                    std::int64_t first_host_timed) {
  std::int64_t first_job = std::numeric_limits<std::int64_t>::max();
  for (const Pending& p : pending) first_job = std::min(first_job, p.start);
  if (pending.empty()) first_job = 0;
  const bool gpu_read = gpu_latest_start_ != std::numeric_limits<std::int64_t>::min();
  std::int64_t cut = gpu_read ? gpu_latest_start_ : first_job;
  cut = std::min(cut, first_host_timed);
  if (!pending.empty()) out_.device.cut_ns = base_ns_ + cut;
  std::string lost =
      gpu_read ? fmt::format(
                     "what the GPU did after {:.6f} s into the trace (its kernels and "
                     "annotations: Kineto writes them after the CPU events, in time order)",
                     static_cast<double>(cut - first_job) / 1e9)
               : std::string("every GPU activity and the CPU events after the cut");
  if (!base_given_) lost += ", and baseTimeNanoseconds (written after the events)";
  std::string message = fmt::format(
      "{}: the trace ends at byte {}{} inside its events (a crash, or a copy cut short); lost: {}",
      input_.path, *cut_offset_,
      compression_of(input_.path) == Compression::none ? "" : " of the decompressed data", lost);
  if (host_timed > 0) {
    message += fmt::format(
        "; {} of {} jobs are host-timed because of the cut (not the profiler's set-up): their "
        "intervals are the CPU's launch spans",
        host_timed, pending.size());
  }
  if (!pending.empty()) {
    message += "; the steps from the cut on are incomplete for the run, left out of the totals";
  }
  note(0, message);
  out_.notes.push_back({WarningCode::trace_cut, message, -1, -1, *cut_offset_});
}

/// The stages this rank ran, in order (a stage's place among them is its
/// chunk); gives the lowest to `lowest_stage`, when asked.
std::vector<std::int64_t> TorchTraceFileReader::rank_stages(const std::vector<Pending>& pending) {
  std::set<std::int64_t> stages;
  for (const Pending& p : pending) {
    if (p.action.stage >= 0 && p.action.chunk < 0) stages.insert(p.action.stage);
  }
  std::vector<std::int64_t> list(stages.begin(), stages.end());
  if (!list.empty() && lowest_stage_ != nullptr) *lowest_stage_ = list.front();
  return list;
}

/// Jobs in host order: each one's chunk (given, else its stage's place),
/// its micro-batch (given, else numbered per step span, type and chunk for a
/// pattern without `mb`), and its type (compute types named with the chunk
/// when the rank holds several).
void TorchTraceFileReader::emit_jobs(std::vector<Pending>& pending,
                                     const std::vector<std::int64_t>& stages) {
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
    out_.first_step = steps_.front().step - 1;
  }
  for (Pending& p : pending) {
    std::int64_t chunk = p.action.chunk;
    if (chunk < 0 && p.action.stage >= 0) {
      chunk = std::lower_bound(stages.begin(), stages.end(), p.action.stage) - stages.begin();
    }
    if (chunk < 0) chunk = 0;
    const StepSpan* step = step_of(p.host_start);
    if (!out_.first_step && step != nullptr) out_.first_step = step->step;
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
    Job& job = out_.device.jobs.emplace_back();
    job.start_ns = base_ns_ + p.start;
    job.end_ns = base_ns_ + p.end;
    job.micro_batch = std::max<std::int64_t>(p.action.micro_batch, 0);
    job.job_id = static_cast<std::int64_t>(out_.device.jobs.size() - 1);
    job.type = out_.types.intern(type);
    job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.ordinal, UINT32_MAX));
  }
  if (outside > 0) {
    out_.stats.malformed += outside;
    note(0, fmt::format("{} jobs lie outside every ProfilerStep#N span, which number the "
                        "micro-batches of a pattern without 'mb'; skipped",
                        outside));
  }
  out_.stats.matched = out_.device.jobs.size();
}

/// The first step: the one holding the first job, else the first span.
void TorchTraceFileReader::record_steps() {
  if (!out_.first_step && !steps_.empty()) out_.first_step = steps_.front().step;
  if (out_.first_step) out_.device.step_starts.push_back({0, *out_.first_step});
}

}  // namespace pipescope
