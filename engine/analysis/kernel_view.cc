#include "analysis/kernel_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "model/separate_runs.h"

namespace pipescope {

void KernelSplit::add(const KernelSplit& o) {
  window += o.window;
  compute += o.compute;
  transfer += o.transfer;
  wait += o.wait;
  idle += o.idle;
  comm_split_known = comm_split_known && o.comm_split_known;
}

double KernelView::bubble_ratio() const {
  return total.window > 0
             ? static_cast<double>(total.window - total.compute) / static_cast<double>(total.window)
             : 0.0;
}

double KernelView::share(std::int64_t part) const {
  return total.window > 0 ? static_cast<double>(part) / static_cast<double>(total.window) : 0.0;
}

namespace {

using Spans = std::vector<TimeSpan>;

/// Sorted, disjoint, non-touching spans from any spans.
Spans normalized(Spans spans) {
  std::sort(spans.begin(), spans.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  Spans out;
  for (const TimeSpan& s : spans) {
    if (s.end <= s.start) continue;
    if (!out.empty() && s.start <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

/// a − b (both normalized).
Spans minus(const Spans& a, const Spans& b) {
  Spans out;
  std::size_t j = 0;
  for (TimeSpan s : a) {
    while (j < b.size() && b[j].end <= s.start) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < s.end) {
      if (b[k].start > s.start) out.push_back({s.start, b[k].start});
      s.start = std::max(s.start, b[k].end);
      if (s.start >= s.end) break;
      ++k;
    }
    if (s.start < s.end) out.push_back(s);
  }
  return out;
}

/// |spans ∩ [start, end)| (spans normalized).
std::int64_t covered(const Spans& spans, std::int64_t start, std::int64_t end) {
  if (end <= start) return 0;
  auto it = std::lower_bound(spans.begin(), spans.end(), start,
                             [](const TimeSpan& s, std::int64_t v) { return s.end <= v; });
  std::int64_t sum = 0;
  for (; it != spans.end() && it->start < end; ++it) {
    sum += std::min(it->end, end) - std::max(it->start, start);
  }
  return sum;
}

/// A communication kernel's place: rank (index into the view's order) and
/// index in that rank's `comm`.
struct KernelRef {
  std::size_t rank = 0;
  std::size_t index = 0;
};

/// The group a kernel's communication belongs to, for matching without
/// Comms Id: its name where given, else its ranks.
std::string group_key(const CommKernel& c) {
  if (!c.group_name.empty()) return c.group_name;
  std::string key = "ranks";
  for (int r : c.group_ranks) key += fmt::format(",{}", r);
  return key;
}

/// Each named process group's members where a trace's args do not list
/// them (PyTorch cuts `Process Group Ranks` after 30 ranks): the full list
/// another trace gives for that group name, else, when as many ranks use the
/// group as its `Group size` says, those ranks. Never a cut list.
std::map<std::string, std::vector<int>> group_members(const std::vector<const RankKernels*>& ranks,
                                                      const std::vector<int>& global) {
  std::map<std::string, std::vector<int>> listed;
  std::map<std::string, std::set<int>> users;
  std::map<std::string, int> size;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommKernel& c : ranks[r]->comm) {
      if (c.op != CommOp::collective || c.group_name.empty()) continue;
      if (!c.group_ranks.empty()) listed.emplace(c.group_name, c.group_ranks);
      users[c.group_name].insert(global[r]);
      if (c.group_size > 0) size[c.group_name] = c.group_size;
    }
  }
  std::map<std::string, std::vector<int>> out = listed;
  for (const auto& [name, who] : users) {
    if (out.count(name)) continue;
    const auto n = size.find(name);
    if (n != size.end() && static_cast<std::size_t>(n->second) == who.size()) {
      out[name] = std::vector<int>(who.begin(), who.end());
    }
  }
  return out;
}

/// The order rules (docs/guide.md, "The kernel view"): where the traces do
/// not name a point-to-point operation's peer, the run's structure may
/// leave it one rank to have talked to. An operation whose call names its
/// group of two members (PyTorch 2.2) has the other member; in a world of
/// two ranks (every trace present: two ranks, each trace's `world_size` 2
/// where written, at least one writing it) every communication is between
/// the two, so an operation's peer is the other rank, a kernel that names
/// nothing at all (PyTorch 2.1 and earlier) is one operation with it whose
/// direction is not known, and a collective without a group has both.
/// Returns how many kernels it completed; `filled` holds the ranks changed
/// (copies), `ranks` then points at them.
std::uint64_t fill_peers_by_order(std::vector<const RankKernels*>& ranks,
                                  const std::vector<int>& global,
                                  std::vector<RankKernels>& filled) {
  bool world_of_two = ranks.size() == 2;
  bool written = false;
  for (const RankKernels* r : ranks) {
    if (r->world_size != 0 && r->world_size != 2) world_of_two = false;
    written = written || r->world_size == 2;
  }
  world_of_two = world_of_two && written;
  // The other end of an operation of rank `r` whose peer is not named; -1:
  // not fixed.
  auto other = [&](std::size_t r, const PeerOp& o) {
    const int me = global[r];
    if (o.pair[0] == me && o.pair[1] != me) return o.pair[1];
    if (o.pair[1] == me && o.pair[0] != me) return o.pair[0];
    return world_of_two ? global[1 - r] : -1;
  };
  auto fixable = [&](std::size_t r, const CommKernel& c) {
    if (c.op == CommOp::point_to_point) {
      if (c.p2p.empty()) return world_of_two;
      bool unnamed = false, all = true;
      for (const PeerOp& o : c.p2p) {
        if (o.peer >= 0) continue;
        unnamed = true;
        all = all && other(r, o) >= 0;
      }
      return unnamed && all;
    }
    return c.op == CommOp::collective && world_of_two && c.group_ranks.empty() &&
           c.group_name.empty();
  };
  std::uint64_t fixed = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommKernel& c : ranks[r]->comm) fixed += fixable(r, c) ? 1 : 0;
  }
  if (fixed == 0) return 0;
  filled.reserve(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankKernels copy = *ranks[r];
    for (CommKernel& c : copy.comm) {
      if (!fixable(r, c)) continue;
      if (c.op == CommOp::collective) {
        c.group_ranks = {std::min(global[0], global[1]), std::max(global[0], global[1])};
      } else if (c.p2p.empty()) {
        c.p2p.push_back({.op = CommOp::unknown, .peer = global[1 - r]});
      } else {
        for (PeerOp& o : c.p2p) {
          if (o.peer < 0) o.peer = other(r, o);
        }
      }
    }
    filled.push_back(std::move(copy));
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = &filled[r];
  return fixed;
}

/// For every kernel, the refs of its peers (empty: none found). A
/// point-to-point kernel has peers only when every one of its operations
/// found its other end (a batched kernel's partial peers would give a wait
/// that looks measured and is not).
std::vector<std::vector<std::vector<KernelRef>>> find_peers(
    const std::vector<const RankKernels*>& ranks, const std::vector<int>& global) {
  std::vector<std::vector<std::vector<KernelRef>>> peers(ranks.size());
  std::vector<std::vector<std::size_t>> matched(ranks.size());  // operations matched
  std::map<int, std::size_t> place;                             // global rank -> rank index
  for (std::size_t r = 0; r < ranks.size(); ++r) place[global[r]] = r;

  const std::map<std::string, std::vector<int>> members = group_members(ranks, global);
  auto ranks_of = [&members](const CommKernel& c) -> const std::vector<int>& {
    if (!c.group_ranks.empty() || c.group_name.empty()) return c.group_ranks;
    const auto m = members.find(c.group_name);
    return m != members.end() ? m->second : c.group_ranks;
  };
  // Kernels with the same key are one communication.
  std::map<std::uint64_t, std::vector<KernelRef>> by_id;
  // Calls are counted within each step (a profiler started mid-step, or a
  // rank's kernels launched before its trace began, shift the counts of that
  // step only); kernels in no step are counted among themselves.
  constexpr std::int64_t kNoStep = std::numeric_limits<std::int64_t>::min();
  using CallKey = std::tuple<std::string, std::string, std::int64_t>;  // group, name, step
  // src, dst, step; an operation whose direction is not known (the order
  // rules') is counted apart, as (-1 - lower rank, higher rank, step).
  using PairKey = std::tuple<int, int, std::int64_t>;
  std::map<std::tuple<std::string, std::string, std::int64_t, std::int64_t>, std::vector<KernelRef>>
      by_call;
  std::map<std::tuple<int, int, std::int64_t, std::int64_t>, std::vector<KernelRef>> by_pair;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    peers[r].resize(ranks[r]->comm.size());
    matched[r].assign(ranks[r]->comm.size(), 0);
    std::map<CallKey, std::int64_t> calls;  // -> k
    std::map<PairKey, std::int64_t> pairs;  // -> k
    for (std::size_t i = 0; i < ranks[r]->comm.size(); ++i) {
      const CommKernel& c = ranks[r]->comm[i];
      if (c.comms_id) {
        by_id[*c.comms_id].push_back({r, i});
        continue;
      }
      const std::int64_t step = c.step.value_or(kNoStep);
      if (c.op == CommOp::collective && !ranks_of(c).empty()) {
        const std::string g = group_key(c);
        by_call[{g, c.collective, step, calls[{g, c.collective, step}]++}].push_back({r, i});
      } else if (c.op == CommOp::point_to_point) {
        // Each operation is counted on its own: a batched kernel's send and
        // recv each meet their other end, wherever that end was batched. Not
        // by group: the two directions between a pair may use two groups
        // (Megatron's pipeline of two), and each side's args may come from
        // another source (the kernel's, the host's).
        for (const PeerOp& o : c.p2p) {
          if (o.peer < 0) continue;  // not named: the kernel finds no peers
          int src = o.op == CommOp::send ? global[r] : o.peer;
          int dst = o.op == CommOp::send ? o.peer : global[r];
          if (o.op == CommOp::unknown) {
            src = -1 - std::min(global[r], o.peer);
            dst = std::max(global[r], o.peer);
          }
          by_pair[{src, dst, step, pairs[{src, dst, step}]++}].push_back({r, i});
        }
      }
    }
  }
  // Each member's peers: the others of its communication; a collective
  // needs every member of its group present, a send its recv.
  auto assign = [&](const std::vector<KernelRef>& members, bool whole_group) {
    for (const KernelRef& m : members) {
      const CommKernel& c = ranks[m.rank]->comm[m.index];
      std::vector<KernelRef> others;
      std::set<std::size_t> seen;
      for (const KernelRef& o : members) {
        if (o.rank != m.rank && seen.insert(o.rank).second) others.push_back(o);
      }
      const std::vector<int>& group = ranks_of(c);
      if (whole_group && !group.empty()) {
        bool all = true;
        for (int g : group) {
          if (g == global[m.rank]) continue;
          const auto p = place.find(g);
          if (p == place.end() || !seen.count(p->second)) all = false;
        }
        if (!all) others.clear();
      }
      if (others.empty()) continue;
      ++matched[m.rank][m.index];
      std::vector<KernelRef>& mine = peers[m.rank][m.index];
      for (const KernelRef& o : others) {
        const bool known = std::any_of(mine.begin(), mine.end(), [&](const KernelRef& k) {
          return k.rank == o.rank && k.index == o.index;
        });
        if (!known) mine.push_back(o);
      }
    }
  };
  for (const auto& [id, members] : by_id) {
    const CommKernel& c = ranks[members.front().rank]->comm[members.front().index];
    assign(members, c.op == CommOp::collective);
  }
  for (const auto& [key, members] : by_call) assign(members, true);
  for (const auto& [key, members] : by_pair) assign(members, false);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t i = 0; i < ranks[r]->comm.size(); ++i) {
      const CommKernel& c = ranks[r]->comm[i];
      if (!c.comms_id && c.op == CommOp::point_to_point && matched[r][i] < c.p2p.size()) {
        peers[r][i].clear();
      }
    }
  }
  return peers;
}

