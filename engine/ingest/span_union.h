// The union of many time intervals given in any order, as the kernel
// collector gathers a trace's compute activities: Kineto writes them per
// buffer and stream, not in global time order.
//
// Guarantees: take() returns the union of every interval added, sorted,
// disjoint and never touching; adding n intervals costs O(n log n) in all,
// whatever their order (intervals in time order are merged as they come, at
// O(1) each; the others wait in a side list that is sorted and merged in
// once it is as long as the merged list, so each interval is merged
// O(log n) times at most); memory is the merged intervals plus at most as
// many waiting ones.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gpu_activity.h"

namespace pipescope {

class SpanUnion {
 public:
  /// Adds [start, end); an empty interval adds nothing.
  void add(std::int64_t start, std::int64_t end);
  /// The union so far (sorted, disjoint, never touching); leaves it empty.
  std::vector<TimeSpan> take();

 private:
  void merge_late();

  std::vector<TimeSpan> merged_;  // sorted, disjoint, never touching
  std::vector<TimeSpan> late_;    // added before merged_.back(), any order
};

}  // namespace pipescope
