#include "ingest/nsys_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "ingest/annotation_jobs.h"
#include "ingest/nsys_export.h"
#include "ingest/progress_meter.h"
#include "ingest/torch_trace_event.h"
#include "io/file_descriptor.h"
#include "model/errors.h"

namespace pipescope {

namespace {

/// NCCL's calls that are the kernel view's host calls: the point-to-point
/// ones, and the collectives by the name PyTorch's record_param_comms gives.
std::optional<CommOp> p2p_call(std::string_view name) {
  if (name == "ncclSend") return CommOp::send;
  if (name == "ncclRecv") return CommOp::recv;
  return std::nullopt;
}
std::string_view collective_call(std::string_view name) {
  static const std::map<std::string_view, std::string_view> names = {
      {"ncclAllReduce", "allreduce"},
      {"ncclAllGather", "allgather"},
      {"ncclReduceScatter", "reduce_scatter"},
      {"ncclBroadcast", "broadcast"},
      {"ncclBcast", "broadcast"},
      {"ncclReduce", "reduce"},
      {"ncclAlltoAll", "all_to_all"},
      {"ncclGather", "gather"},
      {"ncclScatter", "scatter"}};
  const auto it = names.find(name);
  return it == names.end() ? std::string_view() : it->second;
}

bool is_report_name(std::string_view name) {
  return name.ends_with(".nsys-rep") || name.ends_with(".qdrep");
}

std::string export_command(const std::string& path) {
  return fmt::format("nsys export --type sqlite --include-blobs=true {}", path);
}

/// The first 16 bytes of `path`; empty when it cannot be read.
std::string head_of(const std::string& path) {
  char bytes[16];
  std::size_t size = 0;
  const io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
  if (fd.valid()) io::pread_full(fd.get(), bytes, sizeof bytes, 0, &size);
  return std::string(bytes, size);
}

/// One GPU process of the run, and where the placement put it.
struct Placed {
  const NsysExport* source = nullptr;
  NsysProcess* process = nullptr;
  std::size_t file = 0;
  int machine = 0;
  int rank = -1;
  RankKernels::Claim claim = RankKernels::Claim::distributed_info;
  bool claimed = false;  // by the environment or NCCL's payloads
  std::string where() const { return fmt::format("{} (pid {})", source->path, process->pid); }
};

struct Communicators {
  std::map<std::uint64_t, std::int64_t> nranks;                      // comm -> ranks
  std::map<std::uint64_t, std::map<std::int64_t, Placed*>> members;  // comm -> rank -> process
};

Communicators communicators(std::vector<Placed>& run) {
  Communicators c;
  for (Placed& p : run) {
    for (const NsysProcess::Member& m : p.process->members) {
      c.nranks.try_emplace(m.comm, m.nranks);
      c.members[m.comm].try_emplace(m.rank, &p);
    }
  }
  return c;
}

/// The placement rule (nsys_reader.h): ranks and machines of every process.
void place(std::vector<Placed>& run, const Communicators& comms) {
  std::vector<std::string> hosts;
  for (const Placed& p : run) hosts.push_back(p.process->host);
  std::sort(hosts.begin(), hosts.end(), [](const std::string& a, const std::string& b) {
    const int c = natural_compare(a, b);
    return c != 0 ? c < 0 : a < b;
  });
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  for (Placed& p : run) {
    p.machine =
        static_cast<int>(std::find(hosts.begin(), hosts.end(), p.process->host) - hosts.begin());
  }
  // The world: the communicators of the most ranks, when they are at least
  // as many as the GPU processes (two data-parallel groups of two are no
  // world of four).
  std::vector<std::uint64_t> worlds;
  std::int64_t top = 0;
  for (const auto& [comm, n] : comms.nranks) top = std::max(top, n);
  if (top >= static_cast<std::int64_t>(run.size())) {
    for (const auto& [comm, n] : comms.nranks) {
      if (n == top) worlds.push_back(comm);
    }
  }
  for (Placed& p : run) {
    std::set<std::int64_t> found;
    for (const std::uint64_t w : worlds) {
      for (const auto& [r, q] : comms.members.at(w)) {
        if (q == &p) found.insert(r);
      }
    }
    std::optional<int> nccl;
    if (found.size() == 1 && *found.begin() >= 0 && *found.begin() < (1 << 30)) {
      nccl = static_cast<int>(*found.begin());
    }
    NsysProcess& proc = *p.process;
    if (nccl && !proc.world_size && top < (1 << 30)) proc.world_size = static_cast<int>(top);
    if (proc.env_rank) {
      if (nccl && *nccl != *proc.env_rank) {
        throw InputError(
            fmt::format("{}: environment rank {}, NCCL payload rank {}: which rank "
                        "this process is cannot be told",
                        p.where(), *proc.env_rank, *nccl));
      }
      p.rank = *proc.env_rank;
      p.claim = RankKernels::Claim::environment;
      p.claimed = true;
    } else if (nccl) {
      p.rank = *nccl;
      p.claim = RankKernels::Claim::nccl;
      p.claimed = true;
    }
  }
  std::vector<Placed*> ordered;
  for (Placed& p : run) ordered.push_back(&p);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Placed* a, const Placed* b) {
    return std::tie(a->machine, a->source->path, a->process->pid) <
           std::tie(b->machine, b->source->path, b->process->pid);
  });
  std::map<int, const Placed*> taken;
  for (const auto level : {RankKernels::Claim::environment, RankKernels::Claim::nccl}) {
    for (const Placed* p : ordered) {
      if (!p->claimed || p->claim != level) continue;
      const auto [it, fresh] = taken.try_emplace(p->rank, p);
      if (!fresh) {
        throw InputError(fmt::format("{} and {}: both rank {}; analyse one of them",
                                     it->second->where(), p->where(), p->rank));
      }
    }
  }
  std::map<int, int> before;  // machine -> GPU processes of the machines before
  {
    std::map<int, int> per_machine;
    for (const Placed& p : run) ++per_machine[p.machine];
    int count = 0;
    for (const auto& [m, n] : per_machine) {
      before[m] = count;
      count += n;
    }
  }
  for (Placed* p : ordered) {
    if (p->claimed || p->process->cuda_device < 0) continue;
    const int r = before[p->machine] + p->process->cuda_device;
    if (taken.try_emplace(r, p).second) p->rank = r;
  }
  int free = 0;
  for (Placed* p : ordered) {
    if (p->rank >= 0) continue;
    while (taken.count(free)) ++free;
    p->rank = free;
    taken[free] = p;
  }
}

