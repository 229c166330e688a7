#include "export/kernel_view_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "numeric/units.h"

namespace pipescope {

namespace {

std::string points(double share) { return fmt::format("{:.1f}", share * 100); }

}  // namespace

std::string kernel_view_sentence(const KernelView& view) {
  if (!view.available) return {};
  std::size_t complete = 0;
  for (const KernelStepWindow& w : view.steps) complete += w.complete ? 1 : 0;
  if (complete == 0) return "No step is complete: the kernel view's totals cover nothing.";
  // The rank waited on longest, over every rank.
  std::map<int, std::int64_t> waited;
  for (const KernelRankView& r : view.ranks) {
    if (r.most_waited_on >= 0) waited[r.most_waited_on] += r.waited_on_ns;
  }
  int most = -1;
  std::int64_t most_ns = 0;
  for (const auto& [rank, ns] : waited) {
    if (ns > most_ns) {
      most = rank;
      most_ns = ns;
    }
  }
  if (!view.total.comm_split_known) {
    // Never a split that looks measured: only the NCCL kernels' sum.
    std::string s = fmt::format(
        "Of the {} bubble, {} points are NCCL kernels (how much of it waiting is not known: "
        "{} NCCL kernels have no peer in the traces) and {} idle",
        percent(view.bubble_ratio()), points(view.share(view.total.transfer + view.total.wait)),
        view.comm_kernels_without_peers, points(view.share(view.total.idle)));
    return s + ".";
  }
  std::string s =
      fmt::format("Of the {} bubble, {} points are NCCL kernels waiting for their peers",
                  percent(view.bubble_ratio()), points(view.share(view.total.wait)));
  if (most >= 0) s += fmt::format(" (most on rank {})", most);
  s += fmt::format(", {} transferring and {} idle", points(view.share(view.total.transfer)),
                   points(view.share(view.total.idle)));
  return s + ".";
}

void write_kernel_view_text(const KernelView& view, std::FILE* out, const RowListing& listing) {
  if (!view.available) return;
  std::size_t complete = 0;
  for (const KernelStepWindow& w : view.steps) complete += w.complete ? 1 : 0;
  fmt::print(out, "Kernel view ({} GPU activities, {} NCCL kernels; {} of {} step{} complete{})\n",
             view.gpu_activities, view.comm_kernels, complete, view.steps.size(),
             view.steps.size() == 1 ? "" : "s", view.step_spans ? "" : ", one window");
  if (view.layout.source != KernelLayoutSource::none) {
    fmt::print(out, "  layout pp={} x dp={}, {}\n", view.layout.pp, view.layout.dp,
               view.layout.source == KernelLayoutSource::process_group
                   ? fmt::format("from the process group {}", view.layout.group)
                   : std::string("from who sends to whom (no pipeline process group named)"));
  }
  std::vector<std::size_t> order(view.ranks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const std::size_t kMaxRanks = 32, kShown = 16;
  if (!listing.all && order.size() > kMaxRanks) {
    auto bubble = [&](std::size_t i) {
      const KernelSplit& s = view.ranks[i].total;
      return s.window - s.compute;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return bubble(a) > bubble(b); });
    order.resize(kShown);
    std::sort(order.begin(), order.end());
  }
  fmt::print(out, "  {:>5}  {:>5}  {:>12}  {:>8}  {:>8}  {:>8}  {:>8}  {}\n", "rank", "stage",
             "window", "compute", "transfer", "wait", "idle", "waited on most");
  auto share = [](std::int64_t part, std::int64_t whole, bool known = true) {
    return whole > 0 && known ? percent(static_cast<double>(part) / static_cast<double>(whole))
                              : std::string("-");
  };
  for (std::size_t i : order) {
    const KernelRankView& r = view.ranks[i];
    const KernelSplit& s = r.total;
    fmt::print(out, "  {:>5}  {:>5}  {:>12}  {:>8}  {:>8}  {:>8}  {:>8}  {}\n", r.global_rank,
               r.stage >= 0 ? fmt::format("{}", r.stage) : std::string("-"),
               format_duration(s.window), share(s.compute, s.window),
               share(s.transfer, s.window, s.comm_split_known),
               share(s.wait, s.window, s.comm_split_known), share(s.idle, s.window),
               r.most_waited_on >= 0
                   ? fmt::format("rank {} ({})", r.most_waited_on, format_duration(r.waited_on_ns))
                   : std::string("-"));
  }
  if (order.size() < view.ranks.size()) {
    fmt::print(out, "  ({} ranks with the smallest bubble not listed; {})\n",
               view.ranks.size() - order.size(), listing.words->advice(CallerOption::all_rows));
  }
  const bool known = view.total.comm_split_known;
  fmt::print(out, "Kernel bubble ratio: {} (idle {}, wait {}, transfer {})\n",
             percent(view.bubble_ratio()), percent(view.share(view.total.idle)),
             known ? percent(view.share(view.total.wait)) : std::string("-"),
             known ? percent(view.share(view.total.transfer)) : std::string("-"));
  fmt::print(out, "{}\n", kernel_view_sentence(view));
}

}  // namespace pipescope
