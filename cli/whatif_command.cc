// `pipescope whatif PATH...`: replay a measured run under other schedules,
// micro-batch counts and chunk counts (engine/whatif), print the predictions
// and, with -o, write whatif.json (and whatif-trace.json for one scenario).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "load/load_run.h"
#include "model/errors.h"
#include "numeric/units.h"
#include "run_inputs.h"
#include "whatif/model_error.h"
#include "whatif/replay.h"
#include "whatif/whatif_json.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;

struct WhatifOptions : RunInputOptions {
  std::vector<std::string> paths;
  std::string output_dir;  // empty: print only
  std::string schedule;
  std::optional<int> micro_batches;
  std::optional<int> chunks;
  double weight_share = 0.5;
  int replay_steps = 0;  // 0: as many as measured
  bool quiet = false;
};

std::string ms(double ns) { return fmt::format("{:.3f}", ns / 1e6); }

std::string signed_percent(double change) { return fmt::format("{:+.1f}%", change * 100); }

double max_in_flight(const Prediction& p) {
  return p.in_flight_max.empty()
             ? 0
             : *std::max_element(p.in_flight_max.begin(), p.in_flight_max.end());
}

/// The scenario the options name, with defaults from the measured run.
Scenario chosen_scenario(const WhatifOptions& options, const MeasuredRun& measured) {
  Scenario scenario;
  if (!options.schedule.empty()) {
    const auto id = parse_whatif_schedule(options.schedule);
    if (!id) {
      std::string names;
      for (ScheduleId known : whatif_schedules()) {
        names += (names.empty() ? "" : ", ") + std::string(whatif_schedule_name(known));
      }
      throw InputError(
          fmt::format("--schedule {}: unknown schedule; known: {}", options.schedule, names));
    }
    scenario.schedule = *id;
  } else if (measured.id) {
    scenario.schedule = *measured.id;
  } else {
    throw InputError(fmt::format(
        "the measured schedule ({}) is none of the table's job lists: name one with --schedule",
        measured.schedule));
  }
  scenario.micro_batches = options.micro_batches.value_or(measured.micro_batches);
  const ScheduleEntry& entry = schedule_entry(scenario.schedule);
  if (options.chunks) {
    scenario.chunks = *options.chunks;
  } else if (measured.id == scenario.schedule || entry.max_chunks == 1) {
    scenario.chunks = std::clamp(measured.chunks, entry.min_chunks, entry.max_chunks);
  } else if (entry.placement == StagePlacement::v_shape) {
    scenario.chunks = 2;
  } else {
    scenario.chunks = std::max(2, measured.chunks);
  }
  const std::string problem = scenario_problem(scenario, measured.stages);
  if (!problem.empty()) {
    throw InputError(fmt::format("--schedule {} --micro-batches {} --chunks {}: {}",
                                 whatif_schedule_name(scenario.schedule), scenario.micro_batches,
                                 scenario.chunks, problem));
  }
  return scenario;
}

std::string link_line(const LinkSamples& kind) {
  if (kind.pairs == 0) return "no dependent pair";
  return fmt::format("{} ms ({} of {} dependent pair{} waited for the data)", ms(kind.ns),
                     kind.samples.size(), kind.pairs, kind.pairs == 1 ? "" : "s");
}