/// What the kernel view reads of NCCL's calls: their peers as global ranks,
/// as PyTorch's record_param_comms gives them.
class PeerTables {
 public:
  PeerTables(const std::vector<Placed>& run, const Communicators& comms) : comms_(comms) {
    for (const auto& [comm, members] : comms.members) {
      for (const auto& [r, p] : members) global_[comm][r] = p->rank;
    }
    // A communicator two processes use, each naming one peer value and the
    // two values differing (PyTorch's two-rank point-to-point
    // communicators): each one's peer is the other.
    std::map<std::uint64_t, std::map<const Placed*, std::set<std::int64_t>>> users;
    for (const Placed& p : run) {
      for (const auto& [tid, calls] : p.process->calls) {
        for (const NsysNcclCall& c : calls) {
          if (p2p_call(c.name) && c.comm && c.peer) users[*c.comm][&p].insert(*c.peer);
        }
      }
    }
    for (const auto& [comm, used] : users) {
      const auto n = comms.nranks.find(comm);
      if (used.size() != 2 || (n != comms.nranks.end() && n->second != 2)) continue;
      auto a = used.begin(), b = std::next(a);
      if (b->first->rank < a->first->rank) std::swap(a, b);
      if (a->second.size() == 1 && b->second.size() == 1 && a->second != b->second) {
        pair_[{comm, a->first}] = b->first->rank;
        pair_[{comm, b->first}] = a->first->rank;
      }
    }
  }

