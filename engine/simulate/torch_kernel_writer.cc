#include "simulate/torch_kernel_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "io/atomic_output.h"
#include "simulate/split_mix.h"
#include "simulate/torch_trace_writer.h"

namespace pipescope::sim {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kActivationNelems = 4096LL * 8192;  // seq x hidden, bf16
constexpr std::int64_t kParameters = 1'200'000'000;        // all-reduced per pipeline (fp32)

struct LaunchCall {
  const char* name;
  const char* category;
  int cbid;
};
constexpr LaunchCall kLaunchKernel{"cudaLaunchKernel", "cuda_runtime", 211};
constexpr LaunchCall kLaunchKernelEx{"cuLaunchKernelEx", "cuda_driver", 652};

struct NcclNames {
  const char* p2p;
  const char* allreduce;
  LaunchCall launch;
  const char* version;
};
constexpr NcclNames kOldNames{
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", kLaunchKernel,
    "2.14.3"};
constexpr NcclNames kNewNames{
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", kLaunchKernelEx,
    "2.21.5"};

/// A reproducible stream of draws in [lo, hi].
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : state_(mix(seed ^ 0x686F7374ULL)) {}  // "host"
  std::int64_t operator()(std::int64_t lo, std::int64_t hi) {
    state_ = mix(state_);
    return lo + static_cast<std::int64_t>(state_ % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::uint64_t state_;
};

struct ProcessGroup {
  std::string name;
  const char* description;
  std::vector<int> ranks;
};

/// Everything a rank's trace needs beyond its activities.
struct RunFacts {
  const KernelTimeline* timeline;
  const TorchKernelOptions* options;
  const NcclNames* names;
  std::uint64_t seed;
  std::int64_t base_ns;
  std::vector<ProcessGroup> pipeline_groups;  // per replica
  std::vector<ProcessGroup> data_groups;      // per stage
};

/// When the CPU side of one activity happens (true clock).
struct Host {
  std::int64_t launch = 0;
  std::int64_t launch_dur = 0;
  // NCCL kernels: record_param_comms and the nccl:* annotation inside it.
  std::int64_t op_start = 0;
  std::int64_t op_end = 0;
  std::int64_t annotation_start = 0;
  std::int64_t annotation_end = 0;
  std::int64_t correlation = 0;
  std::int64_t external = 0;
};

struct StepSpan {
  std::int64_t step = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
};

/// The args Kineto copies onto a NCCL kernel and its record_param_comms
/// (without braces, starting with ", ").
std::string comm_args(const RunFacts& run, int rank, const KernelActivity& a) {
  const KernelTimeline& tl = *run.timeline;
  const KernelComm& comm = tl.comms[a.comm];
  const int replica = rank % tl.replicas;
  const int stage = tl.devices[rank].stage;
  const bool p2p = a.kind != ActivityKind::allreduce;
  const ProcessGroup& group = p2p ? run.pipeline_groups[replica] : run.data_groups[stage];
  std::string ranks = "[";
  for (std::size_t i = 0; i < group.ranks.size(); ++i) {
    ranks += fmt::format("{}{}", i == 0 ? "" : ", ", group.ranks[i]);
  }
  ranks += "]";
  const std::int64_t nelems =
      p2p ? kActivationNelems : kParameters / static_cast<std::int64_t>(tl.stages);
  std::string out = fmt::format(
      ", \"Collective name\": \"{}\", \"In msg nelems\": {}, \"Out msg nelems\": {}, "
      "\"Group size\": {}, \"dtype\": \"{}\", \"In split size\": \"[]\", \"Out split size\": "
      "\"[]\", \"Process Group Name\": \"{}\", \"Process Group Description\": \"{}\", "
      "\"Process Group Ranks\": \"{}\"",
      a.kind == ActivityKind::send   ? "send"
      : a.kind == ActivityKind::recv ? "recv"
                                     : "allreduce",
      nelems, nelems, group.ranks.size(), p2p ? "BFloat16" : "Float", group.name, group.description,
      ranks);
  if (a.kind == ActivityKind::send) out += fmt::format(", \"Dst Rank\": {}", a.peer);
  if (a.kind == ActivityKind::recv) out += fmt::format(", \"Src Rank\": {}", a.peer);
  if (run.options->comms_id) out += fmt::format(", \"Comms Id\": {}", comm.comms_id);
  return out;
}

/// One rank's trace text, in Kineto's write order: the CPU launches planned
/// first (plan_host), then the head, the CPU events, the launches and
/// activities, and the metadata, each written by its own step.
class RankTraceWriter {
 public:
  RankTraceWriter(const RunFacts& run, int rank, std::int64_t clock_offset, std::uint64_t& events)
      : run(run),
        rank(rank),
        tl(*run.timeline),
        acts(tl.ranks[rank]),
        device(tl.devices[rank]),
        host_pid(3'100'000 + 97 * rank),
        gpu_pid(device.rank),  // the GPU's index on its machine
        shift(clock_offset - run.base_ns),
        draw(run.seed ^ (static_cast<std::uint64_t>(rank) << 32)),
        events(events) {}

  std::string write() {
    plan_host();
    write_head();
    write_cpu_events();
    write_gpu_events();
    write_metadata();
    return fmt::to_string(out);
  }

 private:
  void ts(std::int64_t t) { append_us(out, t + shift); }
  void dur(std::int64_t d) { append_us(out, d); }
  void open_event() {
    out.append(std::string_view(first ? "\n    " : ",\n    "));
    first = false;
    ++events;
  }

  /// Each activity's host calls and the ProfilerStep#N spans.
  void plan_host() {
    // The CPU launches in program order: step by step, in GPU start order
    // within a step (so every launch of step N comes before those of N+1).
    // Placed from the last one back, each as late as it can be while it is
    // 40-80 us ahead of its activity and ends before the next call begins:
    // the CPU is never late, however crowded the kernels.
    std::vector<std::size_t> order(acts.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
      return std::tie(acts[a].step, acts[a].start_ns) < std::tie(acts[b].step, acts[b].start_ns);
    });
    host.assign(acts.size(), Host{});
    std::vector<std::int64_t> begin(acts.size()), end(acts.size());  // each call's CPU time
    std::int64_t limit = std::numeric_limits<std::int64_t>::max();
    for (auto k = order.size(); k-- > 0;) {
      const std::size_t i = order[k];
      const KernelActivity& a = acts[i];
      Host& h = host[i];
      const std::int64_t latest = a.start_ns - draw(40'000, 80'000);
      if (a.kind == ActivityKind::compute) {
        h.launch_dur = draw(2'500, 5'000);
        h.launch = std::min(latest, limit - h.launch_dur);
        begin[i] = h.launch;
        end[i] = h.launch + h.launch_dur;
      } else {
        // record_param_comms, the nccl:* annotation inside it, the launch inside that.
        h.launch_dur = draw(6'000, 14'000);
        const std::int64_t to_annotation_end = draw(1'000, 3'000);
        const std::int64_t to_op_end = to_annotation_end + draw(3'000, 8'000);
        h.launch = std::min(latest, limit - h.launch_dur - to_op_end);
        h.annotation_start = h.launch - draw(3'000, 6'000);
        h.op_start = h.annotation_start - draw(2'000, 4'000);
        h.annotation_end = h.launch + h.launch_dur + to_annotation_end;
        h.op_end = h.launch + h.launch_dur + to_op_end;
        begin[i] = h.op_start;
        end[i] = h.op_end;
      }
      limit = begin[i] - draw(500, 3'000);
    }
    // Ids in program order; one ProfilerStep#N span per step, from a little
    // before its first call to where the next one opens.
    std::int64_t correlation = 0;
    std::int64_t external = 100;
    std::int64_t previous_end = std::numeric_limits<std::int64_t>::min();
    for (const std::size_t i : order) {
      const KernelActivity& a = acts[i];
      if (spans.empty() || spans.back().step != a.step) {
        const std::int64_t open = std::max(begin[i] - draw(100'000, 300'000), previous_end);
        if (!spans.empty()) spans.back().end = open;
        spans.push_back({a.step, open, 0});
      }
      host[i].correlation = ++correlation;
      host[i].external = ++external;
      if (a.kind != ActivityKind::compute) external += 2;  // the cpu_op's and the annotation's
      previous_end = end[i];
    }
    if (!spans.empty()) spans.back().end = previous_end + 20'000;
  }

  /// The trace's head up to its events.
  void write_head() {
    fmt::format_to(it, "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    const int per_machine = static_cast<int>(tl.devices.size()) / (tl.devices.back().machine + 1);
    for (int d = 0; d < per_machine; ++d) {
      fmt::format_to(
          it,
          "{}\n    {{\"id\": {}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": "
          "85045183744, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}",
          d == 0 ? "" : ",", d);
    }
    fmt::format_to(it,
                   "\n  ],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
                   "\"world_size\": {}, \"nccl_version\": \"{}\"}},\n  \"traceEvents\": [",
                   rank, tl.devices.size(), run.names->version);
  }

  /// 1. The CPU events.
  void write_cpu_events() {
    // 1. CPU events in time order (outer before inner at one instant).
    struct CpuEvent {
      std::int64_t ts;
      int depth;  // 0: step span, 1: record_param_comms, 2: its annotation
      std::size_t index;
    };
    std::vector<CpuEvent> cpu;
    for (std::size_t k = 0; k < spans.size(); ++k) cpu.push_back({spans[k].start, 0, k});
    for (std::size_t i = 0; i < acts.size(); ++i) {
      if (acts[i].kind == ActivityKind::compute) continue;
      cpu.push_back({host[i].op_start, 1, i});
      cpu.push_back({host[i].annotation_start, 2, i});
    }
    std::sort(cpu.begin(), cpu.end(), [](const CpuEvent& a, const CpuEvent& b) {
      return std::tie(a.ts, a.depth, a.index) < std::tie(b.ts, b.depth, b.index);
    });
    args.assign(acts.size(), std::string());
    for (std::size_t i = 0; i < acts.size(); ++i) {
      if (acts[i].kind != ActivityKind::compute) args[i] = comm_args(run, rank, acts[i]);
    }
    for (const CpuEvent& e : cpu) {
      open_event();
      if (e.depth == 0) {
        const StepSpan& s = spans[e.index];
        fmt::format_to(
            it,
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
            "\"pid\": {}, \"tid\": {}, \"ts\": ",
            run.options->first_step + s.step, host_pid, host_pid);
        ts(s.start);
        out.append(std::string_view(", \"dur\": "));
        dur(s.end - s.start);
        fmt::format_to(it, ", \"args\": {{\"External id\": {}}}}}", 1 + e.index);
        continue;
      }
      const Host& h = host[e.index];
      const KernelActivity& a = acts[e.index];
      if (e.depth == 1) {
        fmt::format_to(it,
                       "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", "
                       "\"pid\": {}, \"tid\": {}, \"ts\": ",
                       host_pid, host_pid);
        ts(h.op_start);
        out.append(std::string_view(", \"dur\": "));
        dur(h.op_end - h.op_start);
        fmt::format_to(it, ", \"args\": {{\"External id\": {}{}}}}}", h.external + 1,
                       args[e.index]);
      } else {
        fmt::format_to(
            it,
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{}\", \"pid\": {}, "
            "\"tid\": {}, \"ts\": ",
            a.kind == ActivityKind::send   ? "nccl:send"
            : a.kind == ActivityKind::recv ? "nccl:recv"
                                           : "nccl:all_reduce",
            host_pid, host_pid);
        ts(h.annotation_start);
        out.append(std::string_view(", \"dur\": "));
        dur(h.annotation_end - h.annotation_start);
        fmt::format_to(it, ", \"args\": {{\"External id\": {}}}}}", h.external + 2);
      }
    }
  }

  /// 2. The launches and activities.
  void write_gpu_events() {
    // 2. Launches (with their "s" flow) and activities (with their "f" flow)
    // interleaved in time order.
    struct GpuEvent {
      std::int64_t ts;
      int part;  // 0: launch, 1: its flow start, 2: the activity, 3: its flow end
      std::size_t index;
    };
    std::vector<GpuEvent> gpu;
    gpu.reserve(acts.size() * 4);
    for (std::size_t i = 0; i < acts.size(); ++i) {
      gpu.push_back({host[i].launch, 0, i});
      gpu.push_back({host[i].launch, 1, i});
      gpu.push_back({acts[i].start_ns, 2, i});
      gpu.push_back({acts[i].start_ns, 3, i});
    }
    std::sort(gpu.begin(), gpu.end(), [this](const GpuEvent& a, const GpuEvent& b) {
      return std::tie(a.ts, a.part, host[a.index].correlation) <
             std::tie(b.ts, b.part, host[b.index].correlation);
    });
    for (const GpuEvent& e : gpu) {
      const Host& h = host[e.index];
      const KernelActivity& a = acts[e.index];
      const bool nccl = a.kind != ActivityKind::compute;
      open_event();
      switch (e.part) {
        case 0: {
          const LaunchCall& call = nccl ? run.names->launch : kLaunchKernel;
          fmt::format_to(it,
                         "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, "
                         "\"tid\": {}, \"ts\": ",
                         call.category, call.name, host_pid, host_pid);
          ts(h.launch);
          out.append(std::string_view(", \"dur\": "));
          dur(h.launch_dur);
          fmt::format_to(it,
                         ", \"args\": {{\"External id\": {}, \"cbid\": {}, \"correlation\": {}}}}}",
                         h.external, call.cbid, h.correlation);
          break;
        }
        case 1:
          fmt::format_to(it, "{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ",
                         h.correlation, host_pid, host_pid);
          ts(h.launch);
          out.append(std::string_view(", \"cat\": \"ac2g\", \"name\": \"ac2g\"}"));
          break;
        case 2: {
          const char* name = !nccl                               ? a.name
                             : a.kind == ActivityKind::allreduce ? run.names->allreduce
                                                                 : run.names->p2p;
          fmt::format_to(it,
                         "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, "
                         "\"tid\": {}, \"ts\": ",
                         name, gpu_pid, a.stream);
          ts(a.start_ns);
          out.append(std::string_view(", \"dur\": "));
          dur(a.end_ns - a.start_ns);
          fmt::format_to(it,
                         ", \"args\": {{\"External id\": {}, \"queued\": 0, \"device\": {}, "
                         "\"context\": 1, \"stream\": {}, \"correlation\": {}, \"registers per "
                         "thread\": {}, \"grid\": [{}, 1, 1], \"block\": [{}, 1, 1]{}}}}}",
                         h.external, gpu_pid, a.stream, h.correlation, nccl ? 96 : 128,
                         nccl ? 24 : 132, nccl ? 544 : 256, args[e.index]);
          break;
        }
        default:
          fmt::format_to(it, "{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ",
                         h.correlation, gpu_pid, a.stream);
          ts(a.start_ns);
          out.append(std::string_view(", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}"));
          break;
      }
    }
  }

  /// 3. The metadata and the tail.
  void write_metadata() {
    // 3. Metadata.
    std::set<int> streams;
    for (const KernelActivity& a : acts) streams.insert(a.stream);
    auto meta = [&](std::string_view name, int pid, int tid, const std::string& value) {
      open_event();
      fmt::format_to(it, "{{\"name\": \"{}\", \"ph\": \"M\", \"ts\": ", name);
      ts(spans.empty() ? 0 : spans.front().start);
      fmt::format_to(it, ", \"pid\": {}, \"tid\": {}, \"args\": {}}}", pid, tid, value);
    };
    meta("process_name", host_pid, 0, "{\"name\": \"python3\"}");
    meta("process_labels", host_pid, 0, "{\"labels\": \"CPU\"}");
    meta("process_name", gpu_pid, 0, "{\"name\": \"python3\"}");
    meta("process_labels", gpu_pid, 0, fmt::format("{{\"labels\": \"GPU {}\"}}", gpu_pid));
    for (const int s : streams) {
      meta("thread_name", gpu_pid, s, fmt::format("{{\"name\": \"stream {} \"}}", s));
    }
    meta("thread_name", host_pid, host_pid,
         fmt::format("{{\"name\": \"thread {} (pt_main_thread)\"}}", host_pid));
    fmt::format_to(it,
                   "\n  ],\n  \"traceName\": \"rank{}.pt.trace.json\",\n  \"displayTimeUnit\": "
                   "\"ms\",\n  \"baseTimeNanoseconds\": {}\n}}\n",
                   rank, run.base_ns);
  }

  const RunFacts& run;
  const int rank;
  const KernelTimeline& tl;
  const std::vector<KernelActivity>& acts;
  const SimDeviceInfo& device;
  const int host_pid;
  const int gpu_pid;
  const std::int64_t shift;
  Draws draw;
  std::uint64_t& events;
  std::vector<Host> host;
  std::vector<StepSpan> spans;
  std::vector<std::string> args;  ///< each NCCL activity's comm args
  fmt::memory_buffer out;
  std::back_insert_iterator<fmt::memory_buffer> it{out};
  bool first = true;
};

/// One rank's trace text, in Kineto's write order; `events` gets its count.
std::string rank_trace(const RunFacts& run, int rank, std::int64_t clock_offset,
                       std::uint64_t& events) {
  return RankTraceWriter(run, rank, clock_offset, events).write();
}

std::string layout_json(const KernelTimeline& tl) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\"source\": \"process_group\", \"group\": \"PIPELINE_MODEL_PARALLEL_GROUP\", "
                 "\"pp\": {}, \"dp\": {}, \"order\": \"pp,dp\", \"ranks\": [",
                 tl.stages, tl.replicas);
  for (std::size_t g = 0; g < tl.devices.size(); ++g) {
    const SimDeviceInfo& d = tl.devices[g];
    fmt::format_to(
        it,
        "{}\n    {{\"global_rank\": {}, \"stage\": {}, \"replica\": {}, \"machine\": {}, "
        "\"device\": {}}}",
        g == 0 ? "" : ",", d.index, d.stage, d.index % tl.replicas, d.machine, d.rank);
  }
  fmt::format_to(it, "\n  ]}}");
  return fmt::to_string(out);
}

}  // namespace