bool names_the_pipeline(std::string_view text) {
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower.find("pipe") != std::string::npos;
}

/// The layout and each rank's stage (KernelLayout), from the ranks' NCCL
/// kernels; `global` is each rank's global rank.
KernelLayout find_layout(const std::vector<const RankKernels*>& ranks,
                         const std::vector<int>& global, std::vector<int>& stage) {
  KernelLayout layout;
  stage.assign(ranks.size(), -1);
  std::map<int, std::size_t> place;
  for (std::size_t r = 0; r < ranks.size(); ++r) place[global[r]] = r;
  // 1. A process group that names the pipeline.
  std::set<std::vector<int>> pipelines;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommKernel& c : ranks[r]->comm) {
      const std::string_view label =
          !c.group_description.empty() ? c.group_description : std::string_view(c.group_name);
      if (c.group_ranks.empty() || !names_the_pipeline(label)) continue;
      const auto at = std::find(c.group_ranks.begin(), c.group_ranks.end(), global[r]);
      if (at == c.group_ranks.end()) continue;
      stage[r] = static_cast<int>(at - c.group_ranks.begin());
      pipelines.insert(c.group_ranks);
      layout.group = std::string(label);
      layout.pp = std::max(layout.pp, static_cast<int>(c.group_ranks.size()));
      break;
    }
  }
  if (!pipelines.empty()) {
    layout.source = KernelLayoutSource::process_group;
    layout.dp = static_cast<int>(pipelines.size());
    return layout;
  }
  // 2. The point-to-point pattern: neighbours are ranks that send to each
  // other; each pipeline is a chain (or a ring, with interleaved stages).
  std::vector<std::set<std::size_t>> next(ranks.size());
  std::vector<int> first_op(ranks.size(), 0);  // +1: a send first, −1: a recv
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommKernel& c : ranks[r]->comm) {  // in start order
      for (const PeerOp& o : c.p2p) {
        const auto p = place.find(o.peer);
        if (p == place.end() || p->second == r) continue;
        next[r].insert(p->second);
        next[p->second].insert(r);
        if (first_op[r] == 0 && o.op != CommOp::unknown) {
          first_op[r] = o.op == CommOp::send ? 1 : -1;
        }
      }
    }
  }
  std::vector<bool> seen(ranks.size(), false);
  int chains = 0, longest = 0;
  for (std::size_t r0 = 0; r0 < ranks.size(); ++r0) {
    if (seen[r0] || next[r0].empty()) continue;
    // The component of r0.
    std::vector<std::size_t> members;
    std::vector<std::size_t> todo{r0};
    seen[r0] = true;
    bool chain = true;
    while (!todo.empty()) {
      const std::size_t r = todo.back();
      todo.pop_back();
      members.push_back(r);
      if (next[r].size() > 2) chain = false;
      for (std::size_t q : next[r]) {
        if (!seen[q]) {
          seen[q] = true;
          todo.push_back(q);
        }
      }
    }
    if (!chain) return {};  // not a pipeline's pattern: no layout
    // Stage 0: an end that sends first (a chain), else, on a ring, the
    // lowest rank that sends first.
    std::sort(members.begin(), members.end());
    std::size_t start = members.front();
    bool found = false;
    for (std::size_t m : members) {
      if (next[m].size() == 1 && first_op[m] > 0) {
        start = m;
        found = true;
        break;
      }
    }
    if (!found) {
      for (std::size_t m : members) {
        if (next[m].size() == 1) {
          start = m;
          found = true;
          break;
        }
      }
    }
    if (!found) {
      for (std::size_t m : members) {
        if (first_op[m] > 0) {
          start = m;
          break;
        }
      }
    }
    // Walk: on a ring, towards the first rank `start` sent to.
    std::size_t prev = ranks.size(), at = start;
    int s = 0;
    for (std::size_t steps = 0; steps < members.size(); ++steps) {
      stage[at] = s++;
      std::size_t to = ranks.size();
      if (prev == ranks.size() && next[at].size() == 2) {
        for (const CommKernel& c : ranks[at]->comm) {
          for (const PeerOp& o : c.p2p) {
            if (o.op == CommOp::send && place.count(o.peer)) {
              to = place[o.peer];
              break;
            }
          }
          if (to != ranks.size()) break;
        }
      }
      if (to == ranks.size()) {
        for (std::size_t q : next[at]) {
          if (q != prev && stage[q] < 0) {
            to = q;
            break;
          }
        }
      }
      if (to == ranks.size()) break;
      prev = at;
      at = to;
    }
    ++chains;
    longest = std::max(longest, s);
  }
  if (chains == 0) return {};
  layout.source = KernelLayoutSource::point_to_point;
  layout.pp = longest;
  layout.dp = chains;
  return layout;
}

