#include "analysis/kernel_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

namespace pipescope {

void KernelSplit::add(const KernelSplit& o) {
  window += o.window;
  compute += o.compute;
  transfer += o.transfer;
  wait += o.wait;
  idle += o.idle;
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

/// For every kernel, the refs of its peers (empty: none found).
std::vector<std::vector<std::vector<KernelRef>>> find_peers(
    const std::vector<const RankKernels*>& ranks, const std::vector<int>& global) {
  std::vector<std::vector<std::vector<KernelRef>>> peers(ranks.size());
  std::map<int, std::size_t> place;  // global rank -> rank index
  for (std::size_t r = 0; r < ranks.size(); ++r) place[global[r]] = r;

  // Kernels with the same key are one communication.
  std::map<std::uint64_t, std::vector<KernelRef>> by_id;
  std::map<std::tuple<std::string, std::string, std::int64_t>, std::vector<KernelRef>> by_call;
  std::map<std::tuple<std::string, int, int, std::int64_t>, std::vector<KernelRef>> by_pair;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    peers[r].resize(ranks[r]->comm.size());
    std::map<std::pair<std::string, std::string>, std::int64_t> calls;  // (group, name) -> k
    std::map<std::tuple<std::string, int, int>, std::int64_t> pairs;    // (group, src, dst) -> k
    for (std::size_t i = 0; i < ranks[r]->comm.size(); ++i) {
      const CommKernel& c = ranks[r]->comm[i];
      if (c.comms_id) {
        by_id[*c.comms_id].push_back({r, i});
        continue;
      }
      if (c.op == CommOp::collective && !c.group_ranks.empty()) {
        const std::string g = group_key(c);
        by_call[{g, c.collective, calls[{g, c.collective}]++}].push_back({r, i});
      } else if ((c.op == CommOp::send || c.op == CommOp::recv) && c.peer >= 0) {
        const std::string g = group_key(c);
        const int src = c.op == CommOp::send ? global[r] : c.peer;
        const int dst = c.op == CommOp::send ? c.peer : global[r];
        by_pair[{g, src, dst, pairs[{g, src, dst}]++}].push_back({r, i});
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
      if (whole_group && !c.group_ranks.empty()) {
        bool all = true;
        for (int g : c.group_ranks) {
          if (g == global[m.rank]) continue;
          const auto p = place.find(g);
          if (p == place.end() || !seen.count(p->second)) all = false;
        }
        if (!all) others.clear();
      }
      peers[m.rank][m.index] = std::move(others);
    }
  };
  for (const auto& [id, members] : by_id) {
    const CommKernel& c = ranks[members.front().rank]->comm[members.front().index];
    assign(members, c.op == CommOp::collective);
  }
  for (const auto& [key, members] : by_call) assign(members, true);
  for (const auto& [key, members] : by_pair) assign(members, false);
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
    layout.source = "process_group";
    layout.dp = static_cast<int>(pipelines.size());
    return layout;
  }
  // 2. The point-to-point pattern: neighbours are ranks that send to each
  // other; each pipeline is a chain (or a ring, with interleaved stages).
  std::vector<std::set<std::size_t>> next(ranks.size());
  std::vector<int> first_op(ranks.size(), 0);  // +1: a send first, −1: a recv
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommKernel& c : ranks[r]->comm) {  // in start order
      if ((c.op != CommOp::send && c.op != CommOp::recv) || c.peer < 0) continue;
      const auto p = place.find(c.peer);
      if (p == place.end() || p->second == r) continue;
      next[r].insert(p->second);
      next[p->second].insert(r);
      if (first_op[r] == 0) first_op[r] = c.op == CommOp::send ? 1 : -1;
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
          if (c.op == CommOp::send && place.count(c.peer)) {
            to = place[c.peer];
            break;
          }
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
  layout.source = "point_to_point";
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

}  // namespace

KernelView compute_kernel_view(const std::vector<RankKernels>& input,
                               const KernelViewOptions& options) {
  KernelView view;
  if (input.empty()) return view;
  view.available = true;

  // Ranks in global-rank order when every trace names a distinct one.
  std::vector<const RankKernels*> ranks;
  for (const RankKernels& r : input) ranks.push_back(&r);
  std::set<int> named;
  for (const RankKernels* r : ranks) {
    if (r->global_rank >= 0) named.insert(r->global_rank);
  }
  const bool by_global = named.size() == ranks.size();
  if (by_global) {
    std::stable_sort(ranks.begin(), ranks.end(), [](const RankKernels* a, const RankKernels* b) {
      return a->global_rank < b->global_rank;
    });
  }
  std::vector<int> global(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    global[r] = by_global ? ranks[r]->global_rank : static_cast<int>(r);
  }

  const std::vector<const RankKernels*> ranks_in = ranks;  // before any shift
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
  if (view.clock.machines > 1) {
    std::string list;
    bool unknown = false;
    for (const KernelMachineClock& m : view.clock.offsets) {
      if (m.machine == view.clock.offsets.front().machine) continue;
      if (m.pairs == 0) unknown = true;
      list += fmt::format("{}machine {} {:+.3f} ms ({} pairs)", list.empty() ? "" : ", ", m.machine,
                          static_cast<double>(m.offset_ns) / 1e6, m.pairs);
    }
    view.warnings.push_back(
        {WarningCode::kernel_clock_offsets,
         fmt::format("the kernel view: clocks against machine {} from matched NCCL kernels' "
                     "ends: {}; {}{}",
                     view.clock.offsets.front().machine, list,
                     view.clock.applied
                         ? fmt::format("applied (beyond the {:.3f} ms noise of one "
                                       "machine's kernels)",
                                       static_cast<double>(view.clock.noise_ns) / 1e6)
                     : beyond_noise ? std::string("not applied (--no-clock-fix)")
                                    : std::string("within the noise, left as read"),
                     unknown ? "; a machine without matched kernels keeps its clock" : ""),
         -1, -1, view.clock.machines});
  }

  // Steps and their windows.
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> extent;  // step -> first, last
  std::map<std::int64_t, std::size_t> holders;                           // step -> ranks
  for (const RankKernels* r : ranks) {
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
    view.warnings.push_back(
        {WarningCode::kernel_view_one_window,
         view.step_spans
             ? "the kernel view: no GPU activity was launched inside a ProfilerStep#N span, so "
               "the whole trace is one window"
             : "the kernel view: the traces hold no ProfilerStep#N span, so the whole trace is "
               "one window (call prof.step() once per training step for steps)",
         -1, -1, 1});
  } else {
    std::int64_t previous_end = std::numeric_limits<std::int64_t>::min();
    for (const auto& [step, span] : extent) {
      KernelStepWindow w;
      w.step = step;
      w.start = std::max(span.first, previous_end);
      w.end = std::max(span.second, w.start);
      w.complete = holders[step] == ranks.size() && w.end <= cut;
      previous_end = w.end;
      view.steps.push_back(w);
    }
  }

  // Each rank's transfer and wait parts.
  std::uint64_t lonely = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankKernels& rk = *ranks[r];
    KernelRankView rv;
    rv.source = static_cast<std::size_t>(ranks_in[r] - input.data());
    rv.clock_offset_ns = offset_of[r];
    rv.path = rk.path;
    rv.device = rk.device;
    rv.machine = rk.machine;
    rv.global_rank = global[r];
    rv.stage = stage_of[r];
    rv.steps.resize(view.steps.size());
    Spans transfer, wait;
    // (wait part, the peer that ends it), for most_waited_on.
    std::vector<std::pair<TimeSpan, int>> waits;
    for (std::size_t i = 0; i < rk.comm.size(); ++i) {
      const CommKernel& c = rk.comm[i];
      std::int64_t t = c.start;
      int ender = -1;
      if (peers[r][i].empty()) {
        ++lonely;
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
    std::map<int, std::int64_t> total_waited;
    for (std::size_t k = 0; k < view.steps.size(); ++k) {
      const KernelStepWindow& w = view.steps[k];
      KernelRankStep& rs = rv.steps[k];
      rs.split.window = w.end - w.start;
      rs.split.compute = covered(compute, w.start, w.end);
      rs.split.transfer = covered(transfer_only, w.start, w.end);
      rs.split.wait = covered(wait_only, w.start, w.end);
      rs.split.idle = rs.split.window - rs.split.compute - rs.split.transfer - rs.split.wait;
      // Blame only where the rank waited (its wait parts not all under
      // compute or transfer).
      std::map<int, std::int64_t> waited;
      if (rs.split.wait > 0) {
        for (const auto& [span, ender] : waits) {
          const std::int64_t len =
              std::max<std::int64_t>(0, std::min(span.end, w.end) - std::max(span.start, w.start));
          if (len > 0 && ender >= 0) waited[ender] += len;
        }
      }
      for (const auto& [g, ns] : waited) {
        if (ns > rs.waited_on_ns) {
          rs.waited_on_ns = ns;
          rs.most_waited_on = g;
        }
        if (w.complete) total_waited[g] += ns;
      }
      if (w.complete) rv.total.add(rs.split);
    }
    for (const auto& [g, ns] : total_waited) {
      if (ns > rv.waited_on_ns) {
        rv.waited_on_ns = ns;
        rv.most_waited_on = g;
      }
    }
    view.total.add(rv.total);
    view.ranks.push_back(std::move(rv));
  }
  view.comm_kernels_without_peers = lonely;
  if (lonely > 0) {
    view.warnings.push_back(
        {WarningCode::comm_kernels_without_peers,
         fmt::format("the kernel view: {} of {} NCCL kernels have no peer in the traces given "
                     "({}): their time counts as transfer, their waiting is not told apart",
                     lonely, view.comm_kernels,
                     ranks.size() == 1 ? "one rank's trace: give every rank's"
                                       : "a rank's trace missing, or no communication args"),
         -1, -1, lonely});
  }
  return view;
}

}  // namespace pipescope
