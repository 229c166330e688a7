#include "run_inputs.h"

#include <fmt/core.h>

#include <memory>
#include <stdexcept>

#include "analysis/layout.h"
#include "ingest/job_pattern.h"
#include "model/errors.h"
#include "option_words.h"
#include "scan/decimal_time.h"
#include "scan/job_line_regex.h"

namespace pipescope::cli {

void add_run_input_options(CLI::App* cmd, RunInputOptions& options) {
  cmd->add_option("--devices", options.devices,
                  "Analyse only these global device indices, e.g. 0,2,3 or 0-3");
  cmd->add_option("--machine-order", options.machine_order,
                  "The machines' order, by folder name, e.g. node3,node1,node2 (every machine\n"
                  "once); default: numeric-aware by name. It numbers the machines and the\n"
                  "global device indices, so --devices counts in it")
      ->delimiter(',');
  cmd->add_option("-j,--threads", options.threads, "Worker threads (0 = one per core)")
      ->capture_default_str();
  cmd->add_flag("--allow-missing", options.allow_missing,
                "Analyse the run even when an input cannot be read (permission denied, I/O\n"
                "error): its device is left out of the figures, with a warning (default: exit 2)");
  cmd->add_option("--layout", options.layout,
                  "The run's parallel layout, e.g. pp=4,dp=8,tp=8 (absent sizes are 1), and the\n"
                  "order of the ranks' mesh, outermost first: order=dp,pp,tp (the default, Paddle\n"
                  "fleet's) or order=pp,dp,tp (Megatron-LM, DeepSpeed); default: found from the\n"
                  "jobs' order and dependency timing");
  cmd->add_option("--stages", options.stages,
                  "Pipeline stage map instead of a layout: tp=N (groups of N consecutive\n"
                  "devices), a list such as 0-3,4-7 or 0+4,1+5 (one item per stage, global\n"
                  "device indices), auto (guess tensor-parallel peers), or device (one stage\n"
                  "per device)");
  cmd->add_flag("--no-clock-fix", options.no_clock_fix,
                "Do not correct clock skew between machines (violations are still counted)");
  cmd->add_option("--clock-offset", options.clock_offsets,
                  "Impose a machine's clock offset instead of estimating, e.g. machine1=+2.5ms\n"
                  "(units ns, us, ms, s; subtracted from that machine's times); repeatable");
  cmd->add_option("--segment", options.segment,
                  "Analyse one launch segment only: its index (0, 1, ...; segments are the\n"
                  "launches a relaunch appended to the same logs) or last");
  cmd->add_option(
         "--pipeline", options.pipeline,
         "Paddle dygraph records or PyTorch traces of several pipelines (data-parallel\n"
         "replicas): analyse pipeline K (0 = the ranks lowest for each stage, the default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--first-step", options.first_step,
                  "Number the steps from N (inputs without step numbers, such as Paddle\n"
                  "dygraph records, count from 0); overrides the step-start line of the first\n"
                  "launch segment")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--chunk-mib", options.chunk_mib, "Read chunk size in MiB")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-line-kib", options.max_line_kib,
                  "Longest line kept, in KiB; longer lines are skipped and reported")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--job-pattern", options.job_pattern,
                  "Profiler traces (Chrome-trace JSON): a regular expression for the names of\n"
                  "user annotations that are jobs, with a named group op ((?P<op>...)) and\n"
                  "optional mb, stage and chunk; without mb, ProfilerStep#N spans make the steps");
  cmd->add_option("--step-range", options.step_range,
                  "Nsight Systems exports: a regular expression (RE2) an NVTX range's whole name\n"
                  "matches to be step N, N its first group (or the group named step); default\n"
                  "torch's ProfilerStep#N ranges; none at all: one window");
  cmd->add_option("--job-line", options.job_line,
                  "Worker logs of another framework: a line this regular expression (RE2)\n"
                  "matches, anywhere in the line, is a job, its named captures giving its type,\n"
                  "micro-batch, start and end ((?P<type>...), mb, start, end) and optionally its\n"
                  "id; start and end are decimal times in --job-line-unit, read exactly.\n"
                  "PaddlePaddle's own job lines are then not read (its step-start lines are)");
  cmd->add_option("--job-line-unit", options.job_line_unit,
                  "With --job-line: the unit of the start and end captures, s, ms, us or ns\n"
                  "(default ms, as Paddle's)");
  cmd->add_flag("--no-events", options.no_events,
                "Do not look for log events (checkpoints, NCCL warnings, out-of-memory retries,\n"
                "...) in text logs; they are on by default");
  cmd->add_option("--patterns", options.patterns,
                  "An event pattern file (the format of the shipped library, see the guide's\n"
                  "\"Log events\"): its entries are added, or replace the shipped entries with\n"
                  "the same id; repeatable")
      ->check(CLI::ExistingFile);
  cmd->add_option("--job-kinds", options.job_kinds,
                  "With --job-pattern or --job-line: op (or type) text to job type, e.g.\n"
                  "F=forward,B=backward (an op that is a type name, such as forward, needs none)");
}