/// The median of `v` (sorted in place; the lower middle for an even count).
std::int64_t median_of(std::vector<std::int64_t>& v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

/// Machine offsets from the matched kernels' ends (KernelClock); `machine`
/// is each rank's machine.
KernelClock estimate_clocks(const std::vector<const RankKernels*>& ranks,
                            const std::vector<std::vector<std::vector<KernelRef>>>& peers) {
  KernelClock clock;
  std::set<int> machines;
  for (const RankKernels* r : ranks) machines.insert(r->machine);
  clock.machines = machines.size();
  for (int m : machines) clock.offsets.push_back({m, 0, 0});
  if (machines.size() < 2) return clock;
  // (a, b) with a < b -> samples of end_b − end_a; same machine: |end diff|.
  std::map<std::pair<int, int>, std::vector<std::int64_t>> across;
  std::vector<std::int64_t> within;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t i = 0; i < peers[r].size(); ++i) {
      const CommKernel& c = ranks[r]->comm[i];
      for (const KernelRef& p : peers[r][i]) {
        if (p.rank <= r) continue;  // each pair once
        const int a = ranks[r]->machine, b = ranks[p.rank]->machine;
        const std::int64_t d = ranks[p.rank]->comm[p.index].end - c.end;
        if (a == b) {
          within.push_back(d < 0 ? -d : d);
        } else if (a < b) {
          across[{a, b}].push_back(d);
        } else {
          across[{b, a}].push_back(-d);
        }
      }
    }
  }
  std::int64_t noise = 2'000;
  if (!within.empty()) {
    std::sort(within.begin(), within.end());
    noise = std::max(
        noise,
        2 * within[(within.size() * 95) / 100 == within.size() ? within.size() - 1
                                                               : (within.size() * 95) / 100]);
  }
  clock.noise_ns = noise;
  // Offsets from machine 0 (the lowest) outwards, along the pairs with the
  // most samples first.
  std::map<int, std::pair<std::int64_t, std::uint64_t>> known;  // machine -> offset, pairs
  known[*machines.begin()] = {0, 0};
  for (bool grew = true; grew;) {
    grew = false;
    std::pair<int, int> best{-1, -1};
    std::size_t best_n = 0;
    for (const auto& [pair, samples] : across) {
      const bool a = known.count(pair.first) > 0, b = known.count(pair.second) > 0;
      if (a != b && samples.size() > best_n) {
        best = pair;
        best_n = samples.size();
      }
    }
    if (best_n == 0) break;
    std::vector<std::int64_t> samples = across[best];
    const std::int64_t d = median_of(samples);  // offset(second) − offset(first)
    if (known.count(best.first)) {
      known[best.second] = {known[best.first].first + d, known[best.first].second + best_n};
    } else {
      known[best.first] = {known[best.second].first - d, known[best.second].second + best_n};
    }
    grew = true;
  }
  for (KernelMachineClock& m : clock.offsets) {
    if (const auto k = known.find(m.machine); k != known.end()) {
      m.offset_ns = k->second.first;
      m.pairs = k->second.second;
      if (std::llabs(m.offset_ns) > noise) clock.applied = true;
    }
  }
  return clock;
}

