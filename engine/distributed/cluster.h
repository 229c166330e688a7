// `analyze --mpi`: discovery, scan and gather over MPI ranks; rank 0 then
// runs the usual analysis and exports on the merged Run, which equals the
// Run of a single process on the same inputs.
//
//   Shared storage (`paths`): rank 0 lists the folders once (one listing
//   instead of one per rank, which spares a parallel file system's metadata
//   server) and hands every rank its share of the files, balanced by size,
//   largest first.
//   Node-local storage (`local_template`): on every node the lowest rank lists
//   the template with {node} replaced by the node index (node_layout.h) and
//   the node's files are shared among that node's ranks only; each file is
//   read by one rank.
//
// Each rank scans its share with the normal parallel pipeline and sends the
// records to rank 0 in messages of at most `max_message_bytes`; rank 0 runs
// the formats' joins over every file's result (ingest.h, join_file_results:
// an Nsight export's processes placed as ranks over every export) and merges. A file that
// cannot be read is reported (which rank, which file, why) and the run goes
// on with what was read. No rank waits forever: a rank that is silent for
// `timeout_s` (no scan progress, no message) makes the waiting rank call
// MPI_Abort with a message saying whom it waited for.
//
// Usage (every rank calls it; the callbacks run on rank 0 only):
//   ClusterCallbacks cb;
//   cb.on_result = [&](ClusterScan& scan) { ...analyse, export...; return status; };
//   return run_on_cluster(options, cb);   // the same status on every rank
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "distributed/exchange.h"
#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/ingest.h"
#include "model/run.h"

namespace pipescope::distributed {

struct ClusterOptions {
  std::vector<std::string> paths;  ///< inputs on storage every rank sees
  std::string local_template;      ///< or: node-local folder, `{node}` = node index
  std::string devices;             ///< device selection, empty for all
  /// Threads: 0 = the node's cores shared among its ranks. on_progress is
  /// ignored (see ClusterCallbacks). Its `words` name the options in the
  /// messages (the device selection, the node-local folders, the timeout).
  IngestOptions scan;
  double timeout_s = 300;
  std::size_t max_message_bytes = std::size_t{4} << 20;
};

/// A file (or a node's folder) that some rank could not read.
struct ReadFailure {
  int rank = 0;
  int node = 0;
  std::string path;
  std::string error;
  /// The node's local folder could not be listed (not a single file).
  bool folder = false;
};

/// Rank 0's result.
struct ClusterScan {
  Run run;
  std::vector<InputFile> inputs;  ///< the global input list, in order
  std::vector<ReadFailure> failures;
  int ranks = 1;
  int nodes = 1;
};

/// What each rank holds after the scan when the analysis is partitioned
/// (ClusterCallbacks::on_partitioned): the results of the files it read.
struct PartitionedScan {
  std::vector<FileResult> files;
  /// Where files[i] is in the global input list.
  std::vector<std::size_t> global_index;
  /// How many inputs the global list has.
  std::size_t file_count = 0;
  /// Rank 0 only: the global input list and the files that could not be read.
  std::vector<InputFile> inputs;
  std::vector<ReadFailure> failures;
  int ranks = 1;
  int nodes = 1;
};

struct ClusterCallbacks {
  /// After discovery, before the scan (e.g. to refuse an output that is an
  /// input); throwing stops every rank.
  std::function<void(const std::vector<InputFile>&)> on_plan;
  /// Bytes and files scanned so far, summed over all ranks (coarse).
  std::function<void(const IngestProgress&)> on_progress;
  /// The analysis and exports; its return value is every rank's status.
  std::function<int(ClusterScan&)> on_result;
  /// When set, no jobs are gathered: every rank keeps what it read and
  /// calls this, with the exchange the partitioned analysis runs on
  /// (partitioned_analysis.h), instead of on_result on rank 0 (unless the
  /// inputs are of a format with a join, ingest.h's join_file_results: rank
  /// 0 then gathers every file's result, joins them and calls on_result). The status
  /// returned is the largest any rank returned. An exception on a rank that
  /// every rank throws alike (an input error decided from gathered facts) is
  /// reported on rank 0 by `on_error` (rethrown there without one) and every
  /// rank returns `error_status` once it has been reported, so that no rank
  /// exits (which makes mpirun end the others) before the message is out;
  /// any other ends every rank (MPI_Abort, exit status 2) with its message.
  std::function<int(Exchange&, PartitionedScan&)> on_partitioned;
  std::function<void(const std::exception&)> on_error;
};

/// True when this build has the MPI engine.
bool cluster_support_built();

/// Initialises MPI (unless already initialised), runs everything, finalises
/// MPI, returns the status. An exception on rank 0 (discovery, on_plan,
/// on_result) is rethrown there after every other rank has been told to
/// return `error_status`. Without MPI in the build: throws InputError.
int run_on_cluster(const ClusterOptions& options, const ClusterCallbacks& callbacks,
                   int error_status = 2);

}  // namespace pipescope::distributed
