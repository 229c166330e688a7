#include "ingest/nsys_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>

#include "ingest/annotation_jobs.h"
#include "ingest/kernel_collector.h"
#include "ingest/nsys_export.h"
#include "ingest/nsys_file_facts.h"
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

std::string_view call_name(const NsysCallFacts& c) { return kNsysHostCalls[c.call]; }

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

/// One GPU process of the run (its file's facts), and where the placement
/// put it.
struct Placed {
  const std::string* path = nullptr;  // its export's
  NsysProcessFacts* process = nullptr;
  std::size_t file = 0;
  std::size_t index = 0;  // among its file's processes
  int machine = 0;
  int rank = -1;
  RankKernels::Claim claim = RankKernels::Claim::distributed_info;
  bool claimed = false;  // by the environment or NCCL's payloads
  std::string where() const { return fmt::format("{} (pid {})", *path, process->pid); }
};

struct Communicators {
  std::map<std::uint64_t, std::int64_t> nranks;                      // comm -> ranks
  std::map<std::uint64_t, std::map<std::int64_t, Placed*>> members;  // comm -> rank -> process
};

Communicators communicators(std::vector<Placed>& run) {
  Communicators c;
  for (Placed& p : run) {
    for (const NsysProcessFacts::Member& m : p.process->members) {
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
    NsysProcessFacts& proc = *p.process;
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
    return std::tie(a->machine, *a->path, a->process->pid) <
           std::tie(b->machine, *b->path, b->process->pid);
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
      for (const NsysCallFacts& c : p.process->calls) {
        if (p2p_call(call_name(c)) && c.comm && c.peer) users[*c.comm][&p].insert(*c.peer);
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
  std::unique_ptr<CommKernel> args(const Placed& p, const NsysCallFacts& c) const {
    auto out = std::make_unique<CommKernel>();
    const std::optional<CommOp> p2p = p2p_call(call_name(c));
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
    out->collective = std::string(collective_call(call_name(c)));
    out->op = CommOp::collective;
    out->source = CommSource::kernel;
    return out;
  }

 private:
  const Communicators& comms_;
  std::map<std::uint64_t, std::map<std::int64_t, int>> global_;  // comm -> comm rank -> global
  std::map<std::pair<std::uint64_t, const Placed*>, int> pair_;
};

/// A process's record for the kernel view, but for what the run's ranks give
/// (its NCCL calls' peers by global rank, its machine and rank: the join's):
/// its NCCL kernels are placed in their steps and its job ranges as its
/// compute activities were, their launches kept in `facts`.
RankKernels unplaced_kernels(NsysProcess& proc, const std::string& path, NsysProcessFacts& facts) {
  KernelCollector& collector = *proc.kernels;
  std::sort(proc.comm.begin(), proc.comm.end(),
            [](const NsysCommKernel& a, const NsysCommKernel& b) {
              return std::tie(a.start, a.end, a.order) < std::tie(b.start, b.end, b.order);
            });
  std::vector<CommLaunch> launches;
  PairList pairs;  // NCCL kernels count in their steps' extents as every activity does
  facts.launches.reserve(proc.comm.size());
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
      facts.launches.push_back({k.launch, k.thread});
    } else {
      facts.launches.push_back({0, -1});
    }
  }
  collector.place(pairs);
  proc.jobs->place(pairs);
  collector.place(launches);
  // Base 0 and kernels already by start: the join resolves their operations
  // on them in this order (resolve_comm_operations).
  RankKernels out = collector.finish(0, 0, proc.earliest_launch);
  proc.comm = {};
  out.path = path;
  out.pid = proc.pid;
  out.origin = RankKernels::Origin::nsys_export;
  out.device_ordinal = proc.cuda_device;
  return out;
}

/// The facts the placement reads of `proc`, and its host calls (NCCL's
/// point-to-point and collective calls, each thread's by start).
NsysProcessFacts process_facts(NsysProcess& proc) {
  NsysProcessFacts facts;
  facts.pid = proc.pid;
  facts.host = proc.host;
  facts.cuda_device = proc.cuda_device;
  facts.env_rank = proc.env_rank;
  facts.world_size = proc.world_size;
  for (const NsysProcess::Member& m : proc.members) {
    facts.members.push_back({m.comm, m.nranks, m.rank});
  }
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
      const auto call = std::find(std::begin(kNsysHostCalls), std::end(kNsysHostCalls), c->name);
      facts.calls.push_back({tid, c->start, c->end,
                             static_cast<std::uint8_t>(call - std::begin(kNsysHostCalls)), c->comm,
                             c->peer});
    }
  }
  proc.calls = {};
  return facts;
}

