#include "distributed/assignment.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace pipescope::distributed {

namespace {

/// A rank's load: bytes, then files, then the rank itself (smallest first).
using Load = std::tuple<std::uint64_t, std::size_t, int>;
using MinHeap = std::priority_queue<Load, std::vector<Load>, std::greater<Load>>;

}  // namespace

std::vector<int> assign_files(const std::vector<std::uint64_t>& sizes,
                              const std::vector<std::size_t>& group_of_file,
                              const std::vector<std::vector<int>>& groups) {
  if (group_of_file.size() != sizes.size()) {
    throw std::invalid_argument("assign_files: one group per file expected");
  }
  std::vector<MinHeap> heaps(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const int rank : groups[g]) heaps[g].emplace(0, 0, rank);
  }
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });

  std::vector<int> owner(sizes.size(), -1);
  for (const std::size_t f : order) {
    const std::size_t g = group_of_file[f];
    if (g >= heaps.size() || heaps[g].empty()) {
      throw std::invalid_argument("assign_files: a file has no rank that can read it");
    }
    auto [bytes, files, rank] = heaps[g].top();
    heaps[g].pop();
    owner[f] = rank;
    heaps[g].emplace(bytes + sizes[f], files + 1, rank);
  }
  return owner;
}

std::vector<int> assign_files(const std::vector<std::uint64_t>& sizes, int ranks) {
  std::vector<std::vector<int>> groups(1);
  for (int r = 0; r < ranks; ++r) groups[0].push_back(r);
  return assign_files(sizes, std::vector<std::size_t>(sizes.size(), 0), groups);
}

}  // namespace pipescope::distributed