KernelTraceReport write_torch_kernel_traces(const SimConfig& config,
                                            const TorchKernelOptions& options) {
  if (options.dir.empty()) throw std::invalid_argument("no output folder given");
  if (options.first_step < 0 || options.first_step > 1'000'000'000'000) {
    throw std::invalid_argument(
        fmt::format("first step must be in 0..10^12, got {}", options.first_step));
  }
  layout_devices(config);  // the whole config checked, clock offsets included
  const KernelTimeline timeline = build_kernel_timeline(config, options.kernels_per_job);
  prepare_trace_dir(options.dir, options.force, *config.words);

  const int machines = config.machines;
  std::vector<std::int64_t> offset(static_cast<std::size_t>(machines), 0);
  if (!config.machine_skew_ns.empty()) offset = config.machine_skew_ns;
  // Whole seconds, 10 s before the earliest time any machine writes.
  const std::int64_t earliest =
      config.start_ns + std::min<std::int64_t>(0, *std::min_element(offset.begin(), offset.end()));
  const std::int64_t base =
      std::max<std::int64_t>(0, earliest / 1'000'000'000 - 10) * 1'000'000'000;

  RunFacts run{
      &timeline,   &options, options.nccl == NcclGeneration::old_names ? &kOldNames : &kNewNames,
      config.seed, base,     {},
      {}};
  const int p = timeline.stages, d_count = timeline.replicas;
  for (int d = 0; d < d_count; ++d) {
    ProcessGroup group{fmt::format("{}", 1 + p + d), "PIPELINE_MODEL_PARALLEL_GROUP", {}};
    for (int s = 0; s < p; ++s) group.ranks.push_back(d + d_count * s);
    run.pipeline_groups.push_back(std::move(group));
  }
  for (int s = 0; s < p; ++s) {
    ProcessGroup group{fmt::format("{}", 1 + s), "DATA_PARALLEL_GROUP", {}};
    for (int d = 0; d < d_count; ++d) group.ranks.push_back(d + d_count * s);
    run.data_groups.push_back(std::move(group));
  }

  KernelTraceReport report;
  std::vector<std::string> paths;
  // Should anything throw, the traces not yet committed are removed as these
  // go out of scope.
  std::vector<std::unique_ptr<io::AtomicOutput>> outputs;
  for (std::size_t g = 0; g < timeline.devices.size(); ++g) {
    const SimDeviceInfo& device = timeline.devices[g];
    fs::path relative = fmt::format("rank{}.pt.trace.json", g);
    if (machines > 1) relative = fs::path(fmt::format("machine{}", device.machine)) / relative;
    const fs::path path = options.dir / relative;
    fs::create_directories(path.parent_path());
    std::uint64_t events = 0;
    const std::string text = rank_trace(run, static_cast<int>(g),
                                        offset[static_cast<std::size_t>(device.machine)], events);
    auto output = std::make_unique<io::AtomicOutput>(path.string());
    output->write(text.data(), text.size());
    output->close_descriptor();
    outputs.push_back(std::move(output));
    paths.push_back(relative.string());
    report.files.push_back({path, text.size(), events, timeline.ranks[g].size()});
    report.bytes += text.size();
    report.activities += timeline.ranks[g].size();
  }
  for (auto& output : outputs) output->commit();

  report.expected = expected_kernel_view(timeline, options.first_step, offset[0]);
  std::string clock = "{\"reference\": \"machine 0\", \"machines\": [";
  for (int m = 0; m < machines; ++m) {
    clock += fmt::format("{}{{\"machine\": {}, \"offset_ns\": {}}}", m == 0 ? "" : ", ", m,
                         offset[m] - offset[0]);
  }
  clock += "]}";
  report.expected_path = options.dir / "expected.json";
  io::write_file_atomically(
      report.expected_path.string(),
      fmt::format(
          "{{\n  \"format\": \"torch-kernels\",\n  \"kernel_view\": {},\n  \"layout\": {},\n"
          "  \"clock\": {}\n}}\n",
          expected_kernel_view_json(report.expected, paths), layout_json(timeline), clock));
  std::string skews;
  for (int m = 0; m < machines; ++m) skews += fmt::format("{}{}", m == 0 ? "" : ", ", offset[m]);
  io::write_file_atomically(
      (options.dir / "simulation.json").string(),
      fmt::format("{{\"format\": \"torch-kernels\", {}, \"machines\": {}, \"seed\": {}, "
                  "\"start_ns\": {}, \"first_step\": {}, \"kernels_per_job\": {}, "
                  "\"comms_id\": {}, \"nccl_names\": \"{}\", \"latency_ns\": {}, "
                  "\"clock_offsets_ns\": [{}]}}\n",
                  simulation_shape_fields(config, timeline.steps), machines, config.seed,
                  config.start_ns, options.first_step, options.kernels_per_job, options.comms_id,
                  options.nccl == NcclGeneration::old_names ? "old" : "new", config.p2p_latency_ns,
                  skews));
  report.steps = timeline.steps;
  report.ranks = static_cast<int>(timeline.devices.size());
  report.machines = machines;
  return report;
}

}  // namespace pipescope::sim
