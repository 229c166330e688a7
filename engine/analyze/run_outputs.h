// The run whose outputs `analyze` writes, as the one sequence of analyze.cc
// sees it: analysed in one process (LoadedRun), or by the ranks of a
// partitioned --mpi run, each holding its steps' part (distributed/). The
// sequence (warnings, the checks that can refuse, summary.json, the traces,
// the HTML report, the table, --strict) is written once, against this
// interface; what differs is only how each output is made: from the whole
// run in hand, or by collectives that join the ranks' parts.
//
// Guarantees: every method is called by every rank of a partitioned run in
// the same order (each may be a collective); what only one process does
// (printing, the HTML report) happens where root() is true; pipeline() is
// the whole run's view on the root, its warnings the run's final list.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/chrome_trace.h"
#include "export/html_report.h"
#include "export/summary_figures.h"
#include "export/trace_size.h"
#include "load/load_run.h"
#include "model/option_words.h"
#include "model/run.h"

namespace pipescope {

namespace distributed {
class Exchange;
struct LocalLoad;
struct PartitionedAnalysis;
}  // namespace distributed

class RunOutputs {
 public:
  virtual ~RunOutputs() = default;

  /// Whether this process prints and writes what one process does (rank 0).
  virtual bool root() const = 0;
  /// The run: its inputs and devices everywhere, the jobs this process holds.
  virtual const Run& run() const = 0;
  /// The contract's figures: every window and the whole run's totals.
  virtual const Metrics& metrics() const = 0;
  /// The pipeline analysis, the whole run's view on the root (see above).
  virtual const PipelineAnalysis& pipeline() const = 0;
  /// The kernel view, or null (a partitioned run has none).
  virtual const KernelView* kernels() const = 0;

  /// What a trace holds (trace_size.h plan_trace).
  virtual TracePlan plan_trace(const TraceOptions& options, bool steps_given, TraceFormat format,
                               std::uint64_t limit) = 0;
  /// summary.json, atomically, at `path` (its folder exists on the root).
  virtual void write_summary(const std::string& path, const std::vector<TraceFileFigures>& traces,
                             unsigned threads) = 0;
  /// A trace at `path` (options.steps: the plan's).
  virtual void write_trace(const TraceOptions& options, TraceFormat format,
                           const std::string& path) = 0;
  /// The HTML report at `path` (options.steps: the drawn steps); a
  /// partitioned run's embeds the drawn steps only (partitioned_html.h).
  virtual void write_html(const HtmlOptions& options, const std::string& path) = 0;
  /// The table, on the root: every row with `all_rows`, the notes of the
  /// rows left out in `words`.
  virtual void write_text(std::FILE* out, bool all_rows,
                          const std::shared_ptr<const OptionWords>& words) = 0;
};

/// The run analysed in one process (load_run). Frees its dependencies when
/// `keep_dependencies` is false (no output draws them).
std::unique_ptr<RunOutputs> whole_run_outputs(LoadedRun& loaded, bool keep_dependencies);

/// Rank `exchange.rank()`'s part of a partitioned run, after
/// analyze_partitioned and gather_whole_run_facts (distributed/). The
/// objects must outlive the result.
std::unique_ptr<RunOutputs> partitioned_run_outputs(
    distributed::Exchange& exchange, const distributed::LocalLoad& load,
    const distributed::PartitionedAnalysis& analysis, const SummaryJobFacts& facts);

}  // namespace pipescope
