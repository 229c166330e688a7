// The partitioned load and analysis over real MPI ranks (mpirun -n 1..4):
// every rank reads the files i with i % ranks == rank of a folder, the ranks
// exchange over MpiExchange (load_partitioned, analyze_partitioned), and each
// rank's figures must be the single process's (each rank analyses the whole
// folder too, for the comparison only). The
// figure-by-figure checks over many runs are the in-process tests
// (tests/distributed/partitioned_driver_test.cc); this one proves the bytes
// travel over MPI as they do between threads, in many small rounds when
// PIPESCOPE_MPI_MESSAGE_BYTES is small.
//
//   mpirun -n 3 partitioned_check FOLDER...   exit 0: equal; 1: a figure differs
#include <fmt/core.h>

#include <cstdio>
#include <string>

#include "analysis/pipeline.h"
#include "distributed/mpi_context.h"
#include "distributed/mpi_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "ingest/ingest.h"
#include "load/load_run.h"

namespace {

using namespace pipescope;

/// The figures a rank holds, as text: its steps' windows with their device
/// figures, the run's totals, schedule, clock and bubbles.
std::string figures(const Metrics& m, std::size_t first, std::size_t last,
                    const ScheduleReport& schedule, const ClockReport& clock,
                    const BubbleSummary& bubbles, std::size_t bubble_offset) {
  std::string out;
  for (std::size_t k = first; k < last; ++k) {
    const StepWindow& w = m.steps[k];
    out += fmt::format("step {} {} {} {} {} {} {:a}:", k, w.step, w.segment, w.complete, w.start_ns,
                       w.end_ns, w.bubble_ratio);
    for (const DeviceStepTime& d : w.devices) {
      out += fmt::format(" {}/{}/{}", d.busy_ns, d.idle_ns, d.comm_ns);
    }
    for (const BubbleTime& b : bubbles.per_step[k - bubble_offset]) {
      out += fmt::format(" [{} {} {}]", b.ns[0], b.ns[1], b.ns[2]);
    }
    out += "\n";
  }
  out += fmt::format("totals {:a} {} {} {}\n", m.bubble_ratio, m.total_window_ns, m.comm_ns,
                     m.incomplete_steps);
  for (const DeviceTotals& d : m.devices) {
    out += fmt::format("device {} {} {} {} {:a}\n", d.busy_ns, d.idle_ns, d.comm_ns, d.steps,
                       d.utilization);
  }
  out += fmt::format("schedule {} {} {} {:a}\n", detection_name(schedule.detection),
                     schedule.steps_agreeing, schedule.steps_examined,
                     schedule.ideal_bubble_ratio.value_or(-1));
  out += fmt::format("clock {} {} {} {}\n", static_cast<int>(clock.method), clock.applied,
                     clock.violations_before, clock.violations_after);
  for (const MachineClock& c : clock.machines) {
    out += fmt::format("machine {} {} {}\n", c.name, c.estimate_ns, c.offset_ns);
  }
  out += fmt::format("bubbles {} {} {}\n", bubbles.total.idle_ns(), bubbles.total.count[0],
                     bubbles.longest.size());
  for (const Bubble& b : bubbles.longest) {
    out += fmt::format("longest {} {} {} {}\n", b.device, b.step, b.start_ns, b.end_ns);
  }
  return out;
}

int check(const pipescope::distributed::MpiContext& mpi, const std::string& folder) {
  using namespace pipescope::distributed;
  LoadOptions options;
  options.inputs.allow_unreadable = true;
  const std::vector<InputFile> inputs = find_inputs({folder});
  LoadedRun whole = load_run(inputs, options);
  // The reference: the run as one process analyses it.
  Run corrected = whole.run;
  const AnalyzedRun single = analyze_run(corrected, options.pipeline);
  whole = LoadedRun();
  // This rank reads the files i with i % ranks == rank, and the prelude and
  // the analysis run by parts over MPI.
  std::vector<InputFile> share;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(mpi.size())) != mpi.rank()) continue;
    share.push_back(inputs[i]);
    index.push_back(i);
  }
  std::vector<FileResult> files = read_input_files(share, options.ingest);
  MpiExchange exchange(mpi, 60);
  LocalLoad local = load_partitioned(exchange, std::move(files), index, inputs.size(), options);
  const PartitionedAnalysis mine = analyze_partitioned(exchange, local.run, options.pipeline);
  const std::string got = figures(mine.metrics, mine.first, mine.last, mine.pipeline.schedule,
                                  mine.pipeline.clock, mine.pipeline.bubbles, mine.first);
  const std::string want = figures(single.metrics, mine.first, mine.last, single.pipeline.schedule,
                                   single.pipeline.clock, single.pipeline.bubbles, 0);
  if (got == want) return 0;
  std::fprintf(stderr, "rank %d of %d, %s: the partitioned figures differ\n--- got\n%s--- want\n%s",
               mpi.rank(), mpi.size(), folder.c_str(), got.c_str(), want.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  pipescope::distributed::MpiContext mpi;
  int status = 0;
  try {
    for (int i = 1; i < argc; ++i) status |= check(mpi, argv[i]);
  } catch (const std::exception& e) {
    mpi.abort(e.what(), 1);
  }
  // Every rank's verdict: the run fails when any rank's figures differ.
  int any = 0;
  MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi.rank() == 0) std::printf("%s\n", any == 0 ? "partitioned: equal" : "partitioned: DIFFER");
  return any;
}
