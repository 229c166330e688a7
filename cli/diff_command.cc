// `pipescope diff A B`: two runs side by side (figures per metric, device,
// step, job kind and type, and the schedule), as text and/or JSON.
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "command.h"
#include "compare/diff.h"
#include "compare/run_loader.h"
#include "export/atomic_file.h"

namespace pipescope::cli {

namespace {

struct DiffOptions {
  std::string a;
  std::string b;
  std::string json;
  unsigned threads = 0;
  bool quiet = false;
};

int run_diff(const DiffOptions& o) {
  LoadOptions load;
  load.ingest.threads = o.threads;
  const RunFigures a = load_run_figures(o.a, load);
  const RunFigures b = load_run_figures(o.b, load);
  if (o.json == "-") {
    std::fputs(format_diff_json(a, b).c_str(), stdout);
    return kExitOk;
  }
  if (!o.json.empty()) {
    const std::filesystem::path parent = std::filesystem::path(o.json).parent_path();
    if (!parent.empty()) ensure_output_dir(parent.string());
    AtomicFile file(o.json);
    file.append(format_diff_json(a, b));
    file.commit();
  }
  if (!o.quiet) std::fputs(format_diff_text(a, b).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void register_diff_command(CLI::App& app, int& status) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Show two runs side by side: overall figures, each device, each step, mean job\n"
      "durations per kind and type, and what changed in the schedule. A and B are log\n"
      "folders, record inputs or summary.json files.\n\n"
      "Example:\n  pipescope diff before/summary.json after/logs --json diff.json");
  cmd->add_option("a", o->a, "The first run (A)")->required();
  cmd->add_option("b", o->b, "The second run (B)")->required();
  cmd->add_option("--json", o->json,
                  "Write the diff as JSON to FILE ('-': stdout, instead of the text)");
  cmd->add_option("-j,--threads", o->threads, "Scan threads for log inputs (0 = one per core)");
  cmd->add_flag("-q,--quiet", o->quiet, "Do not print the text diff");
  cmd->callback([o, &status] { status = run_diff(*o); });
}

}  // namespace pipescope::cli