/// `r` with every time moved back by `offset` (onto machine 0's clock).
RankKernels shifted(const RankKernels& r, std::int64_t offset) {
  RankKernels s = r;
  for (TimeSpan& t : s.compute) {
    t.start -= offset;
    t.end -= offset;
  }
  for (CommKernel& c : s.comm) {
    c.start -= offset;
    c.end -= offset;
  }
  for (RankKernels::StepExtent& e : s.steps) {
    e.first_start -= offset;
    e.last_end -= offset;
  }
  s.first_start -= offset;
  s.last_end -= offset;
  if (s.cut_ns != RankKernels::kNotCut) s.cut_ns -= offset;
  return s;
}

/// A rank's input as messages name it: its trace, or its export and
/// process (an export may hold several ranks).
std::string rank_input(const RankKernels& r) {
  return r.pid >= 0 ? fmt::format("{} (pid {})", r.path, r.pid) : r.path;
}

}  // namespace

TraceRanks trace_ranks(const std::vector<RankKernels>& input) {
  TraceRanks out;
  const std::size_t n = input.size();
  std::vector<int>& rank = out.rank;
  std::vector<RankSource>& source = out.source;
  rank.assign(n, -1);
  source.assign(n, RankSource::order);
  std::map<int, std::size_t> per_machine;  // machine -> traces
  for (const RankKernels& r : input) ++per_machine[r.machine];
  std::map<int, int> machine_base;  // machine -> ranks of the machines before it
  int base = 0;
  for (const auto& [machine, count] : per_machine) {
    machine_base[machine] = base;
    base += static_cast<int>(count);
  }
  auto refuse = [&](std::string why) {
    out.refusal = std::move(why);
    out.rank.clear();
    out.source.clear();
    return out;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const RankKernels& r = input[i];
    if (r.comm_rank == RankKernels::kConflict) {
      return refuse(fmt::format(
          "{}: its NCCL kernels' communication args give two different global ranks for it; "
          "which rank this trace is cannot be told",
          rank_input(r)));
    }
    if (r.global_rank >= 0) {
      if (r.comm_rank >= 0 && r.comm_rank != r.global_rank) {
        return refuse(fmt::format(
            "{}: distributedInfo says rank {}, its communication args rank {}; which rank "
            "this trace is cannot be told",
            rank_input(r), r.global_rank, r.comm_rank));
      }
      rank[i] = r.global_rank;
      source[i] = r.rank_claim == RankKernels::Claim::environment ? RankSource::environment
                  : r.rank_claim == RankKernels::Claim::nccl      ? RankSource::nccl
                                                                  : RankSource::distributed_info;
    } else if (r.comm_rank >= 0) {
      rank[i] = r.comm_rank;
      source[i] = RankSource::communication;
    } else if (r.device_ordinal >= 0) {
      rank[i] = machine_base[r.machine] + r.device_ordinal;
      source[i] = RankSource::device;
    }
  }
  // Two traces that claim one rank: refused, unless the lesser evidence
  // (a device ordinal) gives way to a claim (it is then placed as unknown).
  std::map<int, std::size_t> owner;
  for (const RankSource level : {RankSource::distributed_info, RankSource::environment,
                                 RankSource::nccl, RankSource::communication, RankSource::device}) {
    for (std::size_t i = 0; i < n; ++i) {
      if (rank[i] < 0 || source[i] != level) continue;
      const auto [it, fresh] = owner.try_emplace(rank[i], i);
      if (fresh) continue;
      if (level == RankSource::device) {
        rank[i] = -1;
        source[i] = RankSource::order;
        continue;
      }
      return refuse(fmt::format(
          "{} and {} both claim rank {} ({}): two traces of one rank (a copy, or another run?); "
          "analyse one of them",
          rank_input(input[it->second]), rank_input(input[i]), rank[i], rank_source_name(level)));
    }
  }
  int next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (rank[i] >= 0) continue;
    while (owner.count(next)) ++next;
    rank[i] = next;
    owner[next] = i;
  }
  return out;
}

