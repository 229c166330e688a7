// The run as one rank of a partitioned analysis reads it, and as the files
// its readers make, for the tests that split a run over threads as ranks
// (tests/distributed/).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "ingest/file_result.h"
#include "model/run.h"

namespace pipescope::testing {

/// Which of a rank's peers' log events it keeps (load_partitioned gives
/// every rank every device's, from the files' headers).
enum class RankEvents {
  all,          ///< every device's
  own,          ///< only its own devices'
  own_but_root  ///< its own devices', rank 0 every device's
};

/// The run as rank `rank` of `ranks` reads it: every device, the jobs (and
/// launch cuts and step-start lines) only of the devices it read: device d
/// by rank d % ranks, or all by the last rank.
inline Run local_view(const Run& run, int rank, int ranks, bool round_robin,
                      RankEvents events = RankEvents::all) {
  Run local = run;
  for (std::size_t d = 0; d < local.devices.size(); ++d) {
    const int reader =
        round_robin ? static_cast<int>(d % static_cast<std::size_t>(ranks)) : ranks - 1;
    if (reader == rank) continue;
    Device& device = local.devices[d];
    device.jobs.clear();
    device.segment_begin.clear();
    device.step_starts.clear();
    if (events == RankEvents::own || (events == RankEvents::own_but_root && rank != 0)) {
      device.events.clear();
    }
  }
  return local;
}

/// Each device of a run as the file a reader would have made of it, with
/// the file's own type ids (interned in reverse order, so the merge remaps).
inline std::vector<FileResult> files_of(const Run& run) {
  std::vector<FileResult> files;
  for (const Device& device : run.devices) {
    FileResult file;
    file.device = device;
    file.device.segment_begin.clear();
    std::vector<TypeId> map(run.types.size());
    for (std::size_t t = run.types.size(); t-- > 0;) {
      map[t] = file.types.intern(run.types.name(static_cast<TypeId>(t)));
    }
    for (Job& job : file.device.jobs) job.type = map[job.type];
    file.stats.path = device.path;
    file.stats.matched = device.jobs.size();
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace pipescope::testing
