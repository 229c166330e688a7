// The input options every command that reads a run through load/ shares
// (analyze, whatif, watch, check, diff): the device selection, the stage map, clock correction,
// launch segments, dygraph pipelines, profiler-trace job patterns, other
// frameworks' job lines and the reader's limits. Declared once and turned
// into LoadOptions once.
//
// Usage:
//   struct MyOptions : RunInputOptions { ... };
//   add_run_input_options(cmd, *options);
//   LoadOptions load = make_load_options(*options);   // throws InputError
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "load/load_run.h"

namespace pipescope::cli {

struct RunInputOptions {
  std::string devices;
  std::vector<std::string> machine_order;  // --machine-order NAME,...
  unsigned threads = 0;
  std::size_t chunk_mib = 8;
  std::size_t max_line_kib = 1024;
  bool allow_missing = false;  // --allow-missing: leave unreadable inputs' devices out
  // Pipeline analysis (docs/guide.md, "Explaining the bubbles").
  std::string layout;  // --layout pp=4,dp=8,tp=8[,order=dp,pp,tp]
  std::string stages;
  bool no_clock_fix = false;
  std::vector<std::string> clock_offsets;
  std::string segment;                     // --segment N|last: one launch segment only
  std::optional<int> pipeline;             // --pipeline K: dygraph records of several pipelines
  std::optional<std::int64_t> first_step;  // --first-step N
  // Chrome-trace JSON: annotation names to jobs (docs/guide.md, "PyTorch profiler traces").
  std::string job_pattern;
  std::string step_range;
  std::string job_kinds;
  // Worker logs: another framework's job lines (docs/guide.md, "Other
  // frameworks' job lines").
  std::string job_line;       // --job-line REGEX
  std::string job_line_unit;  // --job-line-unit s|ms|us|ns ("": ms)
  // Log events (docs/guide.md, "Log events").
  bool no_events = false;
  std::vector<std::string> patterns;  // --patterns FILE, repeatable
};

/// Declares the options on `cmd`, storing into `options` (which must outlive it).
void add_run_input_options(CLI::App* cmd, RunInputOptions& options);

/// The LoadOptions the options describe; the analysis's messages name the
/// options in the command's words. Throws InputError for a bad value.
LoadOptions make_load_options(const RunInputOptions& options);

/// True when `inner` is `outer` or lies below it (both resolved).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

/// `path` made absolute and canonical as far as it exists.
std::filesystem::path resolved(const std::filesystem::path& path);

/// Throws InputError when output folder `out` is one of the input folders
/// `inputs` or lies inside one: outputs never mix with the logs they came
/// from (a later run over the folder would read them). `advice` follows
/// "choose another with -o" in the message (e.g. ", or pass --flag").
void refuse_output_inside_inputs(const std::string& out, const std::vector<std::string>& inputs,
                                 std::string_view advice = "");

}  // namespace pipescope::cli
