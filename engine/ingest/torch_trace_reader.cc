#include "ingest/torch_trace_reader.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "ingest/annotation_jobs.h"
#include "ingest/torch_trace_file_reader.h"
#include "ingest/trace_event_tokenizer.h"
#include "ingest/trace_pipeline_choice.h"
#include "model/errors.h"

namespace pipescope {

bool torch_trace_name(std::string_view name) {
  return name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz");
}

bool trace_json_content(std::string_view bytes) {
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < bytes.size() &&
           (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t')) {
      ++i;
    }
  };
  skip_space();
  if (i >= bytes.size() || bytes[i] != '{') return false;
  ++i;
  skip_space();
  const std::string_view rest = bytes.substr(i);
  for (const std::string_view key :
       {"\"schemaVersion\"", "\"traceEvents\"", "\"deviceProperties\"", "\"distributedInfo\""}) {
    if (rest.starts_with(key)) return true;
  }
  return false;
}

namespace {

/// The head of a trace, before its events, through the reading loop: the
/// tokenizer is fed until `stop` says so (or the file ends, or cannot be
/// read: the head is then simply not found).
class HeadReader final : public ChunkedFileReader {
 public:
  HeadReader(TraceEventTokenizer& tokenizer, std::function<bool()> stop)
      : tokenizer_(tokenizer), stop_(std::move(stop)) {}
  std::size_t chunk_bytes(std::uint64_t) const override { return kHeadReadBytes; }
  bool tokenize(ReadChunk& chunk) override {
    tokenizer_.feed(chunk.data(), chunk.size);
    return tokenizer_.error().empty() && !stop_();
  }
  bool end_pass(const PassEnd&) override { return false; }
  FileResult result() override { return {}; }

 private:
  // Only the head before the events is wanted: a small buffer, zeroed fast.
  static constexpr std::size_t kHeadReadBytes = std::size_t{256} << 10;
  TraceEventTokenizer& tokenizer_;
  std::function<bool()> stop_;
};

}  // namespace

TraceDistributedInfo torch_trace_distributed_info(const std::string& path) {
  TraceDistributedInfo info;
  bool found = false;
  TraceEventTokenizer tokenizer(
      {"distributedInfo"}, [](std::string_view, std::uint64_t) {},
      [&](std::string_view, std::string_view value) {
        found = true;
        simdjson::padded_string json(value);
        simdjson::dom::parser parser;
        simdjson::dom::element root;
        if (parser.parse(json).get(root) != simdjson::SUCCESS) return;
        auto small = [&](const char* key) -> std::optional<int> {
          std::int64_t v = 0;
          if (root[key].get_int64().get(v) == simdjson::SUCCESS && v >= 0 && v < (1 << 30)) {
            return static_cast<int>(v);
          }
          return std::nullopt;
        };
        info.rank = small("rank");
        info.world_size = small("world_size");
        if (info.world_size == 0) info.world_size.reset();
      });
  InputFile input;
  input.path = path;
  HeadReader head(tokenizer, [&] { return found || tokenizer.in_events(); });
  read_in_chunks(input, head, nullptr);
  return info;
}

namespace {

/// A rank's profiling windows (files discovery gave one device: a
/// torch.profiler schedule with repeat writes one trace per window) joined
/// into the earliest window's result, in time order: the later windows'
/// jobs follow its own (their lines after its lines), each window opened by
/// a step-start mark of its first ProfilerStep#N (StepStartLine::window), so
/// that the launch segments make each window a segment numbered as traced.
/// The later files keep their stats and lose their device. Throws
/// InputError when two traces of one rank overlap in time (the same window
/// twice, or two runs): they cannot be one device's windows.
void join_rank_windows(const std::vector<InputFile>& files, std::vector<FileResult>& results,
                       std::vector<std::optional<std::int64_t>>& lowest_stage) {
  std::map<int, std::vector<std::size_t>> by_device;
  for (std::size_t i = 0; i < files.size(); ++i) by_device[files[i].device].push_back(i);
  for (auto& [device, members] : by_device) {
    if (members.size() < 2) continue;
    struct Window {
      std::size_t file;
      std::int64_t first, last;
    };
    std::vector<Window> windows;
    for (const std::size_t i : members) {
      const JobVector& jobs = results[i].device.jobs;
      if (jobs.empty() || !results[i].has_device) continue;
      Window w{i, jobs.front().start_ns, jobs.front().end_ns};
      for (const Job& job : jobs) {
        w.first = std::min(w.first, job.start_ns);
        w.last = std::max(w.last, job.end_ns);
      }
      windows.push_back(w);
    }
    std::sort(windows.begin(), windows.end(),
              [](const Window& a, const Window& b) { return a.first < b.first; });
    for (std::size_t k = 1; k < windows.size(); ++k) {
      if (windows[k].first < windows[k - 1].last) {
        throw InputError(fmt::format(
            "{} and {} are both rank {}, and their jobs overlap in time: not two profiling "
            "windows of one run (the same window twice, or two runs?); analyse one of them",
            files[windows[k - 1].file].path, files[windows[k].file].path,
            files[windows[k].file].rank));
      }
    }
    if (windows.size() < 2) continue;
    FileResult& into = results[windows.front().file];
    std::uint64_t offset = 0;
    for (const Job& job : into.device.jobs) offset = std::max<std::uint64_t>(offset, job.line);
    for (std::size_t k = 1; k < windows.size(); ++k) {
      FileResult& from = results[windows[k].file];
      // The mark between the windows' lines: after every earlier line,
      // before every line of this window.
      const std::uint64_t mark = offset + 1;
      if (from.first_step) into.device.step_starts.push_back({mark, *from.first_step, true});
      std::uint64_t last_line = mark;
      for (Job job : from.device.jobs) {
        job.type = into.types.intern(from.types.name(job.type));
        job.line = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(mark + job.line, std::numeric_limits<std::uint32_t>::max()));
        job.job_id = static_cast<std::int64_t>(into.device.jobs.size());
        last_line = std::max<std::uint64_t>(last_line, job.line);
        into.device.jobs.push_back(job);
      }
      offset = last_line;
      from.device.jobs.clear();
      from.has_device = false;
      lowest_stage[windows[k].file].reset();
    }
  }
}

