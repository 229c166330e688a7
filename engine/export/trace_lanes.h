// Track layout shared by the trace exporters: which lane each job of a
// device goes to, and what the lanes and machines are called. Trace viewers
// drop or mis-nest slices that overlap without nesting on one track, so jobs
// that overlap on one device are spread over extra lanes.
#pragma once

#include <string>
#include <vector>

#include "model/job.h"
#include "model/run.h"

namespace pipescope {

/// Lane of each job (in JobVector order): the lowest lane whose previous job
/// has ended by the job's start, so a lane never holds two overlapping jobs.
/// `lane_count` receives the number of lanes used (at least 1).
std::vector<int> assign_trace_lanes(const JobVector& jobs, int& lane_count);

/// "GPU 3 (machine 1)" for lane 0, "GPU 3 (machine 1) · overlap 2" for others.
std::string trace_lane_name(const Device& device, int lane);

/// "GPU 3 (machine 1) · bubbles".
std::string trace_bubble_lane_name(const Device& device);

/// The machine folder name, or "Machine <ordinal>" when it has none.
std::string trace_machine_label(const Device& device);

}  // namespace pipescope
