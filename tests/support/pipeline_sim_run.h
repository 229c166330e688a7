// Test helper: a simulated run (engine/simulate) as the in-memory model the
// analyses read, without writing logs; every figure is then known by
// construction from the simulator's config.
#pragma once

#include <fmt/core.h>

#include "model/run.h"
#include "simulate/simulator.h"

namespace pipescope::testing {

inline Run run_from_simulation(const sim::SimConfig& config) {
  const sim::SimulatedRun simulated = sim::simulate(config);
  const bool chunked = sim::has_chunks(config.shape.kind);
  Run run;
  for (const sim::SimDeviceInfo& info : simulated.devices) {
    Device device;
    device.index = info.index;
    device.machine = info.machine;
    device.machine_name = config.machines > 1 ? fmt::format("machine{}", info.machine) : "";
    device.rank = info.rank;
    device.path = fmt::format("machine{}/workerlog.{}", info.machine, info.rank);
    std::uint32_t line = 0;
    for (const sim::SimJob& job : simulated.jobs[static_cast<std::size_t>(info.index)]) {
      Job j;
      j.start_ns = job.start_ns;
      j.end_ns = job.end_ns;
      j.micro_batch = job.micro_batch;
      j.job_id = line;
      j.line = ++line;
      j.type = run.types.intern(sim::job_type_name(job, chunked, sim::ChunkNaming::digit));
      device.jobs.push_back(j);
    }
    run.devices.push_back(std::move(device));
  }
  run.finalize();
  return run;
}

inline sim::SimConfig sim_config(sim::ScheduleKind kind, int stages, int micro_batches,
                                 int chunks = 1) {
  sim::SimConfig config;
  config.shape = {kind, stages, micro_batches, chunks};
  return config;
}

}  // namespace pipescope::testing
