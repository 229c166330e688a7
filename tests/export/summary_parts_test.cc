// summary.json written by parts (export/summary_json.h): rank 0 writes the
// whole-run figures and, at each step list, the rows each step range's owner
// renders. The document must be byte for byte the single process's: on every
// golden folder and simulated runs of each schedule, at 1, 2, 3, 4 and more
// ranges than steps, with ranges without steps; with each list cut anywhere
// (pieces without rows among others, lists without any); and with the rows
// computed per range from the jobs a part holds (step_partition.h, cut_part).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/critical_path.h"
#include "analysis/dependencies.h"
#include "analysis/metric_parts.h"
#include "analysis/schedule_table.h"
#include "analysis/step_events.h"
#include "analysis/step_partition.h"
#include "export/summary_json.h"
#include "export/summary_step_rows.h"
#include "ingest/discovery.h"
#include "load/event_setup.h"
#include "load/load_run.h"
#include "support/log_event_run.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::read_file;
using testing::TempDir;

/// An analysed run and its summary figures.
struct Analysed {
  Run run;
  Metrics metrics;
  std::optional<PipelineAnalysis> pipeline;
  SummaryFigures figures;
  /// The events placed on the windows when the summary lists them.
  std::optional<StepEvents> events;
};

void set_figures(Analysed& a) {
  a.figures = a.pipeline ? summary_figures(a.run, a.metrics, *a.pipeline)
                         : summary_figures(a.run, a.metrics);
  if (a.figures.events && a.figures.events->off.empty()) {
    a.events = place_step_events(a.run, a.metrics);
  }
}

Analysed golden(const std::string& folder) {
  LoadOptions options;
  options.inputs.allow_unreadable = true;
  options.events = make_event_setup(true, {});  // as `analyze` reads them
  LoadedRun loaded =
      load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
  Analysed a{std::move(loaded.run), std::move(loaded.metrics), std::move(loaded.pipeline), {}, {}};
  set_figures(a);
  return a;
}

Analysed simulated(const sim::SimConfig& config) {
  Analysed a;
  a.run = testing::run_from_simulation(config);
  PipelineOptions options;
  options.top_bubbles = 4;
  AnalyzedRun analysed = analyze_run(a.run, options);
  a.metrics = std::move(analysed.metrics);
  a.pipeline = std::move(analysed.pipeline);
  set_figures(a);
  return a;
}

Analysed with_events() {
  testing::LogEventRun r = testing::log_event_run();
  Analysed a{std::move(r.run), std::move(r.metrics), std::nullopt, {}, {}};
  set_figures(a);
  return a;
}

/// The figures without their step lists: what rank 0 holds.
SummaryFigures whole_run_part(SummaryFigures f) {
  f.steps.clear();
  if (f.bubbles) f.bubbles->steps.clear();
  if (f.critical_path) f.critical_path->steps.clear();
  if (f.events) {
    f.events->steps.clear();
    f.events->outliers.clear();
  }
  return f;
}

std::string single_document(const SummaryFigures& f, const TempDir& dir) {
  write_summary_json(f, dir / "single.json");
  return read_file(dir / "single.json");
}

