// Micro-benchmarks of the .ivl record path: the reader (raw blocks, and the
// full import into the model), CRC32C, the writer, and the executor-side
// host timer's per-job cost (begin + end, with a flush every step).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "records/crc32c.h"
#include "records/ivl_reader.h"
#include "records/ivl_writer.h"
#include "ingest/ivl_import.h"
#include "timer/job_timer.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;

/// A 2M-record file (64 MiB) in the temp folder, written once, removed at exit.
class RecordFile {
 public:
  static const RecordFile& get() {
    static const RecordFile file;
    return file;
  }
  ~RecordFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string path;
  std::uint64_t bytes = 0;

 private:
  RecordFile() {
    path = (fs::temp_directory_path() / ("pipescope-bench-" + std::to_string(::getpid()) + ".ivl"))
               .string();
    ivl::FileInfo info;
    info.types = {"forward", "backward", "optimizer"};
    ivl::Writer writer(path, info);
    for (std::int64_t i = 0; i < (2 << 20); ++i) {
      const std::int64_t start = 1'700'000'000'000'000'000 + i * 1'000'000;
      writer.append({start, start + 900'000, static_cast<std::uint32_t>(i % 3),
                     static_cast<std::int32_t>(i % 8), static_cast<std::int32_t>(i / 64), 0});
      if (i % 64 == 63) writer.flush();  // one block per 64-job step, as the timer writes
    }
    writer.close();
    bytes = fs::file_size(path);
  }
};

void BM_IvlReadBlocks(benchmark::State& state) {
  const RecordFile& file = RecordFile::get();
  for (auto _ : state) {
    std::int64_t sum = 0;
    ivl::ReadCallbacks cb;
    cb.on_records = [&](const ivl::RecordBlock& block) {
      for (std::uint32_t i = 0; i < block.count; ++i) sum += block.record(i).end_ns;
    };
    benchmark::DoNotOptimize(ivl::read_file(file.path, cb).records);
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * file.bytes));
}
BENCHMARK(BM_IvlReadBlocks)->Unit(benchmark::kMillisecond);

void BM_IvlImport(benchmark::State& state) {
  const RecordFile& file = RecordFile::get();
  InputFile input;
  input.path = file.path;
  input.format = InputFormat::ivl;
  input.size_bytes = file.bytes;
  for (auto _ : state) {
    FileResult r = import_ivl_file(input);
    benchmark::DoNotOptimize(r.device.jobs.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * file.bytes));
}
BENCHMARK(BM_IvlImport)->Unit(benchmark::kMillisecond);

void BM_Crc32c(benchmark::State& state) {
  std::string data(std::size_t{1} << 20, 'x');
  for (auto _ : state) benchmark::DoNotOptimize(ivl::crc32c(data.data(), data.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Crc32c);

void BM_IvlWriterAppend(benchmark::State& state) {
  const std::string path =
      (fs::temp_directory_path() / ("pipescope-bench-w-" + std::to_string(::getpid()) + ".ivl"))
          .string();
  {
    ivl::Writer writer(path, {});
    const auto fwd = writer.type_id("forward");
    std::int64_t i = 0;
    for (auto _ : state) {
      writer.append({i, i + 10, fwd, 0, 0, 0});
      ++i;
    }
    writer.close();
  }
  fs::remove(path);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IvlWriterAppend);

/// Per-job cost of the host timer: begin + end on one of two streams, with a
/// flush (resolve + one block write) every state.range(0) jobs (a step).
void BM_HostTimerBeginEnd(benchmark::State& state) {
  const std::string path =
      (fs::temp_directory_path() / ("pipescope-bench-t-" + std::to_string(::getpid()) + ".ivl"))
          .string();
  {
    timer::TimerOptions options;
    options.path = path;
    auto t = timer::make_host_timer(options);
    const auto fwd = t->job_type("forward");
    int streams[2];
    const std::int64_t per_step = state.range(0);
    std::int64_t i = 0;
    for (auto _ : state) {
      void* s = &streams[i & 1];
      t->begin(fwd, static_cast<std::int32_t>(i & 7), s);
      t->end(s);
      if (++i % per_step == 0) t->flush();
    }
    t->close();
  }
  fs::remove(path);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HostTimerBeginEnd)->Arg(64)->Arg(4096);

/// The two clock reads a host-timed job costs at least.
void BM_SteadyClockRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(timer::steady_ns());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SteadyClockRead);

}  // namespace
}  // namespace pipescope
