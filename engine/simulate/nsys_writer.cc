#include "simulate/nsys_writer.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
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

constexpr std::int64_t kVm = std::int64_t{1} << 48;  // globalVid of the one VM
constexpr std::int64_t kNcclDomain = 1;
constexpr std::int64_t kSchemaStaticStart = std::int64_t{1} << 24;
// NCCL's static payload schemas (src/include/nvtx.h NVTX_SID_*).
constexpr std::int64_t kSidInit = 11, kSidAllReduce = 5, kSidSend = 9, kSidRecv = 10;
// NVTX payload entry types (nvToolsExtPayload.h).
constexpr std::int64_t kUint64 = 18, kInt = 5, kSize = 22;
constexpr std::int64_t kActivationBytes = 2 * 4096LL * 8192;  // seq x hidden, bf16
constexpr const char* kSendRecvKernel = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kAllReduceKernel =
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/// The tables written, declared as a 3.25 export declares them (the columns
/// a reader needs, and a few beside them).
constexpr const char* kSchema = R"(
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT,
    systemClockNs INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL,
    name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER NOT NULL, hwId INTEGER NOT NULL,
    vmId INTEGER NOT NULL, processId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    priority INTEGER NOT NULL, flag INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
    shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
    nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
    domainId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER,
    flags INTEGER, numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL,
    idx INTEGER NOT NULL, flags INTEGER, type INTEGER, name TEXT, description TEXT,
    arrayOrUnionDetail INTEGER, offset INTEGER);
)";

