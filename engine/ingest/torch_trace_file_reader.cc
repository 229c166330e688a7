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
          })),
      jobs_(pattern_) {}

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
  AnnotationJobs::Output out{
      out_.device,
      out_.types,
      out_.stats,
      out_.first_step,
      out_.notes,
      input_.path,
      "ProfilerStep#N span",
      "trace",
      [this](std::uint64_t offset, std::string message) { note(offset, std::move(message)); },
      [this](std::uint64_t offset, std::string message) { malformed(offset, std::move(message)); }};
  std::function<void(const AnnotationJobs::Timed&)> on_timed;
  if (cut_offset_) on_timed = [this](const AnnotationJobs::Timed& timed) { note_cut(timed); };
  jobs_.assemble(base_ns_, out, on_timed, lowest_stage_);
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
        jobs_.add_step({e.start, e.end, *e.step});
        kernels_.on_step_span(e.start, e.end, *e.step);
        on_span(e.start, true);
        return;
      }
      AnnotationJobs::Range range{std::move(e.name), e.start,  e.end,   e.external_id,
                                  e.ordinal,         e.offset, e.thread};
      if (e.kind == EventClass::cpu_annotation) {
        jobs_.add_range(std::move(range));
        on_span(e.start, false);
      } else {
        jobs_.add_gpu_range(std::move(range));
      }
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

/// Places the matches held in the spans known now: each activity in the
/// job's CPU span and the step span that hold its launch.
void TorchTraceFileReader::place_pairs() {
  if (join_.pairs() == 0 && join_.comm_launches().empty()) return;
  jobs_.place(join_.both());
  jobs_.place(join_.job_view_only());
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
  jobs_.forget_activities();
  join_ = LaunchJoin();
  kernels_.reset();
  for (const auto& s : jobs_.steps()) kernels_.on_step_span(s.start, s.end, s.step);
  // The top-level values were read in the first pass.
  tokenizer_ = std::make_unique<TraceEventTokenizer>(
      std::vector<std::string>{}, [this](std::string_view event, std::uint64_t offset) {
        filling_->add(event, offset, tokenizer_->events());
      });
}

/// A trace cut inside its events: where its record ends in time, and one
/// warning saying what was lost. Kineto writes the CPU events first, then
/// the runtime calls and GPU activities in time order, then the GPU
/// annotations and last `baseTimeNanoseconds`: a cut loses the GPU's view of
/// the latest jobs first. The record ends at the latest GPU activity read,
/// or earlier at the first job that kept no GPU time (its host start: a
/// later step that begins after it cannot count as begun), and at the first
/// job when no GPU activity survived at all.
void TorchTraceFileReader::note_cut(const AnnotationJobs::Timed& timed) {
  const auto& pending = timed.pending;
  const std::uint64_t host_timed = timed.host_timed;
  std::int64_t first_job = std::numeric_limits<std::int64_t>::max();
  for (const auto& p : pending) first_job = std::min(first_job, p.start);
  if (pending.empty()) first_job = 0;
  const bool gpu_read = gpu_latest_start_ != std::numeric_limits<std::int64_t>::min();
  std::int64_t cut = gpu_read ? gpu_latest_start_ : first_job;
  cut = std::min(cut, timed.first_host_timed);
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

}  // namespace pipescope
