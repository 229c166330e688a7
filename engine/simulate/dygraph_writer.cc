#include "simulate/dygraph_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "io/atomic_output.h"
#include "simulate/log_format.h"
#include "simulate/output_folder.h"

namespace pipescope::sim {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::string_view kPrefix = "profile_record_tmp_file_for_rank_";
constexpr std::string_view kConcatenation = "pipeline_profile.json";

void validate(const SimConfig& config, const DygraphWriterOptions& options) {
  if (options.dir.empty()) throw std::invalid_argument("no output folder given");
  if (config.resolution_ns % kMs != 0) {
    throw std::invalid_argument(fmt::format(
        "dygraph records hold whole milliseconds: the resolution must be a multiple of 1 ms, "
        "got {} ns",
        config.resolution_ns));
  }
  if (config.comm_jobs || config.lr_jobs) {
    throw std::invalid_argument(
        "dygraph records hold forward and backward jobs only (no comm "
        "or lr jobs)");
  }
  if (!config.machine_skew_ns.empty() || config.machines != 1) {
    throw std::invalid_argument(
        "dygraph records name no machine: simulate one machine, "
        "without clock skews");
  }
  const ScheduleKind kind = config.shape.kind;
  if (kind != ScheduleKind::fthenb && kind != ScheduleKind::one_f_one_b &&
      kind != ScheduleKind::interleaved) {
    throw std::invalid_argument(
        fmt::format("Paddle's dygraph pipeline runs FThenB, 1F1B and interleaved schedules, not {}",
                    schedule_kind_name(kind)));
  }
}

// Removes what an earlier run wrote (with force), else refuses a non-empty folder.
void prepare(const fs::path& dir, bool force, const OptionWords& words) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    if (!force) {
      throw non_empty_folder_error(dir, "records", words);
    }
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() &&
          (name.starts_with(kPrefix) || name == kConcatenation || name == "expected.json" ||
           name == "simulation.json" || io::is_atomic_temp_name(name))) {
        fs::remove(entry.path());
      }
    }
  }
  fs::create_directories(dir);
}

void append_record(fmt::memory_buffer& out, const SimJob& job, bool chunked, int stage,
                   bool begin) {
  const bool forward = job.type == SimJobType::forward;
  append_text(out, "{\"name\": \"");
  append_text(out, forward ? "F" : "B");
  append_int(out, job.micro_batch);
  if (chunked) {
    append_text(out, "_VP");
    append_int(out, job.chunk);
  }
  append_text(out, chunked ? "\", \"cat\": \"virtual pipeline timeline\", \"ph\": \""
                           : "\", \"cat\": \"pipeline timeline\", \"ph\": \"");
  append_text(out, begin ? "B" : "E");
  append_text(out, "\", \"pid\": 0, \"tid\": ");
  append_int(out, stage + 1);
  append_text(out, ", \"ts\": ");
  append_int(out, (begin ? job.start_ns : job.end_ns) / kMs);
  append_text(out, ", \"cname\": \"");
  append_text(out, forward ? "thread_state_running" : "rail_idle");
  append_text(out, "\"}\n");
}

}  // namespace

WriteReport write_simulated_dygraph(const SimConfig& config, const DygraphWriterOptions& options) {
  validate(config, options);
  Simulator simulator(config);
  const auto& devices = simulator.devices();
  const bool chunked = has_chunks(config.shape.kind);
  prepare(options.dir, options.force, *config.words);
  if (!options.concatenation_dir.empty()) {
    prepare(options.concatenation_dir, options.force, *config.words);
  }

  // Pipeline 0: the first device of each stage, indexed by stage.
  std::vector<SimDeviceInfo> analysed;
  std::vector<int> position(devices.size(), -1);
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const int stage = devices[d].stage;
    if (static_cast<std::size_t>(stage) < analysed.size()) continue;
    position[d] = stage;
    analysed.push_back({stage, 0, stage, stage});
  }
  ExpectedMetricsBuilder expected(analysed, 0);

  std::vector<fmt::memory_buffer> text(devices.size());
  std::vector<std::uint64_t> jobs(devices.size(), 0);
  std::vector<std::vector<SimJob>> step_jobs;
  while (simulator.steps_done() < config.steps) {
    simulator.next_step(step_jobs);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      for (const SimJob& job : step_jobs[d]) {
        if (job.type != SimJobType::forward && job.type != SimJobType::backward) continue;
        append_record(text[d], job, chunked, devices[d].stage, true);
        append_record(text[d], job, chunked, devices[d].stage, false);
        ++jobs[d];
        if (position[d] >= 0) {
          expected.add_job(position[d], job.step, job.start_ns / kMs * kMs, job.end_ns / kMs * kMs);
        }
      }
    }
  }

  WriteReport report;
  std::vector<std::pair<std::string, std::size_t>> names;  // the helper's order: by name
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const std::string name = fmt::format("{}{}", kPrefix, devices[d].index);
    const fs::path path = options.dir / name;
    io::write_file_atomically(path.string(), std::string_view(text[d].data(), text[d].size()));
    names.emplace_back(name, d);
    report.add({path, text[d].size(), 2 * jobs[d], jobs[d]});
  }
  if (!options.concatenation_dir.empty()) {
    std::sort(names.begin(), names.end());
    std::string all = "[ ";
    bool first = true;
    for (const auto& [name, d] : names) {
      std::string_view rest(text[d].data(), text[d].size());
      while (!rest.empty()) {
        const std::size_t end = rest.find('\n');
        if (!first) all += ",\n";
        all.append(rest.substr(0, end));
        first = false;
        rest.remove_prefix(end + 1);
      }
    }
    all += " ]\n";
    io::write_file_atomically((options.concatenation_dir / std::string(kConcatenation)).string(),
                              all);
  }
  report.write_description(
      options.dir, expected.finish(),
      fmt::format("{{\"format\": \"paddle-dygraph\", {}, \"seed\": {}, \"start_ns\": {}, "
                  "\"resolution_ns\": {}}}\n",
                  simulation_shape_fields(config, simulator.steps_done()), config.seed,
                  config.start_ns, config.resolution_ns));
  report.steps = simulator.steps_done();
  report.devices = static_cast<int>(devices.size());
  report.machines = config.machines;
  return report;
}

}  // namespace pipescope::sim