void print_measured(const WhatifInputs& in, const ModelError& error) {
  const MeasuredRun& m = in.measured;
  fmt::print("measured: {}, P={} M={} V={}: step {} ms (median of {} complete step{}), bubble {}\n",
             m.schedule, m.stages, m.micro_batches, m.chunks, ms(m.step_ns), m.complete_steps,
             m.complete_steps == 1 ? "" : "s", percent(m.bubble_ratio));
  if (m.replica >= 0) {
    fmt::print(
        "replayed: replica {}, the slowest of the run's {} data-parallel replicas (its "
        "jobs' durations and latencies)\n",
        m.replica, m.replicas);
  }
  const LinkCosts& links = in.links;
  fmt::print("latency: same machine {}; across machines {}\n", link_line(links.same_machine),
             link_line(links.cross_machine));
  fmt::print("launch overhead {} ms ({} gap{}); step overhead {}\n", ms(links.launch_overhead_ns),
             links.launch_overhead_samples.size(),
             links.launch_overhead_samples.size() == 1 ? "" : "s",
             in.step_overhead.empty()
                 ? std::string("none measured (fewer than two complete steps): taken as 0")
                 : fmt::format("{} sample{}", in.step_overhead.size(),
                               in.step_overhead.size() == 1 ? "" : "s"));
  fmt::print("costs: {}\n",
             in.shared_pattern
                 ? fmt::format("drawn per micro-batch on every stage at once (the stages' "
                               "micro-batch costs correlate, {:.2f})",
                               in.micro_batch_correlation)
             : std::isnan(in.micro_batch_correlation)
                 ? std::string("drawn per stage (no micro-batch pattern measurable)")
                 : fmt::format("drawn per stage (the stages' micro-batch costs do not "
                               "correlate, {:.2f})",
                               in.micro_batch_correlation));
  for (const std::string& note : in.notes) fmt::print("note: {}\n", note);
  if (error.available) {
    fmt::print(
        "model error: the measured schedule replayed gives {} ms ({:+.1f}%) and a {} bubble "
        "({:+.1f} points){}\n",
        ms(error.replayed_step_ns), error.step_error * 100, percent(error.replayed_bubble_ratio),
        error.bubble_error * 100,
        error.trusted() ? "" : fmt::format("; worst: {}", model_figure_name(error.worst)));
  } else {
    fmt::print("model error: not measured ({})\n", error.reason);
  }
}

void print_table(const MeasuredRun& measured, const std::vector<Prediction>& predictions) {
  fmt::print("{:>4}  {:<29} {:>4} {:>2}  {:>12} {:>8} {:>7}  {:>10}  {:>7}  {:>9}  {}\n", "rank",
             "schedule", "M", "V", "step ms", "change", "spread", "ms per mb", "bubble",
             "in flight", "extrapolates");
  bool any_measured = false;
  bool any_extrapolated = false;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& p = predictions[i];
    const double spread = p.step_ns > 0 ? (p.step_p90_ns - p.step_p10_ns) / 2 / p.step_ns : 0;
    const bool as_measured = measured.id == p.scenario.schedule &&
                             measured.micro_batches == p.scenario.micro_batches &&
                             measured.chunks == p.scenario.chunks;
    any_measured = any_measured || as_measured;
    any_extrapolated = any_extrapolated || !p.extrapolates.empty();
    std::string extrapolates;
    for (const std::string& e : p.extrapolates)
      extrapolates += (extrapolates.empty() ? "" : ", ") + e;
    fmt::print(
        "{:>4}  {:<29} {:>4} {:>2}  {:>12} {:>8} {:>7}  {:>10}  {:>7}  {:>9}  {}\n", i + 1,
        fmt::format("{}{}", whatif_schedule_name(p.scenario.schedule), as_measured ? " *" : ""),
        p.scenario.micro_batches, p.scenario.chunks, ms(p.step_ns),
        signed_percent(step_change(measured, p)), fmt::format("±{:.1f}%", spread * 100),
        ms(p.step_ns_per_micro_batch), percent(p.bubble_ratio),
        fmt::format("{:g}", max_in_flight(p)), extrapolates.empty() ? "-" : extrapolates);
  }
  fmt::print("\n");
  if (any_measured) {
    fmt::print(
        "*: the measured schedule replayed; its change is the model's own error on this run.\n");
  }
  if (any_extrapolated) {
    fmt::print(
        "extrapolates: what a scenario predicts beyond what this run measured, so the model\n"
        "error above does not cover it. V: another chunk count, each chunk taken as an even\n"
        "share of the stage at no cost of its own (one run cannot tell a per-chunk cost from\n"
        "how a stage splits); split backward: backward halves the run never logged, cut by\n"
        "the weight share.\n");
  }
  fmt::print(
      "A scenario with another M runs another global batch: compare `ms per mb` (the time\n"
      "per micro-batch) across M. `in flight` is the most micro-batches whose activations\n"
      "one stage holds at once (a chunk counts 1/V): a larger M or an interleaved schedule\n"
      "buys its shorter bubble with activation memory. `spread` is half the 10th-90th\n"
      "percentile range of the replayed steps, from the measured cost spread.\n");
}

