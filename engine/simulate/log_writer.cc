#include "simulate/log_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "io/atomic_output.h"
#include "records/ivl_writer.h"
#include "simulate/log_events.h"
#include "simulate/log_format.h"
#include "simulate/noise.h"
#include "simulate/output_folder.h"

namespace pipescope::sim {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kJobSource = "standalone_executor.cc:217";
constexpr std::string_view kFirstStepSource = "pipeline_parallel.py:1288";
// Unshuffled output is written in chunks of about this size.
constexpr std::size_t kDirectFlushBytes = std::size_t{1} << 20;
// Shuffled job lines are held back (and shuffled) in blocks of about this
// size over all files: one block for small runs, i.e. a whole-file shuffle.
constexpr std::size_t kShuffleBlockBytes = std::size_t{64} << 20;
constexpr int kMaxNoisePerJob = 100'000;

bool is_numbered(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool is_ours(std::string_view name) {
  return is_numbered(name, "workerlog.") || name == "expected.json" || name == "simulation.json" ||
         io::is_atomic_temp_name(name) || name.ends_with(".ivl");
}

// Creates dir, or empties it of what a previous simulation wrote (only with
// force; nothing else in it is touched).
void prepare_dir(const fs::path& dir, bool force, const OptionWords& words) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      throw std::invalid_argument(fmt::format("{} exists and is not a folder", dir.string()));
    }
    if (!fs::is_empty(dir, ec)) {
      if (!force) {
        throw non_empty_folder_error(dir, "worker logs", words);
      }
      for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory() && is_numbered(name, "machine")) {
          for (const auto& inner : fs::directory_iterator(entry.path())) {
            if (is_ours(inner.path().filename().string())) fs::remove(inner.path());
          }
          if (fs::is_empty(entry.path())) fs::remove(entry.path());
        } else if (!entry.is_directory() && is_ours(name)) {
          fs::remove(entry.path());
        }
      }
    }
  }
  fs::create_directories(dir);
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  return SplitMix(a * 0x9E3779B97F4A7C15ULL ^ b).next();
}

// One worker log being written: renders lines into memory, shuffles them in
// blocks when asked, and writes big chunks to its temporary file
// (io::AtomicOutput; destroyed uncommitted, the file is removed).
class DeviceLog {
 public:
  DeviceLog(fs::path path, const SimDeviceInfo& device, int stages, std::uint64_t seed,
            const LogWriterOptions& options, const std::vector<std::string>& type_names, int chunks)
      : path_(std::move(path)),
        output_(path_.string()),
        options_(options),
        type_names_(type_names),
        chunks_(chunks),
        thread_id_(static_cast<int>(20000 + mix(seed, device.index) % 40000)),
        random_(mix(seed, 1000 + device.index)),
        noise_(mix(seed, 2000 + device.index), thread_id_, device.rank, stages),
        counters_(type_names.size(), 0) {
    eol_ = options.crlf ? "\r\n" : "\n";
  }

  const fs::path& path() const { return path_; }
  std::uint64_t bytes() const { return written_ + pending_bytes(); }
  std::uint64_t lines() const { return lines_; }
  std::uint64_t jobs() const { return jobs_; }
  std::size_t pending_bytes() const {
    return direct_.size() + jobs_text_.size() + noise_text_.size();
  }

  /// A GLOG line of this device's process after the latest job (or at the top).
  void add_glog_line(std::int64_t ns, std::string_view source, std::string_view text) {
    fmt::memory_buffer line;
    append_glog_prefix(line, 'I', ns + options_.utc_offset_ns, thread_id_, source);
    append_text(line, text);
    add_line(std::string_view(line.data(), line.size()));
  }

  /// A line after the latest job (or at the top of the file before any job).
  void add_line(std::string_view text) {
    auto& out = in_block() ? noise_text_ : direct_;
    append_text(out, text);
    end_line(out);
    extend_group();
  }