  /// The args of one call of `p` (null: none, a collective of no known group).
  std::unique_ptr<CommKernel> args(const Placed& p, const NsysNcclCall& c) const {
    auto out = std::make_unique<CommKernel>();
    const std::optional<CommOp> p2p = p2p_call(c.name);
    if (c.comm) {
      out->group_name = fmt::format("nccl:{:016x}", *c.comm);
      const auto known = global_.find(*c.comm);
      const auto n = comms_.nranks.find(*c.comm);
      if (known != global_.end() && n != comms_.nranks.end() &&
          static_cast<std::int64_t>(known->second.size()) == n->second &&
          known->second.begin()->first == 0 && known->second.rbegin()->first == n->second - 1) {
        for (const auto& [r, g] : known->second) out->group_ranks.push_back(g);
      }
    }
    if (p2p) {
      int peer = -1;
      if (c.comm && c.peer) {
        const auto known = global_.find(*c.comm);
        if (known != global_.end()) {
          if (const auto g = known->second.find(*c.peer); g != known->second.end())
            peer = g->second;
        }
        if (peer < 0) {
          if (const auto it = pair_.find({*c.comm, &p}); it != pair_.end()) peer = it->second;
        }
      }
      out->collective = *p2p == CommOp::send ? "send" : "recv";
      out->op = CommOp::point_to_point;
      out->source = CommSource::kernel;
      PeerOp op{.op = *p2p, .peer = peer};
      if (peer < 0 && out->group_ranks.size() == 2) {
        op.pair = {out->group_ranks[0], out->group_ranks[1]};
      }
      out->p2p.push_back(op);
      return out;
    }
    if (!c.comm) return nullptr;
    out->collective = std::string(collective_call(c.name));
    out->op = CommOp::collective;
    out->source = CommSource::kernel;
    return out;
  }

 private:
  const Communicators& comms_;
  std::map<std::uint64_t, std::map<std::int64_t, int>> global_;  // comm -> comm rank -> global
  std::map<std::pair<std::uint64_t, const Placed*>, int> pair_;
};

/// One placed process's record for the kernel view.
RankKernels rank_kernels(const Placed& p, const PeerTables& peers) {
  NsysProcess& proc = *p.process;
  KernelCollector& collector = *proc.kernels;
  for (const auto& [tid, calls] : proc.calls) {
    std::vector<const NsysNcclCall*> sorted;
    for (const NsysNcclCall& c : calls) {
      if (p2p_call(c.name) || !collective_call(c.name).empty()) sorted.push_back(&c);
    }
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const NsysNcclCall* a, const NsysNcclCall* b) {
                       return std::tie(a->start, a->order) < std::tie(b->start, b->order);
                     });
    for (const NsysNcclCall* c : sorted) {
      ParsedEvent e;
      e.kind = EventClass::comm_call;
      e.start = c->start;
      e.end = c->end;
      e.thread = tid;
      const auto p2p = p2p_call(c->name);
      e.name = std::string(kNcclCallPrefix) + (p2p ? (*p2p == CommOp::send ? "send" : "recv")
                                                   : std::string(collective_call(c->name)));
      e.comm = peers.args(p, *c);
      collector.on_comm_call(e);
    }
  }
  std::sort(proc.comm.begin(), proc.comm.end(),
            [](const NsysCommKernel& a, const NsysCommKernel& b) {
              return std::tie(a.start, a.end, a.order) < std::tie(b.start, b.end, b.order);
            });
  std::vector<CommLaunch> launches;
  PairList pairs;  // NCCL kernels count in their steps' extents as every activity does
  for (const NsysCommKernel& k : proc.comm) {
    ParsedEvent e;
    e.kind = EventClass::kernel;
    e.start = k.start;
    e.end = k.end;
    e.correlation = k.launched ? 0 : -1;
    e.communication = true;
    e.comm = std::make_unique<CommKernel>();
    e.comm->op = op_of_kernel_name(k.name);
    const long index = collector.on_activity(e);
    if (k.launched) {
      launches.push_back({static_cast<std::size_t>(index), k.launch, k.thread});
      pairs.push_back({k.launch, k.start, k.end, k.thread});
    }
  }
  collector.place(pairs);
  proc.jobs->place(pairs);
  collector.place(launches);
  RankKernels out = collector.finish(0, 0, proc.earliest_launch);
  proc.comm = {};
  out.path = p.source->path;
  out.origin = RankKernels::Origin::nsys_export;
  out.machine = p.machine;
  if (p.claimed) {
    out.global_rank = p.rank;
    out.rank_claim = p.claim;
  }
  out.world_size = proc.world_size.value_or(0);
  out.device_ordinal = proc.cuda_device;
  return out;
}

