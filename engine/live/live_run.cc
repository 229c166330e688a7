#include "live/live_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "analysis/launch_segments.h"
#include "analysis/metrics.h"
#include "numeric/statistics.h"
#include "scan/chunk_scanner.h"
#include "scan/event_clock.h"
#include "scan/event_matcher.h"
#include "scan/line_stamp.h"
#include "scan/prefilter.h"

namespace pipescope {

struct LiveRun::Input {
  InputFile place;
  /// The jobs of the open steps and of the context step, in start order
  /// after take_completed() sorted them.
  JobVector jobs;
  std::vector<StepStartLine> step_starts;
  /// Lines read, counted on across a rotation so that lines stay ordered.
  std::uint64_t lines = 0;
  bool had_job = false;
  /// Jobs read from its lines: the next one's id with a --job-line regex
  /// without an `id` capture (its index among the file's jobs, as analyze
  /// numbers them).
  std::int64_t jobs_read = 0;
  /// First job logged after steps were reported: its jobs of those steps
  /// are left out, the rest line up with the other devices' open steps.
  bool joined_late = false;
  /// A job starting before this belongs to a step already reported.
  std::int64_t boundary_ns = std::numeric_limits<std::int64_t>::min();
  /// Said once: its log lags (lines of reported steps arrived late).
  bool lag_noted = false;
  /// Added to a reader's line numbers (records read again after a restart).
  std::uint64_t line_base = 0;
  /// The device index its reader placed it at (dygraph records: the stage).
  std::optional<int> device;
  /// Not analysed (another pipeline's records): never waited for.
  bool left_out = false;
  /// Log events: the job lines that place its stamps on the epoch, its
  /// last dated line, and events read before its first stamped job line.
  EventClock clock;
  std::optional<LineStamp> last_stamp;
  struct Unplaced {
    std::optional<LineStamp> stamp;
    std::optional<StampAnchor> anchor;
    std::uint32_t kind = 0;
    bool approximate = false;
  };
  std::vector<Unplaced> unplaced;
};

struct LiveRun::Scanner {
  Scanner(const EventMatcher* matcher, const JobLineRegex* job_line) {
    if (matcher != nullptr) events.emplace(*matcher);
    if (job_line != nullptr) job_line_scratch.emplace(*job_line);
  }
  Prefilter prefilter;
  Prefilter::Scratch scratch{prefilter};
  std::optional<EventMatcher::Scratch> events;
  std::optional<JobLineRegex::Scratch> job_line_scratch;
  ChunkScan scan;
};

LiveRun::LiveRun(LiveOptions options)
    : options_(std::move(options)),
      scanner_(std::make_unique<Scanner>(options_.events, options_.job_line)) {}

LiveRun::~LiveRun() = default;

void LiveRun::set_inputs(const std::vector<InputFile>& inputs) {
  for (const InputFile& input : inputs) {
    Input& kept = inputs_[input.path];
    kept.place = input;
    if (kept.device) kept.place.device = kept.place.rank = *kept.device;
  }
}

void LiveRun::note_restart(const std::string& path) {
  notes_.push_back(fmt::format(
      "{} was truncated or replaced (log rotation?): reading its new content from the start; "
      "the jobs already read stay the run's",
      path));
}

void LiveRun::add_lines(const std::string& path, std::string_view lines, bool restarted) {
  const auto found = inputs_.find(path);
  if (found == inputs_.end()) return;
  Input& input = found->second;
  if (restarted) note_restart(path);
  if (lines.empty()) return;
  ChunkScanOptions scan_options;
  scan_options.max_problems = 0;
  scan_options.max_line_bytes = options_.max_line_bytes;
  if (scanner_->events) {
    scan_options.events = options_.events;
    scan_options.event_scratch = &*scanner_->events;
  }
  if (scanner_->job_line_scratch) {
    scan_options.job_line = options_.job_line;
    scan_options.job_line_scratch = &*scanner_->job_line_scratch;
  }
  ChunkScan& scan = scanner_->scan;
  scan_chunk(lines, scanner_->prefilter, scanner_->scratch, scan_options, scan);
  const std::uint64_t base = input.lines;
  input.lines += scan.lines;
  take_events(input, base);
  std::vector<StepStartLine> starts;
  for (const StepStartSeen& seen : scan.step_starts)
    starts.push_back({base + seen.line + 1, seen.step});
  std::vector<TypeId> type_map;
  for (const std::string& name : scan.types) type_map.push_back(types_.intern(name));
  std::vector<Job> jobs;
  jobs.reserve(scan.jobs.size());
  const bool number_jobs = options_.job_line != nullptr && !options_.job_line->has_id();
  for (Job job : scan.jobs) {
    if (number_jobs) job.job_id = input.jobs_read;
    ++input.jobs_read;
    job.type = type_map[job.type];
    job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(base + job.line + 1, UINT32_MAX));
    jobs.push_back(job);
  }
  accept(path, input, jobs, starts);
}