/// The jobs of one process into `device`, their type ids in its file's
/// `result` (which counts them and keeps the first step); what reading them
/// says goes to `said` (in the file's diagnostics once the run is placed:
/// the join puts them in rank order).
void assemble_jobs(NsysProcess& proc, const std::string& path, const ReadOptions& read,
                   FileResult& result, Device& device, std::vector<Diagnostic>& said,
                   std::uint64_t& host_timed) {
  std::optional<std::int64_t> first_step;
  AnnotationJobs::Output out{
      device,
      result.types,
      result.stats,
      first_step,
      result.notes,
      path,
      "step NVTX range",
      "export",
      [&](std::uint64_t, std::string message) {
        if (said.size() < read.diagnostics_per_file) said.push_back({path, 0, std::move(message)});
      },
      [&](std::uint64_t row, std::string message) {
        ++result.stats.malformed;
        if (said.size() < read.diagnostics_per_file) {
          said.push_back({path, 0, fmt::format("NVTX_EVENTS row {}: {}", row, message)});
        }
      }};
  proc.jobs->assemble(0, out,
                      [&](const AnnotationJobs::Timed& timed) { host_timed += timed.host_timed; });
  if (first_step && (!result.first_step || *first_step < *result.first_step)) {
    result.first_step = first_step;
  }
  proc.jobs.reset();
}

/// One export read: its processes' records, jobs (a device each, in its
/// result's `device` then `more_devices`, numbered by discovery as the file's
/// own until the join places them) and facts (FileResult::placement).
FileResult read_nsys_file(const InputFile& f, const ReadOptions& read, const RE2& step_range,
                          const JobPattern* pattern) {
  FileResult result = empty_result_for(f);
  result.stats.bytes = f.size_bytes;
  NsysFileFacts facts;
  if (!nsys_export_content(head_of(f.path))) {
    if (!is_report_name(f.path)) {
      throw InputError(fmt::format("{}: not an SQLite database", f.path));
    }
    facts.report = true;  // refused by the join unless its export is among the inputs
    result.placement = encode_nsys_facts(facts);
    return result;
  }
  NsysExport ex = read_nsys_export(f.path, step_range, pattern);
  std::vector<Device> devices;
  devices.reserve(ex.processes.size());
  for (NsysProcess& p : ex.processes) {
    result.stats.lines += p.activities;
    NsysProcessFacts& kept = facts.processes.emplace_back(process_facts(p));
    result.kernels.push_back(unplaced_kernels(p, f.path, kept));
    Device& device = devices.emplace_back(result.device);
    assemble_jobs(p, f.path, read, result, device, kept.diagnostics, facts.host_timed);
  }
  for (std::size_t k = 0; k < devices.size(); ++k) {
    if (k == 0) {
      result.device = std::move(devices[k]);
    } else {
      result.more_devices.push_back(std::move(devices[k]));
    }
  }
  if (result.stats.matched > 0) result.stats.time_base = TimeBase::given;
  result.placement = encode_nsys_facts(facts);
  return result;
}

/// One placed process's record for the kernel view: its NCCL kernels'
/// operations from its calls, peers named by global rank.
void place_kernels(const Placed& p, const PeerTables& peers, RankKernels& kernels) {
  std::vector<CommHostCall> calls;
  calls.reserve(p.process->calls.size());
  for (const NsysCallFacts& c : p.process->calls) {
    CommHostCall& call = calls.emplace_back();
    call.thread = c.thread;
    call.start = c.start;
    call.end = c.end;
    const auto p2p = p2p_call(call_name(c));
    call.name = std::string(kNcclCallPrefix) + (p2p ? (*p2p == CommOp::send ? "send" : "recv")
                                                    : std::string(collective_call(call_name(c))));
    if (auto args = peers.args(p, c)) call.args = std::move(*args);
  }
  std::vector<CommLink> links;
  links.reserve(p.process->launches.size());
  for (const NsysProcessFacts::Launch& l : p.process->launches) {
    links.push_back({-1, l.ts, l.thread});
  }
  if (links.size() != kernels.comm.size()) {
    throw std::logic_error("Nsight join: NCCL kernels and their launches differ in number");
  }
  resolve_comm_operations(kernels, links, calls);
  kernels.machine = p.machine;
  if (p.claimed) {
    kernels.global_rank = p.rank;
    kernels.rank_claim = p.claim;
  }
  kernels.world_size = p.process->world_size.value_or(0);
}

