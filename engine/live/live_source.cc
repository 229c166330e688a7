#include "live/live_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>

#include "ingest/dygraph_reader.h"
#include "ingest/ivl_import.h"
#include "ingest/torch_trace_reader.h"
#include "source/file_follower.h"

namespace pipescope {

struct LiveSources::Source {
  InputFile input;
  /// Text worker logs and dygraph records.
  std::optional<FileFollower> follower;
  std::unique_ptr<DygraphFollowReader> dygraph;
  /// Whether its stage's pipeline was chosen (then `dygraph_analysed` says
  /// whether it is this file); until then what it read waits in `pending`.
  bool dygraph_decided = false;
  bool dygraph_analysed = false;
  std::vector<FileResult> pending;
  bool pending_restarted = false;
  /// .ivl records.
  std::unique_ptr<IvlFollowImport> ivl;
  /// .ivl records and traces: the file last seen (a truncated or replaced
  /// file is read again).
  dev_t dev = 0;
  ino_t inode = 0;
  std::int64_t size = -1;
  std::int64_t mtime_ns = -1;
  /// Traces: read (complete), or the size and time whose read found the
  /// document incomplete (tried again once the file changes).
  bool trace_done = false;
  int trace_reads = 0;
  std::int64_t trace_tried_size = -1;
  std::int64_t trace_tried_mtime_ns = -1;
  /// Said once: why the file is not read on.
  std::string stopped;
};

LiveSources::LiveSources(LiveSourceOptions options) : options_(std::move(options)) {}

LiveSources::~LiveSources() = default;

void LiveSources::set_inputs(const std::vector<InputFile>& inputs, LiveRun& live) {
  live.set_inputs(inputs);
  for (const InputFile& input : inputs) {
    auto& source = sources_[input.path];
    if (source) {
      source->input = input;
      continue;
    }
    source = std::make_unique<Source>();
    source->input = input;
    switch (input.format) {
      case InputFormat::worker_log:
        source->follower.emplace(input.path, options_.look_bytes);
        break;
      case InputFormat::paddle_dygraph:
        source->follower.emplace(input.path, options_.look_bytes);
        source->dygraph =
            std::make_unique<DygraphFollowReader>(input, options_.ingest.diagnostics_per_file);
        break;
      case InputFormat::ivl:
        source->ivl = std::make_unique<IvlFollowImport>(input);
        break;
      case InputFormat::torch_trace:
        break;
    }
  }
}

LiveSources::Look LiveSources::look(LiveRun& live) {
  Look look;
  for (auto& [path, source] : sources_) look_at(*source, live, look);
  place_dygraph(live);
  return look;
}

std::vector<std::string> LiveSources::take_notes() { return std::exchange(notes_, {}); }

namespace {

/// stat(2) of `path`; false when it is missing now.
bool stat_file(const std::string& path, struct stat& st) { return ::stat(path.c_str(), &st) == 0; }

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

/// Places the dygraph files whose stage is known: of each stage, the K-th
/// rank (IngestOptions::pipeline, 0 by default) in rank order among the files
/// that named it, as analyze chooses among all, once that many have; the
/// others are left out. Decided at the end of a look, so files read in the
/// same look are chosen among together.
void LiveSources::place_dygraph(LiveRun& live) {
  const auto chosen = static_cast<std::size_t>(std::max(options_.ingest.pipeline.value_or(0), 0));
  std::map<int, std::vector<Source*>> by_stage;  // every file that named the stage
  for (auto& [path, source] : sources_) {
    if (source->dygraph && source->dygraph->stage() >= 0) {
      by_stage[source->dygraph->stage()].push_back(source.get());
    }
  }
  auto flush = [&](Source& source) {
    for (std::size_t i = 0; i < source.pending.size(); ++i) {
      live.add_jobs(source.input.path, source.pending[i], i == 0 && source.pending_restarted);
    }
    source.pending.clear();
    source.pending_restarted = false;
  };
  for (auto& [stage, files] : by_stage) {
    std::sort(files.begin(), files.end(),
              [](const Source* a, const Source* b) { return a->input.rank < b->input.rank; });
    const auto analysed = std::find_if(files.begin(), files.end(),
                                       [](const Source* f) { return f->dygraph_analysed; });
    if (analysed == files.end() && files.size() <= chosen) continue;  // wait for more ranks
    const Source* pick = analysed != files.end() ? *analysed : files[chosen];
    for (Source* file : files) {
      if (file->dygraph_decided) continue;
      file->dygraph_decided = true;
      if (file == pick) {
        file->dygraph_analysed = true;
        live.place_input(file->input.path, stage);
        flush(*file);
        continue;
      }
      live.leave_out(file->input.path);
      file->pending.clear();
      const bool earlier = analysed != files.end() && file->input.rank < pick->input.rank;
      notes_.push_back(fmt::format(
          "{} records stage {}, as {} does (several pipelines): the live lines follow {}{}",
          file->input.path, stage, pick->input.path, pick->input.path,
          earlier ? fmt::format(", chosen before this lower rank logged: the final summary, "
                                "which analyses pipeline {} as analyze does, differs",
                                chosen)
                  : ""));
    }
  }
}

void LiveSources::look_at(Source& source, LiveRun& live, Look& look) {
  const std::string& path = source.input.path;
  auto stop = [&](std::string why) {
    if (source.stopped == why) return;
    source.stopped = why;
    notes_.push_back(std::move(why));
  };
  if (source.dygraph && source.dygraph_decided && !source.dygraph_analysed) return;  // left out
  if (source.follower) {
    FollowedBytes got = source.follower->poll();
    if (got.corrupt) {
      stop(fmt::format("{}: {}; not read further until it is truncated or replaced", path,
                       got.error));
    }
    if (got.lines.empty() && !got.restarted) return;
    source.stopped.clear();
    look.got_any = true;
    look.more = look.more || got.lines.size() >= options_.look_bytes / 2;
    if (!source.dygraph) {
      live.add_lines(path, got.lines, got.restarted);
      return;
    }
    if (got.restarted) {
      source.dygraph =
          std::make_unique<DygraphFollowReader>(source.input, options_.ingest.diagnostics_per_file);
    }
    FileResult batch = source.dygraph->lines(got.lines);
    for (const Diagnostic& d : batch.diagnostics) {
      notes_.push_back(fmt::format("{} line {}: {}", path, d.line, d.message));
    }
    if (source.dygraph_analysed) {
      live.add_jobs(path, batch, got.restarted);
    } else if (!source.dygraph_decided) {
      if (source.pending.empty()) source.pending_restarted = got.restarted;
      source.pending.push_back(std::move(batch));
    }
    return;
  }

  struct stat st {};
  if (!stat_file(path, st)) return;  // it may appear again
  const auto size = static_cast<std::int64_t>(st.st_size);
  const bool replaced = source.size >= 0 && (st.st_dev != source.dev || st.st_ino != source.inode);
  const bool changed = size != source.size || mtime_ns(st) != source.mtime_ns || replaced;
  const bool shrank = source.size >= 0 && size < source.size;
  source.dev = st.st_dev;
  source.inode = st.st_ino;
  source.size = size;
  source.mtime_ns = mtime_ns(st);

  if (source.ivl) {
    bool restarted = false;
    if (replaced || shrank) {
      source.ivl = std::make_unique<IvlFollowImport>(source.input);
      restarted = true;
    }
    if (!restarted && static_cast<std::uint64_t>(size) <= source.ivl->offset()) return;
    const FileResult batch = source.ivl->read_more(options_.look_bytes);
    for (const Diagnostic& d : batch.diagnostics) {
      notes_.push_back(fmt::format("{}: {}", path, d.message));
    }
    if (batch.device.jobs.empty() && batch.device.step_starts.empty() && !restarted) return;
    look.got_any = true;
    look.more = look.more ||
                source.ivl->offset() + options_.look_bytes / 2 < static_cast<std::uint64_t>(size);
    live.add_jobs(path, batch, restarted);
    return;
  }

  // A trace: read once complete and stable.
  if (changed) {
    if (source.trace_done) {
      source.trace_done = false;  // rewritten: read it again when it settles
      source.trace_tried_size = -1;
    }
    return;
  }
  if (source.trace_done || size == 0) return;
  if (size == source.trace_tried_size && source.mtime_ns == source.trace_tried_mtime_ns) return;
  source.trace_tried_size = size;
  source.trace_tried_mtime_ns = source.mtime_ns;
  InputFile input = source.input;
  input.size_bytes = static_cast<std::uint64_t>(size);
  FileResult result;
  try {
    result = read_torch_trace(input, options_.ingest);
  } catch (const std::exception& e) {
    stop(fmt::format("{}: {}", path, e.what()));
    return;
  }
  if (!result.stats.error.empty()) return;  // not a whole document yet
  source.trace_done = true;
  look.got_any = true;
  // A trace written again (a new profiling window under the same name) is
  // read as a file that restarted: the jobs read before stay the run's.
  live.add_jobs(path, result, source.trace_reads++ > 0);
}

}  // namespace pipescope
