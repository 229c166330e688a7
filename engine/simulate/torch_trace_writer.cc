#include "simulate/torch_trace_writer.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "io/atomic_output.h"
#include "simulate/output_folder.h"

namespace pipescope::sim {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
// Host launch spans lie this far before the GPU work (ns).
constexpr std::int64_t kHostLeadNs = 10'000;
constexpr std::int64_t kHostSpanNs = 5'000;
constexpr std::int64_t kLaunchAfterNs = 2'000;

// One rank's trace being written to its temporary file (io::AtomicOutput;
// destroyed uncommitted, the file is removed).
class RankTrace {
 public:
  RankTrace(fs::path path, int rank, int world, std::int64_t base_ns)
      : path_(std::move(path)), output_(path_.string()), base_(base_ns) {
    pid_ = 1000 + rank;
    fmt::format_to(std::back_inserter(out_),
                   "{{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {{\"backend\": \"nccl\", "
                   "\"rank\": {}, \"world_size\": {}}},\n  \"traceEvents\": [\n",
                   rank, world);
  }
  const fs::path& path() const { return path_; }
  std::uint64_t bytes() const { return written_ + out_.size(); }
  std::uint64_t jobs() const { return jobs_; }

  void span(std::string_view cat, std::string_view name, int pid, int tid, std::int64_t start,
            std::int64_t end, std::int64_t external_id, std::int64_t correlation = -1) {
    fmt::format_to(std::back_inserter(out_),
                   "{}  {{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {}, \"ts\": ",
                   first_ ? "" : ",\n", cat, name, pid, tid);
    append_us(out_, start - base_);
    out_.append(std::string_view(", \"dur\": "));
    append_us(out_, end - start);
    fmt::format_to(std::back_inserter(out_), ", \"args\": {{\"External id\": {}", external_id);
    if (correlation >= 0)
      fmt::format_to(std::back_inserter(out_), ", \"correlation\": {}", correlation);
    out_.append(std::string_view("}}"));
    first_ = false;
    if (out_.size() >= kFlushBytes) flush();
  }

  /// One job: its CPU span and, by `style`, how its GPU interval shows.
  void job(std::string_view label, const SimJob& job, int style) {
    const std::string name = fmt::format("PP:{}", label);
    const std::int64_t id = ++external_;
    const std::int64_t host = job.start_ns - kHostLeadNs;
    span("user_annotation", name, pid_, pid_, host, host + kHostSpanNs, id);
    ++jobs_;
    if (style == 0) {
      span("gpu_user_annotation", name, 0, 7, job.start_ns, job.end_ns, id);
      return;
    }
    const std::int64_t correlation = ++correlation_;
    span("cuda_runtime", "cudaLaunchKernel", pid_, pid_, host + kLaunchAfterNs,
         host + kLaunchAfterNs + 1'000, id, correlation);
    span("kernel", "void pipeline_stage_kernel<float>()", 0, 7, job.start_ns, job.end_ns, id,
         correlation);
    if (style == 2) {
      // A GPU span that misses most of the kernel, as real traces show: the
      // kernel's interval wins.
      span("gpu_user_annotation", name, 0, 7, job.start_ns, job.start_ns + 1'000, id);
    }
  }

  void close(std::string_view trace_name) {
    fmt::format_to(std::back_inserter(out_),
                   "\n  ],\n  \"traceName\": \"{}\",\n  \"displayTimeUnit\": \"ms\",\n"
                   "  \"baseTimeNanoseconds\": {}\n}}\n",
                   trace_name, base_);
    flush();
    output_.close_descriptor();
  }
  /// Renames the closed trace into place (once every trace is closed).
  void commit() { output_.commit(); }

  int pid() const { return pid_; }

 private:
  void flush() {
    if (out_.size() == 0) return;
    output_.write(out_.data(), out_.size());
    written_ += out_.size();
    out_.clear();
  }

  fs::path path_;
  io::AtomicOutput output_;
  std::int64_t base_;
  fmt::memory_buffer out_;
  bool first_ = true;
  int pid_ = 0;
  std::int64_t external_ = 0;
  std::int64_t correlation_ = 0;
  std::uint64_t written_ = 0;
  std::uint64_t jobs_ = 0;
};

}  // namespace

namespace {

bool is_ours(const std::string& name) {
  return name.ends_with(".pt.trace.json") || name.ends_with(".sqlite") || name == "expected.json" ||
         name == "simulation.json" || io::is_atomic_temp_name(name);
}

}  // namespace

void prepare_trace_dir(const fs::path& dir, bool force, const OptionWords& words) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      throw std::invalid_argument(fmt::format("{} exists and is not a folder", dir.string()));
    }
    if (!fs::is_empty(dir, ec)) {
      if (!force) {
        throw non_empty_folder_error(dir, "traces", words);
      }
      for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (!entry.is_directory() && is_ours(entry.path().filename().string())) {
          fs::remove(entry.path());
        }
      }
    }
  }
  fs::create_directories(dir);
}