/// One SQLite database being written: statements bound by position.
class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      fail("cannot open");
    }
    exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 4096;");
    exec(kSchema);
    exec("BEGIN");
  }
  ~Database() {
    for (auto& [sql, statement] : statements_) sqlite3_finalize(statement);
    sqlite3_close(db_);
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  /// The statement of `sql`, prepared once.
  sqlite3_stmt* statement(const char* sql) {
    auto [it, fresh] = statements_.try_emplace(sql, nullptr);
    if (fresh && sqlite3_prepare_v2(db_, sql, -1, &it->second, nullptr) != SQLITE_OK) fail(sql);
    return it->second;
  }
  void run(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail("insert");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  void finish() {
    exec("COMMIT");
    for (auto& [sql, statement] : statements_) sqlite3_finalize(statement);
    statements_.clear();
    if (sqlite3_close(db_) != SQLITE_OK) fail("close");
    db_ = nullptr;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(fmt::format("{}: SQLite: {} ({})", path_,
                                         db_ ? sqlite3_errmsg(db_) : "no database",
                                         std::string(what).substr(0, 60)));
  }
  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> statements_;
};

void bind(sqlite3_stmt* s, int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }
void bind(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void bind_blob(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_blob(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

/// Little-endian bytes of an integer of `width` bytes.
void put(std::string& out, std::uint64_t v, int width) {
  for (int b = 0; b < width; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}
/// binaryData: domainId, schemaId, payloadSize, size with the header (u64
/// each), then the payload.
std::string payload_blob(std::int64_t sid, const std::string& payload) {
  std::string out;
  put(out, kNcclDomain, 8);
  put(out, static_cast<std::uint64_t>(kSchemaStaticStart + sid), 8);
  put(out, payload.size(), 8);
  put(out, 32 + payload.size(), 8);
  return out + payload;
}

/// A communicator: its id (the same on every member) and its ranks.
struct Communicator {
  std::uint64_t id = 0;
  std::vector<int> ranks;
  int index_of(int rank) const {
    return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
  }
};

struct ExportRunFacts {
  const SimConfig* config;
  const KernelTimeline* timeline;
  const NsysExportOptions* options;
  std::vector<Communicator> pipeline;  // per replica
  std::vector<Communicator> data;      // per stage
  std::int64_t session_ns = 0;         // true clock when every session starts
};

/// When the CPU side of one activity happens (true clock).
struct LaunchHost {
  std::int64_t launch = 0;
  std::int64_t launch_dur = 0;
  std::int64_t range_start = 0;  // NCCL's range around its launch
  std::int64_t range_end = 0;
  std::int64_t begin = 0;  // the calls' CPU time: launch, or NCCL's range
  std::int64_t end = 0;
};

class RankExport {
 public:
  RankExport(const ExportRunFacts& run, int rank, const std::vector<SimJob>& jobs,
             std::int64_t clock_offset, const std::string& path)
      : run_(run),
        rank_(rank),
        acts_(run.timeline->ranks[static_cast<std::size_t>(rank)]),
        device_(run.timeline->devices[static_cast<std::size_t>(rank)]),
        jobs_(jobs),
        pid_(3'100'000 + 97 * rank),
        gpid_(kVm | (static_cast<std::int64_t>(pid_) << 24)),
        tid_(gpid_ | pid_),
        // A boot time per machine: the stored clock counts from it.
        system_clock_(40'000'000'000LL + 1'000'003'000LL * device_.machine),
        utc_(run.session_ns + clock_offset),
        draw_(run.config->seed ^ 0x6E737973ULL ^ (static_cast<std::uint64_t>(rank) << 32)),
        db_(path) {}

  /// Writes the whole export; returns the runtime rows written.
  std::uint64_t write() {
    plan_host();
    write_metadata();
    write_schemas();
    write_nvtx();
    write_activities();
    write_strings();
    db_.finish();
    return runtime_rows_;
  }
  std::uint64_t jobs_written() const { return jobs_written_; }

 private:
  std::int64_t stored(std::int64_t true_ns) const {
    return true_ns - run_.session_ns + system_clock_;
  }
  std::int64_t draw(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(draw_.below(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  std::int64_t sid(std::string_view text) {
    const auto [it, fresh] = strings_.try_emplace(std::string(text), 0);
    if (fresh) it->second = static_cast<std::int64_t>(strings_.size());
    return it->second;
  }

  /// The host's order of the calls: by step, then by time, a NCCL call that
  /// starts while a compute job runs (a recv posted early, a send as the
  /// next job starts) issued before that job's first kernel, as a schedule
  /// posts its communication between its actions: no NCCL launch lies in a
  /// job's range. Then the launch times, last to first, so that each call
  /// ends before the next begins; then one step range per step around its
  /// calls.
  void plan_host() {
    std::vector<std::pair<std::int64_t, std::int64_t>> compute;  // the jobs' intervals
    for (const SimJob& job : jobs_) {
      if (!is_comm_job(job.type)) compute.emplace_back(job.start_ns, job.end_ns);
    }
    std::vector<std::int64_t> anchor(acts_.size());
    for (std::size_t i = 0; i < acts_.size(); ++i) {
      const KernelActivity& a = acts_[i];
      anchor[i] = a.start_ns;
      if (a.kind == ActivityKind::compute) continue;
      // The job running at its start: [start, end).
      auto it = std::upper_bound(compute.begin(), compute.end(), a.start_ns,
                                 [](std::int64_t t, const auto& job) { return t < job.first; });
      if (it != compute.begin() && a.start_ns < std::prev(it)->second) {
        anchor[i] = std::prev(it)->first;
      }
    }
    order_.resize(acts_.size());
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      const bool ca = acts_[a].kind == ActivityKind::compute;
      const bool cb = acts_[b].kind == ActivityKind::compute;
      return std::tie(acts_[a].step, anchor[a], ca, acts_[a].start_ns) <
             std::tie(acts_[b].step, anchor[b], cb, acts_[b].start_ns);
    });
    host_.assign(acts_.size(), LaunchHost{});
    std::int64_t limit = std::numeric_limits<std::int64_t>::max();
    for (auto k = order_.size(); k-- > 0;) {
      const std::size_t i = order_[k];
      const KernelActivity& a = acts_[i];
      LaunchHost& h = host_[i];
      const std::int64_t latest = a.start_ns - draw(40'000, 80'000);
      if (a.kind == ActivityKind::compute) {
        h.launch_dur = draw(2'500, 5'000);
        h.launch = std::min(latest, limit - h.launch_dur);
        h.begin = h.launch;
        h.end = h.launch + h.launch_dur;
      } else {
        h.launch_dur = draw(6'000, 14'000);
        const std::int64_t after = draw(1'000, 3'000);
        h.launch = std::min(latest, limit - h.launch_dur - after);
        h.range_start = h.launch - draw(2'000, 4'000);
        h.range_end = h.launch + h.launch_dur + after;
        h.begin = h.range_start;
        h.end = h.range_end;
      }
      limit = h.begin - draw(500, 3'000);
    }
    std::int64_t previous_end = std::numeric_limits<std::int64_t>::min();
    for (const std::size_t i : order_) {
      const KernelActivity& a = acts_[i];
      if (steps_.empty() || std::get<0>(steps_.back()) != a.step) {
        const std::int64_t open = std::max(host_[i].begin - draw(100'000, 300'000), previous_end);
        if (!steps_.empty()) std::get<2>(steps_.back()) = open;
        steps_.emplace_back(a.step, open, 0);
      }
      previous_end = host_[i].end;
    }
    if (!steps_.empty()) std::get<2>(steps_.back()) = previous_end + 20'000;
  }

  void write_metadata() {
    sqlite3_stmt* s = db_.statement("INSERT INTO META_DATA_EXPORT VALUES (?, ?)");
    static constexpr const char* kMeta[][2] = {{"EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"},
                                               {"EXPORT_SCHEMA_VERSION", "3.25.0"},
                                               {"EXPORT_SCHEMA_VERSION_MAJOR", "3"},
                                               {"EXPORT_SCHEMA_VERSION_MINOR", "25"},
                                               {"EXPORT_SCHEMA_VERSION_MICRO", "0"},
                                               {"EXPORT_PARAM_INCLUDE_BLOBS", "true"}};
    for (const auto& row : kMeta) {
      bind(s, 1, std::string_view(row[0]));
      bind(s, 2, std::string_view(row[1]));
      db_.run(s);
    }
    const auto& devices = run_.timeline->devices;
    s = db_.statement("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)");
    for (const std::string& v :
         {fmt::format("RANK=\"{}\"", rank_), fmt::format("LOCAL_RANK=\"{}\"", device_.rank),
          fmt::format("WORLD_SIZE=\"{}\"", devices.size())}) {
      bind(s, 1, std::string_view("PROCESS_0:ENVIRONMENT_VARIABLE"));
      bind(s, 2, v);
      db_.run(s);
    }
    s = db_.statement("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, ?, ?, ?)");
    bind(s, 1, utc_);
    bind(s, 4, system_clock_);
    db_.run(s);
    s = db_.statement("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'Local (CLI)', ?, ?, ?)");
    bind(s, 1, kVm);
    bind(s, 2, std::string_view("Hostname"));
    bind(s, 3, std::int64_t{619});
    bind(s, 4, fmt::format("node{}", device_.machine));
    db_.run(s);
    s = db_.statement("INSERT INTO PROCESSES VALUES (?, ?, ?)");
    bind(s, 1, gpid_);
    bind(s, 2, std::int64_t{pid_});
    bind(s, 3, std::string_view("python3"));
    db_.run(s);
    // The process's CUDA streams (context 1), as CUPTI lists them.
    std::set<std::int32_t> streams;
    for (const KernelActivity& a : acts_) streams.insert(a.stream);
    s = db_.statement("INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?, 0, 0, ?, 1, 0, 0)");
    for (const std::int32_t stream : streams) {
      bind(s, 1, std::int64_t{stream});
      bind(s, 2, std::int64_t{pid_});
      db_.run(s);
    }
  }

  void write_schemas() {
    struct Entry {
      std::int64_t type;
      const char* name;
      std::int64_t offset;
    };
    const std::vector<std::pair<std::int64_t, std::vector<Entry>>> schemas = {
        {kSidInit,
         {{kUint64, "NCCL communicator ID", 0},
          {kInt, "No. of ranks", 8},
          {kInt, "Rank", 12},
          {kInt, "CUDA device", 16}}},
        {kSidSend,
         {{kUint64, "NCCL communicator ID", 0},
          {kSize, "Message size [bytes]", 8},
          {kInt, "Peer rank", 16}}},
        {kSidRecv,
         {{kUint64, "NCCL communicator ID", 0},
          {kSize, "Message size [bytes]", 8},
          {kInt, "Peer rank", 16}}},
        {kSidAllReduce,
         {{kUint64, "NCCL communicator ID", 0},
          {kSize, "Message size [bytes]", 8},
          {kSchemaStaticStart + 16, "Reduction operation", 16}}}};
    sqlite3_stmt* schema = db_.statement(
        "INSERT INTO NVTX_PAYLOAD_SCHEMAS (domainId, schemaId, type, numEntries, payloadSize) "
        "VALUES (?, ?, 1, ?, 24)");
    sqlite3_stmt* entry = db_.statement(
        "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId, idx, type, name, "
        "\"offset\") VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& [sid, entries] : schemas) {
      bind(schema, 1, kNcclDomain);
      bind(schema, 2, kSchemaStaticStart + sid);
      bind(schema, 3, static_cast<std::int64_t>(entries.size()));
      db_.run(schema);
      for (std::size_t i = 0; i < entries.size(); ++i) {
        bind(entry, 1, kNcclDomain);
        bind(entry, 2, kSchemaStaticStart + sid);
        bind(entry, 3, static_cast<std::int64_t>(i));
        bind(entry, 4, entries[i].type);
        bind(entry, 5, std::string_view(entries[i].name));
        bind(entry, 6, entries[i].offset);
        db_.run(entry);
      }
    }
  }

  /// A push/pop range (`text` given, or a registered name in NCCL's domain).
  void range(std::int64_t start, std::int64_t end, std::string_view text, bool nccl,
             const std::string* blob = nullptr) {
    sqlite3_stmt* s = db_.statement(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId, "
        "binaryData) VALUES (?, ?, 59, ?, ?, ?, ?, ?)");
    bind(s, 1, stored(start));
    bind(s, 2, stored(end));
    if (nccl) {
      bind(s, 5, sid(text));
    } else {
      bind(s, 3, text);
    }
    bind(s, 4, tid_);
    bind(s, 6, nccl ? kNcclDomain : std::int64_t{0});
    if (blob) bind_blob(s, 7, *blob);
    db_.run(s);
  }

  const Communicator& pipeline() const {
    return run_.pipeline[static_cast<std::size_t>(rank_ % run_.timeline->replicas)];
  }
  const Communicator& data() const { return run_.data[static_cast<std::size_t>(device_.stage)]; }

  void write_nvtx() {
    sqlite3_stmt* s = db_.statement(
        "INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (?, 75, "
        "'NCCL', ?, ?)");
    const std::int64_t first = steps_.empty() ? run_.session_ns : std::get<1>(steps_.front());
    bind(s, 1, stored(first - 900'000));
    bind(s, 2, tid_);
    bind(s, 3, kNcclDomain);
    db_.run(s);
    // NCCL's initialisation of the rank's communicators.
    std::int64_t at = first - 800'000;
    for (const Communicator* c : {&pipeline(), &data()}) {
      std::string payload;
      put(payload, c->id, 8);
      put(payload, c->ranks.size(), 4);
      put(payload, static_cast<std::uint64_t>(c->index_of(rank_)), 4);
      put(payload, static_cast<std::uint64_t>(device_.rank), 4);
      put(payload, 0, 4);
      const std::string blob = payload_blob(kSidInit, payload);
      range(at, at + 40'000, "ncclCommInitRankConfig", true, &blob);
      at += 50'000;
    }
    for (const auto& [step, start, end] : steps_) {
      range(start, end, fmt::format("ProfilerStep#{}", run_.options->first_step + step), false);
    }
    // NCCL's calls around their launches.
    for (const std::size_t i : order_) {
      const KernelActivity& a = acts_[i];
      if (a.kind == ActivityKind::compute) continue;
      std::string payload;
      std::int64_t schema = kSidAllReduce;
      const char* name = "ncclAllReduce";
      if (a.kind == ActivityKind::allreduce) {
        put(payload, data().id, 8);
        put(payload, 4 * 1'200'000'000ULL / static_cast<std::uint64_t>(run_.timeline->stages), 8);
        put(payload, 0, 4);
      } else {
        schema = a.kind == ActivityKind::send ? kSidSend : kSidRecv;
        name = a.kind == ActivityKind::send ? "ncclSend" : "ncclRecv";
        put(payload, pipeline().id, 8);
        put(payload, kActivationBytes, 8);
        put(payload, static_cast<std::uint64_t>(pipeline().index_of(a.peer)), 4);
      }
      put(payload, 0, 4);
      const std::string blob = payload_blob(schema, payload);
      range(host_[i].range_start, host_[i].range_end, name, true, &blob);
    }
    // The jobs' ranges: each from its first kernel's launch to the end of its
    // last one's.
    std::vector<std::size_t> compute;
    for (const std::size_t i : order_) {
      if (acts_[i].kind == ActivityKind::compute) compute.push_back(i);
    }
    std::sort(compute.begin(), compute.end(), [this](std::size_t a, std::size_t b) {
      return acts_[a].start_ns < acts_[b].start_ns;
    });
    std::size_t k = 0;
    for (const SimJob& job : jobs_) {
      const std::size_t first_kernel = k;
      while (k < compute.size() && acts_[compute[k]].end_ns <= job.end_ns) ++k;
      if (job.type == SimJobType::optimizer || is_comm_job(job.type) ||
          job.type == SimJobType::lr) {
        continue;
      }
      if (k == first_kernel) {
        throw std::logic_error(fmt::format("rank {}: a job without kernels", rank_));
      }
      const LaunchHost& first_launch = host_[compute[first_kernel]];
      const LaunchHost& last_launch = host_[compute[k - 1]];
      range(first_launch.launch - 200, last_launch.end,
            "PP:" + torch_action_label(job, run_.config->shape, device_.stage), false);
      ++jobs_written_;
    }
  }

  void write_activities() {
    sqlite3_stmt* kernel =
        db_.statement("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)");
    sqlite3_stmt* runtime =
        db_.statement("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, 0)");
    const std::int64_t launch_kernel = sid("cudaLaunchKernel_v7000");
    const std::int64_t launch_ex = sid("cuLaunchKernelEx");
    std::int64_t correlation = 1000;
    for (const std::size_t i : order_) {
      const KernelActivity& a = acts_[i];
      const LaunchHost& h = host_[i];
      const bool compute = a.kind == ActivityKind::compute;
      ++correlation;
      bind(runtime, 1, stored(h.launch));
      bind(runtime, 2, stored(h.launch + h.launch_dur));
      bind(runtime, 3, std::int64_t{compute ? 0 : 1});
      bind(runtime, 4, tid_);
      bind(runtime, 5, correlation);
      bind(runtime, 6, compute ? launch_kernel : launch_ex);
      db_.run(runtime);
      ++runtime_rows_;
      const char* name = compute                             ? a.name
                         : a.kind == ActivityKind::allreduce ? kAllReduceKernel
                                                             : kSendRecvKernel;
      std::string_view shown(name);
      shown = shown.substr(0, shown.find('('));
      bind(kernel, 1, stored(a.start_ns));
      bind(kernel, 2, stored(a.end_ns));
      bind(kernel, 3, std::int64_t{device_.rank});
      bind(kernel, 4, std::int64_t{a.stream});
      bind(kernel, 5, correlation);
      bind(kernel, 6, gpid_);
      bind(kernel, 7, sid(name));
      bind(kernel, 8, sid(shown));
      db_.run(kernel);
    }
  }

  void write_strings() {
    sqlite3_stmt* s = db_.statement("INSERT INTO StringIds VALUES (?, ?)");
    for (const auto& [text, id] : strings_) {
      bind(s, 1, id);
      bind(s, 2, text);
      db_.run(s);
    }
  }

  const ExportRunFacts& run_;
  int rank_;
  const std::vector<KernelActivity>& acts_;
  const SimDeviceInfo& device_;
  const std::vector<SimJob>& jobs_;
  int pid_;
  std::int64_t gpid_, tid_;
  std::int64_t system_clock_, utc_;
  SplitMix draw_;
  Database db_;
  std::vector<std::size_t> order_;  // activities by (step, start): the host's order
  std::vector<LaunchHost> host_;
  std::vector<std::tuple<std::int32_t, std::int64_t, std::int64_t>> steps_;  // step, start, end
  std::map<std::string, std::int64_t> strings_;
  std::uint64_t runtime_rows_ = 0;
  std::uint64_t jobs_written_ = 0;
};

std::string export_layout_json(const KernelTimeline& tl) {
  std::string out = fmt::format(
      "{{\"source\": \"nccl\", \"pp\": {}, \"dp\": {}, \"order\": \"pp,dp\", \"ranks\": [",
      tl.stages, tl.replicas);
  for (std::size_t g = 0; g < tl.devices.size(); ++g) {
    const SimDeviceInfo& d = tl.devices[g];
    out += fmt::format(
        "{}\n    {{\"global_rank\": {}, \"stage\": {}, \"replica\": {}, \"machine\": {}, "
        "\"device\": {}}}",
        g == 0 ? "" : ",", d.index, d.stage, d.index % tl.replicas, d.machine, d.rank);
  }
  return out + "\n  ]}";
}

/// A communicator id, the same on every member, some above 2^63.
std::uint64_t communicator_id(std::uint64_t seed, std::uint64_t kind, std::uint64_t index) {
  return mix(seed ^ (kind << 40) ^ (index << 8) ^ 0x636F6D6DULL);  // "comm"
}

}  // namespace

NsysExportReport write_nsys_exports(const SimConfig& config, const NsysExportOptions& options) {
  if (options.dir.empty()) throw std::invalid_argument("no output folder given");
  if (options.first_step < 0 || options.first_step > 1'000'000'000'000) {
    throw std::invalid_argument(
        fmt::format("first step must be in 0..10^12, got {}", options.first_step));
  }
  layout_devices(config);  // the whole config checked, clock offsets included
  const KernelTimeline timeline = build_kernel_timeline(config, options.kernels_per_job);
  // The jobs on the true clock, as the timeline is.
  SimConfig true_clock = config;
  true_clock.machine_skew_ns.clear();
  const SimulatedRun simulated = simulate(true_clock);
  prepare_trace_dir(options.dir, options.force, *config.words);

  const int machines = config.machines;
  std::vector<std::int64_t> offset(static_cast<std::size_t>(machines), 0);
  if (!config.machine_skew_ns.empty()) offset = config.machine_skew_ns;

  ExportRunFacts run{&config, &timeline, &options, {}, {}, 0};
  // Every session starts 5 s before the run, on the true clock.
  run.session_ns = config.start_ns - 5'000'000'000;
  const int p = timeline.stages, d_count = timeline.replicas;
  for (int d = 0; d < d_count; ++d) {
    Communicator c{communicator_id(config.seed, 1, static_cast<std::uint64_t>(d)), {}};
    for (int s = 0; s < p; ++s) c.ranks.push_back(d + d_count * s);
    run.pipeline.push_back(std::move(c));
  }
  for (int s = 0; s < p; ++s) {
    Communicator c{communicator_id(config.seed, 2, static_cast<std::uint64_t>(s)), {}};
    for (int d = 0; d < d_count; ++d) c.ranks.push_back(d + d_count * s);
    run.data.push_back(std::move(c));
  }

  NsysExportReport report;
  ExpectedMetricsBuilder expected(timeline.devices, options.first_step);
  std::vector<std::string> paths;
  // Should anything throw, the exports not yet committed are removed as
  // these go out of scope.
  std::vector<std::unique_ptr<io::AtomicOutput>> outputs;
  for (std::size_t g = 0; g < timeline.devices.size(); ++g) {
    const SimDeviceInfo& device = timeline.devices[g];
    const std::string name = fmt::format("rank_{}.sqlite", g);
    const fs::path path = options.dir / name;
    auto output = std::make_unique<io::AtomicOutput>(path.string());
    output->close_descriptor();
    const std::int64_t shift = offset[static_cast<std::size_t>(device.machine)];
    RankExport rank(run, static_cast<int>(g), simulated.jobs[g], shift, output->temp_path());
    report.runtime_rows += rank.write();
    for (const SimJob& job : simulated.jobs[g]) {
      if (torch_action_label(job, config.shape, device.stage).empty()) continue;
      expected.add_job(static_cast<int>(g), job.step, job.start_ns + shift, job.end_ns + shift);
    }
    const auto bytes = static_cast<std::uint64_t>(fs::file_size(output->temp_path()));
    outputs.push_back(std::move(output));
    paths.push_back(name);
    report.files.push_back({path, bytes, timeline.ranks[g].size(), rank.jobs_written()});
    report.bytes += bytes;
    report.activities += timeline.ranks[g].size();
  }
  for (auto& output : outputs) output->commit();

  report.kernel_view = expected_kernel_view(timeline, options.first_step, offset[0]);
  report.jobs = expected.finish();
  std::string summary = expected_metrics_json(report.jobs);
  while (!summary.empty() && (summary.back() == '\n' || summary.back() == ' ')) summary.pop_back();
  std::string clock = "{\"reference\": \"machine 0\", \"machines\": [";
  for (int m = 0; m < machines; ++m) {
    clock += fmt::format("{}{{\"machine\": {}, \"offset_ns\": {}}}", m == 0 ? "" : ", ", m,
                         offset[static_cast<std::size_t>(m)] - offset[0]);
  }
  clock += "]}";
  report.expected_path = options.dir / "expected.json";
  io::write_file_atomically(
      report.expected_path.string(),
      fmt::format("{{\n  \"format\": \"nsys\",\n  \"summary\": {},\n  \"kernel_view\": {},\n"
                  "  \"layout\": {},\n  \"clock\": {}\n}}\n",
                  summary, expected_kernel_view_json(report.kernel_view, paths),
                  export_layout_json(timeline), clock));
  std::string skews;
  for (int m = 0; m < machines; ++m) skews += fmt::format("{}{}", m == 0 ? "" : ", ", offset[m]);
  io::write_file_atomically(
      (options.dir / "simulation.json").string(),
      fmt::format("{{\"format\": \"nsys\", {}, \"machines\": {}, \"seed\": {}, "
                  "\"start_ns\": {}, \"first_step\": {}, \"kernels_per_job\": {}, "
                  "\"latency_ns\": {}, \"clock_offsets_ns\": [{}]}}\n",
                  simulation_shape_fields(config, timeline.steps), machines, config.seed,
                  config.start_ns, options.first_step, options.kernels_per_job,
                  config.p2p_latency_ns, skews));
  report.steps = timeline.steps;
  report.ranks = static_cast<int>(timeline.devices.size());
  report.machines = machines;
  return report;
}

}  // namespace pipescope::sim