/// The document from the whole-run part and each range's rows, asked for in
/// the writer's order (checked: each list of step_lists, each range once).
std::string by_parts(const SummaryFigures& f, const std::vector<SummaryStepRows>& parts,
                     const TempDir& dir) {
  std::vector<std::pair<StepList, std::size_t>> asked;
  const SummaryFigures whole = whole_run_part(f);
  write_summary_json(
      whole, parts.size(),
      [&](StepList which, std::size_t part) {
        asked.emplace_back(which, part);
        return render_step_rows(parts.at(part), which);
      },
      dir / "parts.json");
  std::vector<std::pair<StepList, std::size_t>> want;
  for (const StepList which : step_lists(whole)) {
    for (std::size_t p = 0; p < parts.size(); ++p) want.emplace_back(which, p);
  }
  EXPECT_EQ(asked, want);
  const std::string text = read_file(dir / "parts.json");

  // The pieces made side by side (threads > 1) are the same bytes, each
  // range of each list asked for once (in any order: several at a time).
  std::mutex guard;
  asked.clear();
  write_summary_json(
      whole, parts.size(),
      [&](StepList which, std::size_t part) {
        {
          const std::lock_guard<std::mutex> lock(guard);
          asked.emplace_back(which, part);
        }
        return render_step_rows(parts.at(part), which);
      },
      dir / "threads.json", /*threads=*/4);
  std::sort(asked.begin(), asked.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(asked, want);
  EXPECT_EQ(read_file(dir / "threads.json"), text);
  return text;
}

/// The figures' lists put together from the ranges' rows, in order.
void expect_rows_are_the_lists(const SummaryFigures& f, const std::vector<SummaryStepRows>& parts,
                               const std::string& label) {
  SummaryStepRows all;
  const auto append = [](auto& into, const auto& from) {
    into.insert(into.end(), from.begin(), from.end());
  };
  for (const SummaryStepRows& p : parts) {
    append(all.steps, p.steps);
    append(all.bubble_steps, p.bubble_steps);
    append(all.critical_path_steps, p.critical_path_steps);
    append(all.event_steps, p.event_steps);
    append(all.event_outliers, p.event_outliers);
  }
  EXPECT_EQ(all.steps, f.steps) << label;
  EXPECT_EQ(all.bubble_steps, f.bubbles ? f.bubbles->steps : decltype(all.bubble_steps){}) << label;
  EXPECT_EQ(all.critical_path_steps,
            f.critical_path ? f.critical_path->steps : decltype(all.critical_path_steps){})
      << label;
  EXPECT_EQ(all.event_steps, f.events ? f.events->steps : decltype(all.event_steps){}) << label;
  EXPECT_EQ(all.event_outliers, f.events ? f.events->outliers : decltype(all.event_outliers){})
      << label;
}

std::vector<std::uint64_t> jobs_per_step(const Metrics& m) {
  std::vector<std::uint64_t> jobs(m.steps.size(), 0);
  for (const auto& steps : m.job_step) {
    for (const std::int32_t k : steps) {
      if (k >= 0) ++jobs[static_cast<std::size_t>(k)];
    }
  }
  return jobs;
}

/// The ranges to try: the plan's at 1, 2, 3, 4 and more parts than steps,
/// and hand-cut ones with ranges of no step (first, middle, last).
std::vector<std::vector<std::size_t>> every_split(const Metrics& m) {
  const std::size_t n = m.steps.size();
  std::vector<std::vector<std::size_t>> out;
  for (const std::size_t parts :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, n + 2}) {
    out.push_back(partition_steps(jobs_per_step(m), m.steps, parts).bounds);
  }
  out.push_back({0, 0, n / 2, n / 2, n, n});
  out.push_back({0, 1, 1, n});
  return out;
}

/// Each range's rows from the whole run's results, the document by parts
/// equal to the single one.
void check_every_split(const Analysed& a, const std::string& what) {
  TempDir dir;
  const std::string want = single_document(a.figures, dir);
  const PipelineAnalysis* pipeline = a.pipeline ? &*a.pipeline : nullptr;
  const StepEvents* events = a.events ? &*a.events : nullptr;
  for (const std::vector<std::size_t>& bounds : every_split(a.metrics)) {
    const std::string label = what + ", " + std::to_string(bounds.size() - 1) +
                              " ranges ending at " + std::to_string(bounds[1]);
    std::vector<SummaryStepRows> parts;
    for (std::size_t p = 0; p + 1 < bounds.size(); ++p) {
      const StepRowInputs in =
          whole_run_step_inputs(a.run, a.metrics, pipeline, events, bounds[p], bounds[p + 1]);
      parts.push_back(step_rows(in));
      // One list's rows alone render as that list of all the rows.
      for (const StepList which : step_lists(a.figures)) {
        EXPECT_EQ(render_step_rows(step_rows(in, which), which),
                  render_step_rows(parts.back(), which))
            << label << " range " << p;
      }
    }
    expect_rows_are_the_lists(a.figures, parts, label);
    EXPECT_EQ(by_parts(a.figures, parts, dir), want) << label;
  }
}