/// The jobs of one placed process into `device`, their type ids in `types`
/// (its NCCL kernels are placed in its job ranges as its compute activities
/// were); its file's `result` counts them and keeps the first step.
void assemble_jobs(const Placed& p, const ReadOptions& read, FileResult& result, TypeTable& types,
                   Device& device, std::uint64_t& host_timed) {
  NsysProcess& proc = *p.process;
  std::optional<std::int64_t> first_step;
  AnnotationJobs::Output out{
      device,
      types,
      result.stats,
      first_step,
      result.notes,
      p.source->path,
      "step NVTX range",
      "export",
      [&](std::uint64_t, std::string message) {
        if (result.diagnostics.size() < read.diagnostics_per_file) {
          result.diagnostics.push_back({p.source->path, 0, std::move(message)});
        }
      },
      [&](std::uint64_t row, std::string message) {
        ++result.stats.malformed;
        if (result.diagnostics.size() < read.diagnostics_per_file) {
          result.diagnostics.push_back(
              {p.source->path, 0, fmt::format("NVTX_EVENTS row {}: {}", row, message)});
        }
      }};
  proc.jobs->assemble(0, out,
                      [&](const AnnotationJobs::Timed& timed) { host_timed += timed.host_timed; });
  if (first_step && (!result.first_step || *first_step < *result.first_step)) {
    result.first_step = first_step;
  }
  proc.jobs.reset();
}

}  // namespace

bool nsys_export_name(std::string_view name) {
  return (name.size() > 7 && name.ends_with(".sqlite")) || is_report_name(name);
}

bool nsys_export_content(std::string_view first_bytes) { return sqlite_header(first_bytes); }

int nsys_export_ranks(const std::string& path) {
  if (is_report_name(std::filesystem::path(path).filename().string())) return 1;
  return std::max(1, nsys_gpu_processes(path));
}