namespace {

/// The traces in global-rank order by trace_ranks (`global` and `source`
/// alike); sets `refusal` when the rule refuses.
std::vector<const RankKernels*> order_ranks(const std::vector<RankKernels>& input,
                                            std::vector<int>& global,
                                            std::vector<RankSource>& source, std::string& refusal) {
  TraceRanks traces = trace_ranks(input);
  if (!traces.refusal.empty()) {
    refusal = std::move(traces.refusal);
    return {};
  }
  const std::size_t n = input.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return traces.rank[a] < traces.rank[b]; });
  std::vector<const RankKernels*> ranks;
  global.clear();
  source.clear();
  for (const std::size_t i : order) {
    ranks.push_back(&input[i]);
    global.push_back(traces.rank[i]);
    source.push_back(traces.source[i]);
  }
  return ranks;
}

/// Whether every rank was read from Nsight Systems exports: the messages
/// then speak of processes, their environment and NVTX ranges rather than
/// of a trace's distributedInfo and ProfilerStep#N spans.
bool all_exports(const std::vector<const RankKernels*>& ranks) {
  return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankKernels* r) {
    return r->origin == RankKernels::Origin::nsys_export;
  });
}

/// The rank_source note: which ranks no claim of their own gave
/// (distributedInfo; an export's environment or NCCL payloads).
std::optional<Warning> rank_source_note(const std::vector<const RankKernels*>& ranks,
                                        const std::vector<int>& global,
                                        const std::vector<RankSource>& source) {
  std::string list;
  std::size_t count = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (source[r] == RankSource::distributed_info || source[r] == RankSource::environment ||
        source[r] == RankSource::nccl) {
      continue;
    }
    if (++count <= 8) {
      list += fmt::format("{}{} is rank {} by {}", list.empty() ? "" : "; ", rank_input(*ranks[r]),
                          global[r], rank_source_name(source[r]));
    }
  }
  if (count == 0) return std::nullopt;
  if (count > 8) list += fmt::format("; and {} more", count - 8);
  if (all_exports(ranks)) {
    return Warning{WarningCode::rank_source,
                   fmt::format("{} process{} of the exports without a rank in {} environment or "
                               "NCCL's communicators: {} (the rule: RANK, PMI_RANK or "
                               "OMPI_COMM_WORLD_RANK, then NCCL's communicators, then the CUDA "
                               "device on its machine, then the first free rank)",
                               count, count == 1 ? "" : "es", count == 1 ? "its" : "their", list),
                   -1, -1, count};
  }
  return Warning{WarningCode::rank_source,
                 fmt::format("{} trace{} without distributedInfo.rank: {} (the rule: "
                             "distributedInfo, then the communication args, then the CUDA device "
                             "on its machine, then the first free rank)",
                             count, count == 1 ? "" : "s", list),
                 -1, -1, count};
}

/// The kernel_clock_offsets note of a run on several machines.
Warning clock_warning(const KernelClock& clock, bool beyond_noise, const OptionWords& words) {
  std::string list;
  bool unknown = false;
  for (const KernelMachineClock& m : clock.offsets) {
    if (m.machine == clock.offsets.front().machine) continue;
    if (m.pairs == 0) unknown = true;
    list += fmt::format("{}machine {} {:+.3f} ms ({} pairs)", list.empty() ? "" : ", ", m.machine,
                        static_cast<double>(m.offset_ns) / 1e6, m.pairs);
  }
  return {WarningCode::kernel_clock_offsets,
          fmt::format("the kernel view: clocks against machine {} from matched NCCL kernels' "
                      "ends: {}; {}{}",
                      clock.offsets.front().machine, list,
                      clock.applied ? fmt::format("applied (beyond the {:.3f} ms noise of one "
                                                  "machine's kernels)",
                                                  static_cast<double>(clock.noise_ns) / 1e6)
                      : beyond_noise
                          ? fmt::format("not applied ({})", words.name(CallerOption::no_clock_fix))
                          : std::string("within the noise, left as read"),
                      unknown ? "; a machine without matched kernels keeps its clock" : ""),
          -1, -1, clock.machines};
}

