// Which MPI rank reads which input file. Files are handed out largest first,
// each to the eligible rank with the fewest bytes so far (the classic
// longest-processing-time rule), so one huge file never sits behind many small
// ones and the ranks finish at about the same time. Pure: no MPI here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipescope::distributed {

/// The owner rank of every file. `sizes[f]` is file f's size in bytes;
/// `group_of_file[f]` indexes `groups`, the ranks that can see file f (its
/// node's ranks for node-local logs). Ties go to the rank with fewer files,
/// then to the lower rank, so every process computes the same answer.
/// Throws std::invalid_argument when a file's group is empty or out of range.
std::vector<int> assign_files(const std::vector<std::uint64_t>& sizes,
                              const std::vector<std::size_t>& group_of_file,
                              const std::vector<std::vector<int>>& groups);

/// Every one of `ranks` ranks can read every file.
std::vector<int> assign_files(const std::vector<std::uint64_t>& sizes, int ranks);

}  // namespace pipescope::distributed
