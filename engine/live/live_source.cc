#include "live/live_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "ingest/input_follower.h"
#include "ingest/input_formats.h"

namespace pipescope {

struct LiveSources::Source {
  InputFile input;
  /// The format's reader, fed the file as it grows.
  std::unique_ptr<InputFollower> follower;
  /// A file whose records place it (InputFollower::places_itself): whether
  /// its stage's pipeline was chosen (then `analysed` says whether it is
  /// this file); until then what it read waits in `pending`.
  bool decided = false;
  bool analysed = false;
  std::vector<FileResult> pending;
  bool pending_restarted = false;
  /// The copy of the lines read (LiveSourceOptions::keep_read_dir); empty:
  /// none kept.
  std::string copy;
  bool copy_failed = false;
  /// Truncated or replaced at least once while followed.
  bool restarted = false;
};

LiveSources::LiveSources(LiveSourceOptions options) : options_(std::move(options)) {}

LiveSources::~LiveSources() = default;

void LiveSources::set_inputs(const std::vector<InputFile>& inputs, LiveRun& live) {
  live.set_inputs(inputs);
  for (const InputFile& input : inputs) {
    auto& source = sources_[input.path];
    if (source) {
      source->input = input;
      source->follower->set_input(input);
      continue;
    }
    source = std::make_unique<Source>();
    source->input = input;
    const FollowOptions follow{options_.ingest, options_.look_bytes};
    source->follower = input_format_spec(input.format).follow(input, follow);
    if (!options_.keep_read_dir.empty()) {
      // The input's own name (a compressed log's without .gz/.zst: the copy
      // holds its text), in a folder of its own.
      std::string name = std::filesystem::path(input.path).filename().string();
      for (const std::string_view suffix : {".gz", ".zst"}) {
        if (name.ends_with(suffix)) name.resize(name.size() - suffix.size());
      }
      source->copy = (std::filesystem::path(options_.keep_read_dir) /
                      std::to_string(sources_.size() - 1) / name)
                         .string();
    }
  }
}

std::map<std::string, std::string> LiveSources::read_copies() const {
  std::map<std::string, std::string> out;
  for (const auto& [path, source] : sources_) {
    if (source->restarted && !source->copy.empty() && !source->copy_failed) {
      out[path] = source->copy;
    }
  }
  return out;
}

LiveSources::Look LiveSources::look(LiveRun& live) {
  Look look;
  for (auto& [path, source] : sources_) look_at(*source, live, look);
  place_by_stage(live);
  return look;
}

std::vector<std::string> LiveSources::take_notes() { return std::exchange(notes_, {}); }

/// Places the files whose records name their stage (Paddle dygraph records),
/// once they did: of each stage, the K-th rank (IngestOptions::pipeline, 0 by default) in rank
/// order among the files that named it, as analyze chooses among all, once that many have; the
/// others are left out. Decided at the end of a look, so files read in the
/// same look are chosen among together.
void LiveSources::place_by_stage(LiveRun& live) {
  const auto chosen = static_cast<std::size_t>(std::max(options_.ingest.pipeline.value_or(0), 0));
  std::map<int, std::vector<Source*>> by_stage;  // every file that named the stage
  for (auto& [path, source] : sources_) {
    if (source->follower->places_itself() && source->follower->stage() >= 0) {
      by_stage[source->follower->stage()].push_back(source.get());
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
    const auto analysed =
        std::find_if(files.begin(), files.end(), [](const Source* f) { return f->analysed; });
    if (analysed == files.end() && files.size() <= chosen) continue;  // wait for more ranks
    const Source* pick = analysed != files.end() ? *analysed : files[chosen];
    for (Source* file : files) {
      if (file->decided) continue;
      file->decided = true;
      if (file == pick) {
        file->analysed = true;
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

/// Appends what was read of a text input to its copy (keep_read_dir); a
/// copy that cannot be written is given up, said once.
void LiveSources::keep_copy(Source& source, std::string_view lines) {
  if (source.copy.empty() || source.copy_failed || lines.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(source.copy).parent_path(), ec);
  std::FILE* out = std::fopen(source.copy.c_str(), "ab");
  const bool ok = out != nullptr && std::fwrite(lines.data(), 1, lines.size(), out) == lines.size();
  if (out != nullptr && std::fclose(out) != 0) source.copy_failed = true;
  if (!ok || source.copy_failed) {
    source.copy_failed = true;
    notes_.push_back(fmt::format(
        "cannot keep a copy of what was read of {} in {} ({}): if it is rotated, the final "
        "summary covers only what it holds then",
        source.input.path, source.copy, std::strerror(errno)));
  }
}

void LiveSources::look_at(Source& source, LiveRun& live, Look& look) {
  if (source.decided && !source.analysed) return;  // left out: another pipeline's
  FollowedData got = source.follower->look();
  for (std::string& note : got.notes) notes_.push_back(std::move(note));
  if (got.kind == FollowedData::Kind::nothing) return;
  const std::string& path = source.input.path;
  look.got_any = true;
  look.more = look.more || got.more;
  if (got.kind == FollowedData::Kind::lines) {
    if (got.restarted) source.restarted = true;
    keep_copy(source, got.lines);
    live.add_lines(path, got.lines, got.restarted);
  } else if (!source.follower->places_itself() || source.analysed) {
    live.add_jobs(path, got.records, got.restarted);
  } else if (!source.decided) {
    if (source.pending.empty()) source.pending_restarted = got.restarted;
    source.pending.push_back(std::move(got.records));
  }
}

}  // namespace pipescope
