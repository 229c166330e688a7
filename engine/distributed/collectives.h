// Small reductions over an Exchange (exchange.h), each one all-gather: every
// rank calls them in the same order and gets the same answer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "distributed/exchange.h"
#include "distributed/wire.h"

namespace pipescope::distributed {

/// The least of every rank's `mine` (INT64_MAX stands for none).
inline std::int64_t gather_min(Exchange& exchange, std::int64_t mine) {
  ByteWriter w;
  w.put(mine);
  std::int64_t out = std::numeric_limits<std::int64_t>::max();
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    out = std::min(out, r.get<std::int64_t>());
  }
  return out;
}

/// The sum of every rank's `mine`.
inline std::uint64_t gather_sum(Exchange& exchange, std::uint64_t mine) {
  ByteWriter w;
  w.put(mine);
  std::uint64_t out = 0;
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    out += r.get<std::uint64_t>();
  }
  return out;
}

/// Σ over the ranks of a vector of counts of the same length on every rank.
/// Throws WireError when a rank's length differs.
inline std::vector<std::uint64_t> sum_counts(Exchange& exchange,
                                             const std::vector<std::uint64_t>& mine) {
  ByteWriter w;
  w.list(mine);
  std::vector<std::uint64_t> total(mine.size(), 0);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    std::vector<std::uint64_t> theirs;
    r.list(theirs);
    if (theirs.size() != total.size()) throw WireError("counts of another length");
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += theirs[i];
  }
  return total;
}

}  // namespace pipescope::distributed