void LiveRun::take_events(Input& input, std::uint64_t /*base*/) {
  const ChunkScan& scan = scanner_->scan;
  for (const EventSeen& seen : scan.events) {
    std::optional<LineStamp> stamp = seen.stamp ? seen.stamp : input.last_stamp;
    input.unplaced.push_back({stamp, input.clock.anchor_of(seen), seen.pattern, seen.approximate});
  }
  input.clock.advance(scan);
  if (scan.last_stamp) input.last_stamp = scan.last_stamp;
  // As analyze places them (scan/event_clock.h); a local stamp before the
  // file's first stamped job line is held until that line is read.
  std::size_t kept = 0;
  for (const Input::Unplaced& e : input.unplaced) {
    if (const auto t = input.clock.place(e.stamp, e.anchor)) {
      held_events_.push_back({*t, input.place.device, e.kind, e.approximate});
    } else if (!input.clock.first()) {
      input.unplaced[kept++] = e;
    }  // else no time: no dated line before it, or no zone explains its job line
  }
  input.unplaced.resize(kept);
}

void LiveRun::attach_events(LiveStep& step) {
  if (options_.events == nullptr) return;
  const std::vector<EventKind>& kinds = options_.events->kinds();
  std::vector<HeldEvent> mine, rest;
  for (const HeldEvent& e : held_events_) (e.time_ns < step.end_ns ? mine : rest).push_back(e);
  std::stable_sort(mine.begin(), mine.end(), [](const HeldEvent& a, const HeldEvent& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.device < b.device;
  });
  for (const HeldEvent& e : mine) {
    const EventKind& kind = kinds[e.kind];
    step.events.push_back({e.device, kind.id, kind.category, kind.severity,
                           e.time_ns - step.start_ns, e.approximate});
  }
  held_events_ = std::move(rest);
}

void LiveRun::add_jobs(const std::string& path, const FileResult& batch, bool restarted) {
  const auto found = inputs_.find(path);
  if (found == inputs_.end()) return;
  Input& input = found->second;
  if (restarted) {
    note_restart(path);
    // The reader starts its lines again: keep them after the old ones.
    input.line_base = input.lines;
  }
  std::vector<TypeId> type_map;
  for (const std::string& name : batch.types.names()) type_map.push_back(types_.intern(name));
  std::vector<Job> jobs;
  jobs.reserve(batch.device.jobs.size());
  for (Job job : batch.device.jobs) {
    job.type = type_map[job.type];
    const std::uint64_t line = input.line_base + job.line;
    job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(line, UINT32_MAX));
    input.lines = std::max(input.lines, line);
    jobs.push_back(job);
  }
  std::vector<StepStartLine> starts;
  for (StepStartLine start : batch.device.step_starts) {
    start.line += input.line_base;
    starts.push_back(start);
  }
  accept(path, input, jobs, starts);
}

void LiveRun::place_input(const std::string& path, int device) {
  const auto found = inputs_.find(path);
  if (found == inputs_.end()) return;
  found->second.device = device;
  found->second.place.device = device;
  found->second.place.rank = device;
}

void LiveRun::leave_out(const std::string& path) {
  const auto found = inputs_.find(path);
  if (found != inputs_.end()) found->second.left_out = true;
}

