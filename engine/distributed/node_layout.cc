#include "distributed/node_layout.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace pipescope::distributed {

namespace {

bool all_have(const std::vector<RankIdentity>& ranks, std::int64_t RankIdentity::*field) {
  return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(),
                                       [&](const RankIdentity& r) { return r.*field >= 0; });
}

/// True when `field` is one value per shared-memory node and distinct across
/// nodes: a launcher that leaked one node's SLURM_NODEID into every rank
/// (mpirun inside an allocation) would otherwise fold all nodes into one.
bool agrees_with_shared_memory(const std::vector<RankIdentity>& ranks,
                               std::int64_t RankIdentity::*field) {
  std::map<std::int64_t, std::int64_t> value_of_leader;
  std::map<std::int64_t, std::int64_t> leader_of_value;
  for (const RankIdentity& r : ranks) {
    auto [a, new_leader] = value_of_leader.emplace(r.shared_leader, r.*field);
    if (!new_leader && a->second != r.*field) return false;
    auto [b, new_value] = leader_of_value.emplace(r.*field, r.shared_leader);
    if (!new_value && b->second != r.shared_leader) return false;
  }
  return true;
}

}  // namespace

std::size_t NodeLayout::position(int node) const {
  return static_cast<std::size_t>(std::lower_bound(nodes.begin(), nodes.end(), node) -
                                  nodes.begin());
}

NodeLayout layout_nodes(const std::vector<RankIdentity>& ranks) {
  NodeLayout layout;
  layout.node_of_rank.resize(ranks.size());
  if (all_have(ranks, &RankIdentity::override_node)) {
    layout.source = "PIPESCOPE_NODE";
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      layout.node_of_rank[r] = static_cast<int>(ranks[r].override_node);
    }
  } else if (all_have(ranks, &RankIdentity::slurm_node) &&
             agrees_with_shared_memory(ranks, &RankIdentity::slurm_node)) {
    layout.source = "SLURM_NODEID";
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      layout.node_of_rank[r] = static_cast<int>(ranks[r].slurm_node);
    }
  } else {
    layout.source = "shared-memory nodes";
    std::set<std::int64_t> leaders;
    for (const RankIdentity& r : ranks) leaders.insert(r.shared_leader);
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      layout.node_of_rank[r] =
          static_cast<int>(std::distance(leaders.begin(), leaders.find(ranks[r].shared_leader)));
    }
  }
  layout.nodes = layout.node_of_rank;
  std::sort(layout.nodes.begin(), layout.nodes.end());
  layout.nodes.erase(std::unique(layout.nodes.begin(), layout.nodes.end()), layout.nodes.end());
  layout.ranks_of_node.resize(layout.nodes.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    layout.ranks_of_node[layout.position(layout.node_of_rank[r])].push_back(static_cast<int>(r));
  }
  return layout;
}

std::int64_t node_index_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return -1;
  const std::string_view text(value);
  std::int64_t n = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < 0 || n > 1'000'000'000)
    return -1;
  return n;
}

std::string expand_node_template(std::string_view path_template, int node) {
  constexpr std::string_view kPlaceholder = "{node}";
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = path_template.find(kPlaceholder, pos);
    out.append(path_template.substr(pos, hit - pos));
    if (hit == std::string_view::npos) break;
    out += std::to_string(node);
    pos = hit + kPlaceholder.size();
  }
  return out;
}

}  // namespace pipescope::distributed
