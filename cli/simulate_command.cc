// `pipescope simulate`: writes a synthetic pipeline-parallel run as worker
// logs plus the metrics it must yield (expected.json), for tests and benchmarks.
#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "option_words.h"
#include "simulate/dygraph_writer.h"
#include "simulate/log_writer.h"
#include "simulate/nsys_writer.h"
#include "simulate/torch_kernel_writer.h"
#include "simulate/torch_trace_writer.h"

namespace pipescope::cli {

namespace {

struct SimulateOptions {
  std::string output;
  bool force = false;
  std::string schedule = "1f1b";
  int stages = 4;
  int micro_batches = 8;
  /// 0: one chunk, or two for the interleaved schedule.
  int chunks = 0;
  int steps = 3;
  int machines = 1;
  int devices_per_stage = 1;
  std::optional<std::int64_t> first_step;
  std::uint64_t seed = 1;
  int noise_per_job = 0;
  bool shuffle = false;
  bool ansi = false;
  bool crlf = false;
  bool comm = false;
  bool lr = false;
  std::vector<std::string> slow_stages;
  std::vector<std::string> skews;
  std::vector<std::string> stalls;  // --stall STEP:STAGE:MS
  bool events = false;              // --events (worker logs)
  std::string utc_offset;           // --utc-offset [+-]HH:MM (worker logs)
  std::string chunk_names = "digit";
  std::string job_id = "index";
  std::string target_bytes;
  std::string ivl_dir;
  std::string format = "worker-log";  // --format worker-log|paddle-dygraph|torch|torch-kernels|nsys
  std::string concatenation_dir;      // --concatenation DIR (paddle-dygraph)
  // --format torch-kernels only.
  std::optional<int> kernels_per_job;
  bool no_comms_id = false;
  std::optional<std::string> nccl_names;
  int time_decimals = 6;
  std::string resolution = "us";
  std::int64_t start_ns = 1'697'793'307'213'000'000;
  double forward_ms = 12;
  double backward_ms = 12;
  double weight_ms = 10;
  double optimizer_ms = 8;
  double latency_us = 150;
  double jitter = 0.1;
};

std::int64_t parse_int(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not an integer", what, text));
  }
  return value;
}

double parse_double(std::string_view text, std::string_view what) {
  try {
    std::size_t used = 0;
    const double value = std::stod(std::string(text), &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(fmt::format("{}: '{}' is not a number", what, text));
}

/// "KEY:VALUE" split at the first ':'.
std::pair<std::string_view, std::string_view> split_pair(std::string_view text,
                                                         std::string_view what) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not of the form A:B", what, text));
  }
  return {text.substr(0, colon), text.substr(colon + 1)};
}

/// "1000000", "64K", "512M", "1G" (binary multiples).
std::uint64_t parse_bytes(std::string_view text) {
  if (text.empty()) return 0;
  std::uint64_t scale = 1;
  switch (text.back()) {
    case 'k':
    case 'K':
      scale = 1ULL << 10;
      break;
    case 'm':
    case 'M':
      scale = 1ULL << 20;
      break;
    case 'g':
    case 'G':
      scale = 1ULL << 30;
      break;
    default:
      break;
  }
  if (scale != 1) text.remove_suffix(1);
  const std::int64_t value = parse_int(text, "--target-bytes");
  if (value < 0 || static_cast<std::uint64_t>(value) > (1ULL << 42) / scale) {
    throw std::invalid_argument(fmt::format("--target-bytes must be in 0..4T, got {}", text));
  }
  return static_cast<std::uint64_t>(value) * scale;
}

std::int64_t ms_to_ns(double ms, std::string_view what) {
  if (!(ms > 0 && ms < 1e9)) {
    throw std::invalid_argument(fmt::format("{} must be positive, got {}", what, ms));
  }
  return static_cast<std::int64_t>(ms * 1e6 + 0.5);
}

sim::SimConfig make_config(const SimulateOptions& o) {
  sim::SimConfig config;
  config.words = simulate_command_words();
  const auto kind = sim::parse_schedule_kind(o.schedule);
  if (!kind) throw std::invalid_argument(fmt::format("unknown schedule '{}'", o.schedule));
  config.shape.kind = *kind;
  config.shape.stages = o.stages;
  config.shape.micro_batches = o.micro_batches;
  config.shape.chunks = o.chunks != 0 ? o.chunks : (sim::has_chunks(*kind) ? 2 : 1);
  config.steps = o.steps;
  config.machines = o.machines;
  config.devices_per_stage = o.devices_per_stage;
  config.seed = o.seed;
  config.start_ns = o.start_ns;
  config.resolution_ns = o.format == "paddle-dygraph" ? 1'000'000 : o.resolution == "ns" ? 1 : 1000;
  config.costs = {ms_to_ns(o.forward_ms, "--forward-ms"), ms_to_ns(o.backward_ms, "--backward-ms"),
                  ms_to_ns(o.weight_ms, "--weight-ms")};
  config.optimizer_ns = ms_to_ns(o.optimizer_ms, "--optimizer-ms");
  if (!(o.latency_us >= 0 && o.latency_us < 1e9)) {
    throw std::invalid_argument(fmt::format("--latency-us must be >= 0, got {}", o.latency_us));
  }
  config.p2p_latency_ns = static_cast<std::int64_t>(o.latency_us * 1e3 + 0.5);
  config.jitter = o.jitter;
  config.comm_jobs = o.comm;
  config.lr_jobs = o.lr;
  if (!o.slow_stages.empty()) {
    config.stage_slowdown.assign(o.stages > 0 ? o.stages : 0, 1.0);
    for (const auto& spec : o.slow_stages) {
      const auto [stage_text, factor_text] = split_pair(spec, "--slow-stage");
      const std::int64_t stage = parse_int(stage_text, "--slow-stage");
      if (stage < 0 || stage >= o.stages) {
        throw std::invalid_argument(
            fmt::format("--slow-stage: stage {} is not in 0..{}", stage, o.stages - 1));
      }
      config.stage_slowdown[stage] = parse_double(factor_text, "--slow-stage");
    }
  }
  for (const auto& spec : o.stalls) {
    // STEP:STAGE:MS, STEP counted from the first step written (0-based).
    const auto [step_text, rest] = split_pair(spec, "--stall");
    const auto [stage_text, ms_text] = split_pair(rest, "--stall");
    const double ms = parse_double(ms_text, "--stall");
    if (!(ms > 0 && ms <= 3'600'000)) {
      throw std::invalid_argument(fmt::format("--stall: {} ms is not in (0, 3600000]", ms_text));
    }
    config.stalls.push_back({static_cast<int>(parse_int(step_text, "--stall")),
                             static_cast<int>(parse_int(stage_text, "--stall")),
                             static_cast<std::int64_t>(std::llround(ms * 1e6))});
  }
  if (!o.skews.empty()) {
    config.machine_skew_ns.assign(o.machines > 0 ? o.machines : 0, 0);
    for (const auto& spec : o.skews) {
      const auto [machine_text, ns_text] = split_pair(spec, "--skew");
      const std::int64_t machine = parse_int(machine_text, "--skew");
      if (machine < 0 || machine >= o.machines) {
        throw std::invalid_argument(
            fmt::format("--skew: machine {} is not in 0..{}", machine, o.machines - 1));
      }
      config.machine_skew_ns[machine] = parse_int(ns_text, "--skew");
    }
  }
  return config;
}

/// `+05:45`, `-07:00`, `+8` (hours): ns; "" is 0.
std::int64_t parse_utc_offset(const std::string& text) {
  if (text.empty()) return 0;
  const char sign = text.front();
  if (sign != '+' && sign != '-') {
    throw std::invalid_argument(
        fmt::format("--utc-offset: '{}' is not of the form +HH:MM or -HH:MM", text));
  }
  const std::string body = text.substr(1);
  const std::size_t colon = body.find(':');
  const std::int64_t hours = parse_int(body.substr(0, colon), "--utc-offset");
  const std::int64_t minutes =
      colon == std::string::npos ? 0 : parse_int(body.substr(colon + 1), "--utc-offset");
  if (hours < 0 || hours > 14 || minutes < 0 || minutes > 59) {
    throw std::invalid_argument(fmt::format("--utc-offset: '{}' is out of range", text));
  }
  const std::int64_t ns = (hours * 60 + minutes) * 60'000'000'000;
  return sign == '-' ? -ns : ns;
}

sim::LogWriterOptions make_writer_options(const SimulateOptions& o) {
  sim::LogWriterOptions options;
  options.dir = o.output;
  options.force = o.force;
  options.first_step = o.first_step;
  options.noise_per_job = o.noise_per_job;
  options.shuffle = o.shuffle;
  options.ansi = o.ansi;
  options.crlf = o.crlf;
  options.chunk_naming =
      o.chunk_names == "paren" ? sim::ChunkNaming::paren : sim::ChunkNaming::digit;
  options.job_id = o.job_id == "counter"      ? sim::JobIdStyle::counter
                   : o.job_id == "microbatch" ? sim::JobIdStyle::micro_batch
                                              : sim::JobIdStyle::index;
  options.time_decimals = o.time_decimals;
  options.target_bytes = parse_bytes(o.target_bytes);
  options.ivl_dir = o.ivl_dir;
  options.events = o.events;
  options.utc_offset_ns = parse_utc_offset(o.utc_offset);
  return options;
}

int run_simulate_torch(const SimulateOptions& o, const sim::SimConfig& config) {
  if (!o.ivl_dir.empty() || o.noise_per_job != 0 || o.shuffle || o.ansi || o.crlf ||
      !o.target_bytes.empty()) {
    throw std::invalid_argument(
        "--format torch writes traces only: --ivl, --noise, --shuffle, --ansi, --crlf and "
        "--target-bytes are for worker logs");
  }
  sim::TorchTraceOptions options;
  options.dir = o.output;
  options.force = o.force;
  options.first_step = o.first_step.value_or(0);
  const sim::WriteReport report = sim::write_torch_traces(config, options);
  fmt::print("wrote {} PyTorch profiler traces to {}: {} jobs, {} steps, {} devices, {} bytes\n",
             report.files.size(), o.output, report.jobs, report.steps, report.devices,
             report.bytes);
  for (const auto& file : report.files) {
    fmt::print("  {}  {} jobs, {} bytes\n", file.path.string(), file.jobs, file.bytes);
  }
  fmt::print("expected metrics: {} (bubble ratio {:.6f}, {} step windows)\n",
             report.expected_path.string(), report.expected.bubble_ratio,
             report.expected.steps.size());
  return kExitOk;
}

int run_simulate_torch_kernels(const SimulateOptions& o, const sim::SimConfig& config) {
  if (!o.ivl_dir.empty() || o.noise_per_job != 0 || o.shuffle || o.ansi || o.crlf ||
      !o.target_bytes.empty() || !o.concatenation_dir.empty()) {
    throw std::invalid_argument(
        "--format torch-kernels writes traces only: --ivl, --noise-per-job, --shuffle, --ansi, "
        "--crlf, --target-bytes and --concatenation are for other formats");
  }
  if (o.lr || o.comm) {
    throw std::invalid_argument(
        "--format torch-kernels has no lr or send/recv jobs (--lr, --comm): its NCCL kernels "
        "are the transfers");
  }
  if (config.p2p_latency_ns < config.resolution_ns) {
    throw std::invalid_argument(fmt::format(
        "--format torch-kernels needs --latency-us of at least the time resolution ({} ns): it "
        "is how long each NCCL transfer takes",
        config.resolution_ns));
  }
  sim::TorchKernelOptions options;
  options.dir = o.output;
  options.force = o.force;
  options.first_step = o.first_step.value_or(0);
  options.kernels_per_job = o.kernels_per_job.value_or(24);
  options.comms_id = !o.no_comms_id;
  options.nccl = o.nccl_names.value_or("new") == "old" ? sim::NcclGeneration::old_names
                                                       : sim::NcclGeneration::new_names;
  const sim::KernelTraceReport report = sim::write_torch_kernel_traces(config, options);
  fmt::print(
      "wrote {} PyTorch profiler traces (kernels, no labels) to {}: {} GPU activities, {} NCCL "
      "kernels, {} steps, {} ranks on {} machine{}, {} bytes\n",
      report.files.size(), o.output, report.activities, report.expected.comm_kernels, report.steps,
      report.ranks, report.machines, report.machines == 1 ? "" : "s", report.bytes);
  const auto& e = report.expected;
  fmt::print(
      "expected kernel view: {} (bubble ratio {:.6f}: idle {:.6f}, NCCL wait {:.6f}, NCCL "
      "transfer {:.6f}; {} step windows)\n",
      report.expected_path.string(), e.bubble_ratio(), e.share(e.total.idle), e.share(e.total.wait),
      e.share(e.total.transfer), e.windows.size());
  return kExitOk;
}

int run_simulate_nsys(const SimulateOptions& o, const sim::SimConfig& config) {
  if (!o.ivl_dir.empty() || o.noise_per_job != 0 || o.shuffle || o.ansi || o.crlf ||
      !o.target_bytes.empty() || !o.concatenation_dir.empty()) {
    throw std::invalid_argument(
        "--format nsys writes SQLite exports only: --ivl, --noise-per-job, --shuffle, --ansi, "
        "--crlf, --target-bytes and --concatenation are for other formats");
  }
  if (o.lr || o.comm) {
    throw std::invalid_argument(
        "--format nsys has no lr or send/recv jobs (--lr, --comm): its NCCL kernels are the "
        "transfers");
  }
  if (config.p2p_latency_ns < config.resolution_ns) {
    throw std::invalid_argument(fmt::format(
        "--format nsys needs --latency-us of at least the time resolution ({} ns): it is how "
        "long each NCCL transfer takes",
        config.resolution_ns));
  }
  sim::NsysExportOptions options;
  options.dir = o.output;
  options.force = o.force;
  options.first_step = o.first_step.value_or(0);
  options.kernels_per_job = o.kernels_per_job.value_or(24);
  const sim::NsysExportReport report = sim::write_nsys_exports(config, options);
  fmt::print(
      "wrote {} Nsight Systems exports to {}: {} GPU activities, {} runtime launches, {} NCCL "
      "kernels, {} labelled jobs, {} steps, {} ranks on {} machine{}, {} bytes\n",
      report.files.size(), o.output, report.activities, report.runtime_rows,
      report.kernel_view.comm_kernels, report.jobs.jobs, report.steps, report.ranks,
      report.machines, report.machines == 1 ? "" : "s", report.bytes);
  const auto& e = report.kernel_view;
  fmt::print(
      "expected: {} (jobs: bubble ratio {:.6f}, {} step windows; kernel view: bubble ratio "
      "{:.6f})\n",
      report.expected_path.string(), report.jobs.bubble_ratio, report.jobs.steps.size(),
      e.bubble_ratio());
  return kExitOk;
}

int run_dygraph_simulate(const SimulateOptions& o, const sim::SimConfig& config) {
  if (o.first_step || o.noise_per_job != 0 || o.shuffle || o.ansi || o.crlf || !o.ivl_dir.empty() ||
      !o.target_bytes.empty()) {
    throw std::invalid_argument(
        "--format paddle-dygraph writes the records as Paddle does: --first-step, "
        "--noise-per-job, --shuffle, --ansi, --crlf, --ivl and --target-bytes do not apply");
  }
  sim::DygraphWriterOptions options;
  options.dir = o.output;
  options.force = o.force;
  options.concatenation_dir = o.concatenation_dir;
  const sim::WriteReport report = sim::write_simulated_dygraph(config, options);
  fmt::print(
      "wrote {} Paddle dygraph record files to {}: {} jobs, {} steps, {} devices, {} records, "
      "{} bytes (whole milliseconds)\n",
      report.files.size(), o.output, report.jobs, report.steps, report.devices, report.lines,
      report.bytes);
  if (!o.concatenation_dir.empty()) {
    fmt::print("wrote their concatenation to {}/pipeline_profile.json\n", o.concatenation_dir);
  }
  fmt::print("expected metrics (pipeline 0): {} (bubble ratio {:.6f}, {} step windows)\n",
             report.expected_path.string(), report.expected.bubble_ratio,
             report.expected.steps.size());
  return kExitOk;
}

int run_simulate(const SimulateOptions& o) {
  const sim::SimConfig config = make_config(o);
  if (o.format != "torch-kernels" && (o.no_comms_id || o.nccl_names)) {
    throw std::invalid_argument("--no-comms-id and --nccl-names need --format torch-kernels");
  }
  if (o.format != "torch-kernels" && o.format != "nsys" && o.kernels_per_job) {
    throw std::invalid_argument("--kernels-per-job needs --format torch-kernels or nsys");
  }
  if (o.format == "torch-kernels") return run_simulate_torch_kernels(o, config);
  if (o.format != "worker-log" && (o.events || !o.utc_offset.empty())) {
    throw std::invalid_argument(
        "--events and --utc-offset are for worker logs (--format "
        "worker-log): the other formats print no log lines");
  }
  if (o.format == "nsys") return run_simulate_nsys(o, config);
  if (o.format == "torch") return run_simulate_torch(o, config);
  if (o.format == "paddle-dygraph") return run_dygraph_simulate(o, config);
  if (!o.concatenation_dir.empty()) {
    throw std::invalid_argument("--concatenation needs --format paddle-dygraph");
  }
  const sim::WriteReport report = sim::write_simulated_logs(config, make_writer_options(o));
  fmt::print(
      "wrote {} worker logs to {}: {} jobs, {} steps, {} devices on {} machine{}, "
      "{} lines, {} bytes\n",
      report.files.size(), o.output, report.jobs, report.steps, report.devices, report.machines,
      report.machines == 1 ? "" : "s", report.lines, report.bytes);
  for (const auto& file : report.files) {
    fmt::print("  {}  {} jobs, {} bytes\n", file.path.string(), file.jobs, file.bytes);
  }
  if (!o.ivl_dir.empty()) fmt::print("wrote the same run as .ivl records to {}\n", o.ivl_dir);
  fmt::print("expected metrics: {} (bubble ratio {:.6f}, {} step windows)\n",
             report.expected_path.string(), report.expected.bubble_ratio,
             report.expected.steps.size());
  return kExitOk;
}

}  // namespace

