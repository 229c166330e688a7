// `pipescope diff A B`: two runs side by side (figures per metric, device,
// step, job kind and type, and the schedule), as text and/or JSON.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "compare/diff.h"
#include "compare/run_loader.h"
#include "export/atomic_file.h"
#include "run_inputs.h"

namespace pipescope::cli {

namespace {

// The input options are analyze's (run_inputs.h), applied to both runs
// where they are inputs; a summary.json is taken as written.
struct DiffOptions : RunInputOptions {
  std::string a;
  std::string b;
  std::string json;
  bool quiet = false;
  bool all_rows = false;
};

int run_diff(const DiffOptions& o) {
  const LoadOptions load = make_load_options(o);  // throws: usage error
  const RunFigures a = load_run_figures(o.a, load, o.devices);
  const RunFigures b = load_run_figures(o.b, load, o.devices);
  if (o.json == "-") {
    std::fputs(format_diff_json(a, b).c_str(), stdout);
    return kExitOk;
  }
  if (!o.json.empty()) write_file_atomically(o.json, format_diff_json(a, b));
  if (!o.quiet) {
    std::fputs(format_diff_text(a, b, {o.all_rows, load.ingest.words.get()}).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

void register_diff_command(CLI::App& app, int& status) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Show two runs side by side: overall figures, each device, each step, mean job\n"
      "durations per kind and type, and what changed in the schedule. A and B are log\n"
      "folders, record inputs or summary.json files. The input options (--devices, --stages,\n"
      "--job-pattern, ...) are analyze's and apply to both runs where they are logs, records\n"
      "or traces; a summary.json is read as written.\n\n"
      "Example:\n  pipescope diff before/summary.json after/logs --json diff.json");
  cmd->add_option("a", o->a, "The first run (A)")->required();
  cmd->add_option("b", o->b, "The second run (B)")->required();
  cmd->add_option("--json", o->json,
                  "Write the diff as JSON to FILE ('-': stdout, instead of the text)");
  cmd->add_flag("-q,--quiet", o->quiet, "Do not print the text diff");
  cmd->add_flag("--all-rows", o->all_rows,
                "Print every row (by default a device table of more than 64 rows shows its\n"
                "first 16, its last 8 and the rows beyond 3 MADs of their column, and the\n"
                "steps their first 10 and last 5 of more than 20)");
  add_run_input_options(cmd, *o);
  cmd->callback([o, &status] { status = run_diff(*o); });
}

}  // namespace pipescope::cli
