#include "ingest/span_union.h"

#include <algorithm>
#include <utility>

namespace pipescope {

namespace {

/// Below this many, late intervals wait (a merge costs the whole list).
constexpr std::size_t kMinLate = 4096;

/// Appends [s.start, s.end) to sorted, disjoint `out`, merging with its last
/// interval when they overlap or touch; `s` starts at or after out.back().start.
void append(std::vector<TimeSpan>& out, const TimeSpan& s) {
  if (!out.empty() && s.start <= out.back().end) {
    out.back().end = std::max(out.back().end, s.end);
  } else {
    out.push_back(s);
  }
}

}  // namespace

void SpanUnion::add(std::int64_t start, std::int64_t end) {
  if (end <= start) return;
  if (merged_.empty() || start >= merged_.back().start) {
    append(merged_, {start, end});
    return;
  }
  late_.push_back({start, end});
  if (late_.size() >= std::max(kMinLate, merged_.size())) merge_late();
}

void SpanUnion::merge_late() {
  if (late_.empty()) return;
  std::sort(late_.begin(), late_.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  std::vector<TimeSpan> out;
  out.reserve(merged_.size() + late_.size());
  std::size_t i = 0, j = 0;
  while (i < merged_.size() || j < late_.size()) {
    const bool from_merged =
        j == late_.size() || (i < merged_.size() && merged_[i].start <= late_[j].start);
    append(out, from_merged ? merged_[i++] : late_[j++]);
  }
  merged_ = std::move(out);
  late_.clear();
}

std::vector<TimeSpan> SpanUnion::take() {
  merge_late();
  std::vector<TimeSpan> out = std::move(merged_);
  merged_.clear();
  late_ = {};
  return out;
}

}  // namespace pipescope