void print_costs(const Prediction& p) {
  const UsedCosts& c = p.costs;
  for (std::size_t s = 0; s < c.forward_ns.size(); ++s) {
    fmt::print("  stage {}: forward {} ms, backward {} ms{}, optimizer {} ms\n", s,
               ms(c.forward_ns[s]), ms(c.backward_ns[s]),
               c.weight_ns[s] > 0 ? fmt::format(", weight {} ms", ms(c.weight_ns[s])) : "",
               ms(c.optimizer_ns[s]));
  }
  fmt::print(
      "  latency {} ms same machine, {} ms across machines; launch overhead {} ms; step overhead "
      "{} ms\n",
      ms(c.latency_same_machine_ns), ms(c.latency_cross_machine_ns), ms(c.launch_overhead_ns),
      ms(c.step_overhead_ns));
}

/// The output folder is never an input folder or inside one (a later run
/// over the logs would find whatif-trace.json among them), and an input is
/// never overwritten.
void check_output_location(const WhatifOptions& options) {
  refuse_output_inside_inputs(options.output_dir, options.paths);
  const fs::path out = resolved(options.output_dir);
  for (const std::string& input : options.paths) {
    for (const char* name : {"whatif.json", "whatif-trace.json"}) {
      if (resolved(out / name) == resolved(input)) {
        throw InputError(fmt::format("output file {} is the input {}; inputs are never overwritten",
                                     (fs::path(options.output_dir) / name).string(), input));
      }
    }
  }
}

int run_whatif(const WhatifOptions& options) {
  if (!(options.weight_share > 0 && options.weight_share < 1)) {
    throw InputError(fmt::format("--weight-share must be between 0 and 1 (exclusive), got {}",
                                 options.weight_share));
  }
  LoadOptions load = make_load_options(options);
  const std::vector<InputFile> inputs =
      find_inputs(options.paths, options.devices, &load.discovery_notes, load.machine_order,
                  *load.ingest.words);
  const bool one_scenario = !options.schedule.empty() || options.micro_batches || options.chunks;
  const fs::path out(options.output_dir);
  if (!options.output_dir.empty()) check_output_location(options);
  LoadedRun loaded = load_run(inputs, load);
  if (loaded.run.job_count() == 0) {
    fmt::print(stderr, "pipescope: error: no jobs found in {} input file{}; nothing to replay\n",
               inputs.size(), inputs.size() == 1 ? "" : "s");
    return kExitUsage;
  }
  std::vector<Warning> warnings = loaded.pipeline.warnings;
  for (const Warning& warning : warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", warning.message);
  }
  WhatifInputs in;
  try {
    in = measure_whatif_inputs(loaded.run, loaded.metrics, loaded.pipeline);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  ReplayOptions replay;
  replay.weight_share = options.weight_share;
  replay.steps = options.replay_steps;

  // The replay's own error: the measured schedule replayed against the run.
  const ModelError error = measure_model_error(in, replay);
  if (!error.trusted()) {
    warnings.push_back({WarningCode::whatif_model_error, model_error_message(error)});
    fmt::print(stderr, "pipescope: warning: {}\n", warnings.back().message);
  }

  std::vector<Prediction> predictions;
  std::optional<Replay> single;
  if (one_scenario) {
    single = replay_scenario(in, chosen_scenario(options, in.measured), replay);
    predictions.push_back(single->prediction);
  } else {
    for (const Scenario& scenario :
         sweep_scenarios(in.measured.stages, in.measured.micro_batches)) {
      predictions.push_back(replay_scenario(in, scenario, replay).prediction);
    }
    std::stable_sort(
        predictions.begin(), predictions.end(),
        [](const Prediction& a, const Prediction& b) { return a.step_ns < b.step_ns; });
  }

  std::vector<std::string> written;
  if (!options.output_dir.empty()) {
    ensure_output_dir(options.output_dir);
    write_whatif_json(in, predictions, replay, error, warnings, (out / "whatif.json").string());
    written.push_back((out / "whatif.json").string());
    if (single) {
      TraceOptions trace;
      trace.threads = options.threads;
      write_chrome_trace(single->run, single->metrics, trace, (out / "whatif-trace.json").string());
      written.push_back((out / "whatif-trace.json").string());
    }
  }
  if (!options.quiet) {
    print_measured(in, error);
    fmt::print("\n");
    print_table(in.measured, predictions);
    if (single) {
      fmt::print("\ncosts used:\n");
      print_costs(single->prediction);
    }
    if (!written.empty()) {
      fmt::print("\nwrote {}{}\n", written.front(),
                 written.size() > 1 ? " and " + written.back() : std::string());
    }
  }
  return kExitOk;
}

}  // namespace

