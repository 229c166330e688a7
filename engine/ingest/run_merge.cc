#include "ingest/run_merge.h"

#include <algorithm>
#include <utility>

namespace pipescope {

Run merge_file_results(std::vector<FileResult>&& files) {
  Run run;
  run.devices.reserve(files.size());
  run.inputs.reserve(files.size());
  std::vector<TypeId> map;
  bool regrouped = false;  // a reader placed devices other than one per file
  for (FileResult& file : files) {
    map.resize(file.types.size());
    bool identity = true;
    for (TypeId t = 0; t < file.types.size(); ++t) {
      map[t] = run.types.intern(file.types.name(t));
      identity = identity && map[t] == t;
    }
    // Files of one run usually meet their types in the same order: then the
    // ids already agree and the jobs need no pass.
    if (!identity) {
      for (Job& job : file.device.jobs) job.type = map[job.type];
      for (Device& more : file.more_devices) {
        for (Job& job : more.jobs) job.type = map[job.type];
      }
    }
    if (file.has_device) run.devices.push_back(std::move(file.device));
    for (Device& more : file.more_devices) run.devices.push_back(std::move(more));
    if (!file.has_device || !file.more_devices.empty()) regrouped = true;
    run.time_resolution_ns = std::max(run.time_resolution_ns, file.time_resolution_ns);
    for (Warning& note : file.notes) run.notes.push_back(std::move(note));
    for (RankKernels& kernels : file.kernels) run.kernels.push_back(std::move(kernels));
    run.inputs.push_back(std::move(file.stats));
    for (Diagnostic& d : file.diagnostics) run.diagnostics.push_back(std::move(d));
    if (file.first_step && (!run.first_step || *file.first_step < *run.first_step)) {
      run.first_step = file.first_step;
    }
  }
  files.clear();
  // Discovery numbers devices in input order; a reader that places its own
  // (dygraph records, by stage) may not: the run's order is the index order.
  if (regrouped) {
    std::stable_sort(run.devices.begin(), run.devices.end(),
                     [](const Device& a, const Device& b) { return a.index < b.index; });
  }
  run.finalize();
  return run;
}

}  // namespace pipescope
