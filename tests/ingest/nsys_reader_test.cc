// The reader of Nsight Systems exports (ingest/nsys_reader.h) on small
// exports written here through SQLite, with figures worked by hand: each
// schema generation's time base, ranks from the CUDA device, the
// environment and NCCL's payloads, steps from NVTX, NCCL peers from the
// calls' payloads, jobs from NVTX ranges (`PP:` labels, a job pattern), and
// the inputs it refuses (exit 2 at the CLI).
#include "ingest/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/kernel_view.h"
#include "ingest/discovery.h"
#include "ingest/input_formats.h"
#include "ingest/job_pattern.h"
#include "ingest/progress_meter.h"
#include "model/errors.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

constexpr std::int64_t kUtc = 1'700'000'000'000'000'000;
constexpr std::int64_t kSystemClock = 5'000;
constexpr std::int64_t kVm = std::int64_t{1} << 48;
constexpr std::int64_t pid_of(std::int64_t pid) { return kVm | (pid << 24); }

/// An export written statement by statement.
class Export {
 public:
  explicit Export(const std::string& path) : path_(path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
  }
  ~Export() { sqlite3_close(db_); }
  Export& sql(const std::string& text) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "") << " in " << text;
    sqlite3_free(error);
    return *this;
  }
  /// An NVTX range with a binary payload.
  Export& range_with_payload(std::int64_t start, std::int64_t end, const char* text,
                             std::int64_t tid, const std::vector<unsigned char>& blob) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db_,
                       "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                       "domainId, binaryData) VALUES (?, ?, 59, ?, ?, 1, ?)",
                       -1, &s, nullptr);
    sqlite3_bind_int64(s, 1, start);
    sqlite3_bind_int64(s, 2, end);
    sqlite3_bind_text(s, 3, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, tid);
    sqlite3_bind_blob(s, 5, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    return *this;
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

/// The tables of a 3.x export (only the columns the reader reads).
void schema_3(Export& e) {
  e.sql(
      "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);"
      "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0');"
      "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, systemClockNs INTEGER);"
      "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (" +
      std::to_string(kUtc) + ", " + std::to_string(kSystemClock) +
      ");"
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
      "INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'ncclDevKernel_SendRecv'), "
      "(3, 'ProfilerStep#4');"
      "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, name TEXT, value TEXT);"
      "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (" +
      std::to_string(kVm) +
      ", 'Hostname', 'node1');"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
      "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, "
      "streamId INTEGER, correlationId INTEGER, globalPid INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass "
      "INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);"
      "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, "
      "globalTid INTEGER, textId INTEGER, domainId INTEGER, binaryData TEXT);");
}

std::string ins(const char* table, const std::string& values) {
  return std::string("INSERT INTO ") + table + " VALUES (" + values + ");";
}
std::string row(std::initializer_list<std::int64_t> v) {
  std::string out;
  for (const auto x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

std::vector<FileResult> read(const std::vector<std::string>& paths, std::string step_range = {},
                             const JobPattern* pattern = nullptr) {
  std::vector<InputFile> files = discover_inputs(paths);
  const ProgressCallback none;
  ProgressMeter progress(files, none);
  NsysOptions options;
  options.step_range = std::move(step_range);
  return read_nsys_exports(files, ReadOptions{}, options, pattern, progress);
}

constexpr std::int64_t abs_ns(std::int64_t t) { return kUtc + t - kSystemClock; }

TEST(NsysReader, NodeReportRanksByCudaDeviceAndTimesFromTheSession) {
  TempDir dir;
  const std::string path = dir / "node1.sqlite";
  {
    Export e(path);
    schema_3(e);
    const std::int64_t a = pid_of(100), b = pid_of(200);
    e.sql(
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, cuDevice INTEGER);"
        "INSERT INTO TARGET_INFO_GPU VALUES (0, 1), (1, 0);");
    // Process a on deviceId 0 (CUDA 1): two overlapping kernels and a copy.
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({10000, 20000, 0, 7, 7, a, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({15000, 30000, 0, 7, 8, a, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_MEMCPY", row({40000, 41000, 0, 7, 9, a})));
    // Its launches; a backtrace row (eventClass 67) before the runtime's is
    // not the launch.
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({8000, 8100, 67, a | 1, 7, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({9000, 9100, 0, a | 1, 7, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({9500, 9600, 0, a | 1, 8, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({39000, 39100, 1, a | 1, 9, 0})));
    e.sql(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (8500, "
        "50000, 59, " +
        std::to_string(a | 1) + ", 3);");
    // Process b on deviceId 1 (CUDA 0): correlation 7 again (ids are per
    // process), one launch lacking.
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({12000, 13000, 1, 9, 7, b, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({14000, 15000, 1, 9, 77, b, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({11000, 11100, 0, b | 2, 7, 0})));
  }
  EXPECT_EQ(format_by_name("node1.sqlite"), InputFormat::nsys_export);
  EXPECT_EQ(format_by_content(path), InputFormat::nsys_export);
  const std::vector<InputFile> files = discover_inputs({dir.path().string()});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].ranks, 2);

  const std::vector<FileResult> results = read({dir.path().string()});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].kernels.size(), 2u);
  EXPECT_EQ(results[0].more_devices.size(), 1u);
  const RankKernels& first = results[0].kernels[0];  // CUDA 0: process b
  const RankKernels& second = results[0].kernels[1];
  EXPECT_EQ(first.device_ordinal, 0);
  EXPECT_EQ(first.global_rank, -1);  // placed by its device: the kernel view's rule
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(first.activities, 2u);
  EXPECT_EQ(first.without_launch, 1u);
  EXPECT_FALSE(first.step_spans);
  EXPECT_EQ(second.device_ordinal, 1);
  EXPECT_EQ(second.device, 1);
  EXPECT_EQ(second.activities, 3u);
  EXPECT_EQ(second.without_launch, 0u);
  ASSERT_EQ(second.compute.size(), 2u);
  EXPECT_EQ(second.compute[0], (TimeSpan{abs_ns(10000), abs_ns(30000)}));
  EXPECT_EQ(second.compute[1], (TimeSpan{abs_ns(40000), abs_ns(41000)}));
  EXPECT_TRUE(second.step_spans);
  ASSERT_EQ(second.steps.size(), 1u);
  EXPECT_EQ(second.steps[0].step, 4);
  EXPECT_EQ(second.steps[0].first_start, abs_ns(10000));
  EXPECT_EQ(second.steps[0].last_end, abs_ns(41000));
  EXPECT_EQ(second.first_start, abs_ns(10000));
  EXPECT_EQ(second.last_end, abs_ns(41000));

  // The kernel view speaks of an export's processes, not of a PyTorch
  // trace's distributedInfo.
  const KernelView view = compute_kernel_view(results[0].kernels);
  const auto note = std::find_if(view.warnings.begin(), view.warnings.end(), [](const Warning& w) {
    return w.code == WarningCode::rank_source;
  });
  ASSERT_NE(note, view.warnings.end());
  EXPECT_EQ(note->message.find("distributedInfo"), std::string::npos) << note->message;
  EXPECT_NE(note->message.find("2 processes of the exports without a rank in their environment"),
            std::string::npos)
      << note->message;
  // Each rank named by its process: one file holds both.
  EXPECT_NE(note->message.find(path + " (pid 200) is rank 0 by device; " + path +
                               " (pid 100) is rank 1 by device"),
            std::string::npos)
      << note->message;
}

/// A node report whose CUDA streams list one process where two ran
/// kernels (discovery counts the streams' processes, cheaply), then an
/// export without that table (counted by a scan): the reader numbers the
/// devices by the processes it read, the second file's following on, read
/// together or each apart and joined.
TEST(NsysReader, DevicesNumberedByTheProcessesReadWhateverDiscoveryCounted) {
  TempDir dir;
  const std::string first = dir / "a.sqlite", second = dir / "b.sqlite";
  {
    Export e(first);
    schema_3(e);
    e.sql(
        "CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER, vmId INTEGER, processId "
        "INTEGER);"
        "INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7, 0, 100), (8, 0, 100);");
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({1000, 2000, 0, 7, 1, pid_of(100), 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({1000, 3000, 1, 9, 1, pid_of(200), 1})));
  }
  {
    Export e(second);
    schema_3(e);
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({1500, 2500, 0, 7, 1, pid_of(300), 1})));
  }
  const std::vector<InputFile> files = discover_inputs({dir.path().string()});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].ranks, 1);  // the streams' one process
  EXPECT_EQ(files[1].ranks, 1);
  EXPECT_EQ(files[1].device, 1);

  const auto devices_of = [](const std::vector<FileResult>& results) {
    std::vector<std::pair<int, std::string>> out;  // (index, path) of every device
    for (const FileResult& r : results) {
      out.emplace_back(r.device.index, r.device.path);
      for (const Device& d : r.more_devices) out.emplace_back(d.index, d.path);
    }
    return out;
  };
  const auto kernels_of = [](const std::vector<FileResult>& results) {
    std::vector<std::pair<int, int>> out;  // (device, pid) of every rank
    for (const FileResult& r : results) {
      for (const RankKernels& k : r.kernels) out.emplace_back(k.device, k.pid);
    }
    return out;
  };
  const std::vector<FileResult> together = read({dir.path().string()});
  EXPECT_EQ(devices_of(together),
            (std::vector<std::pair<int, std::string>>{{0, first}, {1, first}, {2, second}}));
  EXPECT_EQ(kernels_of(together), (std::vector<std::pair<int, int>>{{0, 100}, {1, 200}, {2, 300}}));

  // Each file read on its own (as `analyze --mpi` shares them out), joined.
  const ProgressCallback none;
  std::vector<FileResult> apart;
  for (const InputFile& f : files) {
    const std::vector<InputFile> one{f};
    ProgressMeter progress(one, none);
    std::vector<FileResult> r =
        read_nsys_files(one, ReadOptions{}, NsysOptions{}, nullptr, progress);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_FALSE(r[0].placement.empty());
    apart.push_back(std::move(r[0]));
  }
  join_nsys_files(apart, files, ReadOptions{});
  EXPECT_TRUE(apart[0].placement.empty());
  EXPECT_EQ(devices_of(apart), devices_of(together));
  EXPECT_EQ(kernels_of(apart), kernels_of(together));
}

TEST(NsysReader, Schema2TimesAndTheEnvironmentsRank) {
  TempDir dir;
  const std::string path = dir / "rank_3.sqlite";
  {
    Export e(path);
    const std::int64_t a = pid_of(42);
    e.sql(
        "CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);"
        "INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_SCHEMA_VERSION', '2.9.1');"
        "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);"
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (" +
        std::to_string(kUtc) +
        ");"
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
        "INSERT INTO StringIds VALUES (1, 'saxpy');"
        "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, name TEXT, value TEXT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
        "INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId "
        "INTEGER, correlationId INTEGER, globalPid INTEGER);");
    // 2.x: the environment NUL-separated in DeviceEnvironment.
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, 'DeviceEnvironment', ?)",
                       -1, &s, nullptr);
    static const char env[] = "HOME=/root\0PMI_RANK=3\0PMI_SIZE=4\0";
    sqlite3_bind_int64(s, 1, kVm);
    sqlite3_bind_text(s, 2, env, sizeof env - 1, SQLITE_STATIC);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({1000, 2500, 0, 5, a, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_MEMSET", row({3000, 3100, 0, 6, a})));
  }
  const std::vector<FileResult> results = read({path});
  ASSERT_EQ(results[0].kernels.size(), 1u);
  const RankKernels& r = results[0].kernels[0];
  EXPECT_EQ(r.global_rank, 3);
  EXPECT_EQ(r.rank_claim, RankKernels::Claim::environment);
  EXPECT_EQ(r.world_size, 4);
  // No systemClockNs: utcEpochNs + t.
  ASSERT_EQ(r.compute.size(), 2u);
  EXPECT_EQ(r.compute[0], (TimeSpan{kUtc + 1000, kUtc + 2500}));
  EXPECT_EQ(r.compute[1], (TimeSpan{kUtc + 3000, kUtc + 3100}));
  EXPECT_EQ(r.without_launch, 2u);  // no runtime table: no launch
}

/// NCCL's payload: the export's 32-byte header, then the struct.
std::vector<unsigned char> payload(std::int64_t schema, std::vector<std::uint64_t> words) {
  std::vector<unsigned char> out;
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  u64(1);
  u64(static_cast<std::uint64_t>(schema));
  u64(8 * words.size());
  u64(32 + 8 * words.size());
  for (const auto w : words) u64(w);
  return out;
}

TEST(NsysReader, RanksAndPeersFromNcclPayloads) {
  TempDir dir;
  const std::string path = dir / "node.sqlite";
  const std::int64_t a = pid_of(100), b = pid_of(200);
  {
    Export e(path);
    schema_3(e);
    // Schemas: 101 = init (communicator, ranks, rank), 102 = send (communicator, peer).
    e.sql(
        "CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, payloadSize "
        "INTEGER);"
        "INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 101, 24), (1, 102, 16);"
        "CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER, schemaId INTEGER, idx "
        "INTEGER, type INTEGER, name TEXT, offset INTEGER);"
        "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES "
        "(1, 101, 0, 18, 'NCCL communicator ID', 0), (1, 101, 1, 18, 'No. of ranks', NULL), "
        "(1, 101, 2, 18, 'Rank', NULL), "
        "(1, 102, 0, 18, 'NCCL communicator ID', 0), (1, 102, 1, 18, 'Peer rank', 8);"
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId) VALUES "
        "(0, NULL, 75, 'NCCL', 1);");
    // The CUDA devices say a = 0, b = 1; NCCL's world says a = 1, b = 0.
    e.sql(
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, cuDevice INTEGER);"
        "INSERT INTO TARGET_INFO_GPU VALUES (0, 0), (1, 1);");
    e.range_with_payload(100, 200, "ncclCommInitRankConfig", a | 1, payload(101, {0xABC, 2, 1}));
    e.range_with_payload(100, 200, "ncclCommInitRankConfig", b | 1, payload(101, {0xABC, 2, 0}));
    // a sends to its communicator's rank 0 (b), then launches the kernel.
    e.range_with_payload(1000, 1100, "ncclSend", a | 1, payload(102, {0xABC, 0}));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({1200, 1300, 1, a | 1, 5, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({2000, 5000, 0, 7, 5, a, 2})));
    e.range_with_payload(1000, 1100, "ncclRecv", b | 1, payload(102, {0xABC, 1}));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({1150, 1300, 1, b | 1, 5, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({1500, 5001, 1, 7, 5, b, 2})));
  }
  const std::vector<FileResult> results = read({path});
  ASSERT_EQ(results[0].kernels.size(), 2u);
  const RankKernels& r0 = results[0].kernels[0];
  const RankKernels& r1 = results[0].kernels[1];
  EXPECT_EQ(r0.global_rank, 0);
  EXPECT_EQ(r0.rank_claim, RankKernels::Claim::nccl);
  EXPECT_EQ(r0.device_ordinal, 1);  // process b
  EXPECT_EQ(r1.global_rank, 1);
  EXPECT_EQ(r1.world_size, 2);
  ASSERT_EQ(r1.comm.size(), 1u);
  const CommKernel& send = r1.comm[0];
  EXPECT_EQ(send.start, abs_ns(2000));
  EXPECT_EQ(send.end, abs_ns(5000));
  EXPECT_EQ(send.op, CommOp::point_to_point);
  EXPECT_EQ(send.source, CommSource::host);
  ASSERT_EQ(send.p2p.size(), 1u);
  EXPECT_EQ(send.p2p[0].op, CommOp::send);
  EXPECT_EQ(send.p2p[0].peer, 0);
  EXPECT_EQ(send.group_ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(r0.comm.size(), 1u);
  ASSERT_EQ(r0.comm[0].p2p.size(), 1u);
  EXPECT_EQ(r0.comm[0].p2p[0].op, CommOp::recv);
  EXPECT_EQ(r0.comm[0].p2p[0].peer, 1);
}

/// Jobs from NVTX ranges, as from a trace's user annotations: a range's
/// interval is the span of the activities launched inside it, from any
/// thread of its process (NCCL kernels too), else its own (host-timed).
TEST(NsysReader, JobsFromNvtxRangesTimedByTheirLaunchedKernels) {
  TempDir dir;
  const std::string path = dir / "node1.sqlite";
  const std::int64_t a = pid_of(100), b = pid_of(200);
  {
    Export e(path);
    schema_3(e);
    auto range = [&](std::int64_t start, std::int64_t end, const char* text, std::int64_t tid) {
      e.sql("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (" +
            row({start, end, 59}) + ", '" + text + "', " + std::to_string(tid) + ");");
    };
    // Process a (deviceId 0: rank 0). Its forward: emit_nvtx's suffix cut
    // off; a kernel launched from the range's thread, one from autograd's,
    // and a NCCL kernel; a kernel launched after the range is none of it.
    range(1000, 5000, "PP:0F0, op_id = 5", a | 1);
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({2000, 2100, 0, a | 1, 1, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({4000, 4100, 0, a | 2, 2, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({4500, 4600, 1, a | 1, 4, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({6000, 6100, 0, a | 1, 3, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({10000, 12000, 0, 7, 1, a, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({12500, 14000, 0, 7, 2, a, 1})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({14500, 16000, 0, 9, 4, a, 2})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({16000, 17000, 0, 7, 3, a, 1})));
    // Its backward launches nothing: host-timed. A label that is no action.
    range(7000, 9000, "PP:0B0", a | 1);
    range(9100, 9200, "PP:zzz", a | 1);
    // Process b (deviceId 1: rank 1): a range only a pattern names.
    range(20000, 21000, "fwd_3", b | 1);
    e.sql(ins("CUPTI_ACTIVITY_KIND_RUNTIME", row({20500, 20600, 0, b | 1, 7, 0})));
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({30000, 31000, 1, 7, 7, b, 1})));
  }
  {
    std::vector<FileResult> results = read({path});
    ASSERT_EQ(results.size(), 1u);
    const FileResult& r = results[0];
    ASSERT_EQ(r.more_devices.size(), 1u);
    const JobVector& jobs = r.device.jobs;  // rank 0: process a
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(r.types.name(jobs[0].type), "forward");
    EXPECT_EQ(jobs[0].start_ns, abs_ns(10000));
    EXPECT_EQ(jobs[0].end_ns, abs_ns(16000));
    EXPECT_EQ(jobs[0].micro_batch, 0);
    EXPECT_EQ(r.types.name(jobs[1].type), "backward");
    EXPECT_EQ(jobs[1].start_ns, abs_ns(7000));
    EXPECT_EQ(jobs[1].end_ns, abs_ns(9000));
    EXPECT_TRUE(r.more_devices[0].jobs.empty());
    EXPECT_EQ(r.stats.matched, 2u);
    EXPECT_EQ(r.stats.malformed, 1u);
    EXPECT_EQ(r.stats.time_base, TimeBase::given);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0].code, WarningCode::host_timed_jobs);
    EXPECT_EQ(r.notes[0].count, 1u);
    std::string diagnostics;
    for (const Diagnostic& d : r.diagnostics) diagnostics += d.message + "\n";
    EXPECT_NE(diagnostics.find("1 of 2 jobs are host-timed"), std::string::npos) << diagnostics;
    EXPECT_NE(diagnostics.find("'PP:zzz' is no pipeline action"), std::string::npos) << diagnostics;
  }
  {
    // A job pattern instead of the labels (the option PyTorch traces take).
    const JobPattern pattern("(?P<op>fwd)_(?P<mb>[0-9]+)", "fwd=forward");
    std::vector<FileResult> results = read({path}, {}, &pattern);
    const FileResult& r = results[0];
    EXPECT_TRUE(r.device.jobs.empty());
    ASSERT_EQ(r.more_devices.size(), 1u);
    const JobVector& jobs = r.more_devices[0].jobs;
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(r.types.name(jobs[0].type), "forward");
    EXPECT_EQ(jobs[0].micro_batch, 3);
    EXPECT_EQ(jobs[0].start_ns, abs_ns(30000));
    EXPECT_EQ(jobs[0].end_ns, abs_ns(31000));
    EXPECT_TRUE(r.notes.empty());
  }
}

TEST(NsysReader, RefusesWhatIsNoExport) {
  TempDir dir;
  const std::string text = dir.write("a/notes.sqlite", "not a database\n");
  EXPECT_THROW(
      {
        try {
          read({text});
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos);
          throw;
        }
      },
      InputError);
  const std::string other = dir / "b/other.sqlite";
  std::filesystem::create_directories(dir.path() / "b");
  { Export(other).sql("CREATE TABLE StringIds (id INTEGER, value TEXT);"); }
  try {
    read({other});
    ADD_FAILURE() << "another database read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "lacks TARGET_INFO_SESSION_START_TIME, META_DATA_EXPORT (or EXPORT_META_DATA)"),
              std::string::npos)
        << e.what();
  }
  const std::string report = dir.write("c/run.nsys-rep", std::string(64, '\0'));
  try {
    read({report});
    ADD_FAILURE() << "a report read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nsys export --type sqlite --include-blobs=true"),
              std::string::npos);
  }
  EXPECT_THROW(read({text}, "ProfilerStep#[0-9]+"), InputError);  // no group
}

TEST(NsysReader, AReportBesideItsExportIsSkipped) {
  TempDir dir;
  {
    Export e(dir / "run.sqlite");
    schema_3(e);
    e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({10, 20, 0, 7, 1, pid_of(5), 1})));
  }
  dir.write("run.nsys-rep", std::string(64, '\0'));
  const std::vector<FileResult> results = read({dir.path().string()});
  std::size_t ranks = 0;
  for (const FileResult& r : results) ranks += r.kernels.size();
  EXPECT_EQ(ranks, 1u);
}

TEST(NsysReader, ADamagedDatabaseIsAnInputErrorNeverACrash) {
  TempDir dir;
  const std::string path = dir / "damaged.sqlite";
  {
    Export e(path);
    schema_3(e);
    e.sql("BEGIN");  // one transaction: 2000 rows written at once
    for (int i = 0; i < 2000; ++i) {
      e.sql(ins("CUPTI_ACTIVITY_KIND_KERNEL", row({10 * i, 10 * i + 5, 0, 7, i, pid_of(5), 1})));
    }
    e.sql("COMMIT");
  }
  std::string bytes = testing::read_file(path);
  ASSERT_GT(bytes.size(), 8192u);
  // Every page after the first two overwritten.
  for (std::size_t i = 8192; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131);
  TempDir::write_to(path, bytes);
  EXPECT_THROW(read({path}), InputError);
  // Cut short.
  TempDir::write_to(path, bytes.substr(0, 5000));
  EXPECT_THROW(read({path}), InputError);
}

}  // namespace
}  // namespace pipescope