  /// `count` noise lines after the latest job (or at the top of the file).
  void add_noise(std::int64_t ns, int count) {
    auto& out = in_block() ? noise_text_ : direct_;
    for (int i = 0; i < count; ++i) {
      const bool colour = options_.ansi && random_.below(6) == 0;
      if (colour) append_text(out, "\x1b[33m");
      noise_.append_line(out, ns + i * 137'000 + options_.utc_offset_ns);
      if (colour) append_text(out, "\x1b[0m");
      end_line(out);
    }
    extend_group();
  }

  /// A job line, then `after` (event lines), then the job's noise.
  void add_job(const SimJob& job, const std::vector<std::string>& after = {}) {
    const std::size_t slot = static_cast<std::size_t>(job.type) * chunks_ + job.chunk;
    std::int64_t id = 0;
    switch (options_.job_id) {
      case JobIdStyle::index:
        id = next_index_++;
        break;
      case JobIdStyle::counter:
        id = counters_[slot]++;
        break;
      case JobIdStyle::micro_batch:
        id = job.micro_batch;
        break;
    }
    if (options_.shuffle) {
      const std::size_t begin = jobs_text_.size();
      render_job(jobs_text_, job, type_names_[slot], id);
      job_slices_.emplace_back(begin, jobs_text_.size() - begin);
      noise_groups_.emplace_back(noise_text_.size(), 0);
    } else {
      render_job(direct_, job, type_names_[slot], id);
    }
    ++jobs_;
    for (const std::string& line : after) add_line(line);
    const int noise = options_.noise_per_job == 0
                          ? 0
                          : static_cast<int>(random_.below(2 * options_.noise_per_job + 1));
    add_noise(job.end_ns + 50'000, noise);
  }

  /// Writes out what is held back once it exceeds `limit` bytes.
  void flush_if_over(std::size_t limit) {
    if (pending_bytes() >= limit) flush();
  }

  void flush() {
    if (options_.shuffle) {
      // Fisher-Yates over the job lines; the noise after each position stays.
      const std::size_t n = job_slices_.size();
      for (std::size_t i = n; i > 1; --i) {
        std::swap(job_slices_[i - 1], job_slices_[random_.below(i)]);
      }
      for (std::size_t i = 0; i < n; ++i) {
        const auto [job_begin, job_size] = job_slices_[i];
        direct_.append(jobs_text_.data() + job_begin, jobs_text_.data() + job_begin + job_size);
        const auto [noise_begin, noise_size] = noise_groups_[i];
        direct_.append(noise_text_.data() + noise_begin,
                       noise_text_.data() + noise_begin + noise_size);
        if (direct_.size() >= kDirectFlushBytes) write_direct();
      }
      jobs_text_.clear();
      noise_text_.clear();
      job_slices_.clear();
      noise_groups_.clear();
    }
    write_direct();
  }

  /// Flushes and closes the temporary file; commit() then renames it, once
  /// every log is closed, so the logs appear together.
  void close() {
    flush();
    output_.close_descriptor();
  }
  void commit() { output_.commit(); }

 private:
  void end_line(fmt::memory_buffer& out) {
    append_text(out, eol_);
    ++lines_;
  }

  // Shuffle mode holds a block of job lines back; text after a job line
  // belongs to that job's position, which the shuffle keeps.
  bool in_block() const { return options_.shuffle && !job_slices_.empty(); }

  void extend_group() {
    if (in_block()) noise_groups_.back().second = noise_text_.size() - noise_groups_.back().first;
  }

  void render_job(fmt::memory_buffer& out, const SimJob& job, std::string_view type,
                  std::int64_t id) {
    // 0: whole line coloured, 1: GLOG prefix coloured, 2: erase-line code.
    const std::uint64_t r = random_.next();
    const int ansi = options_.ansi ? static_cast<int>(r % 6) : -1;
    if (ansi == 0) append_text(out, "\x1b[0;32m");
    if (ansi == 1) append_text(out, "\x1b[1m");
    if (ansi == 2) append_text(out, "\x1b[2K");
    append_glog_prefix(out, 'I', job.end_ns + options_.utc_offset_ns, thread_id_, kJobSource);
    if (ansi == 1) append_text(out, "\x1b[0m");
    append_text(out, "Profiler Info: Job (");
    append_int(out, id);
    append_text(out, "), type = ");
    append_text(out, type);
    append_text(out, ", micro_batch_id = ");
    append_int(out, job.micro_batch);
    append_text(out, ", job_start_time = ");
    append_ms_time(out, job.start_ns, options_.time_decimals, r >> 8);
    append_text(out, ", job_end_time = ");
    append_ms_time(out, job.end_ns, options_.time_decimals, r >> 24);
    if (ansi == 0) append_text(out, "\x1b[0m");
    end_line(out);
  }

  void write_direct() {
    if (direct_.size() == 0) return;
    output_.write(direct_.data(), direct_.size());
    written_ += direct_.size();
    direct_.clear();
  }

  fs::path path_;
  io::AtomicOutput output_;
  const LogWriterOptions& options_;
  const std::vector<std::string>& type_names_;
  int chunks_;
  int thread_id_;
  SplitMix random_;
  NoiseGenerator noise_;
  std::vector<std::int64_t> counters_;
  std::int64_t next_index_ = 0;
  std::string_view eol_;
  std::uint64_t written_ = 0;
  std::uint64_t lines_ = 0;
  std::uint64_t jobs_ = 0;
  // Unshuffled text, in file order.
  fmt::memory_buffer direct_;
  // Shuffle mode: job lines and the noise after each, held back until flush().
  fmt::memory_buffer jobs_text_;
  fmt::memory_buffer noise_text_;
  std::vector<std::pair<std::size_t, std::size_t>> job_slices_;
  std::vector<std::pair<std::size_t, std::size_t>> noise_groups_;
};

std::string simulation_json(const SimConfig& config, const LogWriterOptions& options, int steps) {
  auto id_name = [](JobIdStyle style) {
    switch (style) {
      case JobIdStyle::index:
        return "index";
      case JobIdStyle::counter:
        return "counter";
      case JobIdStyle::micro_batch:
        return "microbatch";
    }
    return "index";
  };
  return fmt::format(
      "{{{}, \"machines\": {}, \"seed\": {}, "
      "\"start_ns\": {}, \"resolution_ns\": {}, \"comm_jobs\": {}, \"noise_per_job\": {}, "
      "\"shuffle\": {}, \"ansi\": {}, \"crlf\": {}, \"time_decimals\": {}, "
      "\"chunk_names\": \"{}\", \"job_id\": \"{}\"{}}}\n",
      simulation_shape_fields(config, steps), config.machines, config.seed, config.start_ns,
      config.resolution_ns, config.comm_jobs, options.noise_per_job, options.shuffle, options.ansi,
      options.crlf, options.time_decimals,
      options.chunk_naming == ChunkNaming::paren ? "paren" : "digit", id_name(options.job_id),
      config.lr_jobs ? ", \"lr_jobs\": true" : "");
}

void validate(const LogWriterOptions& options) {
  if (options.dir.empty()) throw std::invalid_argument("no output folder given");
  if (options.time_decimals != 3 && options.time_decimals != 6 && options.time_decimals != 9) {
    throw std::invalid_argument(
        fmt::format("time decimals must be 3, 6 or 9, got {}", options.time_decimals));
  }
  if (options.noise_per_job < 0 || options.noise_per_job > kMaxNoisePerJob) {
    throw std::invalid_argument(fmt::format("noise lines per job must be in 0..{}, got {}",
                                            kMaxNoisePerJob, options.noise_per_job));
  }
  constexpr std::int64_t kQuarterHour = 15LL * 60 * 1'000'000'000;
  if (options.utc_offset_ns % kQuarterHour != 0 || options.utc_offset_ns > 56 * kQuarterHour ||
      options.utc_offset_ns < -56 * kQuarterHour) {
    throw std::invalid_argument(
        "the UTC offset must be a whole number of quarter hours within "
        "±14 hours");
  }
  if (options.events && options.shuffle) {
    throw std::invalid_argument(
        "events are written in time order beside their job lines: "
        "not with shuffled job lines");
  }
  if (options.first_step && (*options.first_step < 0 || *options.first_step > 1'000'000'000'000)) {
    throw std::invalid_argument(
        fmt::format("first step must be in 0..10^12, got {}", *options.first_step));
  }
}

}  // namespace

std::string simulation_shape_fields(const SimConfig& config, int steps) {
  return fmt::format(
      "\"schedule\": \"{}\", \"stages\": {}, \"micro_batches\": {}, \"chunks\": {}, "
      "\"steps\": {}, \"devices_per_stage\": {}",
      schedule_kind_name(config.shape.kind), config.shape.stages, config.shape.micro_batches,
      config.shape.chunks, steps, config.devices_per_stage);
}

void WriteReport::write_description(const fs::path& dir, ExpectedMetrics metrics,
                                    std::string_view simulation) {
  expected = std::move(metrics);
  expected_path = dir / "expected.json";
  io::write_file_atomically(expected_path.string(), expected_metrics_json(expected));
  io::write_file_atomically((dir / "simulation.json").string(), simulation);
}

WriteReport write_simulated_logs(const SimConfig& config, const LogWriterOptions& options) {
  validate(options);
  Simulator simulator(config);
  const auto& devices = simulator.devices();
  const int chunks = config.shape.chunks;
  const bool chunked = has_chunks(config.shape.kind);

  // Type names by (SimJobType, chunk), built once.
  // lr only when logged, so that the .ivl type table of other runs is unchanged.
  const int type_count =
      static_cast<int>(config.lr_jobs ? SimJobType::lr : SimJobType::recv_backward) + 1;
  std::vector<std::string> type_names;
  for (int t = 0; t < type_count; ++t) {
    for (int c = 0; c < chunks; ++c) {
      SimJob job;
      job.type = static_cast<SimJobType>(t);
      job.chunk = static_cast<std::int16_t>(c);
      type_names.push_back(job_type_name(job, chunked, options.chunk_naming));
    }
  }

  prepare_dir(options.dir, options.force, *config.words);
  std::vector<std::unique_ptr<DeviceLog>> logs;
  logs.reserve(devices.size());
  // --ivl: the same jobs as .ivl records, one writer per device, one block per step.
  if (!options.ivl_dir.empty() &&
      fs::weakly_canonical(options.ivl_dir) == fs::weakly_canonical(options.dir)) {
    throw std::invalid_argument("the .ivl folder must differ from the worker log folder");
  }
  if (!options.ivl_dir.empty()) prepare_dir(options.ivl_dir, options.force, *config.words);
  // Each .ivl file is written by its writer through the temporary file of
  // an io::AtomicOutput. Should anything throw, every file not yet committed
  // is removed as these go out of scope.
  std::vector<io::AtomicOutput> ivl_outputs;
  ivl_outputs.reserve(options.ivl_dir.empty() ? 0 : devices.size());
  std::vector<std::unique_ptr<ivl::Writer>> ivls;

  WriteReport report;
  for (const auto& device : devices) {
    fs::path folder = options.dir;
    if (config.machines > 1) {
      folder /= fmt::format("machine{}", device.machine);
      fs::create_directories(folder);
    }
    logs.push_back(std::make_unique<DeviceLog>(folder / fmt::format("workerlog.{}", device.rank),
                                               device, config.shape.stages, config.seed, options,
                                               type_names, chunks));
    if (!options.ivl_dir.empty()) {
      const fs::path ivl_folder = options.ivl_dir / folder.lexically_relative(options.dir);
      fs::create_directories(ivl_folder);
      io::AtomicOutput& output = ivl_outputs.emplace_back(
          (ivl_folder / fmt::format("workerlog.{}.ivl", device.rank)).string());
      output.close_descriptor();  // the writer opens the temporary file by its path
      ivl::FileInfo info;
      info.machine = device.machine;
      info.rank = device.rank;
      info.machine_name = config.machines > 1 ? fmt::format("machine{}", device.machine) : "";
      info.producer = "pipescope simulate";
      info.anchor_realtime_ns = config.start_ns;
      info.first_step = options.first_step;
      info.types = type_names;  // id = type * chunks + chunk, as in DeviceLog::add_job
      ivls.push_back(std::make_unique<ivl::Writer>(output.temp_path(), info));
    }
  }

  const std::int64_t start = config.start_ns;
  for (auto& log : logs) {
    if (options.first_step) {
      log->add_glog_line(start - 6'000'000'000, kFirstStepSource,
                         fmt::format("Schedule Profiler start at step {}", *options.first_step));
    }
    log->add_noise(start - 5'000'000'000, options.noise_per_job);
  }

  ExpectedMetricsBuilder expected(devices, options.first_step.value_or(0));
  EventPlan events(config, options.utc_offset_ns);
  std::vector<std::vector<std::string>> after(0);
  std::vector<std::vector<SimJob>> step_jobs;
  const std::size_t block_limit =
      options.shuffle ? std::max(kShuffleBlockBytes / devices.size(), std::size_t{4} << 20)
                      : kDirectFlushBytes;
  const int decimals = options.time_decimals;
  for (;;) {
    const int step = simulator.steps_done();
    simulator.next_step(step_jobs);
    std::uint64_t total = 0;
    for (std::size_t d = 0; d < logs.size(); ++d) {
      // The event lines of this step, by the job they follow.
      after.assign(step_jobs[d].size(), {});
      if (options.events) {
        const SimDeviceInfo& device = devices[d];
        std::int64_t next_start = simulator.step_start(device.stage);
        if (!config.machine_skew_ns.empty()) next_start += config.machine_skew_ns[device.machine];
        for (EventLine& line : events.lines_after_jobs(device, step, step_jobs[d], next_start)) {
          after[line.after_job].push_back(std::move(line.text));
        }
      }
      for (std::size_t j = 0; j < step_jobs[d].size(); ++j) {
        const SimJob& job = step_jobs[d][j];
        logs[d]->add_job(job, after[j]);
        if (!ivls.empty()) {
          const auto slot =
              static_cast<std::uint32_t>(static_cast<int>(job.type) * chunks + job.chunk);
          ivls[d]->append({printed_ns(job.start_ns, decimals), printed_ns(job.end_ns, decimals),
                           slot, job.micro_batch,
                           static_cast<std::int32_t>(options.first_step.value_or(0) + job.step),
                           0});
        }
        expected.add_job(static_cast<int>(d), job.step, printed_ns(job.start_ns, decimals),
                         printed_ns(job.end_ns, decimals), is_comm_job(job.type));
      }
      if (simulator.steps_done() == 1 && options.first_step && options.noise_per_job > 0) {
        // Only the first occurrence in a file counts; a later one must be ignored.
        logs[d]->add_glog_line(
            step_jobs[d].back().end_ns, kFirstStepSource,
            fmt::format("Schedule Profiler start at step {}", *options.first_step + 1000));
      }
      logs[d]->flush_if_over(block_limit);
      if (!ivls.empty()) ivls[d]->flush();
      total += logs[d]->bytes();
    }
    if (simulator.steps_done() >= config.steps && total >= options.target_bytes) break;
  }

  for (auto& log : logs) log->close();
  for (auto& log : logs) log->commit();
  for (std::size_t d = 0; d < ivls.size(); ++d) {
    ivls[d]->close();
    ivl_outputs[d].commit();
  }

  ExpectedMetrics metrics = expected.finish();
  if (options.events) metrics.events_json = events.expected_json(metrics);
  report.write_description(options.dir, std::move(metrics),
                           simulation_json(config, options, simulator.steps_done()));

  for (const auto& log : logs) {
    report.add({log->path(), log->bytes(), log->lines(), log->jobs()});
  }
  report.steps = simulator.steps_done();
  report.devices = static_cast<int>(devices.size());
  report.machines = config.machines;
  return report;
}

}  // namespace pipescope::sim
