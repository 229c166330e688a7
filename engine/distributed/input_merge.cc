#include "distributed/input_merge.h"

#include <filesystem>
#include <map>
#include <set>
#include <utility>

namespace pipescope::distributed {

MergedInputs merge_node_inputs(const std::vector<NodeDiscovery>& nodes) {
  MergedInputs merged;
  std::set<std::string> seen;
  int machines = 0;
  int device = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const NodeDiscovery& node = nodes[n];
    // Machine ordinals are renumbered densely: a machine whose files were
    // all read through another node leaves no gap.
    std::map<int, int> machine_of;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& key = i < node.keys.size() ? node.keys[i] : node.inputs[i].path;
      if (!seen.insert(key).second) {
        ++merged.duplicates;
        continue;
      }
      InputFile input = node.inputs[i];
      auto [it, added] = machine_of.emplace(input.machine, machines);
      if (added) ++machines;
      input.machine = it->second;
      input.device = device++;
      merged.inputs.push_back(std::move(input));
      merged.node_of_input.push_back(n);
    }
  }
  return merged;
}

std::string file_key(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  return ec ? std::filesystem::absolute(path, ec).lexically_normal().string() : canonical.string();
}

}  // namespace pipescope::distributed