/// The run-wide step windows (the job contract's rule over ranks), or one
/// window over the whole trace without steps (and its warning).
void find_step_windows(const std::vector<const RankKernels*>& ranks, KernelView& view) {
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> extent;  // step -> first, last
  std::map<std::int64_t, std::size_t> holders;                           // step -> ranks
  std::set<std::int64_t> partial;  // steps some trace began inside
  for (const RankKernels* r : ranks) {
    if (r->partial_step) partial.insert(*r->partial_step);
    view.gpu_activities += r->activities;
    view.without_launch += r->without_launch;
    view.comm_kernels += r->comm.size();
    view.step_spans = view.step_spans || r->step_spans;
    for (const RankKernels::StepExtent& s : r->steps) {
      auto [it, fresh] = extent.try_emplace(s.step, s.first_start, s.last_end);
      if (!fresh) {
        it->second.first = std::min(it->second.first, s.first_start);
        it->second.second = std::max(it->second.second, s.last_end);
      }
      ++holders[s.step];
    }
  }
  std::int64_t cut = RankKernels::kNotCut;
  for (const RankKernels* r : ranks) cut = std::min(cut, r->cut_ns);
  if (extent.empty()) {
    // No activity launched inside a step span: the whole trace is one window.
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
    for (const RankKernels* r : ranks) {
      if (r->activities == 0) continue;
      first = std::min(first, r->first_start);
      last = std::max(last, r->last_end);
    }
    if (first > last) first = last = 0;
    view.steps.push_back({0, first, last, last <= cut});
    const char* why =
        all_exports(ranks)
            ? (view.step_spans
                   ? "the kernel view: no GPU activity was launched inside an NVTX step range, "
                     "so the whole run is one window"
                   : "the kernel view: the exports hold no NVTX step range (ProfilerStep#N, or "
                     "the step-range pattern given), so the whole run "
                     "is one window")
        : view.step_spans
            ? "the kernel view: no GPU activity was launched inside a ProfilerStep#N span, so "
              "the whole trace is one window"
            : "the kernel view: the traces hold no ProfilerStep#N span, so the whole trace is "
              "one window (call prof.step() once per training step for steps)";
    view.warnings.push_back({WarningCode::kernel_view_one_window, why, -1, -1, 1});
    return;
  }
  std::int64_t previous_end = std::numeric_limits<std::int64_t>::min();
  for (auto it = extent.begin(); it != extent.end(); ++it) {
    const auto& [step, span] = *it;
    KernelStepWindow w;
    w.step = step;
    w.start = std::max(span.first, previous_end);
    w.end = std::max(span.second, w.start);
    const bool begun_before = partial.count(step) > 0;
    if (begun_before && std::next(it) != extent.end()) {
      // What a step the trace began inside left running moves no later
      // window: it ends where the next step's activities begin.
      w.end = std::max(w.start, std::min(w.end, std::next(it)->second.first));
    }
    w.complete = holders[step] == ranks.size() && w.end <= cut && !begun_before;
    previous_end = w.end;
    view.steps.push_back(w);
  }
}

/// One stretch of a rank's wait (after precedence) and the peer it is
/// blamed on.
struct Blame {
  std::int64_t start = 0;
  std::int64_t end = 0;
  int peer = -1;
};