const std::vector<std::string> kGoldenFolders = {"single", "multi", "edge", "prologue", "relaunch"};

TEST(SummaryParts, GoldenFoldersByStepRanges) {
  for (const std::string& folder : kGoldenFolders) {
    const Analysed a = golden(folder);
    ASSERT_FALSE(a.figures.steps.empty()) << folder;
    ASSERT_TRUE(a.figures.bubbles && a.figures.critical_path) << folder;
    check_every_split(a, folder);
  }
}

struct SimCase {
  sim::ScheduleKind kind;
  int stages, micro_batches, chunks;
  bool comm, lr;
};

const SimCase kSimCases[] = {{sim::ScheduleKind::fthenb, 4, 8, 1, false, false},
                             {sim::ScheduleKind::one_f_one_b, 4, 8, 1, true, true},
                             {sim::ScheduleKind::interleaved, 4, 8, 2, true, false},
                             {sim::ScheduleKind::eager_one_f_one_b, 3, 6, 1, false, true},
                             {sim::ScheduleKind::zbh1, 4, 8, 1, true, false}};

sim::SimConfig config_of(const SimCase& c) {
  sim::SimConfig config = testing::sim_config(c.kind, c.stages, c.micro_batches, c.chunks);
  config.steps = 6;
  config.comm_jobs = c.comm;
  config.lr_jobs = c.lr;
  config.step_gap_ns = 0;  // steps meet: devices overlap at the edges
  return config;
}

TEST(SummaryParts, SimulatedSchedulesByStepRanges) {
  for (const SimCase& c : kSimCases) {
    check_every_split(simulated(config_of(c)), "simulated " + std::to_string(int(c.kind)));
  }
}

TEST(SummaryParts, EventsAndOutliersByStepRanges) {
  const Analysed a = with_events();
  ASSERT_TRUE(a.figures.events.has_value());
  ASSERT_FALSE(a.figures.events->steps.empty());
  ASSERT_FALSE(a.figures.events->outliers.empty());
  check_every_split(a, "log events");
}

// --- each list cut anywhere: the separators -------------------------------------

/// Cuts `list` into `parts` pieces at positions from `seed` (some empty).
template <typename T>
std::vector<std::vector<T>> cut(const std::vector<T>& list, std::size_t parts, unsigned seed) {
  std::vector<std::size_t> at;
  for (std::size_t p = 1; p < parts; ++p) {
    seed = seed * 1103515245u + 12345u;
    at.push_back((seed >> 8) % (list.size() + 1));
  }
  std::sort(at.begin(), at.end());
  at.insert(at.begin(), 0);
  at.push_back(list.size());
  std::vector<std::vector<T>> out;
  for (std::size_t p = 0; p < parts; ++p) {
    out.emplace_back(list.begin() + static_cast<std::ptrdiff_t>(at[p]),
                     list.begin() + static_cast<std::ptrdiff_t>(at[p + 1]));
  }
  return out;
}

/// Each list of `f` cut on its own, into `parts` pieces.
std::vector<SummaryStepRows> cut_lists(const SummaryFigures& f, std::size_t parts, unsigned seed) {
  std::vector<SummaryStepRows> out(parts);
  const auto spread = [&](const auto& list, auto member, unsigned salt) {
    const auto pieces = cut(list, parts, seed + salt);
    for (std::size_t p = 0; p < parts; ++p) out[p].*member = pieces[p];
  };
  spread(f.steps, &SummaryStepRows::steps, 1);
  if (f.bubbles) spread(f.bubbles->steps, &SummaryStepRows::bubble_steps, 2);
  if (f.critical_path) {
    spread(f.critical_path->steps, &SummaryStepRows::critical_path_steps, 3);
  }
  if (f.events) {
    spread(f.events->steps, &SummaryStepRows::event_steps, 4);
    spread(f.events->outliers, &SummaryStepRows::event_outliers, 5);
  }
  return out;
}

