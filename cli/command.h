// Each subcommand lives in its own file pair and registers itself on the
// application; main() only wires them up (CLI11's "subcommands in files").
#pragma once

#include <CLI/CLI.hpp>

namespace pipescope::cli {

/// Exit statuses shared by every subcommand.
enum ExitStatus : int {
  kExitOk = 0,
  /// The analysis ran but a requested condition failed (e.g. --strict).
  kExitFailed = 1,
  /// Usage error, or input with nothing to analyse.
  kExitUsage = 2,
};

/// Registers a subcommand; its callback stores its exit status in `status`.
void register_analyze_command(CLI::App& app, int& status);
void register_simulate_command(CLI::App& app, int& status);
void register_convert_command(CLI::App& app, int& status);
void register_check_command(CLI::App& app, int& status);
void register_diff_command(CLI::App& app, int& status);
void register_whatif_command(CLI::App& app, int& status);
void register_watch_command(CLI::App& app, int& status);

}  // namespace pipescope::cli
