#include "simulate/kernel_expected.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

namespace pipescope::sim {

namespace {

using Span = std::pair<std::int64_t, std::int64_t>;  // [first, second)

/// Sorted, disjoint spans covering the same instants as `spans`.
std::vector<Span> merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

/// The instants in both (each sorted and disjoint).
std::vector<Span> both(const std::vector<Span>& a, const std::vector<Span>& b) {
  std::vector<Span> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first);
    const std::int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

/// How much of [lo, hi) sorted disjoint `spans` cover.
std::int64_t covered_by(const std::vector<Span>& spans, std::int64_t lo, std::int64_t hi) {
  std::int64_t total = 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), lo,
                             [](std::int64_t t, const Span& s) { return t < s.second; });
  for (; it != spans.end() && it->first < hi; ++it) {
    total += std::min(it->second, hi) - std::max(it->first, lo);
  }
  return total;
}

/// The key with the largest value (ties: the smallest key); -1 when empty.
int top(const std::map<int, std::int64_t>& blame) {
  int best = -1;
  std::int64_t most = 0;
  for (const auto& [peer, ns] : blame) {  // ascending peers: the first maximum wins
    if (best < 0 || ns > most) {
      best = peer;
      most = ns;
    }
  }
  return best;
}

void add(ExpectedKernelSplit& into, const ExpectedKernelSplit& x) {
  into.window += x.window;
  into.compute += x.compute;
  into.transfer += x.transfer;
  into.wait += x.wait;
  into.idle += x.idle;
}

double fraction(std::int64_t part, std::int64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

struct WaitPart {
  std::int64_t from = 0;
  std::int64_t to = 0;
  int peer = 0;
};

}  // namespace

double ExpectedKernelView::bubble_ratio() const {
  return fraction(total.window - total.compute, total.window);
}

double ExpectedKernelView::share(std::int64_t part) const { return fraction(part, total.window); }

ExpectedKernelView expected_kernel_view(const KernelTimeline& timeline, std::int64_t first_step,
                                        std::int64_t clock_ns) {
  ExpectedKernelView view;
  const std::size_t world = timeline.ranks.size();

  // Windows, from each rank's first start and last end in each step.
  struct Extent {
    bool any = false;
    std::int64_t first = 0;
    std::int64_t last = 0;
  };
  std::map<std::int32_t, std::vector<Extent>> extents;  // step -> per rank
  for (std::size_t g = 0; g < world; ++g) {
    for (const KernelActivity& a : timeline.ranks[g]) {
      auto& per_rank = extents[a.step];
      per_rank.resize(world);
      Extent& e = per_rank[g];
      e.first = e.any ? std::min(e.first, a.start_ns) : a.start_ns;
      e.last = e.any ? std::max(e.last, a.end_ns) : a.end_ns;
      e.any = true;
    }
  }
  struct Window {
    std::int64_t start = 0;
    std::int64_t end = 0;
    bool complete = false;
  };
  std::vector<Window> windows;
  for (const auto& [step, per_rank] : extents) {
    Window w;
    bool any = false;
    w.complete = true;
    for (const Extent& e : per_rank) {
      if (!e.any) {
        w.complete = false;
        continue;
      }
      w.start = any ? std::min(w.start, e.first) : e.first;
      w.end = any ? std::max(w.end, e.last) : e.last;
      any = true;
    }
    if (!windows.empty()) w.start = std::max(w.start, windows.back().end);
    w.end = std::max(w.end, w.start);
    windows.push_back(w);
    view.windows.push_back({first_step + step, w.start + clock_ns, w.end + clock_ns, w.complete});
  }

  view.ranks.resize(world);
  for (std::size_t g = 0; g < world; ++g) {
    const auto& acts = timeline.ranks[g];
    std::vector<Span> compute, transfer, wait;
    std::vector<WaitPart> parts;
    for (const KernelActivity& a : acts) {
      ++view.gpu_activities;
      if (a.kind == ActivityKind::compute) {
        compute.emplace_back(a.start_ns, a.end_ns);
        continue;
      }
      ++view.comm_kernels;
      // The latest start among the other members, and who has it.
      std::int64_t latest = 0;
      int by = -1;
      for (const auto& [rank, at] : timeline.comms[a.comm].members) {
        if (rank == static_cast<int>(g)) continue;
        const std::int64_t start = timeline.ranks[rank][at].start_ns;
        if (by < 0 || start > latest || (start == latest && rank < by)) {
          latest = start;
          by = rank;
        }
      }
      const std::int64_t moving = std::min(a.end_ns, std::max(a.start_ns, latest));
      transfer.emplace_back(moving, a.end_ns);
      if (moving > a.start_ns) {
        wait.emplace_back(a.start_ns, moving);
        parts.push_back({a.start_ns, moving, by});
      }
    }
    compute = merged(std::move(compute));
    transfer = merged(std::move(transfer));
    wait = merged(std::move(wait));
    std::vector<Span> compute_or_transfer = compute;
    compute_or_transfer.insert(compute_or_transfer.end(), transfer.begin(), transfer.end());
    compute_or_transfer = merged(std::move(compute_or_transfer));
    const std::vector<Span> transfer_under_compute = both(transfer, compute);
    const std::vector<Span> wait_under_busy = both(wait, compute_or_transfer);

    // Blame per window, after precedence: each instant the rank waits (a
    // wait part not under compute or transfer) goes to the peer of the
    // part waiting then whose wait ends latest (ties: the lowest peer).
    std::vector<std::int64_t> cuts;
    for (const WaitPart& part : parts) {
      cuts.push_back(part.from);
      cuts.push_back(part.to);
    }
    for (const Window& w : windows) {
      cuts.push_back(w.start);
      cuts.push_back(w.end);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::sort(parts.begin(), parts.end(),
              [](const WaitPart& a, const WaitPart& b) { return a.from < b.from; });
    std::set<std::pair<std::int64_t, int>> waiting;  // (−to, peer): first = latest end, lowest peer
    std::size_t next_part = 0;
    std::vector<std::map<int, std::int64_t>> blame(windows.size());
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
      const std::int64_t lo = cuts[c], hi = cuts[c + 1];
      for (; next_part < parts.size() && parts[next_part].from <= lo; ++next_part) {
        waiting.insert({-parts[next_part].to, parts[next_part].peer});
      }
      while (!waiting.empty() && -waiting.begin()->first <= lo) waiting.erase(waiting.begin());
      if (waiting.empty()) continue;
      // The rank waits in [lo, hi) only where nothing busier runs.
      const std::int64_t ns = (hi - lo) - covered_by(compute_or_transfer, lo, hi);
      if (ns <= 0) continue;
      auto w = std::upper_bound(windows.begin(), windows.end(), lo,
                                [](std::int64_t t, const Window& x) { return t < x.end; });
      if (w == windows.end() || w->start > lo) continue;  // between windows
      blame[static_cast<std::size_t>(w - windows.begin())][waiting.begin()->second] += ns;
    }

    ExpectedKernelRank& rank = view.ranks[g];
    rank.global_rank = timeline.devices[g].index;
    std::map<int, std::int64_t> blame_total;
    for (std::size_t k = 0; k < windows.size(); ++k) {
      const std::int64_t lo = windows[k].start, hi = windows[k].end;
      ExpectedKernelRankStep step;
      ExpectedKernelSplit& s = step.split;
      s.window = hi - lo;
      s.compute = covered_by(compute, lo, hi);
      s.transfer = covered_by(transfer, lo, hi) - covered_by(transfer_under_compute, lo, hi);
      s.wait = covered_by(wait, lo, hi) - covered_by(wait_under_busy, lo, hi);
      s.idle = s.window - s.compute - s.transfer - s.wait;
      if (s.wait > 0) step.most_waited_on = top(blame[k]);
      if (windows[k].complete) {
        add(rank.total, s);
        if (s.wait > 0) {
          for (const auto& [peer, ns] : blame[k]) blame_total[peer] += ns;
        }
      }
      rank.steps.push_back(step);
    }
    rank.most_waited_on = top(blame_total);
    add(view.total, rank.total);
  }
  return view;
}