void check_cuts(const SummaryFigures& f, const std::string& what) {
  TempDir dir;
  const std::string want = single_document(f, dir);
  for (const std::size_t parts : {1u, 2u, 3u, 5u, 8u, 20u}) {
    for (unsigned seed = 0; seed < 6; ++seed) {
      const std::string label =
          what + ", " + std::to_string(parts) + " pieces, seed " + std::to_string(seed);
      ASSERT_EQ(by_parts(f, cut_lists(f, parts, seed), dir), want) << label;
    }
  }
}

/// Whether the "events" object of summary.json `text` (valid JSON) has `key`.
bool events_have(const std::string& text, std::string_view key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  simdjson::dom::element value;
  return doc["events"][key].get(value) == simdjson::SUCCESS;
}

TEST(SummaryParts, ListsCutAnywhere) {
  const Analysed rich = simulated(config_of(kSimCases[1]));
  check_cuts(rich.figures, "simulated 1F1B");
  const Analysed events = with_events();
  check_cuts(events.figures, "log events");
  // A list written only when not empty, empty in every piece: left out, as
  // the single document leaves it out.
  SummaryFigures no_event_steps = events.figures;
  no_event_steps.events->steps.clear();
  check_cuts(no_event_steps, "no step with events");
  SummaryFigures no_outliers = events.figures;
  no_outliers.events->outliers.clear();
  check_cuts(no_outliers, "no outlier");
  TempDir dir;
  EXPECT_TRUE(events_have(single_document(events.figures, dir), "steps"));
  EXPECT_TRUE(events_have(single_document(events.figures, dir), "outliers"));
  EXPECT_FALSE(events_have(single_document(no_event_steps, dir), "steps"));
  EXPECT_FALSE(events_have(single_document(no_outliers, dir), "outliers"));
  // No steps at all: every list empty, the required ones written as [].
  SummaryFigures no_steps = rich.figures;
  no_steps.steps.clear();
  no_steps.bubbles->steps.clear();
  no_steps.critical_path->steps.clear();
  check_cuts(no_steps, "no steps");
}

TEST(SummaryParts, PiecesJoinWithOneSeparator) {
  const Analysed a = with_events();
  const std::vector<StepFigures>& steps = a.figures.steps;
  ASSERT_GE(steps.size(), 2u);
  SummaryStepRows first, second;
  first.steps = {steps[0]};
  second.steps = {steps[1]};
  const std::string one = render_step_rows(first, StepList::steps);
  const std::string two = render_step_rows(second, StepList::steps);
  // A piece starts on its row's line and ends with the row: no separator of
  // its own at either end.
  EXPECT_EQ(one.rfind("\n    {", 0), 0u) << one;
  EXPECT_EQ(one.back(), '}');
  SummaryStepRows both;
  both.steps = {steps[0], steps[1]};
  EXPECT_EQ(render_step_rows(both, StepList::steps), one + "," + two);
  EXPECT_EQ(render_step_rows(SummaryStepRows{}, StepList::steps), "");
}

TEST(SummaryParts, SingleDocumentServedInPieces) {
  // More rows than a piece holds: the single writer's own pieces join.
  Analysed a = with_events();
  SummaryFigures& f = a.figures;
  const std::vector<StepFigures> three = f.steps;
  while (f.steps.size() <= 2 * kStepRowsPerPiece + 5) {
    f.steps.insert(f.steps.end(), three.begin(), three.end());
  }
  TempDir dir;
  const std::string want = single_document(f, dir);
  EXPECT_TRUE(events_have(want, "steps"));  // valid JSON, pieces and all
  SummaryStepRows all;
  all.steps = f.steps;
  all.event_steps = f.events->steps;
  all.event_outliers = f.events->outliers;
  EXPECT_EQ(by_parts(f, {all}, dir), want);
}

// --- rows computed by the parts ----------------------------------------------------