/// Which reports (`.nsys-rep`) are skipped: those whose export (the same
/// name, `.sqlite`) is among `files`; any other is refused.
std::vector<char> skipped_reports(const std::vector<NsysFileFacts>& facts,
                                  const std::vector<InputFile>& files) {
  std::set<std::string> given;
  for (const InputFile& f : files) {
    given.insert(std::filesystem::absolute(f.path).lexically_normal().string());
  }
  std::vector<char> skipped(files.size(), 0);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!facts[i].report) continue;
    std::filesystem::path sibling = std::filesystem::absolute(files[i].path).lexically_normal();
    sibling.replace_extension(".sqlite");
    if (!given.count(sibling.string())) {
      throw InputError(fmt::format(
          "{}: an Nsight Systems report, not its SQLite export; export it with `{}` and "
          "analyse the .sqlite file",
          files[i].path, export_command(files[i].path)));
    }
    skipped[i] = 1;
  }
  return skipped;
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

namespace {

std::unique_ptr<RE2> step_range_of(const NsysOptions& options, const OptionWords& words) {
  const std::string pattern =
      options.step_range.empty() ? std::string(kDefaultNsysStepRange) : options.step_range;
  RE2::Options re_options;
  re_options.set_log_errors(false);
  auto step_range = std::make_unique<RE2>(pattern, re_options);
  const std::string& option = words.name(CallerOption::step_range);
  if (!step_range->ok()) throw InputError(fmt::format("{}: {}", option, step_range->error()));
  if (step_range->NumberOfCapturingGroups() < 1) {
    throw InputError(fmt::format("{} needs a group for the step number", option));
  }
  return step_range;
}

/// Each file's devices, numbered: its first at the index discovery gave
/// it, moved on by how many devices the files before it hold beyond what
/// discovery counted for them (nsys_export_ranks counts cheaply, and may
/// be wrong: the reader counts the processes it read), so that every file's
/// devices follow on from the last file's; in index order, made from the
/// file's place (FileResult::device as discovery gave it). A file holds
/// one device at least (a report skipped, an export without activity: none
/// placed there).
struct NsysSlot {
  std::size_t file;
  Device* device;
};
std::vector<NsysSlot> device_slots(std::vector<FileResult>& results,
                                   const std::vector<InputFile>& files,
                                   const std::vector<std::size_t>& ranks_in) {
  std::vector<NsysSlot> slots;
  int shift = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileResult& result = results[i];
    const int first = files[i].device + shift;
    shift += std::max(1, static_cast<int>(ranks_in[i])) - std::max(1, files[i].ranks);
    result.device.index = first;
    if (ranks_in[i] == 0) continue;
    result.device = empty_result_for(files[i]).device;
    result.device.index = first;
    result.more_devices.clear();
    result.more_devices.reserve(ranks_in[i] - 1);
    for (std::size_t k = 0; k < ranks_in[i]; ++k) {
      Device* device = &result.device;
      if (k > 0) {
        device = &result.more_devices.emplace_back(result.device);
        device->index = first + static_cast<int>(k);
      }
      slots.push_back({i, device});
    }
  }
  std::stable_sort(slots.begin(), slots.end(), [](const NsysSlot& a, const NsysSlot& b) {
    return a.device->index < b.device->index;
  });
  return slots;
}

/// What the files held before the join: each one's devices (one per
/// process), kernels and job types.
struct NsysHeld {
  std::vector<Device> devices;
  std::vector<RankKernels> kernels;
  TypeTable types;
};

}  // namespace

std::vector<FileResult> read_nsys_files(const std::vector<InputFile>& files,
                                        const ReadOptions& read, const NsysOptions& options,
                                        const JobPattern* job_pattern, ProgressMeter& progress) {
  const std::unique_ptr<RE2> step_range = step_range_of(options, *read.words);
  std::vector<FileResult> results(files.size());
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    results[i] = read_nsys_file(files[i], read, *step_range, job_pattern);
    progress.advance(files[i].size_bytes, 1);
  });
  return results;
}