std::string expected_kernel_view_json(const ExpectedKernelView& view,
                                      const std::vector<std::string>& paths) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  auto split = [&it](const ExpectedKernelSplit& s) {
    fmt::format_to(it,
                   "\"window_ns\": {}, \"compute_ns\": {}, \"transfer_ns\": {}, \"wait_ns\": {}, "
                   "\"idle_ns\": {}",
                   s.window, s.compute, s.transfer, s.wait, s.idle);
  };
  auto peer = [](int rank) { return rank < 0 ? std::string("null") : fmt::format("{}", rank); };
  fmt::format_to(it,
                 "{{\n    \"step_spans\": true,\n    \"gpu_activities\": {},\n"
                 "    \"without_launch\": 0,\n    \"comm_kernels\": {},\n"
                 "    \"comm_kernels_without_peers\": 0,\n    ",
                 view.gpu_activities, view.comm_kernels);
  split(view.total);
  fmt::format_to(it,
                 ",\n    \"bubble_ratio\": {},\n    \"idle_share\": {},\n    \"wait_share\": {},\n"
                 "    \"transfer_share\": {},\n    \"steps\": [",
                 view.bubble_ratio(), view.share(view.total.idle), view.share(view.total.wait),
                 view.share(view.total.transfer));
  for (std::size_t k = 0; k < view.windows.size(); ++k) {
    const auto& w = view.windows[k];
    fmt::format_to(it,
                   "{}\n      {{\"step\": {}, \"complete\": {}, \"start_ns\": {}, \"end_ns\": {}}}",
                   k == 0 ? "" : ",", w.step, w.complete, w.start_ns, w.end_ns);
  }
  fmt::format_to(it, "\n    ],\n    \"ranks\": [");
  for (std::size_t g = 0; g < view.ranks.size(); ++g) {
    const auto& rank = view.ranks[g];
    // The simulator writes every trace's distributedInfo.rank.
    fmt::format_to(it,
                   "{}\n      {{\"device\": {}, \"global_rank\": {}, "
                   "\"rank_source\": \"distributed_info\", \"path\": \"{}\", ",
                   g == 0 ? "" : ",", g, rank.global_rank, paths.at(g));
    split(rank.total);
    fmt::format_to(it, ", \"most_waited_on\": {}, \"steps\": [", peer(rank.most_waited_on));
    for (std::size_t k = 0; k < rank.steps.size(); ++k) {
      const auto& w = view.windows[k];
      fmt::format_to(it,
                     "{}\n        {{\"step\": {}, \"complete\": {}, \"start_ns\": {}, "
                     "\"end_ns\": {}, ",
                     k == 0 ? "" : ",", w.step, w.complete, w.start_ns, w.end_ns);
      split(rank.steps[k].split);
      fmt::format_to(it, ", \"most_waited_on\": {}}}", peer(rank.steps[k].most_waited_on));
    }
    fmt::format_to(it, "]}}");
  }
  fmt::format_to(it, "\n    ]\n  }}");
  return fmt::to_string(out);
}

}  // namespace pipescope::sim