std::string torch_action_label(const SimJob& job, const ScheduleShape& shape, int stage) {
  const int g = global_stage(shape, stage, job.chunk);
  std::string_view op;
  switch (job.type) {
    case SimJobType::forward:
      op = "F";
      break;
    case SimJobType::backward:
      op = "B";
      break;
    case SimJobType::backward_b:
      op = "I";
      break;
    case SimJobType::backward_w:
      op = "W";
      break;
    case SimJobType::send_forward:
      op = "SEND_F";
      break;
    case SimJobType::recv_forward:
      op = "RECV_F";
      break;
    case SimJobType::send_backward:
      op = "SEND_B";
      break;
    case SimJobType::recv_backward:
      op = "RECV_B";
      break;
    case SimJobType::optimizer:
    case SimJobType::lr:
      return {};
  }
  return fmt::format("{}{}{}", g, op, job.micro_batch);
}

WriteReport write_torch_traces(const SimConfig& config, const TorchTraceOptions& options) {
  if (options.dir.empty()) throw std::invalid_argument("no output folder given");
  if (config.lr_jobs) {
    throw std::invalid_argument("PyTorch traces have no lr jobs (they are Paddle's)");
  }
  if (options.first_step < 0 || options.first_step > 1'000'000'000'000) {
    throw std::invalid_argument(
        fmt::format("first step must be in 0..10^12, got {}", options.first_step));
  }
  Simulator simulator(config);
  const auto& devices = simulator.devices();
  prepare_trace_dir(options.dir, options.force, *config.words);
  // Whole seconds, 10 s before the run: every host time is after it.
  const std::int64_t base =
      std::max<std::int64_t>(0, (config.start_ns / 1'000'000'000 - 10)) * 1'000'000'000;
  // Should anything throw, every trace not yet committed is removed as these
  // go out of scope.
  std::vector<std::unique_ptr<RankTrace>> traces;
  WriteReport report;
  for (const auto& device : devices) {
    fs::path folder = options.dir;
    if (config.machines > 1) {
      folder /= fmt::format("machine{}", device.machine);
      fs::create_directories(folder);
    }
    traces.push_back(
        std::make_unique<RankTrace>(folder / fmt::format("rank{}.pt.trace.json", device.index),
                                    device.index, static_cast<int>(devices.size()), base));
  }
  ExpectedMetricsBuilder expected(devices, options.first_step);
  std::vector<std::vector<SimJob>> step_jobs;
  std::vector<std::uint64_t> style(devices.size(), 0);
  while (simulator.steps_done() < config.steps) {
    simulator.next_step(step_jobs);
    for (std::size_t d = 0; d < traces.size(); ++d) {
      RankTrace& trace = *traces[d];
      const auto& jobs = step_jobs[d];
      if (jobs.empty()) continue;
      // One ProfilerStep#N span per step around its jobs' host spans.
      std::int64_t first = jobs.front().start_ns, last = jobs.front().end_ns;
      for (const SimJob& job : jobs) {
        first = std::min(first, job.start_ns);
        last = std::max(last, job.end_ns);
      }
      const std::int64_t step = options.first_step + jobs.front().step;
      trace.span("user_annotation", fmt::format("ProfilerStep#{}", step), trace.pid(), trace.pid(),
                 first - kHostLeadNs - 1'000, last, static_cast<std::int64_t>(step));
      for (const SimJob& job : jobs) {
        const std::string label = torch_action_label(job, config.shape, devices[d].stage);
        if (label.empty()) {
          trace.span("user_annotation", "Optimizer.step#SGD.step", trace.pid(), trace.pid(),
                     job.start_ns, job.end_ns, 0);
          continue;
        }
        trace.job(label, job, static_cast<int>(style[d]++ % 3));
        expected.add_job(static_cast<int>(d), job.step, job.start_ns, job.end_ns,
                         is_comm_job(job.type));
      }
    }
  }
  for (auto& trace : traces) trace->close(trace->path().filename().string());
  for (auto& trace : traces) trace->commit();
  report.write_description(
      options.dir, expected.finish(),
      fmt::format("{{\"format\": \"torch\", {}, \"machines\": {}, \"seed\": {}, "
                  "\"start_ns\": {}, \"comm_jobs\": {}, \"first_step\": {}}}\n",
                  simulation_shape_fields(config, simulator.steps_done()), config.machines,
                  config.seed, config.start_ns, config.comm_jobs, options.first_step));
  for (const auto& trace : traces) {
    report.add({trace->path(), trace->bytes(), 0, trace->jobs()});
  }
  report.steps = simulator.steps_done();
  report.devices = static_cast<int>(devices.size());
  report.machines = config.machines;
  return report;
}

void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace pipescope::sim