LoadOptions make_load_options(const RunInputOptions& options) {
  LoadOptions load;
  // The engine's messages name the options in the command's words.
  const std::shared_ptr<const OptionWords> words = command_line_words(options.max_line_kib);
  load.ingest.words = load.pipeline.words = load.inputs.words = words;
  if (!options.layout.empty() && !options.stages.empty()) {
    throw InputError("--layout and --stages both say how the devices form stages: give one");
  }
  try {  // parsed once, here
    if (!options.layout.empty())
      load.pipeline.layout = parse_layout_spec(options.layout, words->name(CallerOption::layout));
    load.pipeline.stages = parse_stage_spec(options.stages, words->name(CallerOption::stages));
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  load.pipeline.clock.fix = !options.no_clock_fix;
  for (const std::string& spec : options.clock_offsets) {
    // throws: usage error
    load.pipeline.clock.imposed.push_back(
        parse_clock_offset(spec, words->name(CallerOption::clock_offset)));
  }
  load.machine_order = options.machine_order;
  load.inputs.allow_unreadable = options.allow_missing;
  // A --devices selection leaves rank gaps on purpose.
  load.inputs.check_layout = options.devices.empty();
  if (!options.segment.empty()) {
    try {
      load.segment = parse_segment_choice(options.segment);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--segment: {}", e.what()));
    }
  }
  load.ingest.threads = options.threads;
  load.ingest.pipeline = options.pipeline;
  load.first_step = options.first_step;
  load.ingest.limits.chunk_bytes = options.chunk_mib << 20;
  load.ingest.limits.max_line_bytes = options.max_line_kib << 10;
  if (!options.job_kinds.empty() && options.job_pattern.empty() && options.job_line.empty()) {
    throw InputError("--job-kinds needs --job-pattern or --job-line");
  }
  if (!options.job_pattern.empty()) {
    try {  // compiled once, here: every trace's reader shares it
      load.ingest.job_pattern =
          std::make_shared<const JobPattern>(options.job_pattern, options.job_kinds);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--job-pattern: {}", e.what()));
    }
  }
  load.ingest.step_range = options.step_range;
  if (!options.job_line_unit.empty() && options.job_line.empty()) {
    throw InputError("--job-line-unit needs --job-line");
  }
  if (!options.job_line.empty()) {
    TimeUnit unit = TimeUnit::ms;
    if (!options.job_line_unit.empty()) {
      const auto given = parse_time_unit(options.job_line_unit);
      if (!given) {
        throw InputError(fmt::format("--job-line-unit {}: the unit is one of s, ms, us and ns",
                                     options.job_line_unit));
      }
      unit = *given;
    }
    JobLineRegex::Kinds kinds;
    try {
      kinds = JobLineRegex::parse_kinds(options.job_kinds);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--job-kinds: {}", e.what()));
    }
    try {
      load.job_line =
          std::make_shared<const JobLineRegex>(options.job_line, unit, std::move(kinds));
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--job-line: {}", e.what()));
    }
    load.ingest.job_line = load.job_line.get();
  }
  if (options.no_events && !options.patterns.empty()) {
    throw InputError("--patterns and --no-events contradict each other: give one");
  }
  // throws InputError
  load.events = make_event_setup(!options.no_events, options.patterns, *words);
  load.ingest.events = load.events.matcher.get();
  load.ingest.events_off = load.events.off;
  return load;
}

bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto o = outer.begin();
  auto i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

void refuse_output_inside_inputs(const std::string& out, const std::vector<std::string>& inputs,
                                 std::string_view advice) {
  const std::filesystem::path where = resolved(out);
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec) && is_within(where, resolved(input))) {
      throw InputError(
          fmt::format("output folder {} is inside input folder {}; choose another "
                      "with -o{}",
                      where.string(), input, advice));
    }
  }
}

std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path result =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? std::filesystem::absolute(path) : result;
}

}  // namespace pipescope::cli