void register_whatif_command(CLI::App& app, int& status) {
  auto options = std::make_shared<WhatifOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "Replay a measured run under other schedules, micro-batch counts and chunk counts,\n"
      "from its own measured costs. Without --schedule, --micro-batches or --chunks it\n"
      "sweeps every schedule x M in {M, 2M, 4M} x V in {1, 2, 4} and ranks them by\n"
      "predicted step time; with them it predicts that one scenario.\n\n"
      "Example:\n  pipescope whatif logs/\n  pipescope whatif logs/ --schedule vpp --chunks 2 -o "
      "out/");
  cmd->add_option("paths", options->paths,
                  "Log folders (holding workerlog.N files, or machineK/ folders of them), log or "
                  "record files")
      ->required();
  cmd->add_option("-o,--output", options->output_dir,
                  "Write whatif.json (and, for one scenario, whatif-trace.json) to this folder");
  cmd->add_option("--schedule", options->schedule,
                  "Scenario schedule: fthenb, 1f1b, eager1f1b, vpp, vpp-split-backward, zbh1,\n"
                  "dygraph-1f1b, "
                  "dygraph-interleave, torch-gpipe, torch-1f1b, torch-interleaved1f1b,\n"
                  "torch-interleavedzerobubble, torch-zbvzerobubble, torch-dualpipev\n"
                  "(default: the measured one)");
  cmd->add_option("--micro-batches", options->micro_batches,
                  "Scenario micro-batches per step M (default: the measured M)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--chunks", options->chunks,
                  "Scenario model chunks per stage V (interleaved schedules; default: the\n"
                  "measured V, or 2 for an interleaved schedule replayed from a 1-chunk run)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--weight-share", options->weight_share,
                  "Share of a whole backward given to the weight-gradient half when a\n"
                  "zero-bubble schedule replays a run whose backwards were not split")
      ->capture_default_str();
  cmd->add_option("--replay-steps", options->replay_steps,
                  "Steps replayed per scenario, each op's cost drawn from the measured ones\n"
                  "(default: as many as the run's complete steps, at most 1000; the model\n"
                  "error always replays that many)")
      ->check(CLI::Range(1, kMaxReplaySteps));
  cmd->add_flag("-q,--quiet", options->quiet, "Do not print the table");
  add_run_input_options(cmd, *options);
  cmd->callback([options, &status] { status = run_whatif(*options); });
}

}  // namespace pipescope::cli