/// A rank's profiling windows for the kernel view: the later windows' GPU
/// activities joined into the earliest window's record, in time order (its
/// steps are the windows' ProfilerStep#N, numbered as traced; the time
/// between windows is in no step). Throws InputError when two traces of one
/// rank overlap in time, as join_rank_windows does.
void join_rank_kernel_windows(const std::vector<InputFile>& files,
                              std::vector<FileResult>& results) {
  std::map<int, std::vector<std::size_t>> by_device;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!results[i].kernels.empty() && results[i].kernels.front().activities > 0) {
      by_device[files[i].device].push_back(i);
    }
  }
  for (auto& [device, members] : by_device) {
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      return results[a].kernels.front().first_start < results[b].kernels.front().first_start;
    });
    RankKernels& into = results[members.front()].kernels.front();
    for (std::size_t k = 1; k < members.size(); ++k) {
      RankKernels& from = results[members[k]].kernels.front();
      if (from.first_start < into.last_end) {
        throw InputError(fmt::format(
            "{} and {} are both rank {}, and their GPU activities overlap in time: not two "
            "profiling windows of one run (the same window twice, or two runs?); analyse one "
            "of them",
            files[members[k - 1]].path, files[members[k]].path, files[members[k]].rank));
      }
      for (const TimeSpan& s : from.compute) {
        if (!into.compute.empty() && s.start <= into.compute.back().end) {
          into.compute.back().end = std::max(into.compute.back().end, s.end);
        } else {
          into.compute.push_back(s);
        }
      }
      for (CommKernel& c : from.comm) into.comm.push_back(std::move(c));
      into.steps.insert(into.steps.end(), from.steps.begin(), from.steps.end());
      into.step_spans = into.step_spans || from.step_spans;
      into.activities += from.activities;
      into.without_launch += from.without_launch;
      into.last_end = std::max(into.last_end, from.last_end);
      into.cut_ns = std::min(into.cut_ns, from.cut_ns);
      if (into.global_rank < 0) into.global_rank = from.global_rank;
      if (into.world_size == 0) into.world_size = from.world_size;
      if (into.device_ordinal < 0) into.device_ordinal = from.device_ordinal;
      if (from.comm_rank != -1 && into.comm_rank != from.comm_rank) {
        into.comm_rank = into.comm_rank == -1 ? from.comm_rank : RankKernels::kConflict;
      }
      results[members[k]].kernels.clear();
    }
    std::stable_sort(into.steps.begin(), into.steps.end(),
                     [](const RankKernels::StepExtent& a, const RankKernels::StepExtent& b) {
                       return a.step < b.step;
                     });
  }
}

}  // namespace

FileResult read_torch_trace(const InputFile& input, const ReadOptions& read,
                            const TorchTraceOptions& options) {
  TorchTraceFileReader reader(input, read, options);
  return read_in_chunks(input, reader, nullptr);
}

namespace {

/// The traces of a run: one reader per file, then the rank's windows joined,
/// the pipeline chosen, and one host-timed warning for the run.
class TorchTraceFormat final : public ChunkedFormat {
 public:
  TorchTraceFormat(const std::vector<InputFile>& files, const ReadOptions& read,
                   const PipelineChoice& choice, const TorchTraceOptions& options)
      : files_(files),
        read_(read),
        choice_(choice),
        options_(options),
        lowest_stage_(files.size()) {}

  std::unique_ptr<ChunkedFileReader> open(std::size_t i) override {
    return std::make_unique<TorchTraceFileReader>(files_[i], read_, options_, &lowest_stage_[i]);
  }

  void gather(std::vector<FileResult>& results) override {
    join_rank_windows(files_, results, lowest_stage_);
    join_rank_kernel_windows(files_, results);
    choose_trace_pipeline(files_, lowest_stage_, choice_, *read_.words, results);
    merge_host_timed_notes(results, "traces");
  }

 private:
  const std::vector<InputFile>& files_;
  const ReadOptions& read_;
  const PipelineChoice& choice_;
  const TorchTraceOptions& options_;
  std::vector<std::optional<std::int64_t>> lowest_stage_;
};

}  // namespace

std::unique_ptr<ChunkedFormat> torch_trace_format(const std::vector<InputFile>& files,
                                                  const ReadOptions& read,
                                                  const PipelineChoice& choice,
                                                  const TorchTraceOptions& options) {
  return std::make_unique<TorchTraceFormat>(files, read, choice, options);
}

}  // namespace pipescope