void LiveRun::accept(const std::string& path, Input& input, const std::vector<Job>& jobs,
                     const std::vector<StepStartLine>& starts) {
  if (input.left_out) return;
  for (const StepStartLine& start : starts) input.step_starts.push_back(start);
  const bool first_jobs = !input.had_job && !jobs.empty();
  if (first_jobs && steps_reported_ > 0) input.joined_late = true;
  // No job kept: a rank whose file was empty, or whose log lags behind the
  // steps reported (they were reported without it, provisional). Its jobs
  // before the last reported step belong to those steps.
  const bool behind = steps_reported_ > 0 && input.jobs.empty();
  if (behind) input.boundary_ns = std::max(input.boundary_ns, context_start_ns_);
  std::size_t late = 0;
  std::size_t behind_jobs = 0;
  for (const Job& job : jobs) {
    if (job.start_ns < input.boundary_ns) {
      if (behind || input.joined_late) {
        ++behind_jobs;  // a step already reported without it
        continue;
      }
      ++late;
    }
    input.jobs.push_back(job);
  }
  jobs_seen_ += jobs.size();
  if (behind_jobs > 0 && input.had_job && !input.lag_noted) {
    input.lag_noted = true;
    notes_.push_back(fmt::format(
        "device {} ({}) lags behind the others: its job lines of steps already reported arrive "
        "late; those steps were reported provisional without it (the final summary counts it)",
        input.place.device, path));
  }
  if (late > 0) {
    notes_.push_back(fmt::format(
        "{}: {} job line{} arrived after {} step was reported; the live figures of that step "
        "differ from the final summary's",
        path, late, late == 1 ? "" : "s", late == 1 ? "its" : "their"));
  }
  if (first_jobs) {
    input.had_job = true;
    if (input.joined_late) {
      notes_.push_back(fmt::format(
          "device {} ({}) logged its first job after {} step{} had been reported: the live "
          "lines of those steps counted one device fewer than the final summary does",
          input.place.device, path, steps_reported_, steps_reported_ == 1 ? "" : "s"));
    }
  }
}

std::vector<std::string> LiveRun::take_notes() { return std::exchange(notes_, {}); }

std::size_t LiveRun::jobs_kept() const {
  std::size_t kept = 0;
  for (const auto& [path, input] : inputs_) kept += input.jobs.size();
  return kept;
}

bool LiveRun::waiting_for_input() const {
  for (const auto& [path, input] : inputs_) {
    if (!input.had_job && !input.left_out) return true;
  }
  return false;
}

/// A stage map that names devices (a list, tp=N) describes every input: it
/// cannot be applied while one has not logged a job yet.
bool LiveRun::map_waits() const {
  const StageSpec::Form form = options_.pipeline.stages.form;
  if (form != StageSpec::Form::tp && form != StageSpec::Form::list) return false;
  return !unwritten_devices().empty();
}

std::vector<int> LiveRun::unwritten_devices() const {
  std::set<int> devices;
  for (const auto& [path, input] : inputs_) {
    if (!input.left_out && (!input.had_job || input.jobs.empty()))
      devices.insert(input.place.device);
  }
  return {devices.begin(), devices.end()};
}

bool LiveRun::several_machines() const {
  std::set<int> machines;
  for (const auto& [path, input] : inputs_) {
    if (!input.left_out) machines.insert(input.place.machine);
  }
  return machines.size() > 1;
}

bool LiveRun::beyond_spread(double ratio) const {
  if (recent_.size() < std::max<std::size_t>(options_.spread_min_steps, 1)) return false;
  std::vector<double> values(recent_.begin(), recent_.end());
  const double middle = median(values);
  std::vector<double> deviations;
  for (const double v : values) deviations.push_back(std::abs(v - middle));
  const double spread = std::max(options_.spread_mads * median(deviations), options_.spread_floor);
  return std::abs(ratio - middle) > spread;
}