void register_simulate_command(CLI::App& app, int& status) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Write a synthetic pipeline-parallel training run as PaddlePaddle worker logs\n"
      "(DIR/workerlog.R, or DIR/machineK/workerlog.R) plus DIR/expected.json, the\n"
      "metrics `pipescope analyze DIR` must report for it.");
  auto& o = *options;
  sub->add_option("-o,--output", o.output, "Folder to write (created when missing)")->required();
  sub->add_flag("--force", o.force,
                "Write into a non-empty folder, replacing the worker logs already there");

  sub->add_option("--schedule", o.schedule,
                  "Pipeline schedule, as the framework's job list (docs/guide.md, Explaining the\n"
                  "bubbles). PaddlePaddle static passes: fthenb, 1f1b, eager1f1b, vpp,\n"
                  "vpp-split-backward (VPP with split_backward, M = P), zbh1 (zbvpp is known but\n"
                  "not simulated); PaddlePaddle dygraph: dygraph-1f1b,\n"
                  "dygraph-interleave; PyTorch torch.distributed.pipelining: torch-gpipe,\n"
                  "torch-1f1b, torch-interleaved1f1b, torch-interleavedzerobubble,\n"
                  "torch-zbvzerobubble, torch-dualpipev (also torch:Interleaved1F1B, ...)")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            return sim::parse_schedule_kind(name) ? "" : "unknown schedule '" + name + "'";
          },
          "SCHEDULE"))
      ->capture_default_str();
  sub->add_option("--stages", o.stages, "Pipeline stages P")->capture_default_str();
  sub->add_option("--micro-batches", o.micro_batches,
                  "Micro-batches M per step (each schedule's own requirement applies, e.g. vpp: "
                  "M % P == 0)")
      ->capture_default_str();
  sub->add_option("--chunks", o.chunks,
                  "Model chunks V per stage (interleaved schedules only, default 2; the V "
                  "schedules torch-zbvzerobubble and torch-dualpipev run exactly 2)");
  sub->add_option("--steps", o.steps, "Training steps (at least; --target-bytes may add more)")
      ->capture_default_str();
  sub->add_option("--machines", o.machines,
                  "Machines; devices are split evenly over them (machineK/ folders when > 1)")
      ->capture_default_str();
  sub->add_option("--devices-per-stage", o.devices_per_stage,
                  "Devices per stage (a tensor-parallel group running identical jobs; with\n"
                  "--format torch-kernels: data-parallel replicas)")
      ->capture_default_str();
  sub->add_option("--first-step", o.first_step,
                  "Print `Schedule Profiler start at step N` at the top of every log (torch,\n"
                  "torch-kernels: N of the first ProfilerStep#N span, default 0)");
  sub->add_option("--seed", o.seed, "Seed of the cost jitter, noise, shuffle and colours")
      ->capture_default_str();

  sub->add_option("--forward-ms", o.forward_ms, "Mean forward time per stage, ms")
      ->capture_default_str();
  sub->add_option("--backward-ms", o.backward_ms,
                  "Mean input-gradient backward time, ms (non-ZB backwards also include the "
                  "weight part)")
      ->capture_default_str();
  sub->add_option("--weight-ms", o.weight_ms, "Mean weight-gradient backward time, ms")
      ->capture_default_str();
  sub->add_option("--optimizer-ms", o.optimizer_ms, "Mean optimizer time, ms")
      ->capture_default_str();
  sub->add_option("--latency-us", o.latency_us, "P2P latency between stages, us")
      ->capture_default_str();
  sub->add_option("--jitter", o.jitter, "Relative cost jitter, uniform in [-j, j)")
      ->capture_default_str();
  sub->add_option("--slow-stage", o.slow_stages,
                  "STAGE:FACTOR, multiply a stage's costs (repeatable), e.g. 2:1.5");
  sub->add_option("--skew", o.skews,
                  "MACHINE:NS, add a clock skew to every time of a machine (repeatable; with\n"
                  "--format torch-kernels: the machine's clock offset, the expected figures\n"
                  "staying on the true clock)");
  sub->add_option("--resolution", o.resolution, "Round times to whole us or ns")
      ->check(CLI::IsMember({"us", "ns"}))
      ->capture_default_str();
  sub->add_option("--start-ns", o.start_ns, "Start of the first step, epoch ns")
      ->capture_default_str();
  sub->add_flag("--comm", o.comm,
                "Also log send_forward/recv_forward/send_backward/recv_backward jobs");
  sub->add_flag("--lr", o.lr,
                "Also log an lr job at the start of every step (Paddle's 2023 static passes)");

  sub->add_option("--stall", o.stalls,
                  "STEP:STAGE:MS, stage STAGE is busy for MS before its first op of 0-based\n"
                  "step STEP (a checkpoint save; on the last stage it makes the step slower);\n"
                  "with --events, a checkpoint line is written in the stall (repeatable)");
  sub->add_flag("--events", o.events,
                "Worker logs: also write log events (a data loader's cost, a NCCL warning\n"
                "without a timestamp, evaluations, checkpoints in --stall, a watchdog warning)\n"
                "and where analyze must place them (expected.json events)");
  sub->add_option("--utc-offset", o.utc_offset,
                  "Worker logs: print every timestamp in this local time, e.g. +05:45 or -07:00\n"
                  "(default UTC)");
  sub->add_option("--noise-per-job", o.noise_per_job,
                  "Average non-job lines after each job line (49: one job line in 50)")
      ->capture_default_str();
  sub->add_flag("--shuffle", o.shuffle, "Write job lines in random order, not time order");
  sub->add_flag("--ansi", o.ansi, "Put ANSI colour codes around some lines");
  sub->add_flag("--crlf", o.crlf, "End lines with CR LF");
  sub->add_option("--chunk-names", o.chunk_names,
                  "Chunk in vpp type names: digit (forward0) or paren (forward(chunk0))")
      ->check(CLI::IsMember({"digit", "paren"}))
      ->capture_default_str();
  sub->add_option("--job-id", o.job_id,
                  "Number in `Job (ID)`: index (job index on the device), counter (per type) or "
                  "microbatch")
      ->check(CLI::IsMember({"index", "counter", "microbatch"}))
      ->capture_default_str();
  sub->add_option("--time-decimals", o.time_decimals,
                  "Fraction digits of the ms times: 3, 6 (exact ns) or 9 (sub-ns digits that "
                  "round to the ns)")
      ->check(CLI::IsMember({3, 6, 9}))
      ->capture_default_str();
  sub->add_option("--target-bytes", o.target_bytes,
                  "Keep adding steps until the folder holds this many bytes (suffix K, M, G)");

  sub->add_option("--ivl", o.ivl_dir,
                  "Also write the same run as .ivl records into this folder (workerlog.R.ivl,\n"
                  "same layout), through the job timer's record writer");

  sub->add_option("--format", o.format,
                  "What to write: worker-log (static-graph `Profiler Info: Job` lines),\n"
                  "paddle-dygraph (the dygraph pipeline profiler's B/E records, whole ms,\n"
                  "one profile_record_tmp_file_for_rank_R per device; fthenb, 1f1b, vpp) or\n"
                  "torch (PyTorch profiler traces of a pipelining schedule, one\n"
                  "DIR/rankR.pt.trace.json per rank) or torch-kernels (Megatron-style traces\n"
                  "without labels: compute kernels, NCCL send/recv and data-parallel\n"
                  "allreduce kernels; expected.json holds their kernel view) or nsys (the\n"
                  "same kernels as Nsight Systems SQLite exports, DIR/rank_R.sqlite, with\n"
                  "PP:<action> NVTX ranges; expected.json: jobs and kernel view)")
      ->check(CLI::IsMember({"worker-log", "paddle-dygraph", "torch", "torch-kernels", "nsys"}))
      ->capture_default_str();
  sub->add_option("--concatenation", o.concatenation_dir,
                  "With --format paddle-dygraph: also write Paddle's helper's\n"
                  "pipeline_profile.json of the same records into this folder");
  sub->add_option(
         "--kernels-per-job", o.kernels_per_job,
         "With --format torch-kernels or nsys: compute kernels splitting each compute job\n"
         "(default 24, at least 1; the optimizer gets a quarter of them)")
      ->check(CLI::Range(1, 10000));
  sub->add_flag("--no-comms-id", o.no_comms_id,
                "With --format torch-kernels: leave \"Comms Id\" out of the NCCL kernels'\n"
                "args (peers are then matched by call order)");
  sub->add_option("--nccl-names", o.nccl_names,
                  "With --format torch-kernels: NCCL kernel names of NCCL before 2.19 (old:\n"
                  "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t, cudaLaunchKernel) or after\n"
                  "(new: ncclDevKernel_SendRecv, cuLaunchKernelEx; the default)")
      ->check(CLI::IsMember({"old", "new"}));

  sub->callback([options, &status] { status = run_simulate(*options); });
}

}  // namespace pipescope::cli