/// Each range's rows from what its owner holds: its part of the jobs
/// (cut_part), the windows with its own steps' device figures (the others'
/// spoiled, so reading them would show), and its own analyses of its steps.
/// The whole-run decisions (stages, roles, schedule, the kept critical step,
/// whether the split is known) are the whole run's, as rank 0 decides them.
std::vector<SummaryStepRows> rows_of_parts(const Analysed& a, std::size_t parts) {
  const Run& run = a.run;
  const Metrics& m = a.metrics;
  const PipelineAnalysis& pipeline = *a.pipeline;
  const TypeKinds kinds(run.types);
  const StepPartition plan = partition_steps(jobs_per_step(m), m.steps, parts);
  const StagePlacement placement =
      pipeline.schedule.detection.id && pipeline.schedule.detection.chunks == 2
          ? schedule_entry(*pipeline.schedule.detection.id).placement
          : StagePlacement::looped;
  std::vector<char> has_job(m.steps.size(), 0);
  for (const auto& steps : m.job_step) {
    for (const std::int32_t k : steps) {
      if (k >= 0) has_job[static_cast<std::size_t>(k)] = 1;
    }
  }
  const std::optional<std::size_t> keep = longest_critical_step(m.steps, has_job);

  std::vector<PartRun> held;
  std::vector<Metrics> part_metrics;
  std::vector<SplitEvidence> evidence;
  OpCostSums run_sums;
  for (std::size_t p = 0; p < parts; ++p) {
    held.push_back(cut_part(run, kinds, m.job_step, plan, p));
    Metrics pm;
    pm.steps = m.steps;
    pm.job_step = held[p].job_step;
    for (StepWindow& w : pm.steps) {
      for (DeviceStepTime& t : w.devices) t = {-1, -1, -1};
    }
    std::span<StepWindow> own = plan.windows(pm.steps, p);
    for (StepWindow& w : own) {
      for (DeviceStepTime& t : w.devices) t = {};
    }
    add_window_times(held[p].run.devices, kinds, own);
    evidence.push_back(split_evidence(held[p].run, pm, pipeline.stages, pipeline.roles,
                                      plan.bounds[p], plan.bounds[p + 1]));
    run_sums.add(evidence.back().run_sums);
    part_metrics.push_back(std::move(pm));
  }

  std::vector<SummaryStepRows> out;
  for (std::size_t p = 0; p < parts; ++p) {
    const PartRun& part = held[p];
    const Metrics& pm = part_metrics[p];
    const std::size_t first = plan.bounds[p], last = plan.bounds[p + 1];
    const BubbleSummary bubbles =
        summarize_bubble_windows(part.run.devices, &part.job_index, run.types,
                                 plan.windows(part_metrics[p].steps, p), first, 4);
    const SplitRows split =
        split_rows(evidence[p], run_sums, pm.steps, pipeline.stages, pipeline.schedule);
    const Dependencies deps =
        find_dependencies(part.run, part.job_step, pipeline.stages, pipeline.roles, placement);
    const CriticalPathSummary paths = summarize_critical_path_range(
        part.run, pm, pipeline.stages, deps, pipeline.roles, first, last, keep, &part.job_index);

    StepRowInputs in;
    in.first = first;
    in.last = last;
    in.metrics = &pm;
    in.devices = part.run.devices;
    in.bubbles = bubbles.per_step;
    in.split_known = pipeline.split.known;
    in.inherent = split.inherent;
    in.paths = paths.paths;
    out.push_back(step_rows(in));
  }
  return out;
}

void check_parts_compute_rows(const Analysed& a, const std::string& what) {
  TempDir dir;
  const std::string want = single_document(a.figures, dir);
  const std::size_t n = a.metrics.steps.size();
  for (const std::size_t parts :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, n + 2}) {
    const std::string label = what + ", " + std::to_string(parts) + " parts";
    const std::vector<SummaryStepRows> rows = rows_of_parts(a, parts);
    expect_rows_are_the_lists(a.figures, rows, label);
    EXPECT_EQ(by_parts(a.figures, rows, dir), want) << label;
  }
}

TEST(SummaryParts, RowsComputedByThePartsThatHoldTheirJobs) {
  for (const std::string& folder : kGoldenFolders) {
    Analysed a = golden(folder);
    a.figures.events.reset();  // a part holds no events yet (step_partition.h)
    check_parts_compute_rows(a, folder);
  }
  for (const SimCase& c : kSimCases) {
    check_parts_compute_rows(simulated(config_of(c)), "simulated " + std::to_string(int(c.kind)));
  }
}

}  // namespace
}  // namespace pipescope
