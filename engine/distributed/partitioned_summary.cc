#include "distributed/partitioned_summary.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>

#include "analysis/bubble_split.h"
#include "analysis/stage_map.h"
#include "analysis/step_events.h"
#include "distributed/pair_evidence.h"
#include "distributed/wire.h"
#include "export/figure_registry.h"
#include "export/summary_json.h"
#include "export/summary_step_rows.h"
#include "load/input_rules.h"

namespace pipescope::distributed {

namespace {

/// The rank that owns step k.
bool owns_step(const PartitionedAnalysis& a, std::size_t k) { return k >= a.first && k < a.last; }

/// What the whole-run figures and warnings read of the jobs (step 1 of the
/// header): the SummaryJobFacts, and each device's compute jobs in steps.
struct JobFacts {
  SummaryJobFacts summary;
  std::vector<std::uint64_t> compute_in_steps;
};

// One rank's share: its devices' counts, the registered figures' parts of
// its steps, the named jobs of its devices and the inherent shares of its
// steps' longest bubbles.
std::string facts_message(const LocalLoad& load, const PartitionedAnalysis& a, int rank) {
  const Run& run = load.run;
  const ReadFacts& read = a.read;
  ByteWriter w;
  std::uint64_t mine = 0;
  for (std::size_t d = 0; d < run.devices.size(); ++d) mine += read.mine(d, rank) ? 1 : 0;
  w.put(mine);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!read.mine(d, rank)) continue;
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::int64_t>(read.device_jobs[d]));
    w.put(read.compute_in_steps[d]);
  }
  w.str(encode_figure_parts(figure_parts({.run = a.part.run,
                                          .metrics = a.metrics,
                                          .job_step = a.part.job_step,
                                          .first = a.first,
                                          .last = a.last})));
  // Each longest bubble: its jobs from a part that holds them, its share
  // from the owner of its step.
  const auto named_job = [&](std::size_t d, std::int64_t index) {
    const Job* job = nullptr;
    if (d < a.part.job_index.size() && index >= 0) {
      const std::vector<std::uint32_t>& held = a.part.job_index[d];
      const auto it = std::lower_bound(held.begin(), held.end(), static_cast<std::uint64_t>(index),
                                       [](std::uint32_t i, std::uint64_t v) { return i < v; });
      if (it != held.end() && *it == static_cast<std::uint64_t>(index)) {
        job = &a.part.run.devices[d].jobs[static_cast<std::size_t>(it - held.begin())];
      }
    }
    w.put(static_cast<std::uint8_t>(job != nullptr));
    if (job) w.put(*job);
  };
  for (const Bubble& bubble : a.pipeline.bubbles.longest) {
    named_job(bubble.device, bubble.job_before);
    named_job(bubble.device, bubble.job_after);
    std::optional<std::int64_t> inherent;
    const bool owner = owns_step(a, bubble.step);
    if (owner) {
      const StepWindow& window = a.metrics.steps[bubble.step];
      const std::size_t row = bubble.step - a.first;
      // Rows are read only where the single process reads them: a known
      // split and a complete step.
      const bool readable = a.pipeline.split.known && window.complete &&
                            row < a.split_inherent.size() &&
                            bubble.device < a.split_inherent[row].size();
      inherent = bubble_inherent_ns(readable, window,
                                    readable ? a.split_inherent[row][bubble.device] : 0, bubble);
    }
    w.put(static_cast<std::uint8_t>(owner));
    w.put(static_cast<std::uint8_t>(inherent.has_value()));
    w.put(inherent.value_or(0));
  }
  if (const CriticalPath* longest = a.longest_path()) {
    for (const CriticalPathJob& entry : longest->jobs) {
      named_job(entry.job.device, entry.job.job);
    }
  }
  return w.take();
}