namespace {

/// A device where discovery placed `input`, without jobs.
Device placed_device(const InputFile& input) {
  Device device;
  device.index = input.device;
  device.machine = input.machine;
  device.machine_name = input.machine_name;
  device.rank = input.rank;
  device.path = input.path;
  return device;
}

/// The inherent and excess points and the stage most waited on of step k of
/// `window` (its devices placed as `places`), through the same metrics and pipeline analysis as a
/// whole run: on the jobs of step k and of its neighbours in the same segment (the step before
/// fixes where its window starts), with every step but k left out of the sums. Left unset when the
/// analysis finds no split.
void split_one_step(const Run& window, const std::vector<InputFile>& places, const Metrics& metrics,
                    std::size_t k, const PipelineOptions& options, LiveStep& step) {
  const StepWindow& w = metrics.steps[k];
  auto same_segment = [&](std::size_t i) { return metrics.steps[i].segment == w.segment; };
  const std::size_t low = k > 0 && same_segment(k - 1) ? k - 1 : k;
  const std::size_t high = k + 1 < metrics.steps.size() && same_segment(k + 1) ? k + 1 : k;
  Run mini;
  mini.types = window.types;
  for (std::size_t d = 0; d < window.devices.size(); ++d) {
    const Device& from = window.devices[d];
    Device device = placed_device(places[d]);
    for (std::size_t i = 0; i < from.jobs.size(); ++i) {
      const auto at = static_cast<std::size_t>(metrics.job_step[d][i]);
      if (at >= low && at <= high) device.jobs.push_back(from.jobs[i]);
    }
    mini.devices.push_back(std::move(device));
  }
  mini.finalize();
  Metrics alone = compute_metrics(mini);
  std::optional<std::size_t> target;
  for (std::size_t i = 0; i < alone.steps.size(); ++i) {
    const bool same = alone.steps[i].start_ns == w.start_ns && alone.steps[i].end_ns == w.end_ns;
    alone.steps[i].complete = same && !target;
    if (same && !target) target = i;
  }
  if (!target) return;
  try {
    const PipelineAnalysis analysis = analyze_pipeline(mini, alone, options);
    const BubbleSplit& split = analysis.split;
    const double scale =
        static_cast<double>(window.devices.size()) * static_cast<double>(w.window_ns());
    if (split.known && *target < split.inherent.size() && scale > 0) {
      std::int64_t inherent = 0;
      for (const std::int64_t ns : split.inherent[*target]) inherent += ns;
      step.inherent_points = 100.0 * static_cast<double>(inherent) / scale;
      step.excess_points = 100.0 * w.bubble_ratio - *step.inherent_points;
    }
    std::int64_t most = 0;
    for (std::size_t s = 0; s < split.receive_wait_ns.size(); ++s) {
      const std::int64_t waited =
          split.receive_wait_ns[s] + (s < split.send_wait_ns.size() ? split.send_wait_ns[s] : 0);
      if (waited > most) {
        most = waited;
        step.most_waited_stage = s;
      }
    }
  } catch (const std::exception&) {
    // No split: the line shows '-'.
  }
}

}  // namespace

/// The inputs' kept jobs as a run: the devices that have logged a job of
/// the open steps (D), in device order. One that has not (unwritten_devices)
/// is left out rather than counted idle for whole steps.
Run LiveRun::build_window() const {
  Run run;
  run.types = types_;
  std::vector<const Input*> devices;
  for (const auto& [path, input] : inputs_) {
    if (input.had_job && !input.left_out && !input.jobs.empty()) devices.push_back(&input);
  }
  std::sort(devices.begin(), devices.end(),
            [](const Input* a, const Input* b) { return a->place.device < b->place.device; });
  for (const Input* input : devices) {
    Device device = placed_device(input->place);
    device.jobs = input->jobs;
    device.step_starts = input->step_starts;
    run.devices.push_back(std::move(device));
  }
  run.finalize();
  return run;
}

