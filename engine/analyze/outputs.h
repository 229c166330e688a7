// The outputs of `analyze`, registered once: what each is, the file it goes
// to, what it needs from the analysis and whether it is written by the ranks
// of a partitioned (--mpi) run together. The command line, the checks made
// before anything is written (an output that is an input) and the memory
// policy (whether the dependencies are kept for drawing) all read this
// table; none lists the outputs by hand.
//
// Adding an output: a row in kOutputs, its field in OutputRequest's `wanted`
// (by Output), and its writer in analyze.cc's one write step.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

enum class Output : std::uint8_t {
  summary,         ///< summary.json: every figure (always written)
  trace_json,      ///< trace.json: Chrome/Perfetto JSON timeline
  trace_perfetto,  ///< trace.pftrace: native Perfetto protobuf
  html,            ///< a self-contained HTML report, at its own path
  text,            ///< the table on standard output
};

struct OutputSpec {
  Output id;
  /// The file's name in the output folder; empty: the output has its own
  /// path (`--html FILE`) or is no file (the table).
  std::string_view file;
  /// Drawn from each job's dependencies (flows, critical path, blame): the
  /// analysis keeps them for it (4 bytes per job of a consumer device).
  bool draws_dependencies;
  /// Written by the ranks of a partitioned run together (each its steps'
  /// part, or the HTML report from the drawn steps' jobs); else it needs
  /// the whole run in one process (--mpi gathers it: no output does today).
  bool partitioned;
};

inline constexpr std::array<OutputSpec, 5> kOutputs{{
    {Output::summary, "summary.json", false, true},
    {Output::trace_json, "trace.json", true, true},
    {Output::trace_perfetto, "trace.pftrace", true, true},
    {Output::html, "", true, true},
    {Output::text, "", false, true},
}};

const OutputSpec& output_spec(Output output);

/// Which outputs one `analyze` writes, and where.
struct OutputRequest {
  std::filesystem::path dir = "pipescope-out";
  /// By Output; summary.json is always written.
  std::array<bool, kOutputs.size()> wanted{true, true, false, false, true};
  /// Output::html's file, when wanted.
  std::filesystem::path html_file;

  bool wants(Output o) const { return wanted[static_cast<std::size_t>(o)]; }
  void set(Output o, bool on) { wanted[static_cast<std::size_t>(o)] = on; }
  /// The file an output goes to (empty for the table).
  std::filesystem::path file_of(Output o) const;
  /// Every file to be written, in table order.
  std::vector<std::filesystem::path> files() const;
  /// Whether any output wanted draws the dependencies.
  bool draws_dependencies() const;
  /// Whether any output wanted needs the whole run in one process.
  bool needs_whole_run() const;
};

}  // namespace pipescope
