#include "ingest/kernel_collector.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "ingest/torch_trace_event.h"

namespace pipescope {

void KernelCollector::on_step_span(std::int64_t start, std::int64_t end, std::int64_t step) {
  step_spans_.push_back({start, end, step});
  sorted_stale_ = true;
  out_.step_spans = true;
}

void KernelCollector::sort_steps() {
  if (!sorted_stale_) return;
  // Sorted from the file's order whenever they are sorted, so that spans
  // that start together keep one order however the file's spans came in.
  sorted_ = step_spans_;
  std::sort(sorted_.begin(), sorted_.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  sorted_stale_ = false;
}

/// N of the latest-starting step span holding host time `ts` (both ends
/// included), looking back a few spans (they do not nest in practice); a
/// time before the first span is in step N−1 of that span, which began
/// before the trace (a profiler started mid-step: RankKernels::partial_step).
std::optional<std::int64_t> KernelCollector::step_at(std::int64_t ts, std::size_t& hint) const {
  if (sorted_.empty()) return std::nullopt;
  if (ts < sorted_.front().start) return sorted_.front().step - 1;
  // The first span starting after ts: at the hint when the times run on.
  std::size_t after = hint;
  if (after == 0 || after > sorted_.size() || sorted_[after - 1].start > ts ||
      (after < sorted_.size() && sorted_[after].start <= ts)) {
    after = static_cast<std::size_t>(
        std::upper_bound(sorted_.begin(), sorted_.end(), ts,
                         [](std::int64_t v, const StepSpan& s) { return v < s.start; }) -
        sorted_.begin());
    hint = after;
  }
  for (std::size_t back = 0; back < 4 && back < after; ++back) {
    const StepSpan& s = sorted_[after - 1 - back];
    if (s.end >= ts) return s.step;
  }
  return std::nullopt;
}

void KernelCollector::place(const PairList& pairs) {
  if (step_spans_.empty()) return;  // launched outside every step span: in no step
  sort_steps();
  std::size_t hint = 0;
  RankKernels::StepExtent* last = nullptr;
  pairs.for_each([&](const LaunchPair& p) {
    const std::optional<std::int64_t> step = step_at(p.launch, hint);
    if (!step) return;
    if (last == nullptr || last->step != *step) {
      last = &extents_.try_emplace(*step, RankKernels::StepExtent{*step, p.start, p.end})
                  .first->second;
    }
    last->first_start = std::min(last->first_start, p.start);
    last->last_end = std::max(last->last_end, p.end);
  });
}

void KernelCollector::place(const std::vector<CommLaunch>& launches) {
  sort_steps();
  std::size_t hint = 0;
  for (const CommLaunch& l : launches) {
    out_.comm[l.comm].step = step_at(l.launch, hint);
    links_[l.comm].launch_ts = l.launch;
    links_[l.comm].launch_thread = l.thread;
  }
}

long KernelCollector::on_activity(ParsedEvent& e) {
  count(e.start, e.end, e.gpu);
  long comm = -1;
  if (e.communication) {
    CommKernel kernel = e.comm ? std::move(*e.comm) : CommKernel{};
    e.comm.reset();
    kernel.start = e.start;
    kernel.end = e.end;
    comm = static_cast<long>(out_.comm.size());
    out_.comm.push_back(std::move(kernel));
    // PyTorch 2.2 and earlier write the launch's correlation as a kernel's
    // External id: no host op's id, though it may equal one.
    links_.push_back({e.external_id != e.correlation ? e.external_id : -1, 0, -1});
  } else {
    compute_.add(e.start, e.end);
  }
  if (e.correlation < 0) ++out_.without_launch;
  return comm;
}

void KernelCollector::on_comm_call(ParsedEvent& e) {
  CommHostCall call{e.thread, e.start, e.end, e.external_id, std::move(e.name), std::nullopt};
  if (e.comm) call.args = std::move(*e.comm);
  e.comm.reset();
  calls_.push_back(std::move(call));
}

void KernelCollector::reset() { *this = KernelCollector(); }

namespace {

/// What a host call's name says it does when its args do not:
/// ProcessGroupNCCL's `nccl:send 0->1`, `nccl:recv 1<-0` (point-to-point,
/// with group ranks: not the global ranks the peers need), `nccl:all_reduce`
/// and the others (collectives); `nccl:coalesced` and record_param_comms
/// without a `Collective name` say nothing.
CommOp op_of_call_name(std::string_view name) {
  if (name.starts_with("nccl:send") || name.starts_with("nccl:recv")) {
    return CommOp::point_to_point;
  }
  if (name.starts_with("nccl:") && name != "nccl:coalesced") return CommOp::collective;
  return CommOp::unknown;
}

/// The label of a kernel's point-to-point operations: "send", "recv", or
/// "send/recv" for a batched kernel of both.
std::string p2p_label(const std::vector<PeerOp>& ops) {
  bool send = false, recv = false;
  for (const PeerOp& o : ops) {
    if (o.op == CommOp::send) send = true;
    if (o.op == CommOp::recv) recv = true;
  }
  return send == recv ? "send/recv" : send ? "send" : "recv";
}

/// Each communication kernel's operations from its host calls (docs/guide.md,
/// "The kernel view"). PyTorch records one record_param_comms per operation
/// on the calling thread, and launches a plain operation's kernel inside it;
/// a batched kernel (coalescing, batch_isend_irecv) is launched after its
/// operations' calls have ended, inside none of them. So:
///  - a point-to-point kernel's operations are those of every call on the
///    launching thread that began after the previous NCCL kernel's launch
///    there and by its own launch, in the order issued;
///  - a collective's are those of the innermost call that holds its launch
///    (else of the call whose External id it carries, where that id is not
///    merely its correlation, as PyTorch 2.2 and earlier write it);
///  - where no host call names them, the kernel's own args stand.
void resolve_operations(std::vector<CommKernel>& comm, const std::vector<CommLink>& links,
                        const std::vector<CommHostCall>& calls) {
  if (calls.empty()) return;
  std::vector<std::size_t> order(calls.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(calls[a].thread, calls[a].start, a) <
           std::tie(calls[b].thread, calls[b].start, b);
  });
  // The calls' ends in `order`'s order, as a max tree: of a thread's calls
  // that began before the previous NCCL launch, only those that hold the
  // launch count, found by descending the tree rather than read one by one
  // (a rank's NCCL calls are as many as its NCCL kernels).
  std::size_t leaves = 1;
  while (leaves < order.size()) leaves <<= 1;
  std::vector<std::int64_t> ends(2 * leaves, std::numeric_limits<std::int64_t>::min());
  for (std::size_t i = 0; i < order.size(); ++i) ends[leaves + i] = calls[order[i]].end;
  for (std::size_t i = leaves - 1; i > 0; --i) ends[i] = std::max(ends[2 * i], ends[2 * i + 1]);
  // The first position from `from` on whose call ends at or after `ts`
  // (order.size() when none).
  const auto next_holding = [&](std::size_t from, std::int64_t ts) {
    if (from >= order.size()) return order.size();
    std::size_t i = leaves + from;
    while (ends[i] < ts) {
      while (i & 1) {  // a right child: its parent's range is done
        i >>= 1;
        if (i <= 1) return order.size();
      }
      ++i;
    }
    while (i < leaves) {
      i = 2 * i;
      if (ends[i] < ts) ++i;
    }
    return std::min(i - leaves, order.size());
  };
  std::unordered_map<std::int64_t, std::size_t> by_external;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].external_id >= 0 && calls[i].args) by_external.emplace(calls[i].external_id, i);
  }
  // The NCCL launches of each thread, in time order.
  std::vector<std::pair<std::int64_t, std::int64_t>> launches;  // (thread, ts)
  for (const CommLink& l : links) {
    if (l.launch_thread >= 0) launches.push_back({l.launch_thread, l.launch_ts});
  }
  std::sort(launches.begin(), launches.end());
  for (std::size_t k = 0; k < comm.size(); ++k) {
    CommKernel& kernel = comm[k];
    const CommLink& link = links[k];
    std::vector<PeerOp> ops;
    const CommKernel* p2p_args = nullptr;         // the first call with operations
    const CommKernel* collective_args = nullptr;  // the innermost call holding the launch
    CommOp named = CommOp::unknown;               // by the name of a call holding the launch
    std::string named_label;
    if (link.launch_thread >= 0) {
      const std::pair<std::int64_t, std::int64_t> at{link.launch_thread, link.launch_ts};
      const auto prev = std::lower_bound(launches.begin(), launches.end(), at);
      std::int64_t after = std::numeric_limits<std::int64_t>::min();
      if (prev != launches.begin() && std::prev(prev)->first == link.launch_thread) {
        after = std::prev(prev)->second;
      }
      // The thread's calls that began by the launch: those since the
      // previous launch (`window` on) one by one, the earlier ones that hold
      // the launch only (any other one changes nothing below).
      const auto thread_begin =
          std::lower_bound(order.begin(), order.end(), link.launch_thread,
                           [&](std::size_t i, std::int64_t t) { return calls[i].thread < t; });
      const auto thread_end =
          std::upper_bound(thread_begin, order.end(), link.launch_thread,
                           [&](std::int64_t t, std::size_t i) { return t < calls[i].thread; });
      const auto stop =
          std::upper_bound(thread_begin, thread_end, link.launch_ts,
                           [&](std::int64_t t, std::size_t i) { return t < calls[i].start; });
      const auto window =
          std::upper_bound(thread_begin, stop, after,
                           [&](std::int64_t t, std::size_t i) { return t < calls[i].start; });
      const auto position = [&](auto at) { return static_cast<std::size_t>(at - order.begin()); };
      const CommHostCall* last_p2p = nullptr;
      for (auto it = thread_begin; it != stop;) {
        if (it < window) {
          const std::size_t next = next_holding(position(it), link.launch_ts);
          if (next >= position(window)) {
            it = window;
            continue;
          }
          it = order.begin() + static_cast<std::ptrdiff_t>(next);
        }
        const CommHostCall& c = calls[*it];
        ++it;
        const bool holds = c.end >= link.launch_ts;
        if (holds && named == CommOp::unknown) {
          named = op_of_call_name(c.name);
          if (named != CommOp::unknown) named_label = c.name.substr(kNcclCallPrefix.size());
        }
        if (!c.args) continue;
        if (holds && c.args->op == CommOp::collective) collective_args = &*c.args;
        if (c.start <= after || c.args->p2p.empty()) continue;
        // One operation recorded twice (a call nested in another that holds
        // the same args) counts once.
        if (last_p2p != nullptr && last_p2p->end >= c.end && last_p2p->args->p2p == c.args->p2p) {
          continue;
        }
        ops.insert(ops.end(), c.args->p2p.begin(), c.args->p2p.end());
        if (p2p_args == nullptr) p2p_args = &*c.args;
        last_p2p = &c;
      }
    }
    if (collective_args == nullptr && link.external_id >= 0) {
      if (const auto e = by_external.find(link.external_id); e != by_external.end()) {
        if (calls[e->second].args->op == CommOp::collective) {
          collective_args = &*calls[e->second].args;
        }
      }
    }
    const bool p2p = kernel.op == CommOp::point_to_point || named == CommOp::point_to_point ||
                     (collective_args == nullptr && !ops.empty());
    const CommKernel* args = p2p ? (ops.empty() ? nullptr : p2p_args) : collective_args;
    if (args == nullptr) {
      // No host call names them: the kernel's own args stand, and what a
      // host call's name says it does.
      if (kernel.source == CommSource::none && named != CommOp::unknown) {
        kernel.op = named;
        if (named == CommOp::collective) kernel.collective = named_label;
      }
      continue;
    }
    if (!args->group_name.empty()) kernel.group_name = args->group_name;
    if (!args->group_description.empty()) kernel.group_description = args->group_description;
    if (!args->group_ranks.empty()) kernel.group_ranks = args->group_ranks;
    if (args->group_size > 0) kernel.group_size = args->group_size;
    if (args->comms_id && !kernel.comms_id) kernel.comms_id = args->comms_id;
    if (args->group_rank >= 0) kernel.group_rank = args->group_rank;
    kernel.source = CommSource::host;
    if (p2p) {
      kernel.op = CommOp::point_to_point;
      kernel.p2p = std::move(ops);
      kernel.collective = p2p_label(kernel.p2p);
    } else {
      kernel.op = CommOp::collective;
      kernel.collective = collective_args->collective;
      kernel.p2p.clear();
    }
  }
}

}  // namespace