/// Each instant of `wait_only` blamed on one peer (docs/guide.md, "The
/// kernel view"): among the kernels waiting at that instant, the one whose
/// wait ends latest names it (the peer whose late start ends that wait),
/// ties to the lowest rank. `waits` are (wait part before precedence, the
/// peer that ends it). A sweep over the parts' ends: O(n log n).
std::vector<Blame> blame_waits(std::vector<std::pair<TimeSpan, int>> waits,
                               const Spans& wait_only) {
  std::vector<Blame> out;
  if (waits.empty() || wait_only.empty()) return out;
  std::sort(waits.begin(), waits.end(),
            [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  std::vector<std::int64_t> points;
  for (const auto& [span, peer] : waits) {
    points.push_back(span.start);
    points.push_back(span.end);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // Waiting kernels, latest end first, then lowest peer.
  auto later = [](const std::pair<std::int64_t, int>& a, const std::pair<std::int64_t, int>& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<std::pair<std::int64_t, int>, std::vector<std::pair<std::int64_t, int>>,
                      decltype(later)>
      active(later);
  std::size_t next = 0, only = 0;
  for (std::size_t p = 0; p + 1 < points.size(); ++p) {
    const std::int64_t lo = points[p], hi = points[p + 1];
    while (next < waits.size() && waits[next].first.start <= lo) {
      active.push({waits[next].first.end, waits[next].second});
      ++next;
    }
    while (!active.empty() && active.top().first <= lo) active.pop();
    if (active.empty()) continue;
    const int peer = active.top().second;
    // [lo, hi) ∩ wait_only.
    while (only < wait_only.size() && wait_only[only].end <= lo) ++only;
    for (std::size_t k = only; k < wait_only.size() && wait_only[k].start < hi; ++k) {
      const std::int64_t s = std::max(lo, wait_only[k].start), e = std::min(hi, wait_only[k].end);
      if (e <= s) continue;
      if (!out.empty() && out.back().end == s && out.back().peer == peer) {
        out.back().end = e;
      } else {
        out.push_back({s, e, peer});
      }
    }
  }
  return out;
}

/// The peer blamed most in [start, end) of `blames` (sorted), with its ns;
/// -1 for none. Ties go to the lowest rank.
std::pair<int, std::int64_t> most_blamed(const std::vector<Blame>& blames, std::int64_t start,
                                         std::int64_t end, std::map<int, std::int64_t>& total) {
  std::map<int, std::int64_t> blamed;
  auto it = std::lower_bound(blames.begin(), blames.end(), start,
                             [](const Blame& b, std::int64_t v) { return b.end <= v; });
  for (; it != blames.end() && it->start < end; ++it) {
    const std::int64_t ns = std::min(it->end, end) - std::max(it->start, start);
    if (ns > 0) blamed[it->peer] += ns;
  }
  std::pair<int, std::int64_t> best{-1, 0};
  for (const auto& [peer, ns] : blamed) {
    total[peer] += ns;
    if (ns > best.second) best = {peer, ns};
  }
  return best;
}

/// One rank's view: its NCCL kernels split into wait and transfer, each
/// window split by precedence, the waits blamed.
KernelRankView split_rank(const KernelView& view, const std::vector<const RankKernels*>& ranks,
                          const std::vector<int>& global,
                          const std::vector<std::vector<std::vector<KernelRef>>>& peers,
                          std::size_t r, std::uint64_t& lonely) {
  const RankKernels& rk = *ranks[r];
  KernelRankView rv;
  rv.path = rk.path;
  rv.device = rk.device;
  rv.machine = rk.machine;
  rv.global_rank = global[r];
  rv.steps.resize(view.steps.size());
  Spans transfer, wait, unknown;                // unknown: kernels whose peers are not known
  std::vector<std::pair<TimeSpan, int>> waits;  // (wait part, the peer that ends it)
  for (std::size_t i = 0; i < rk.comm.size(); ++i) {
    const CommKernel& c = rk.comm[i];
    std::int64_t t = c.start;
    int ender = -1;
    if (peers[r][i].empty()) {
      ++lonely;
      unknown.push_back({c.start, c.end});
    } else {
      std::int64_t latest = std::numeric_limits<std::int64_t>::min();
      for (const KernelRef& p : peers[r][i]) {
        const std::int64_t s = ranks[p.rank]->comm[p.index].start;
        const int g = global[p.rank];
        if (s > latest || (s == latest && g < ender)) {
          latest = s;
          ender = g;
        }
      }
      t = std::min(c.end, std::max(c.start, latest));
    }
    rv.comm.push_back({c.start, t, c.end, t > c.start ? ender : -1, !peers[r][i].empty(), i});
    if (t > c.start) {
      wait.push_back({c.start, t});
      waits.push_back({{c.start, t}, ender});
    }
    if (c.end > t) transfer.push_back({t, c.end});
  }
  const Spans& compute = rk.compute;
  const Spans transfer_only = minus(normalized(std::move(transfer)), compute);
  const Spans wait_only = minus(minus(normalized(std::move(wait)), compute), transfer_only);
  // A peerless kernel's time past compute: its split is not known.
  const Spans unknown_only = minus(normalized(std::move(unknown)), compute);
  const std::vector<Blame> blames = blame_waits(std::move(waits), wait_only);
  std::map<int, std::int64_t> total_blamed;
  for (std::size_t k = 0; k < view.steps.size(); ++k) {
    const KernelStepWindow& w = view.steps[k];
    KernelRankStep& rs = rv.steps[k];
    rs.split.window = w.end - w.start;
    rs.split.compute = covered(compute, w.start, w.end);
    rs.split.transfer = covered(transfer_only, w.start, w.end);
    rs.split.wait = covered(wait_only, w.start, w.end);
    rs.split.idle = rs.split.window - rs.split.compute - rs.split.transfer - rs.split.wait;
    rs.split.comm_split_known = covered(unknown_only, w.start, w.end) == 0;
    std::map<int, std::int64_t> unused;
    std::tie(rs.most_waited_on, rs.waited_on_ns) =
        most_blamed(blames, w.start, w.end, w.complete ? total_blamed : unused);
    if (!rs.split.comm_split_known) {
      // Who it waited on most is not known where how long it waited is not.
      rs.most_waited_on = -1;
      rs.waited_on_ns = 0;
    }
    if (w.complete) rv.total.add(rs.split);
  }
  if (!rv.total.comm_split_known) return rv;
  for (const auto& [g, ns] : total_blamed) {
    if (ns > rv.waited_on_ns) {
      rv.waited_on_ns = ns;
      rv.most_waited_on = g;
    }
  }
  return rv;
}

/// The comm_peers_by_order note: which rule fixed the peers, and of how
/// many kernels.
Warning order_rule_note(std::uint64_t fixed) {
  return {WarningCode::comm_peers_by_order,
          fmt::format("the kernel view: {} NCCL kernel{} whose traces name no peer {} matched by "
                      "the run's structure (a world of two ranks, or an operation's group of two "
                      "members): the other end of each is the one rank it can have talked to",
                      fixed, fixed == 1 ? "" : "s", fixed == 1 ? "was" : "were"),
          -1, -1, fixed};
}

/// A gap between runs in the unit a reader takes in at once: seconds,
/// minutes, hours or days.
std::string long_duration(std::int64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 2 * 3600) return fmt::format("{:.1f} minutes", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f} hours", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

/// The refusal when the ranks (on machine 0's clock) fall into two groups in
/// time, every rank of one ending at least kSeparateRunsGapNs before any of
/// the other begins: traces or exports of two runs given together (one folder
/// of a team's exports), whose one window would be idle for the time between
/// them. A run's ranks are profiled over the same steps, and machines whose
/// clocks differ were moved onto machine 0's from their NCCL kernels first;
/// `clocks_apart`: machines whose clocks were left as read (no matched
/// kernels, or the correction off), which the message then names as the
/// other explanation.
std::string separate_runs_refusal(const std::vector<const RankKernels*>& ranks,
                                  const std::vector<int>& global, bool clocks_apart) {
  std::vector<std::size_t> active;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r]->activities > 0) active.push_back(r);
  }
  if (active.size() < 2) return "";
  std::sort(active.begin(), active.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(ranks[a]->first_start, a) < std::tie(ranks[b]->first_start, b);
  });
  std::size_t last = active.front();  // the rank that ends last so far
  for (std::size_t i = 1; i < active.size(); ++i) {
    const RankKernels& next = *ranks[active[i]];
    const std::int64_t gap = next.first_start - ranks[last]->last_end;
    if (gap >= kSeparateRunsGapNs) {
      const bool exports = next.origin == RankKernels::Origin::nsys_export;
      const bool other_clock = clocks_apart && next.machine != ranks[last]->machine;
      return fmt::format(
          "the {} hold two runs: {} of the ranks end {} before the other {} begin (rank {} of {} "
          "is the last to end before the gap, rank {} of {} the first to begin after it){}. "
          "Analyse one run at a time: give its {} alone",
          exports ? "exports" : "traces", i, long_duration(gap), active.size() - i, global[last],
          rank_input(*ranks[last]), global[active[i]], rank_input(next),
          other_clock ? ", or one run whose machines' clocks are that far apart, which no "
                        "matched NCCL kernels aligned"
                      : "",
          exports ? "exports" : "traces");
    }
    if (next.last_end > ranks[last]->last_end) last = active[i];
  }
  return "";
}

