// `pipescope watch PATH...`: follows the logs of a running job and prints
// each step's bubble as the step completes (engine/live/); on SIGINT or
// SIGTERM, or once the inputs were idle for --until-idle, writes summary.json
// (and trace.json) from a fresh full pass, as `analyze` would, and exits 0.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "analysis/stage_map.h"
#include "command.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/summary_json.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/input_formats.h"
#include "live/live_run.h"
#include "live/live_source.h"
#include "live/watch_output.h"
#include "load/load_run.h"
#include "model/option_words.h"
#include "run_inputs.h"
#include "source/change_notifier.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct WatchOptions : RunInputOptions {
  std::vector<std::string> paths;
  double interval_s = 1.0;
  std::string jsonl;
  std::string prometheus;
  double until_idle_s = 0;  // 0: until a signal
  double wait_for_input_s = 600;
  std::string output_dir = "pipescope-out";
  bool no_trace = false;
  std::string run_name;
  bool quiet = false;
};

volatile std::sig_atomic_t g_stop = 0;  // the signal that stops the watch; 0: none

void on_stop_signal(int signal) { g_stop = signal; }

/// The stop signal's name, for messages.
const char* stop_signal_name() {
  return g_stop == SIGINT ? "SIGINT (Ctrl-C)" : g_stop == SIGTERM ? "SIGTERM" : "a signal";
}

/// SIGINT and SIGTERM end the watch (the final pass still runs); without
/// SA_RESTART, so a wait in poll(2) returns at once.
void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

/// Inputs that can be followed while they grow: all but those the format
/// table says are written whole once the run is over (Paddle's concatenation
/// of the dygraph records, `pipeline_profile.json`).
void refuse_unfollowable(const std::vector<InputFile>& inputs) {
  for (const InputFile& input : inputs) {
    const auto unfollowable = input_format_spec(input.format).unfollowable;
    const std::string_view why =
        unfollowable ? unfollowable(fs::path(input.path).filename().string()) : "";
    if (why.empty()) continue;
    throw InputError(fmt::format("{} {}, or analyse it with `pipescope analyze`", input.path, why));
  }
}