std::vector<FileResult> read_nsys_exports(const std::vector<InputFile>& files,
                                          const ReadOptions& read, const NsysOptions& options,
                                          const JobPattern* job_pattern, ProgressMeter& progress) {
  const std::string pattern =
      options.step_range.empty() ? std::string(kDefaultNsysStepRange) : options.step_range;
  RE2::Options re_options;
  re_options.set_log_errors(false);
  const RE2 step_range(pattern, re_options);
  const std::string& option = read.words->name(CallerOption::step_range);
  if (!step_range.ok()) throw InputError(fmt::format("{}: {}", option, step_range.error()));
  if (step_range.NumberOfCapturingGroups() < 1) {
    throw InputError(fmt::format("{} needs a group for the step number", option));
  }
  // A report beside its export is the same run: read the export.
  std::set<std::string> given;
  for (const InputFile& f : files) {
    given.insert(std::filesystem::absolute(f.path).lexically_normal().string());
  }
  std::vector<FileResult> results(files.size());
  std::vector<NsysExport> exports(files.size());
  std::vector<bool> skipped(files.size(), false);
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    const InputFile& f = files[i];
    results[i] = empty_result_for(f);
    results[i].stats.bytes = f.size_bytes;
    const std::string head = head_of(f.path);
    if (!nsys_export_content(head)) {
      if (is_report_name(f.path)) {
        std::filesystem::path sibling = std::filesystem::absolute(f.path).lexically_normal();
        sibling.replace_extension(".sqlite");
        if (given.count(sibling.string())) {
          skipped[i] = true;
          results[i].has_device = false;
          progress.advance(f.size_bytes, 1);
          return;
        }
        throw InputError(fmt::format(
            "{}: an Nsight Systems report, not its SQLite export; export it with `{}` and "
            "analyse the .sqlite file",
            f.path, export_command(f.path)));
      }
      throw InputError(fmt::format("{}: not an SQLite database", f.path));
    }
    exports[i] = read_nsys_export(f.path, step_range, job_pattern);
    progress.advance(f.size_bytes, 1);
  });
  std::vector<Placed> run;
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (NsysProcess& p : exports[i].processes) {
      results[i].stats.lines += p.activities;
      run.push_back({&exports[i], &p, i, 0, -1, RankKernels::Claim::distributed_info, false});
    }
  }
  if (run.empty()) {
    bool any = false;
    for (std::size_t i = 0; i < files.size(); ++i) any = any || !skipped[i];
    if (any) throw InputError("no GPU activity in the Nsight Systems exports");
    return results;
  }
  const Communicators comms = communicators(run);
  place(run, comms);
  const PeerTables peers(run, comms);
  std::vector<Placed*> placed;
  for (Placed& p : run) placed.push_back(&p);
  std::stable_sort(placed.begin(), placed.end(), [](const Placed* a, const Placed* b) {
    return std::tie(a->rank, a->source->path, a->process->pid) <
           std::tie(b->rank, b->source->path, b->process->pid);
  });
  // The devices discovery numbered: each file's, in index order. The d-th
  // of them holds the d-th rank, whichever file that rank came from (its
  // path says), so that the devices are in rank order as the kernel view's
  // ranks are; its machine is its host, not the export's folder (the job
  // analysis corrects clocks between machines), its rank its place there.
  struct Slot {
    std::size_t file;
    Device* device;
  };
  std::vector<Slot> slots;
  {
    std::vector<int> ranks_in(files.size(), 0);
    for (const Placed& p : run) ++ranks_in[p.file];
    for (std::size_t i = 0; i < files.size(); ++i) {
      FileResult& result = results[i];
      result.more_devices.reserve(static_cast<std::size_t>(std::max(0, ranks_in[i] - 1)));
      for (int k = 0; k < ranks_in[i]; ++k) {
        Device* device = &result.device;
        if (k > 0) {
          device = &result.more_devices.emplace_back(result.device);
          device->index = files[i].device + k;
        }
        slots.push_back({i, device});
      }
    }
    std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
      return a.device->index < b.device->index;
    });
  }
  std::vector<std::uint64_t> host_timed(files.size(), 0);
  std::map<int, int> on_machine;  // machine -> its devices placed so far
  for (std::size_t d = 0; d < placed.size(); ++d) {
    const Placed& p = *placed[d];
    FileResult& result = results[p.file];
    RankKernels kernels = rank_kernels(p, peers);
    kernels.device = slots[d].device->index;
    result.kernels.push_back(std::move(kernels));
    Device& device = *slots[d].device;
    device.path = p.source->path;
    device.machine = p.machine;
    device.machine_name = p.process->host;
    device.rank = on_machine[p.machine]++;
    assemble_jobs(p, read, result, results[slots[d].file].types, device, host_timed[p.file]);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileResult& result = results[i];
    if (host_timed[i] > 0) {
      result.diagnostics.insert(
          result.diagnostics.begin(),
          {files[i].path, 0,
           fmt::format("{} of {} jobs are host-timed: no kernel was found launched inside "
                       "their NVTX ranges, so their times are the CPU's ranges, not the GPU's",
                       host_timed[i], result.stats.matched)});
      result.notes.push_back({WarningCode::host_timed_jobs, files[i].path, -1, -1, host_timed[i]});
    }
    if (result.stats.matched > 0) result.stats.time_base = TimeBase::given;
  }
  merge_host_timed_notes(results, "exports");
  return results;
}

}  // namespace pipescope
