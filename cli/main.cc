// pipescope: where every GPU of a pipeline-parallel training run was busy,
// where it sat in a bubble, and where each step began and ended.
#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "command.h"
#include "scan/event_matcher.h"
#include "suggest.h"
#include "version.h"

int main(int argc, char** argv) {
  using namespace pipescope::cli;
  CLI::App app{
      "pipescope: pipeline-parallel training timelines from worker logs.\n"
      "Finds each GPU's jobs, step windows, busy/idle time and pipeline bubbles."};
  // Over a file-size limit (ulimit -f) write(2) fails with EFBIG when SIGXFSZ
  // is ignored, and the failure is reported like a full disk; by default the
  // signal would kill the process, leaving temporary files behind.
  std::signal(SIGXFSZ, SIG_IGN);
  app.name("pipescope");
  // The second line says how this CPU runs the log events' first pass.
  app.set_version_flag("--version", [] {
    return fmt::format("pipescope {}\nlog events: {}", pipescope::kVersion,
                       pipescope::EventMatcher::first_pass());
  });
  app.require_subcommand(1);
  app.fallthrough(false);

  int status = kExitOk;
  register_analyze_command(app, status);
  register_simulate_command(app, status);
  register_convert_command(app, status);
  register_check_command(app, status);
  register_diff_command(app, status);
  register_whatif_command(app, status);
  register_watch_command(app, status);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0.
    const int code = app.exit(e);
    if (code != 0) suggest_options(app, argc, argv);
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "pipescope: error: {}\n", e.what());
    return kExitUsage;
  }
  return status;
}
