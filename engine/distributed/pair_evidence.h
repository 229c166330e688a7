// The stage map's comparisons of devices (analysis/stage_map.h,
// JobPairEvidence: job i of one device against job i of the other, over
// whole devices) where no rank holds a whole device pair: the readers before
// the jobs travel, or the parts after. Exact: the evidence of consecutive
// ranges of indices merges into the whole devices' (merge_job_pair_evidence).
//
//   StageJobEvidence e = exchange_stage_evidence(exchange, pairs, counts,
//                                                held_by_reader(local));
//
// The compared devices' indices are taken in passes of a window each (about
// job_round_bytes of jobs to each rank), cut into one range per rank; each job
// goes from the rank that holds it to the rank of its index's range, so that
// the two jobs of an index meet there; the ranges' evidence is merged in
// index order on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "analysis/stage_map.h"
#include "analysis/step_partition.h"
#include "distributed/exchange.h"
#include "model/run.h"

namespace pipescope::distributed {

/// What a rank holds of a device's jobs: calls `f(index, job)` for each job of
/// device `d` with whole-device index in [begin, end) that this rank holds
/// (each index is held by exactly one rank), in index order.
using HeldJobs = std::function<void(std::size_t d, std::uint64_t begin, std::uint64_t end,
                                    const std::function<void(std::uint64_t, const Job&)>& f)>;

/// The jobs of the devices `local` holds whole (a reader's).
HeldJobs held_by_reader(const Run& local);

/// The jobs of a part's own steps (the steps owned by `rank` in `plan`).
HeldJobs held_by_part(const PartRun& part, const StepPartition& plan, std::size_t rank);

/// The evidence for `pairs` (a < b), every rank taking part in the same
/// collectives: `job_counts` every device's job count, `origin` the run's
/// first job start (each rank's earliest, combined). Throws WireError when a
/// job of a compared range does not arrive.
StageJobEvidence exchange_stage_evidence(
    Exchange& exchange, const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
    const std::vector<std::uint64_t>& job_counts, std::int64_t my_origin, const HeldJobs& held);

}  // namespace pipescope::distributed
