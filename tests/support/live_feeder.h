// A run still being written, for the tests of `pipescope watch`: the files of
// a finished folder appended to new files in pieces, the live run following
// them through LiveSources as `watch` does; and the comparison of its steps
// with `analyze`'s on the finished folder.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ingest/discovery.h"
#include "live/live_run.h"
#include "live/live_source.h"
#include "load/load_run.h"
#include "records/ivl_reader.h"
#include "support/temp_dir.h"

namespace pipescope::testing {

namespace fs = std::filesystem;

/// The files of a finished folder appended to new files in random pieces (1
/// to `max_piece` bytes, files in random order), the live run following them
/// through LiveSources. An .ivl file starts with its header, as the job
/// timer writes it when it opens the file.
class LiveFeeder {
 public:
  LiveFeeder(const std::string& from, const std::string& to, std::uint32_t seed,
             LiveOptions options = {}, LiveSourceOptions sources = {})
      : rng_(seed), live_(options), sources_(sources) {
    fs::create_directories(to);
    for (const InputFile& input : find_inputs({from})) {
      const std::string name = fs::relative(input.path, from).string();
      const std::string target = (fs::path(to) / name).string();
      fs::create_directories(fs::path(target).parent_path());
      const std::string content = read_file(input.path);
      std::size_t start = 0;
      if (input.format == InputFormat::ivl) {
        std::string error;
        start = ivl::read_header(input.path, error)->header_bytes;
      }
      TempDir::write_to(target, content.substr(0, start));
      files_.push_back({target, content, start});
    }
    sources_.set_inputs(find_inputs({to}), live_);
  }

  /// Appends pieces until every file is written up to `fraction` of its
  /// bytes, looking at the files after each piece.
  void append_until(double fraction, std::size_t max_piece = 700) {
    std::uniform_int_distribution<std::size_t> piece(1, max_piece);
    for (;;) {
      std::vector<std::size_t> open;
      for (std::size_t f = 0; f < files_.size(); ++f) {
        if (files_[f].written < limit(f, fraction)) open.push_back(f);
      }
      if (open.empty()) break;
      const std::size_t f = open[rng_() % open.size()];
      File& file = files_[f];
      const std::size_t n = std::min(piece(rng_), limit(f, fraction) - file.written);
      std::FILE* out = std::fopen(file.path.c_str(), "ab");
      std::fwrite(file.content.data() + file.written, 1, n, out);
      std::fclose(out);
      file.written += n;
      look(false);
    }
  }

  /// One look at every file (and on while one has more), then the steps
  /// completed.
  void look(bool at_end) {
    while (sources_.look(live_).more) {
    }
    for (std::string& note : sources_.take_notes()) notes_.push_back(std::move(note));
    for (LiveStep& step : live_.take_completed(at_end)) steps_.push_back(std::move(step));
    max_kept_ = std::max(max_kept_, live_.jobs_kept());
  }

  /// Empties file `f` (copytruncate): what follows goes to its new content.
  void truncate(std::size_t f) { fs::resize_file(files_[f].path, 0); }
  /// Replaces file `f` by a new, empty one (a new inode).
  void replace(std::size_t f) {
    fs::rename(files_[f].path, files_[f].path + ".1");
    TempDir::write_to(files_[f].path, "");
  }

  LiveRun& live() { return live_; }
  const std::vector<LiveStep>& steps() const { return steps_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct File {
    std::string path;
    std::string content;
    std::size_t written;
  };
  std::size_t limit(std::size_t f, double fraction) const {
    return std::max(
        files_[f].written,
        static_cast<std::size_t>(static_cast<double>(files_[f].content.size()) * fraction));
  }

  std::mt19937 rng_;
  std::vector<File> files_;
  LiveRun live_;
  LiveSources sources_;
  std::vector<LiveStep> steps_;
  std::vector<std::string> notes_;
  std::size_t max_kept_ = 0;
};

inline std::vector<StepWindow> complete_steps(const LoadedRun& loaded) {
  std::vector<StepWindow> out;
  for (const StepWindow& step : loaded.metrics.steps) {
    if (step.complete) out.push_back(step);
  }
  return out;
}

inline void expect_same_steps(const std::vector<LiveStep>& live,
                              const std::vector<StepWindow>& final) {
  ASSERT_EQ(live.size(), final.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    SCOPED_TRACE("step " + live[i].label);
    EXPECT_EQ(live[i].segment, final[i].segment);
    EXPECT_EQ(live[i].step, final[i].step);
    EXPECT_EQ(live[i].start_ns, final[i].start_ns);
    EXPECT_EQ(live[i].end_ns, final[i].end_ns);
    EXPECT_EQ(live[i].bubble_ratio, final[i].bubble_ratio);  // to the last digit
    EXPECT_FALSE(live[i].provisional);
  }
}

}  // namespace pipescope::testing
