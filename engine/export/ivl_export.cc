#include "export/ivl_export.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "io/atomic_output.h"
#include "records/ivl_writer.h"

namespace pipescope {

IvlExport write_ivl_records(const Run& run, const Metrics& metrics, const std::string& output_dir,
                            const std::string& producer) {
  namespace fs = std::filesystem;
  int machines = 0;
  for (const Device& d : run.devices) machines = std::max(machines, d.machine + 1);
  IvlExport result;
  // Every file stays temporary until all are written: a failed export
  // leaves none of them behind.
  std::vector<io::AtomicOutput> outputs;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    fs::path folder = output_dir;
    if (machines > 1) folder /= fmt::format("machine{}", device.machine);
    fs::create_directories(folder);
    const fs::path path = folder / fmt::format("workerlog.{}.ivl", device.rank);
    ivl::FileInfo info;
    info.machine = device.machine;
    info.rank = device.rank;
    info.machine_name = device.machine_name;
    info.producer = producer;
    info.first_step = run.first_step;
    info.types = run.types.names();
    if (!device.jobs.empty()) info.anchor_realtime_ns = device.jobs.front().start_ns;
    outputs.emplace_back(path.string());
    outputs.back().close_descriptor();  // the record writer opens it by name
    ivl::Writer writer(outputs.back().temp_path(), info);
    for (std::size_t i = 0; i < device.jobs.size(); ++i) {
      const Job& job = device.jobs[i];
      const std::int32_t k = metrics.job_step[d][i];
      const auto step = k >= 0 && static_cast<std::size_t>(k) < metrics.steps.size()
                            ? static_cast<std::int32_t>(metrics.steps[k].step)
                            : -1;
      writer.append({job.start_ns, job.end_ns, job.type, static_cast<std::int32_t>(job.micro_batch),
                     step, 0});
    }
    writer.close();
    result.bytes += writer.bytes_written();
    result.files.push_back({device.path, path.string(), device.jobs.size()});
  }
  for (io::AtomicOutput& output : outputs) output.commit();
  return result;
}

}  // namespace pipescope