/// The comm_kernels_without_peers warning: which ranks' split is unknown.
Warning peerless_warning(const KernelView& view, std::size_t ranks) {
  std::string unknown;
  std::size_t listed = 0;
  for (const KernelRankView& r : view.ranks) {
    if (r.total.comm_split_known) continue;
    if (++listed <= 16) unknown += fmt::format("{}{}", unknown.empty() ? "" : ", ", r.global_rank);
  }
  if (listed > 16) unknown += fmt::format(" and {} more", listed - 16);
  return {WarningCode::comm_kernels_without_peers,
          fmt::format("the kernel view: {} of {} NCCL kernels have no peer in the traces given "
                      "({}){}",
                      view.comm_kernels_without_peers, view.comm_kernels,
                      ranks == 1 ? "one rank's trace: give every rank's"
                                 : "a rank's trace missing, or nothing in the traces names the "
                                   "kernels' peers",
                      listed > 0 ? fmt::format(": the NCCL time of rank{} {} is not split into "
                                               "wait and transfer (unknown)",
                                               listed == 1 ? "" : "s", unknown)
                                 : std::string()),
          -1, -1, view.comm_kernels_without_peers};
}

}  // namespace

std::string_view kernel_layout_source_name(KernelLayoutSource source) {
  switch (source) {
    case KernelLayoutSource::none:
      return "";
    case KernelLayoutSource::process_group:
      return "process_group";
    case KernelLayoutSource::point_to_point:
      return "point_to_point";
  }
  return "";
}

std::string_view rank_source_name(RankSource source) {
  switch (source) {
    case RankSource::distributed_info:
      return "distributed_info";
    case RankSource::environment:
      return "environment";
    case RankSource::nccl:
      return "nccl";
    case RankSource::communication:
      return "communication";
    case RankSource::device:
      return "device";
    case RankSource::order:
      return "order";
  }
  return "order";
}

KernelView compute_kernel_view(const std::vector<RankKernels>& input,
                               const KernelViewOptions& options) {
  KernelView view;
  if (input.empty()) return view;
  view.available = true;

  std::vector<int> global;
  std::vector<RankSource> rank_source;
  std::vector<const RankKernels*> ranks = order_ranks(input, global, rank_source, view.refusal);
  if (!view.refusal.empty()) return view;
  if (auto note = rank_source_note(ranks, global, rank_source)) {
    view.warnings.push_back(std::move(*note));
  }
  const std::vector<const RankKernels*> ranks_in = ranks;  // before any change
  std::vector<RankKernels> filled;  // the ranks with peers the order rules fixed
  if (const std::uint64_t fixed = fill_peers_by_order(ranks, global, filled); fixed > 0) {
    view.warnings.push_back(order_rule_note(fixed));
  }
  std::vector<std::int64_t> offset_of(ranks.size(), 0);
  // Peers (they do not depend on the clocks: kernels are counted in start
  // order within a rank), then the clocks.
  const auto peers = find_peers(ranks, global);
  std::vector<int> stage_of;
  view.layout = find_layout(ranks, global, stage_of);
  view.clock = estimate_clocks(ranks, peers);
  const bool beyond_noise = view.clock.applied;
  view.clock.applied = beyond_noise && options.fix_clocks;
  std::vector<RankKernels> moved;  // the ranks on machine 0's clock, when applied
  if (view.clock.applied) {
    std::map<int, std::int64_t> offset;
    for (const KernelMachineClock& m : view.clock.offsets) offset[m.machine] = m.offset_ns;
    moved.reserve(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      offset_of[r] = offset[ranks[r]->machine];
      moved.push_back(shifted(*ranks[r], offset_of[r]));
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = &moved[r];
  }
  view.refusal = separate_runs_refusal(ranks, global, !view.clock.applied);
  if (!view.refusal.empty()) return view;
  if (view.clock.machines > 1) {
    view.warnings.push_back(clock_warning(view.clock, beyond_noise, *options.words));
  }
  find_step_windows(ranks, view);

  std::uint64_t lonely = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    KernelRankView rv = split_rank(view, ranks, global, peers, r, lonely);
    rv.source = static_cast<std::size_t>(ranks_in[r] - input.data());
    rv.clock_offset_ns = offset_of[r];
    rv.stage = stage_of[r];
    rv.rank_source = rank_source[r];
    view.total.add(rv.total);
    view.ranks.push_back(std::move(rv));
  }
  view.comm_kernels_without_peers = lonely;
  if (lonely > 0) view.warnings.push_back(peerless_warning(view, ranks.size()));
  return view;
}

}  // namespace pipescope