JobFacts gather_facts(Exchange& exchange, const LocalLoad& load, const PartitionedAnalysis& a) {
  const Run& run = load.run;
  JobFacts facts;
  SummaryJobFacts& f = facts.summary;
  f.device_jobs.assign(run.devices.size(), 0);
  facts.compute_in_steps.assign(run.devices.size(), 0);
  f.longest_bubbles.resize(a.pipeline.bubbles.longest.size());
  const std::size_t path_jobs = a.longest_path() ? a.longest_path()->jobs.size() : 0;
  std::vector<std::optional<Job>> path(path_jobs);
  for (const std::string& message : exchange.all_gather(facts_message(load, a, exchange.rank()))) {
    ByteReader r(message);
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      const auto d = r.get<std::uint64_t>();
      if (d >= run.devices.size()) throw WireError("job counts of a device not in the run");
      f.device_jobs[d] = r.get<std::int64_t>();
      facts.compute_in_steps[d] = r.get<std::uint64_t>();
    }
    // Rank r owns step range r: the parts come in step order.
    combine_figure_parts(f.figures, decode_figure_parts(r.str()));
    const auto named_job = [&r](std::optional<Job>& into) {
      if (r.get<std::uint8_t>() != 0) into = r.get<Job>();
    };
    for (SummaryJobFacts::LongBubble& bubble : f.longest_bubbles) {
      named_job(bubble.before);
      named_job(bubble.after);
      const bool owner = r.get<std::uint8_t>() != 0;
      const bool known = r.get<std::uint8_t>() != 0;
      const auto inherent = r.get<std::int64_t>();
      if (owner && known) bubble.inherent_ns = inherent;
    }
    for (std::optional<Job>& job : path) named_job(job);
    if (!r.done()) throw WireError("summary facts longer than expected");
  }
  for (const std::optional<Job>& job : path) {
    if (!job) throw WireError("a job of the longest critical path did not arrive");
    f.longest_path_jobs.push_back(*job);
  }
  return facts;
}

/// The first job's start of the devices whose first job this rank's part
/// holds (max when none).
std::int64_t first_start(const PartRun& part) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
    if (const Job* job = part.first_job(d)) first = std::min(first, job->start_ns);
  }
  return first;
}

/// Step 2 of the header: the stage map checks' evidence, exact, from the
/// parts' own jobs (pair_evidence.h). Every rank computes the same pairs
/// from the same counts, so every rank takes part in the same collectives.
StageJobEvidence stage_evidence(Exchange& exchange, const LocalLoad& load,
                                const PartitionedAnalysis& a,
                                const std::vector<std::uint64_t>& counts) {
  return exchange_stage_evidence(
      exchange, stage_check_pairs(load.run, a.pipeline.stages, counts), counts, first_start(a.part),
      held_by_part(a.part, a.plan, static_cast<std::size_t>(exchange.rank())));
}

/// A piece of a step list: steps [first, last) of one owner's range.
struct RowPiece {
  std::size_t owner = 0;
  std::size_t first = 0;
  std::size_t last = 0;
};

/// The ranges' steps in pieces of about job_round_bytes of text each (a row
/// holds a figure per device), in step order; at least one piece. What a
/// rank renders, and rank 0 holds, at once is one piece.
std::vector<RowPiece> row_pieces(const StepPartition& plan, std::size_t devices) {
  const std::size_t rows =
      std::clamp<std::size_t>(job_round_bytes() / (128 + 128 * devices), 1, 65536);
  std::vector<RowPiece> pieces;
  for (std::size_t r = 0; r + 1 < plan.bounds.size(); ++r) {
    for (std::size_t k = plan.bounds[r]; k < plan.bounds[r + 1]; k += rows) {
      pieces.push_back({r, k, std::min(k + rows, plan.bounds[r + 1])});
    }
  }
  if (pieces.empty()) pieces.push_back({0, 0, 0});
  return pieces;
}

/// The step lists every rank writes pieces of: the pipeline sections are
/// always set, the events section when events were looked for or off (as
/// events_figures gives it).
std::vector<StepList> lists_of(const Run& run) {
  SummaryFigures shape;
  shape.bubbles = BubblesFigures{};
  shape.critical_path = CriticalPathFigures{};
  if (!run.events_off.empty() || !run.event_kinds.empty()) shape.events = EventsFigures{};
  return step_lists(shape);
}

/// Whether a list holds log events: every rank holds every device's events
/// (they travel with the files' headers, few beside the jobs), so rank 0
/// writes those lists whole.
bool is_event_list(StepList which) {
  return which == StepList::event_steps || which == StepList::event_outliers;
}

}  // namespace