void join_nsys_files(std::vector<FileResult>& results, const std::vector<InputFile>& files,
                     const ReadOptions& read) {
  if (results.size() != files.size()) {
    throw std::invalid_argument("join_nsys_files: one result per file expected");
  }
  std::vector<NsysFileFacts> facts(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (results[i].placement.empty()) {
      throw std::logic_error(
          fmt::format("{}: an export's result without its facts", files[i].path));
    }
    facts[i] = decode_nsys_facts(results[i].placement);
    std::string().swap(results[i].placement);
  }
  const std::vector<char> skipped = skipped_reports(facts, files);
  std::vector<Placed> run;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (skipped[i]) results[i].has_device = false;
    for (std::size_t j = 0; j < facts[i].processes.size(); ++j) {
      run.push_back({&files[i].path, &facts[i].processes[j], i, j, 0, -1,
                     RankKernels::Claim::distributed_info, false});
    }
  }
  if (run.empty()) {
    if (std::count(skipped.begin(), skipped.end(), 0) > 0) {
      throw InputError("no GPU activity in the Nsight Systems exports");
    }
    return;
  }
  const Communicators comms = communicators(run);
  place(run, comms);
  const PeerTables peers(run, comms);
  std::vector<Placed*> placed;
  for (Placed& p : run) placed.push_back(&p);
  std::stable_sort(placed.begin(), placed.end(), [](const Placed* a, const Placed* b) {
    return std::tie(a->rank, *a->path, a->process->pid) <
           std::tie(b->rank, *b->path, b->process->pid);
  });
  // What each file held, taken out before the slots are made.
  std::vector<NsysHeld> held(files.size());
  std::vector<std::size_t> ranks_in(files.size(), 0);
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileResult& result = results[i];
    ranks_in[i] = facts[i].processes.size();
    if (ranks_in[i] == 0) continue;
    NsysHeld& h = held[i];
    h.devices.push_back(std::move(result.device));
    for (Device& more : result.more_devices) h.devices.push_back(std::move(more));
    h.kernels = std::move(result.kernels);
    h.types = std::move(result.types);
    result.kernels.clear();
    result.types = TypeTable();
    if (h.devices.size() != ranks_in[i] || h.kernels.size() != ranks_in[i]) {
      throw std::logic_error(fmt::format("{}: its devices and processes differ", files[i].path));
    }
  }
  // The d-th slot holds the d-th rank, whichever file that rank came from
  // (its path says), so that the devices are in rank order as the kernel
  // view's ranks are; its machine is its host, not the export's folder (the
  // job analysis corrects clocks between machines), its rank its place
  // there. Its jobs' types are its slot file's, in the order they meet them.
  const std::vector<NsysSlot> slots = device_slots(results, files, ranks_in);
  std::map<int, int> on_machine;  // machine -> its devices placed so far
  for (std::size_t d = 0; d < placed.size(); ++d) {
    const Placed& p = *placed[d];
    NsysHeld& from = held[p.file];
    FileResult& own = results[p.file];
    RankKernels kernels = std::move(from.kernels[p.index]);
    place_kernels(p, peers, kernels);
    Device& device = *slots[d].device;
    const int index = device.index;
    device = std::move(from.devices[p.index]);
    device.index = index;
    kernels.device = index;
    own.kernels.push_back(std::move(kernels));
    device.path = *p.path;
    device.machine = p.machine;
    device.machine_name = p.process->host;
    device.rank = on_machine[p.machine]++;
    TypeTable& types = results[slots[d].file].types;
    for (Job& job : device.jobs) job.type = types.intern(from.types.name(job.type));
    for (Diagnostic& said : p.process->diagnostics) {
      if (own.diagnostics.size() < read.diagnostics_per_file) {
        own.diagnostics.push_back(std::move(said));
      }
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileResult& result = results[i];
    if (facts[i].host_timed == 0) continue;
    result.diagnostics.insert(
        result.diagnostics.begin(),
        {files[i].path, 0,
         fmt::format("{} of {} jobs are host-timed: no kernel was found launched inside "
                     "their NVTX ranges, so their times are the CPU's ranges, not the GPU's",
                     facts[i].host_timed, result.stats.matched)});
    result.notes.push_back(
        {WarningCode::host_timed_jobs, files[i].path, -1, -1, facts[i].host_timed});
  }
  merge_host_timed_notes(results, "exports");
}

std::vector<FileResult> read_nsys_exports(const std::vector<InputFile>& files,
                                          const ReadOptions& read, const NsysOptions& options,
                                          const JobPattern* job_pattern, ProgressMeter& progress) {
  std::vector<FileResult> results = read_nsys_files(files, read, options, job_pattern, progress);
  join_nsys_files(results, files, read);
  return results;
}

}  // namespace pipescope