/// A stage map that names devices is checked against the inputs before
/// anything is followed, as analyze checks it (formats whose reader places
/// the devices, dygraph records and traces, are checked by the final pass).
void check_stage_map(const std::vector<InputFile>& inputs, const LoadOptions& load) {
  const StageSpec& stages = load.pipeline.stages;
  if (stages.form != StageSpec::Form::tp && stages.form != StageSpec::Form::list) return;
  Run placed;
  for (const InputFile& input : inputs) {
    if (input_format_spec(input.format).reader_places_devices) return;
    Device& device = placed.devices.emplace_back();
    device.index = input.device;
    device.path = input.path;
  }
  std::sort(placed.devices.begin(), placed.devices.end(),
            [](const Device& a, const Device& b) { return a.index < b.index; });
  try {
    resolve_stage_map(placed, stages, load.pipeline.words->name(CallerOption::stages));
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

std::string default_run_name(const std::vector<std::string>& paths) {
  std::error_code ec;
  fs::path path = fs::weakly_canonical(fs::absolute(paths.front()), ec);
  if (ec) path = paths.front();
  std::string name = path.filename().string();
  return name.empty() ? path.string() : name;
}

/// Every text naming a copy names its input instead.
void name_inputs(LoadedRun& loaded, const std::map<std::string, std::string>& input_of_copy) {
  auto fix = [&](std::string& text) {
    for (const auto& [copy, input] : input_of_copy) {
      for (std::size_t at = text.find(copy); at != std::string::npos;
           at = text.find(copy, at + input.size())) {
        text.replace(at, copy.size(), input);
      }
    }
  };
  Run& run = loaded.run;
  for (Device& d : run.devices) fix(d.path);
  for (InputStats& i : run.inputs) fix(i.path);
  for (Diagnostic& d : run.diagnostics) fix(d.path);
  for (LeftOutDevice& d : run.left_out) fix(d.path);
  for (std::vector<LaunchSegment>* segments : {&run.segments, &loaded.all_segments}) {
    for (LaunchSegment& s : *segments) {
      for (std::string& e : s.evidence) fix(e);
    }
  }
  for (std::vector<Warning>* warnings :
       {&run.notes, &loaded.input_warnings, &loaded.launch_warnings, &loaded.pipeline.warnings}) {
    for (Warning& w : *warnings) fix(w.message);
  }
}

/// The fresh full pass of the end: summary.json (and trace.json), as
/// `analyze` writes them. `read_copies`: inputs truncated or replaced while
/// followed (copytruncate), each with the copy of every line read of it: the
/// pass reads the copy, so the summary covers the whole run followed, as
/// `analyze` of the concatenation of what was read, under the input's name.
int final_pass(const WatchOptions& options, const LoadOptions& load,
               const std::map<std::string, std::string>& read_copies) {
  std::vector<InputFile> inputs =
      find_inputs(options.paths, options.devices, nullptr, load.machine_order, *load.ingest.words);
  std::map<std::string, std::string> input_of_copy;
  for (InputFile& input : inputs) {
    const auto copy = read_copies.find(input.path);
    if (copy == read_copies.end()) continue;
    input_of_copy[copy->second] = input.path;
    input.path = copy->second;
  }
  LoadedRun loaded = load_run(inputs, load);
  name_inputs(loaded, input_of_copy);
  if (loaded.run.job_count() == 0) {
    fmt::print(stderr,
               "pipescope: error: no job lines found in {} input file{} (looked for {}); "
               "nothing to analyse\n",
               inputs.size(), inputs.size() == 1 ? "" : "s",
               job_lines_looked_for(load.ingest, *load.ingest.words));
    return kExitUsage;
  }
  for (const Warning& warning : loaded.pipeline.warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", warning.message);
  }
  ensure_output_dir(options.output_dir);
  const fs::path out(options.output_dir);
  write_summary_json(loaded.run, loaded.metrics, loaded.pipeline, loaded.kernels,
                     (out / "summary.json").string());
  std::string written = (out / "summary.json").string();
  if (!options.no_trace) {
    TraceOptions trace;
    trace.pipeline = &loaded.pipeline;
    write_chrome_trace(loaded.run, loaded.metrics, trace, (out / "trace.json").string());
    written += " and " + (out / "trace.json").string();
  }
  if (!options.quiet) fmt::print("wrote {}\n", written);
  return kExitOk;
}

/// The inputs, once there: a watch started before the job wrote its first log
/// waits for it (the paths missing, or a folder without inputs yet), up to
/// --wait-for-input seconds, saying at once what it waits for (a path that
/// does not exist is named: a typo shows then, not minutes later); then the
/// discovery error (exit 2). A stop signal ends the wait with what happened;
/// any other discovery error ends it at once.
std::vector<InputFile> wait_for_inputs(const WatchOptions& options, const LoadOptions& load) {
  const auto began = Clock::now();
  const auto deadline =
      began + std::chrono::milliseconds(static_cast<long long>(options.wait_for_input_s * 1000));
  std::string missing;  // a path that does not exist
  bool said = false;
  while (true) {
    std::string why;
    missing.clear();
    for (const std::string& path : options.paths) {
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        why = fmt::format("{}: no such file or folder", path);
        missing = path;
      }
    }
    if (why.empty()) {
      try {
        return find_inputs(options.paths, options.devices, nullptr, load.machine_order,
                           *load.ingest.words);
      } catch (const InputError& e) {
        // Only a folder without inputs yet is worth waiting for.
        if (std::string_view(e.what()).find("no worker logs in") == std::string_view::npos) throw;
        why = e.what();
      }
    }
    if (g_stop != 0) {
      const double waited = std::chrono::duration<double>(Clock::now() - began).count();
      throw InputError(
          fmt::format("stopped by {} after {:.1f} s of waiting, before any input "
                      "appeared: {}",
                      stop_signal_name(), waited, why));
    }
    if (Clock::now() >= deadline) {
      throw InputError(fmt::format("no input appeared within {} s (--wait-for-input): {}",
                                   options.wait_for_input_s, why));
    }
    if (!said && !options.quiet) {
      if (!missing.empty()) {
        fmt::print(stderr,
                   "pipescope: {} does not exist (yet): waiting up to {} s for it to appear "
                   "(--wait-for-input; check the path, or Ctrl-C to stop)\n",
                   missing, options.wait_for_input_s);
      } else {
        fmt::print(stderr,
                   "pipescope: waiting for the first input ({}), up to {} s "
                   "(--wait-for-input; Ctrl-C to stop)\n",
                   why, options.wait_for_input_s);
      }
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::max<long long>(10, static_cast<long long>(options.interval_s * 1000))));
  }
}

