// `pipescope convert PATH... -o DIR`: turns worker logs into .ivl record files
// (records/ivl_format.h), so a huge text folder is scanned once and then
// re-analysed at memory speed with `pipescope analyze DIR`.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "analysis/metrics.h"
#include "command.h"
#include "records/ivl_writer.h"
#include "scan/log_scanner.h"
#include "source/discovery.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempSuffix = ".pipescope-tmp";

struct ConvertOptions {
  std::vector<std::string> paths;
  std::string output_dir;
  std::string devices;
  unsigned threads = 0;
  bool force = false;
};

fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path result = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path) : result;
}

/// The output folder must not lie inside an input folder (a later analyze
/// of that folder would read every device twice) and must be empty unless
/// --force.
void prepare_output(const ConvertOptions& o) {
  const fs::path out = resolved(o.output_dir);
  for (const auto& input : o.paths) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) continue;
    const fs::path in = resolved(input);
    auto [i, _] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
    if (i == in.end()) {
      throw InputError(
          fmt::format("output folder {} is inside input folder {}", out.string(), input));
    }
  }
  std::error_code ec;
  if (fs::exists(o.output_dir, ec) && !fs::is_empty(o.output_dir, ec) && !o.force) {
    throw InputError(fmt::format(
        "output folder {} is not empty; use --force to write .ivl files into it", o.output_dir));
  }
  fs::create_directories(o.output_dir, ec);
  if (ec) throw InputError(fmt::format("cannot create {}: {}", o.output_dir, ec.message()));
  // --force replaces the .ivl files of an earlier conversion (in DIR and its
  // machineK/ folders); stale ones would be analysed as extra devices.
  auto remove_records = [](const fs::path& dir) {
    std::error_code list_ec;
    for (const auto& entry : fs::directory_iterator(dir, list_ec)) {
      const std::string name = entry.path().filename().string();
      std::error_code ignored;
      if (entry.is_regular_file(ignored) && name.ends_with(".ivl"))
        fs::remove(entry.path(), ignored);
      if (entry.is_directory(ignored) && name.starts_with("machine")) {
        for (const auto& inner : fs::directory_iterator(entry.path(), ignored)) {
          if (inner.path().filename().string().ends_with(".ivl")) fs::remove(inner.path(), ignored);
        }
      }
    }
  };
  if (o.force) remove_records(o.output_dir);
}

int run_convert(const ConvertOptions& o) {
  std::vector<InputFile> inputs = discover_inputs(o.paths);
  if (!o.devices.empty()) inputs = select_devices(inputs, parse_device_list(o.devices));
  prepare_output(o);
  ScanOptions scan;
  scan.threads = o.threads;
  Run run = scan_worker_logs(inputs, scan);
  for (const Diagnostic& d : run.diagnostics) {
    fmt::print(stderr, "pipescope: {}: {}\n", d.location(), d.message);
  }
  if (run.job_count() == 0) {
    fmt::print(stderr,
               "pipescope: error: no job lines found in {} input file{}; nothing to convert\n",
               inputs.size(), inputs.size() == 1 ? "" : "s");
    return kExitUsage;
  }
  // Records carry the step the metric contract assigns to each job.
  const Metrics metrics = compute_metrics(run);

  int machines = 0;
  for (const Device& d : run.devices) machines = std::max(machines, d.machine + 1);
  std::vector<fs::path> temps;
  std::uint64_t bytes = 0;
  try {
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      const Device& device = run.devices[d];
      fs::path folder = o.output_dir;
      if (machines > 1) folder /= fmt::format("machine{}", device.machine);
      fs::create_directories(folder);
      const fs::path path = folder / fmt::format("workerlog.{}.ivl", device.rank);
      ivl::FileInfo info;
      info.machine = device.machine;
      info.rank = device.rank;
      info.machine_name = device.machine_name;
      info.producer = "pipescope convert";
      info.first_step = run.first_step;
      info.types = run.types.names();
      if (!device.jobs.empty()) info.anchor_realtime_ns = device.jobs.front().start_ns;
      temps.push_back(path.string() + std::string(kTempSuffix));
      {
        ivl::Writer writer(temps.back().string(), info);
        for (std::size_t i = 0; i < device.jobs.size(); ++i) {
          const Job& job = device.jobs[i];
          const std::int32_t k = metrics.job_step[d][i];
          const auto step = k >= 0 && static_cast<std::size_t>(k) < metrics.steps.size()
                                ? static_cast<std::int32_t>(metrics.steps[k].step)
                                : -1;
          writer.append({job.start_ns, job.end_ns, job.type,
                         static_cast<std::int32_t>(job.micro_batch), step, 0});
        }
        writer.close();
        bytes += writer.bytes_written();
      }
      fs::rename(temps.back(), path);
      temps.back().clear();
      fmt::print("  {} -> {}  {} jobs\n", device.path, path.string(), device.jobs.size());
    }
  } catch (...) {
    std::error_code ec;
    for (const auto& temp : temps) {
      if (!temp.empty()) fs::remove(temp, ec);
    }
    throw;
  }
  std::uint64_t read = 0;
  for (const InputStats& s : run.inputs) read += s.bytes;
  fmt::print("converted {} input{} ({} bytes) into {} .ivl files in {}: {} jobs, {} bytes\n",
             inputs.size(), inputs.size() == 1 ? "" : "s", read, run.devices.size(), o.output_dir,
             run.job_count(), bytes);
  return kExitOk;
}

}  // namespace

void register_convert_command(CLI::App& app, int& status) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert worker logs into .ivl record files (one per device, same layout:\n"
      "DIR[/machineK]/workerlog.R.ivl), which `pipescope analyze DIR` reads at memory\n"
      "speed with the same figures.\n\n"
      "Example:\n  pipescope convert /data/run42/log -o /data/run42/ivl");
  cmd->add_option("paths", options->paths, "Log folders or files, as for analyze")->required();
  cmd->add_option("-o,--output", options->output_dir, "Output folder (created if missing)")
      ->required();
  cmd->add_option("--devices", options->devices, "Convert only these global device indices");
  cmd->add_option("-j,--threads", options->threads, "Worker threads (0 = one per core)")
      ->capture_default_str();
  cmd->add_flag("--force", options->force,
                "Write into a non-empty output folder, replacing the .ivl files in it");
  cmd->callback([options, &status] { status = run_convert(*options); });
}

}  // namespace pipescope::cli