void resolve_comm_operations(RankKernels& rank, const std::vector<CommLink>& links,
                             const std::vector<CommHostCall>& calls) {
  resolve_operations(rank.comm, links, calls);
  // The rank the collectives' args give: their group's member at `Rank`.
  for (const CommKernel& c : rank.comm) {
    if (c.op != CommOp::collective || c.group_rank < 0 ||
        static_cast<std::size_t>(c.group_rank) >= c.group_ranks.size()) {
      continue;
    }
    const int r = c.group_ranks[static_cast<std::size_t>(c.group_rank)];
    if (rank.comm_rank == -1) {
      rank.comm_rank = r;
    } else if (rank.comm_rank != r) {
      rank.comm_rank = RankKernels::kConflict;
    }
  }
}

RankKernels KernelCollector::finish(std::int64_t base_ns, const LaunchJoin& join) {
  return finish(
      base_ns, join.unmatched_activities(),
      join.any_launch() ? join.earliest_launch() : std::numeric_limits<std::int64_t>::max());
}

RankKernels KernelCollector::finish(std::int64_t base_ns, std::uint64_t unmatched,
                                    std::int64_t earliest_launch) {
  // Activities that never met their launch; a launch before the first step
  // span is in the step before it (step_at).
  out_.without_launch += unmatched;
  sort_steps();
  if (!sorted_.empty() && earliest_launch < sorted_.front().start) {
    out_.partial_step = sorted_.front().step - 1;
  }
  resolve_comm_operations(out_, links_, calls_);
  links_ = {};
  calls_ = {};
  out_.compute = compute_.take();
  for (TimeSpan& s : out_.compute) {
    s.start += base_ns;
    s.end += base_ns;
  }
  for (CommKernel& c : out_.comm) {
    c.start += base_ns;
    c.end += base_ns;
  }
  std::stable_sort(out_.comm.begin(), out_.comm.end(),
                   [](const CommKernel& a, const CommKernel& b) { return a.start < b.start; });
  out_.steps.reserve(extents_.size());
  for (auto& [step, extent] : extents_) {
    extent.first_start += base_ns;
    extent.last_end += base_ns;
    out_.steps.push_back(extent);
  }
  std::sort(out_.steps.begin(), out_.steps.end(),
            [](const RankKernels::StepExtent& a, const RankKernels::StepExtent& b) {
              return a.step < b.step;
            });
  if (out_.activities > 0) {
    out_.first_start += base_ns;
    out_.last_end += base_ns;
  }
  return std::move(out_);
}

}  // namespace pipescope
