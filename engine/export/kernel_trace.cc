#include "export/kernel_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/json_writer.h"

namespace pipescope {

namespace {

class Writer {
 public:
  Writer(AtomicFile& file, std::int64_t origin) : w_(file, JsonStyle{0, false}), origin_(origin) {}

  JsonWriter& json() { return w_; }

  /// What a metadata record names: a process (a machine, the steps) or a
  /// thread (a rank's lane).
  enum class Track { process, thread };

  void metadata(Track track, std::int64_t pid, std::int64_t tid, std::string_view name,
                std::int64_t sort_index) {
    const bool process = track == Track::process;
    w_.begin_object(true);
    w_.field("ph", "M");
    w_.field("name", process ? "process_name" : "thread_name");
    w_.field("pid", pid);
    w_.field("tid", tid);
    w_.key("args");
    w_.begin_object(true);
    w_.field("name", name);
    w_.end_object();
    w_.end_object();
    w_.begin_object(true);
    w_.field("ph", "M");
    w_.field("name", process ? "process_sort_index" : "thread_sort_index");
    w_.field("pid", pid);
    w_.field("tid", tid);
    w_.key("args");
    w_.begin_object(true);
    w_.field("sort_index", sort_index);
    w_.end_object();
    w_.end_object();
  }

  /// A complete slice; `args` are (key, value) strings.
  void slice(std::int64_t pid, std::int64_t tid, std::string_view name, std::string_view cat,
             std::int64_t start, std::int64_t end,
             const std::vector<std::pair<std::string_view, std::string>>& args = {}) {
    w_.begin_object(true);
    w_.field("ph", "X");
    w_.field("name", name);
    w_.field("cat", cat);
    w_.field("pid", pid);
    w_.field("tid", tid);
    us("ts", start - origin_);
    us("dur", end - start);
    if (!args.empty()) {
      w_.key("args");
      w_.begin_object(true);
      for (const auto& [k, v] : args) w_.field(k, std::string_view(v));
      w_.end_object();
    }
    w_.end_object();
  }

 private:
  void us(std::string_view key, std::int64_t ns) {
    buffer_.clear();
    append_ns_as_us(buffer_, ns);
    w_.key(key);
    w_.raw_value(std::string_view(buffer_.data(), buffer_.size()));
  }

  JsonWriter w_;
  std::int64_t origin_;
  fmt::memory_buffer buffer_;
};

constexpr std::int64_t kStepsPid = 1;

}  // namespace

void write_kernel_trace(const std::vector<RankKernels>& ranks, const KernelView& view,
                        const std::string& path) {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (const KernelStepWindow& w : view.steps) origin = std::min(origin, w.start);
  if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;
  AtomicFile file(path);
  Writer out(file, origin);
  JsonWriter& w = out.json();
  w.begin_object();
  w.key("traceEvents");
  w.begin_array();
  out.metadata(Writer::Track::process, kStepsPid, 1, "Steps", 0);
  out.metadata(Writer::Track::thread, kStepsPid, 1, "Steps", 0);
  for (const KernelStepWindow& s : view.steps) {
    out.slice(kStepsPid, 1, fmt::format("step {}", s.step), "step", s.start, s.end,
              {{"complete", s.complete ? "true" : "false"}});
  }
  std::map<int, bool> named;  // machines whose process is declared
  std::int64_t tid = 2;
  for (std::size_t i = 0; i < view.ranks.size(); ++i) {
    const KernelRankView& r = view.ranks[i];
    const RankKernels& rk = ranks[r.source];
    const std::int64_t pid = 2 + r.machine;
    if (!named[r.machine]) {
      out.metadata(Writer::Track::process, pid, tid, fmt::format("Machine {}", r.machine),
                   r.machine + 1);
      named[r.machine] = true;
    }
    const std::int64_t compute_tid = tid++;
    out.metadata(Writer::Track::thread, pid, compute_tid,
                 fmt::format("rank {} · compute", r.global_rank), compute_tid);
    for (const TimeSpan& c : rk.compute) {
      out.slice(pid, compute_tid, "compute", "compute", c.start - r.clock_offset_ns,
                c.end - r.clock_offset_ns);
    }
    // NCCL lanes: each kernel on the first lane free at its start.
    std::vector<std::int64_t> lane_end;
    std::vector<std::int64_t> lane_tid;
    for (const KernelCommSlice& c : r.comm) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > c.start) ++lane;
      if (lane == lane_end.size()) {
        lane_end.push_back(c.start);
        lane_tid.push_back(tid++);
        out.metadata(Writer::Track::thread, pid, lane_tid.back(),
                     lane == 0 ? fmt::format("rank {} · NCCL", r.global_rank)
                               : fmt::format("rank {} · NCCL {}", r.global_rank, lane + 1),
                     lane_tid.back());
      }
      lane_end[lane] = c.end;
      const CommKernel& k = rk.comm[c.kernel];
      const std::string op = k.collective.empty() ? std::string("nccl") : k.collective;
      if (c.transfer_from > c.start) {
        out.slice(pid, lane_tid[lane], fmt::format("wait · {} (for rank {})", op, c.waited_on),
                  "nccl_wait", c.start, c.transfer_from, {{"group", k.group_description}});
      }
      if (c.end > c.transfer_from) {
        out.slice(pid, lane_tid[lane],
                  c.has_peers ? fmt::format("transfer · {}", op)
                              : fmt::format("{} (no peer in the traces)", op),
                  "nccl_transfer", c.transfer_from, c.end, {{"group", k.group_description}});
      }
    }
  }
  w.end_array();
  w.field("displayTimeUnit", "ns");
  w.key("otherData");
  w.begin_object(true);
  w.field("tool", "pipescope");
  w.field("view", "kernels");
  w.field("origin_ns", fmt::format("{}", origin));
  w.end_object();
  w.end_object();
  file.append('\n');
  file.commit();
}

}  // namespace pipescope
