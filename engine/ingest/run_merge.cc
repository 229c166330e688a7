#include "ingest/run_merge.h"

#include <utility>

namespace pipescope {

Run merge_file_results(std::vector<FileResult>&& files) {
  Run run;
  run.devices.reserve(files.size());
  run.inputs.reserve(files.size());
  std::vector<TypeId> map;
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
    }
    run.devices.push_back(std::move(file.device));
    run.inputs.push_back(std::move(file.stats));
    for (Diagnostic& d : file.diagnostics) run.diagnostics.push_back(std::move(d));
    if (file.first_step && (!run.first_step || *file.first_step < *run.first_step)) {
      run.first_step = file.first_step;
    }
  }
  files.clear();
  run.finalize();
  return run;
}

}  // namespace pipescope
