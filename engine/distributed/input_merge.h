// Joins the inputs each node found under its own `--local` folder into one
// global input list in node order: node k's machines (in discovery's order
// within its folder) after those of nodes 0..k-1, machines and global device
// indices numbered on across nodes. The node index decides, not the folders'
// names (discovery orders separate folders by name; with `machine{node}`
// folders the two orders agree). A file seen by several nodes (a template without {node},
// or links into shared storage: same canonical path) is kept once, on the
// first node that listed it. Pure: no MPI here.
#pragma once

#include <string>
#include <vector>

#include "ingest/discovery.h"

namespace pipescope::distributed {

/// What one node's leader found under its folder.
struct NodeDiscovery {
  int node = 0;                   ///< node index
  int leader = 0;                 ///< world rank that listed it
  std::string folder;             ///< the template with {node} replaced
  std::string error;              ///< non-empty: the folder could not be listed
  std::vector<InputFile> inputs;  ///< discover_inputs({folder})
  std::vector<std::string> keys;  ///< canonical path of each input
};

struct MergedInputs {
  std::vector<InputFile> inputs;
  /// For each input, its node's position in the `nodes` argument.
  std::vector<std::size_t> node_of_input;
  /// Files dropped because another node had listed them already.
  std::size_t duplicates = 0;
};

/// `nodes` in node order.
MergedInputs merge_node_inputs(const std::vector<NodeDiscovery>& nodes);

/// The key that identifies a file across ranks: its canonical path (or the
/// path itself when it cannot be resolved, e.g. a dangling link).
std::string file_key(const std::string& path);

}  // namespace pipescope::distributed