SummaryJobFacts gather_whole_run_facts(Exchange& exchange, const LocalLoad& load,
                                       PartitionedAnalysis& analysis,
                                       const PipelineOptions& options) {
  const Run& run = load.run;
  JobFacts facts = gather_facts(exchange, load, analysis);
  std::vector<std::uint64_t> counts;
  for (const std::int64_t n : facts.summary.device_jobs) {
    counts.push_back(static_cast<std::uint64_t>(n));
  }
  const StageJobEvidence evidence = stage_evidence(exchange, load, analysis, counts);
  if (exchange.rank() != 0) return {};
  // load_run's order: the input warnings (the short devices, found once the
  // stages are known, among them), the launch warnings, then the analysis's.
  PipelineAnalysis& pipeline = analysis.pipeline;
  std::vector<Warning> warnings = load.input_warnings;
  for (Warning& w : check_short_devices(run, counts, facts.compute_in_steps, analysis.metrics,
                                        pipeline.stages)) {
    warnings.push_back(std::move(w));
  }
  warnings.insert(warnings.end(), load.launch_warnings.begin(), load.launch_warnings.end());
  warnings.insert(warnings.end(), pipeline.warnings.begin(), pipeline.warnings.end());
  for (Warning& w : pipeline_tail_warnings(run, pipeline.layout, pipeline.stages, pipeline.clock,
                                           options, evidence)) {
    warnings.push_back(std::move(w));
  }
  pipeline.warnings = std::move(warnings);
  return std::move(facts.summary);
}

void write_partitioned_summary(Exchange& exchange, const LocalLoad& load,
                               const PartitionedAnalysis& analysis, const SummaryJobFacts& facts,
                               const std::string& path,
                               const std::vector<TraceFileFigures>& traces) {
  const Run& run = load.run;
  const bool root = exchange.rank() == 0;
  SummaryFigures whole;
  if (root) {
    whole = summary_figures(run, analysis.metrics, &analysis.pipeline, facts, SummaryRows::none);
    whole.traces = traces;
  }

  // This rank's rows of every list, made and rendered a piece at a time
  // when its turn comes.
  StepRowInputs in;
  in.first = analysis.first;
  in.last = analysis.last;
  in.metrics = &analysis.metrics;
  in.devices = run.devices;
  in.bubbles = analysis.pipeline.bubbles.per_step;
  in.split_known = analysis.pipeline.split.known;
  in.inherent = analysis.split_inherent;
  in.paths = analysis.paths.paths;
  // The events' rows of every step, on rank 0 (placed from the windows and
  // every device's events, which every rank has).
  SummaryStepRows event_rows;
  if (root && !run.event_kinds.empty() && run.events_off.empty()) {
    const StepEvents placed = place_step_events(run, analysis.metrics);
    event_rows.event_steps =
        event_step_rows(run, analysis.metrics, 0, placed.before_step, placed.in_step);
    event_rows.event_outliers = event_outlier_rows(run, analysis.metrics, placed.outliers);
  }

  const std::vector<StepList> lists = lists_of(run);
  const std::vector<RowPiece> pieces = row_pieces(analysis.plan, run.devices.size());
  const auto me = static_cast<std::size_t>(exchange.rank());
  const auto render = [&](StepList which, const RowPiece& p) {
    const StepRowInputs range = step_row_inputs_of(in, p.first, p.last);
    return render_step_rows(step_rows(range, which), which);
  };
  // One collective per (list, piece) but rank 0's own, in the writer's order.
  const auto piece = [&](StepList which, std::size_t index) {
    if (is_event_list(which)) {
      return root && index == 0 ? render_step_rows(event_rows, which) : std::string();
    }
    const RowPiece& p = pieces[index];
    if (p.owner == 0) return root ? render(which, p) : std::string();
    std::vector<std::string> out(static_cast<std::size_t>(exchange.size()));
    if (me == p.owner) out[0] = render(which, p);
    std::vector<std::string> got = exchange.all_to_all(std::move(out));
    return root ? std::move(got[p.owner]) : std::string();
  };
  if (root) {
    if (step_lists(whole) != lists) throw std::logic_error("summary.json: step lists differ");
    write_summary_json(whole, pieces.size(), piece, path);
    return;
  }
  for (const StepList which : lists) {
    for (std::size_t index = 0; index < pieces.size(); ++index) piece(which, index);
  }
}

}  // namespace pipescope::distributed
