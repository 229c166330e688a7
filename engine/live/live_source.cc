#include "live/live_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

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
  bool dygraph_placed = false;
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

/// Places a dygraph file at its stage once a record named it: the K-th rank
/// of the stage (IngestOptions::pipeline, 0 by default) among the ranks seen,
/// as analyze chooses among all; the others are left out.
void LiveSources::place_dygraph(Source& source, LiveRun& live) {
  const int stage = source.dygraph->stage();
  if (source.dygraph_placed || stage < 0) return;
  source.dygraph_placed = true;
  std::set<int>& ranks = dygraph_ranks_[stage];
  ranks.insert(source.input.rank);
  const auto chosen = static_cast<std::size_t>(std::max(options_.ingest.pipeline.value_or(0), 0));
  const auto position =
      static_cast<std::size_t>(std::distance(ranks.begin(), ranks.find(source.input.rank)));
  if (dygraph_chosen_.count(stage) == 0 && position == chosen) {
    dygraph_chosen_[stage] = source.input.path;
    live.place_input(source.input.path, stage);
    return;
  }
  live.leave_out(source.input.path);
  notes_.push_back(fmt::format(
      "{} records stage {}, which another rank's records hold too (several pipelines): the live "
      "lines follow {} for that stage; the final summary analyses pipeline {} as analyze does",
      source.input.path, stage,
      dygraph_chosen_.count(stage) ? dygraph_chosen_[stage] : std::string("another rank"), chosen));
}

void LiveSources::look_at(Source& source, LiveRun& live, Look& look) {
  const std::string& path = source.input.path;
  auto stop = [&](std::string why) {
    if (source.stopped == why) return;
    source.stopped = why;
    notes_.push_back(std::move(why));
  };
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
    const FileResult batch = source.dygraph->lines(got.lines);
    place_dygraph(source, live);
    for (const Diagnostic& d : batch.diagnostics) {
      notes_.push_back(fmt::format("{} line {}: {}", path, d.line, d.message));
    }
    live.add_jobs(path, batch, got.restarted);
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
