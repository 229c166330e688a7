// `pipescope convert PATH... -o DIR`: turns worker logs into .ivl record files
// (records/ivl_format.h), so a huge text folder is scanned once and then
// re-analysed at memory speed with `pipescope analyze DIR`.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "command.h"
#include "export/ivl_export.h"
#include "load/load_run.h"
#include "option_words.h"
#include "run_inputs.h"

namespace pipescope::cli {

namespace {

namespace fs = std::filesystem;

struct ConvertOptions {
  std::vector<std::string> paths;
  std::string output_dir;
  std::string devices;
  unsigned threads = 0;
  bool force = false;
  bool allow_missing = false;
};

/// The output folder must not lie inside an input folder (a later analyze
/// of that folder would read every device twice) and must be empty unless
/// --force. Checked before the inputs are read; nothing is written.
void check_output(const ConvertOptions& o) {
  refuse_output_inside_inputs(o.output_dir, o.paths);
  std::error_code ec;
  if (fs::exists(o.output_dir, ec) && !fs::is_empty(o.output_dir, ec) && !o.force) {
    throw InputError(fmt::format(
        "output folder {} is not empty; use --force to write .ivl files into it", o.output_dir));
  }
}

/// Creates the output folder; with --force, removes the .ivl files of an
/// earlier conversion.
void prepare_output(const ConvertOptions& o) {
  std::error_code ec;
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
  LoadOptions load;
  load.inputs.words = convert_command_words();
  const std::vector<InputFile> inputs = find_inputs(o.paths, o.devices, &load.discovery_notes,
                                                    load.machine_order, *load.inputs.words);
  check_output(o);
  load.ingest.threads = o.threads;
  load.inputs.allow_unreadable = o.allow_missing;
  load.inputs.check_layout = o.devices.empty();
  // Records keep the times as logged; reading them back corrects the clocks
  // exactly as reading the logs does.
  load.level = LoadLevel::metrics;
  const LoadedRun loaded = load_run(inputs, load);
  const Run& run = loaded.run;
  for (const Diagnostic& d : run.diagnostics) {
    fmt::print(stderr, "pipescope: {}: {}\n", d.location(), d.message);
  }
  for (const Warning& w : loaded.launch_warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", w.message);
  }
  for (const Warning& w : loaded.input_warnings) {
    fmt::print(stderr, "pipescope: warning: {}\n", w.message);
  }
  if (run.job_count() == 0) {
    fmt::print(stderr,
               "pipescope: error: no job lines found in {} input file{}; nothing to convert\n",
               inputs.size(), inputs.size() == 1 ? "" : "s");
    return kExitUsage;
  }
  prepare_output(o);
  const IvlExport written =
      write_ivl_records(run, loaded.metrics, o.output_dir, "pipescope convert");
  for (const IvlExportedFile& file : written.files) {
    fmt::print("  {} -> {}  {} jobs\n", file.input, file.output, file.jobs);
  }
  std::uint64_t read = 0;
  for (const InputStats& s : run.inputs) read += s.bytes;
  fmt::print("converted {} input{} ({} bytes) into {} .ivl files in {}: {} jobs, {} bytes\n",
             inputs.size(), inputs.size() == 1 ? "" : "s", read, run.devices.size(), o.output_dir,
             run.job_count(), written.bytes);
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
  cmd->add_flag("--allow-missing", options->allow_missing,
                "Convert the other inputs when one cannot be read (default: exit 2)");
  cmd->add_flag("--force", options->force,
                "Write into a non-empty output folder, replacing the .ivl files in it");
  cmd->callback([options, &status] { status = run_convert(*options); });
}

}  // namespace pipescope::cli