void print_notes(const std::vector<std::string>& notes) {
  for (const std::string& note : notes) fmt::print(stderr, "pipescope: note: {}\n", note);
}

/// Prints the steps completed (a line each on stdout, and to --jsonl) and
/// writes --prometheus for the last of them.
void report_steps(const std::vector<LiveStep>& steps, const WatchOptions& options,
                  const std::string& run_name, std::FILE* jsonl, const LiveRun& live) {
  for (const LiveStep& step : steps) {
    fmt::print("{}\n", format_step_line(step));
    if (jsonl != nullptr) fmt::print(jsonl, "{}\n", step_json(run_name, step));
  }
  std::fflush(stdout);
  if (jsonl != nullptr) std::fflush(jsonl);
  if (!steps.empty() && !options.prometheus.empty()) {
    write_file_atomically(
        options.prometheus,
        prometheus_text(run_name, steps.back(), {live.steps_reported(), live.jobs_seen()}));
  }
}

int run_watch(const WatchOptions& options) {
  if (!options.jsonl.empty() && options.jsonl == options.prometheus) {
    throw InputError("--jsonl and --prometheus name the same file");
  }
  // Watched folders are searched again at every look: summary.json and the
  // traces written at the end never go among them.
  refuse_output_inside_inputs(options.output_dir, options.paths);
  const LoadOptions load = make_load_options(options);  // throws: usage error
  install_stop_handlers();
  std::vector<InputFile> inputs = wait_for_inputs(options, load);
  refuse_unfollowable(inputs);
  check_stage_map(inputs, load);
  for (const InputFile& input : inputs) {
    for (const std::string& output : {options.jsonl, options.prometheus}) {
      std::error_code ec;
      if (!output.empty() && fs::equivalent(output, input.path, ec)) {
        throw InputError(
            fmt::format("output file {} is the input {}; inputs are never "
                        "overwritten",
                        output, input.path));
      }
    }
  }
  const std::string run_name =
      options.run_name.empty() ? default_run_name(options.paths) : options.run_name;
  std::FILE* jsonl = nullptr;
  if (!options.jsonl.empty()) {
    jsonl = std::fopen(options.jsonl.c_str(), "a");
    if (jsonl == nullptr) {
      throw InputError(
          fmt::format("cannot open --jsonl {}: {}", options.jsonl, std::strerror(errno)));
    }
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> jsonl_file(
      jsonl, [](std::FILE* f) { return f ? std::fclose(f) : 0; });

  LiveOptions live_options;
  live_options.pipeline = load.pipeline;
  live_options.first_step = load.first_step;
  live_options.max_line_bytes = load.ingest.limits.max_line_bytes;
  live_options.events = load.events.matcher.get();
  live_options.job_line = load.ingest.job_line;
  LiveRun live(live_options);
  LiveSourceOptions source_options;
  source_options.ingest = load.ingest;
  // What was read of each worker log, kept until the end: a log rotated
  // under the watch (copytruncate) no longer holds its head then.
  const fs::path kept_read =
      fs::path(options.output_dir) / fmt::format(".watch-read.{}", static_cast<long>(getpid()));
  source_options.keep_read_dir = kept_read.string();
  // Removed at the end, however it ends.
  struct RemoveKept {
    fs::path path;
    ~RemoveKept() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove_kept{kept_read};

  source_options.ingest.on_progress = nullptr;
  // Each look reads at most this much of a file, and completed steps are
  // taken after each, so memory follows the open steps, not the backlog.
  source_options.look_bytes = std::uint64_t{1} << 20;
  LiveSources sources(source_options);
  std::set<std::string> watched;
  ChangeNotifier notifier;
  for (const std::string& path : options.paths) notifier.watch(path);
  const auto interval = std::chrono::milliseconds(
      std::max<long long>(1, static_cast<long long>(options.interval_s * 1000)));
  Clock::time_point last_data = Clock::now();
  bool idle_end = false;
  std::string discovery_error;
  while (g_stop == 0) {
    try {
      std::vector<InputFile> now = find_inputs(options.paths, options.devices, nullptr,
                                               load.machine_order, *load.ingest.words);
      refuse_unfollowable(now);
      inputs = std::move(now);
    } catch (const InputError& e) {
      // A folder caught mid-change, or a new input that cannot be followed:
      // keep following what was found before, and say why once.
      if (discovery_error != e.what()) {
        discovery_error = e.what();
        fmt::print(stderr, "pipescope: note: {}; following the inputs found before\n", e.what());
      }
    }
    sources.set_inputs(inputs, live);
    for (const InputFile& input : inputs) {
      if (!watched.insert(input.path).second) continue;
      std::string parent = fs::path(input.path).parent_path().string();
      notifier.watch(parent.empty() ? "." : parent);
    }
    bool got_any = false;
    for (bool more = true; more && g_stop == 0;) {
      const LiveSources::Look look = sources.look(live);
      more = look.more;
      got_any = got_any || look.got_any;
      print_notes(sources.take_notes());
      if (got_any) last_data = Clock::now();
      idle_end = !more && options.until_idle_s > 0 &&
                 Clock::now() - last_data >= std::chrono::duration<double>(options.until_idle_s);
      if (!got_any && !idle_end) break;
      print_notes(live.take_notes());
      report_steps(live.take_completed(idle_end), options, run_name, jsonl_file.get(), live);
    }
    if (idle_end) break;
    const Clock::time_point woke = Clock::now();
    if (notifier.wait(interval)) {
      // Woken by a write: look again soon, but not on every single write.
      const auto spacing = std::min<Clock::duration>(interval, std::chrono::milliseconds(100));
      const auto since = Clock::now() - woke;
      if (since < spacing) std::this_thread::sleep_for(spacing - since);
    }
  }
  if (!idle_end) {
    // Stopped by a signal: what is whole in the files now, and the last step
    // when the contract calls it complete, as the final pass will.
    for (bool more = true; more;) more = sources.look(live).more;
    print_notes(sources.take_notes());
    print_notes(live.take_notes());
    report_steps(live.take_completed(true), options, run_name, jsonl_file.get(), live);
  }
  jsonl_file.reset();
  return final_pass(options, load, sources.read_copies());
}

}  // namespace

void register_watch_command(CLI::App& app, int& status) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Follow the inputs of a running job (worker logs, plain or .gz/.zst; .ivl records;\n"
      "Paddle dygraph records; PyTorch traces once each is written) and print each step's\n"
      "bubble as the step completes; on Ctrl-C (SIGINT), SIGTERM or after --until-idle,\n"
      "write summary.json and trace.json from a full pass, as analyze does.\n\n"
      "Example:\n  pipescope watch logs/ --prometheus /var/lib/node_exporter/pipescope.prom");
  cmd->add_option("paths", options->paths,
                  "Log folders (workerlog.N files, or machineK/ folders of them), .ivl record\n"
                  "files, dygraph record files, traces")
      ->required();
  cmd->add_option("--interval", options->interval_s, "Seconds between looks at the inputs")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--jsonl", options->jsonl, "Append each completed step to FILE as a JSON object");
  cmd->add_option("--prometheus", options->prometheus,
                  "Rewrite FILE (node_exporter textfile format, .prom) after each step");
  cmd->add_option("--until-idle", options->until_idle_s,
                  "Stop once no input grew for S seconds (the last step counts then), write\n"
                  "the outputs and exit (default: run until SIGINT or SIGTERM)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--wait-for-input", options->wait_for_input_s,
                  "Seconds to wait for the first input when the paths do not exist yet or\n"
                  "hold no logs (a watch started before the job); then exit 2")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("-o,--output", options->output_dir,
                  "Output folder of the final summary.json and trace.json")
      ->capture_default_str();
  cmd->add_flag("--no-trace", options->no_trace, "Do not write trace.json at the end");
  cmd->add_option("--run", options->run_name,
                  "The run label of the JSON lines and the Prometheus series (default: the\n"
                  "first path's name)");
  cmd->add_flag("-q,--quiet", options->quiet, "Do not print the \"wrote\" line at the end");
  // analyze's input options: the live lines use --devices, --stages, --first-step,
  // --pipeline, --job-pattern/--job-kinds, --job-line and --max-line-kib; the final
  // pass all of them.
  add_run_input_options(cmd, *options);
  cmd->callback([options, &status] { status = run_watch(*options); });
}

}  // namespace pipescope::cli