std::vector<LiveStep> LiveRun::take_completed(bool at_end) {
  std::vector<LiveStep> out;
  for (auto& [path, input] : inputs_) {
    if (!std::is_sorted(input.jobs.begin(), input.jobs.end(), job_start_order)) {
      std::sort(input.jobs.begin(), input.jobs.end(), job_start_order);
    }
  }
  Run window = build_window();
  if (window.job_count() == 0) return out;
  SegmentOptions segment_options;
  if (context_) {
    segment_options.first_step = context_->second;
  } else if (options_.first_step) {
    segment_options.first_step = options_.first_step;
  }
  split_launch_segments(window, segment_options);
  const Metrics metrics = compute_metrics(window);
  std::vector<InputFile> places;
  for (const Device& device : window.devices) places.push_back(inputs_.at(device.path).place);
  const int base_segment = context_ ? context_->first : 0;
  const std::size_t first = context_ ? 1 : 0;
  const std::vector<int> unwritten = unwritten_devices();
  const bool provisional_now = !unwritten.empty() || several_machines();
  const bool map_waiting = map_waits();
  if (!at_end && waiting_for_input()) {
    // An input without a job yet is most often a rank whose first lines have
    // not landed: hold the steps a while rather than report them without it.
    std::size_t complete = 0;
    for (const StepWindow& step : metrics.steps) complete += step.complete;
    if (complete < first + options_.hold_steps) return out;
  }

  std::optional<std::size_t> last_reported;
  auto report = [&](std::size_t k) {
    const StepWindow& w = metrics.steps[k];
    LiveStep step;
    step.segment = base_segment + w.segment;
    segments_seen_ = std::max(segments_seen_, step.segment + 1);
    step.step = w.step;
    step.start_ns = w.start_ns;
    step.end_ns = w.end_ns;
    step.bubble_ratio = w.bubble_ratio;
    step.devices = window.devices.size();
    step.provisional = provisional_now;
    step.unwritten = unwritten;
    // Without every device the map names, no split: the line shows '-'.
    if (!map_waiting) split_one_step(window, places, metrics, k, options_.pipeline, step);
    // A step some device has not logged yet is no alert, and its figure (the
    // others' alone) stays out of the spread the later steps are judged by.
    if (unwritten.empty()) {
      step.beyond_spread = beyond_spread(step.bubble_ratio);
      recent_.push_back(step.bubble_ratio);
      while (recent_.size() > options_.spread_steps) recent_.pop_front();
    }
    out.push_back(std::move(step));
    last_reported = k;
  };

  bool stop = false;
  for (std::size_t s = 0; s < metrics.segments.size() && !stop; ++s) {
    const SegmentSteps& segment = metrics.segments[s];
    const bool last_segment = s + 1 == metrics.segments.size();
    for (std::size_t j = 0; j < segment.count; ++j) {
      const std::size_t k = segment.first + j;
      if (k < first) continue;
      const bool complete = metrics.steps[k].complete;
      if (!last_segment) {
        // An earlier launch is over: its steps are final, and the one a
        // crash cut short is left out, as analyze leaves it out.
        if (complete) report(k);
        continue;
      }
      if (!complete || (j + 1 == segment.count && !at_end)) {
        stop = true;
        break;
      }
      report(k);
    }
  }
  for (LiveStep& step : out) {
    step.label = segments_seen_ > 1 ? fmt::format("{}:{}", step.segment, step.step)
                                    : fmt::format("{}", step.step);
    attach_events(step);  // in step order: each takes what is left before its end
  }
  steps_reported_ += out.size();
  if (!last_reported) return out;

  // Keep the last step reported as the context of the next windows; drop
  // everything before it.
  const std::size_t r = *last_reported;
  context_ = {base_segment + metrics.steps[r].segment, metrics.steps[r].step};
  context_start_ns_ = metrics.steps[r].start_ns;
  for (std::size_t d = 0; d < window.devices.size(); ++d) {
    Input& input = inputs_.at(window.devices[d].path);
    const std::vector<std::int32_t>& job_step = metrics.job_step[d];
    std::size_t drop = 0;
    while (drop < job_step.size() && static_cast<std::size_t>(job_step[drop]) < r) ++drop;
    input.jobs.erase(input.jobs.begin(), input.jobs.begin() + static_cast<std::ptrdiff_t>(drop));
    std::size_t next = drop;
    while (next < job_step.size() && static_cast<std::size_t>(job_step[next]) <= r) ++next;
    if (next < job_step.size()) {
      input.boundary_ns = window.devices[d].jobs[next].start_ns;
    } else if (!input.jobs.empty()) {
      input.boundary_ns = input.jobs.back().start_ns;
    }
    if (!input.jobs.empty()) {
      const std::uint64_t first_line = input.jobs.front().line;
      std::erase_if(input.step_starts,
                    [first_line](const StepStartLine& s) { return s.line < first_line; });
    }
  }
  return out;
}

}  // namespace pipescope
