#include "analyze/run_outputs.h"

#include <utility>

#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_html.h"
#include "distributed/partitioned_load.h"
#include "distributed/partitioned_summary.h"
#include "distributed/partitioned_traces.h"
#include "export/kernel_view_report.h"
#include "export/perfetto_trace.h"
#include "export/summary_json.h"
#include "export/text_report.h"

namespace pipescope {

namespace {

/// The run in hand: every output from the whole run.
class WholeRunOutputs final : public RunOutputs {
 public:
  explicit WholeRunOutputs(LoadedRun& loaded) : loaded_(loaded) {}

  bool root() const override { return true; }
  const Run& run() const override { return loaded_.run; }
  const Metrics& metrics() const override { return loaded_.metrics; }
  const PipelineAnalysis& pipeline() const override { return loaded_.pipeline; }
  const KernelView* kernels() const override {
    return loaded_.kernels.available ? &loaded_.kernels : nullptr;
  }

  TracePlan plan_trace(const TraceOptions& options, bool steps_given, TraceFormat format,
                       std::uint64_t limit) override {
    return pipescope::plan_trace(loaded_.run, loaded_.metrics, options, steps_given, format, limit);
  }
  void write_summary(const std::string& path, const std::vector<TraceFileFigures>& traces,
                     unsigned threads) override {
    write_summary_json(loaded_.run, loaded_.metrics, loaded_.pipeline, loaded_.kernels, path,
                       traces, threads);
  }
  void write_trace(const TraceOptions& options, TraceFormat format,
                   const std::string& path) override {
    if (format == TraceFormat::json) {
      write_chrome_trace(loaded_.run, loaded_.metrics, options, path);
    } else {
      write_perfetto_trace(loaded_.run, loaded_.metrics, options, path);
    }
  }
  void write_html(const HtmlOptions& options, const std::string& path) override {
    write_html_report(loaded_.run, loaded_.metrics, options, path);
  }
  void write_text(std::FILE* out, bool all_rows,
                  const std::shared_ptr<const OptionWords>& words) override {
    ReportOptions report;
    report.pipeline = &loaded_.pipeline;
    report.all_rows = all_rows;
    report.words = words;
    write_text_report(loaded_.run, loaded_.metrics, out, report);
    if (loaded_.kernels.available) {
      std::fputs("\n", out);
      write_kernel_view_text(loaded_.kernels, out, {all_rows, words.get()});
    }
  }

 private:
  LoadedRun& loaded_;
};

/// A rank's part: each output joined from every rank's by collectives.
class PartitionedRunOutputs final : public RunOutputs {
 public:
  PartitionedRunOutputs(distributed::Exchange& exchange, const distributed::LocalLoad& load,
                        const distributed::PartitionedAnalysis& analysis,
                        const SummaryJobFacts& facts)
      : exchange_(exchange), load_(load), analysis_(analysis), facts_(facts) {}

  bool root() const override { return exchange_.rank() == 0; }
  const Run& run() const override { return load_.run; }
  const Metrics& metrics() const override { return analysis_.metrics; }
  const PipelineAnalysis& pipeline() const override { return analysis_.pipeline; }
  const KernelView* kernels() const override { return nullptr; }

  TracePlan plan_trace(const TraceOptions& options, bool steps_given, TraceFormat format,
                       std::uint64_t limit) override {
    return distributed::plan_partitioned_trace(exchange_, load_.run, analysis_, options,
                                               steps_given, format, limit);
  }
  void write_summary(const std::string& path, const std::vector<TraceFileFigures>& traces,
                     unsigned /*threads: rank 0 writes the ranks' pieces in turn*/) override {
    distributed::write_partitioned_summary(exchange_, load_, analysis_, facts_, path, traces);
  }
  void write_trace(const TraceOptions& options, TraceFormat format,
                   const std::string& path) override {
    distributed::write_partitioned_trace(exchange_, load_.run, analysis_, options, format, path);
  }
  void write_html(const HtmlOptions& options, const std::string& path) override {
    distributed::write_partitioned_html(exchange_, load_, analysis_, facts_, options, path);
  }
  void write_text(std::FILE* out, bool all_rows,
                  const std::shared_ptr<const OptionWords>& words) override {
    ReportOptions report;
    report.pipeline = &analysis_.pipeline;
    report.facts = &facts_;
    report.all_rows = all_rows;
    report.words = words;
    write_text_report(load_.run, analysis_.metrics, out, report);
  }

 private:
  distributed::Exchange& exchange_;
  const distributed::LocalLoad& load_;
  const distributed::PartitionedAnalysis& analysis_;
  const SummaryJobFacts& facts_;
};

}  // namespace

std::unique_ptr<RunOutputs> whole_run_outputs(LoadedRun& loaded, bool keep_dependencies) {
  // Freed before the summary's figures are built when nothing draws them
  // (a run the analysis kept them for: --mpi's rank 0).
  if (!keep_dependencies) loaded.pipeline.dependencies = Dependencies();
  return std::make_unique<WholeRunOutputs>(loaded);
}

std::unique_ptr<RunOutputs> partitioned_run_outputs(
    distributed::Exchange& exchange, const distributed::LocalLoad& load,
    const distributed::PartitionedAnalysis& analysis, const SummaryJobFacts& facts) {
  return std::make_unique<PartitionedRunOutputs>(exchange, load, analysis, facts);
}

}  // namespace pipescope
