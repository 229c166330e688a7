// Which node (machine) each MPI rank runs on, and the node-local log folder
// it reads with `--local TEMPLATE`. Pure: the MPI side only collects one
// RankIdentity per rank.
//
// The node index comes from, in this order:
//   1. PIPESCOPE_NODE, when every rank has it (an explicit override, also how
//      the tests place ranks of one machine on several "nodes");
//   2. SLURM_NODEID, when every rank has it and it agrees with the ranks'
//      shared-memory grouping (under `srun` it is the node's position in
//      the allocation, the order `scontrol show hostnames` prints);
//   3. otherwise the shared-memory nodes (MPI_COMM_TYPE_SHARED) numbered
//      0, 1, ... in the order of their lowest world rank (with mpirun's
//      default by-slot mapping: the order of the hostfile).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope::distributed {

/// What one rank knows about its place; -1 for an absent value.
struct RankIdentity {
  /// The lowest world rank sharing memory with this rank.
  std::int64_t shared_leader = -1;
  std::int64_t override_node = -1;  ///< PIPESCOPE_NODE
  std::int64_t slurm_node = -1;     ///< SLURM_NODEID
};

struct NodeLayout {
  /// Node index of every world rank.
  std::vector<int> node_of_rank;
  /// The distinct node indices, ascending, and the world ranks on each
  /// (ascending; the first one is the node's leader).
  std::vector<int> nodes;
  std::vector<std::vector<int>> ranks_of_node;
  /// Where the indices came from, for messages ("SLURM_NODEID", ...).
  std::string source;

  /// Position of `node` in `nodes`.
  std::size_t position(int node) const;
};

/// Builds the layout from every rank's identity (indexed by world rank).
NodeLayout layout_nodes(const std::vector<RankIdentity>& ranks);

/// A non-negative decimal environment value, or -1 (absent or not a number).
std::int64_t node_index_from_env(const char* value);

/// `path_template` with every `{node}` replaced by `node`.
std::string expand_node_template(std::string_view path_template, int node);

}  // namespace pipescope::distributed
