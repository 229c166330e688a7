// A format added by one table row and one reader, both in this file and no
// other (ingest/input_formats.h): lines `TOY start_ns end_ns type mb`, one
// file `toy.N` per rank. Its reader is one line parser, which the reading
// loop (ingest/line_records.h) and `watch` (follow_line_records) both drive.
// Registered at run time, it is found by discovery (by name, and by its first
// bytes under another name), read by analyze's ingest to the figures of the
// worker logs it was written from, followed by `watch`'s live sources while it
// grows, and carried by analyze --mpi's messages.
//
// A second toy holds two ranks a file (FileRanks::several): `pair.N` holds
// ranks 2N and 2N+1, each line the toy's prefixed by the rank within the file
// (`0 TOY ...`, `1 TOY ...`). Its reader is a ChunkedFileReader of its own:
// the reading loop's chunks cut into lines, each line to its rank's parser.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <charconv>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/wire.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/input_follower.h"
#include "ingest/input_formats.h"
#include "ingest/line_cutter.h"
#include "ingest/line_records.h"
#include "load/load_run.h"
#include "support/command_runner.h"
#include "support/live_feeder.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// ---- the toy format's reader -------------------------------------------------

/// `toy.N`: rank N.
int toy_rank(std::string_view name) {
  if (!name.starts_with("toy.") || name.size() == 4) return -1;
  int rank = -1;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), rank);
  return ec == std::errc{} && end == name.data() + name.size() ? rank : -1;
}

bool toy_int(std::string_view& text, std::int64_t& value) {
  while (text.starts_with(' ')) text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{}) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

/// Whole lines of one toy file into jobs; line numbers go on across calls.
class ToyLines final : public LineRecordParser {
 public:
  ToyLines(const InputFile& input, std::size_t max_diagnostics)
      : input_(input), max_diagnostics_(max_diagnostics) {}

  FileResult lines(std::string_view text) override {
    FileResult out = empty_result_for(input_);
    while (!text.empty()) {
      const std::size_t eol = text.find('\n');
      std::string_view line = text.substr(0, eol);
      text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
      ++line_;
      ++out.stats.lines;
      Job job;
      std::int64_t mb = 0;
      std::size_t type_end = 0;
      bool ok = line.starts_with("TOY ");
      if (ok) line.remove_prefix(4);
      ok = ok && toy_int(line, job.start_ns) && toy_int(line, job.end_ns) &&
           line.starts_with(' ') && (type_end = line.find(' ', 1)) != std::string_view::npos;
      if (ok) {
        job.type = out.types.intern(std::string(line.substr(1, type_end - 1)));
        line.remove_prefix(type_end);
        ok = toy_int(line, mb) && line.empty() && job.end_ns >= job.start_ns;
      }
      if (!ok) {
        ++out.stats.malformed;
        if (out.diagnostics.size() < max_diagnostics_) {
          out.diagnostics.push_back({input_.path, line_, "not a TOY start end type mb line"});
        }
        continue;
      }
      job.micro_batch = job.job_id = mb;
      job.line = static_cast<std::uint32_t>(line_);
      out.device.jobs.push_back(job);
      ++out.stats.matched;
    }
    return out;
  }

 private:
  InputFile input_;
  std::size_t max_diagnostics_;
  std::uint64_t line_ = 0;
};

std::unique_ptr<LineRecordParser> toy_lines(const InputFile& file, std::size_t max_diagnostics) {
  return std::make_unique<ToyLines>(file, max_diagnostics);
}

/// The reader at rest: the reading loop, each file's lines through the parser.
std::unique_ptr<ChunkedFormat> read_toy_files(const std::vector<InputFile>& files,
                                              const IngestOptions& options) {
  return read_line_records(files, options, toy_lines);
}

std::unique_ptr<InputFollower> follow_toy(const InputFile& input, const FollowOptions& options) {
  return follow_line_records(input, options, toy_lines);
}

/// The toy format's table row.
InputFormatSpec toy_row() {
  return {.name = "toy records",
          .claims_name = [](std::string_view name) { return toy_rank(name) >= 0; },
          .claims_content = [](std::string_view bytes) { return bytes.starts_with("TOY "); },
          .looked_for = "toy.N",
          .family = "a toy record file",
          .placement = Placement::folder_ranks,
          .origin =
              [](const std::string& path) {
                return FileOrigin{.rank = toy_rank(fs::path(path).filename().string())};
              },
          .chunked = read_toy_files,
          .follow = follow_toy};
}

// ---- the two-rank toy's reader -------------------------------------------------

/// `pair.N`: the file of ranks 2N and 2N+1.
int pair_file(std::string_view name) {
  return name.starts_with("pair.") ? toy_rank("toy." + std::string(name.substr(5))) : -1;
}

/// One pair file: its lines cut by the reading loop's line cutter, each
/// line to the parser of its rank; the first rank is `device`, the second
/// `more_devices[0]`.
class PairReader final : public ChunkedFileReader, LineCutter::Sink {
 public:
  PairReader(const InputFile& input, const ReadOptions& options)
      : input_(input), cutter_(options.limits.max_line_bytes) {
    for (int r = 0; r < 2; ++r) {
      InputFile rank = input;
      rank.device = input.device + r;
      rank.rank = input.rank + r;
      ranks_.push_back(rank);
    }
    for (const InputFile& rank : ranks_) {
      parsers_.push_back(std::make_unique<ToyLines>(rank, options.diagnostics_per_file));
    }
  }

  bool tokenize(ReadChunk& chunk) override {
    cutter_.cut(chunk, *this);
    return true;
  }
  bool end_pass(const PassEnd& end) override {
    cutter_.finish(*this);
    bytes_ = end.bytes;
    return false;
  }
  FileResult result() override {
    FileResult out = empty_result_for(input_);
    out.stats.bytes = bytes_;
    for (std::size_t r = 0; r < 2; ++r) {
      FileResult& part = parts_[r];
      Device device = empty_result_for(ranks_[r]).device;
      for (Job job : part.device.jobs) {
        job.type = out.types.intern(part.types.name(job.type));
        device.jobs.push_back(job);
      }
      out.stats.lines += part.stats.lines;
      out.stats.matched += part.stats.matched;
      out.stats.malformed += part.stats.malformed;
      if (r == 0) {
        out.device = std::move(device);
      } else {
        out.more_devices.push_back(std::move(device));
      }
    }
    return out;
  }

  void lines(std::string_view text, std::uint64_t, const char*, bool) override {
    while (!text.empty()) {
      const std::size_t eol = std::min(text.find('\n'), text.size() - 1) + 1;
      const std::string_view line = text.substr(0, eol);
      text.remove_prefix(eol);
      const std::size_t r = line.starts_with("1 ") ? 1 : 0;
      FileResult got = parsers_[r]->lines(line.substr(std::min<std::size_t>(2, line.size())));
      FileResult& part = parts_[r];
      for (Job job : got.device.jobs) {
        job.type = part.types.intern(got.types.name(job.type));
        part.device.jobs.push_back(job);
      }
      part.stats.lines += got.stats.lines;
      part.stats.matched += got.stats.matched;
      part.stats.malformed += got.stats.malformed;
    }
  }
  void skipped(const SkippedLine&) override {}

 private:
  InputFile input_;
  LineCutter cutter_;
  std::vector<InputFile> ranks_;
  std::vector<std::unique_ptr<ToyLines>> parsers_;
  FileResult parts_[2];
  std::uint64_t bytes_ = 0;
};

/// The reading of a run's pair files: a PairReader each.
class PairFormat final : public ChunkedFormat {
 public:
  PairFormat(const std::vector<InputFile>& files, const ReadOptions& options)
      : files_(files), options_(options) {}
  std::unique_ptr<ChunkedFileReader> open(std::size_t i) override {
    return std::make_unique<PairReader>(files_[i], options_);
  }

 private:
  const std::vector<InputFile>& files_;
  const ReadOptions& options_;
};

/// The two-rank toy's table row.
InputFormatSpec pair_row() {
  return {.name = "paired toy records",
          .claims_name = [](std::string_view name) { return pair_file(name) >= 0; },
          .claims_content = [](std::string_view bytes) { return bytes.starts_with("0 TOY "); },
          .looked_for = "pair.N",
          .family = "a paired toy record file",
          .placement = Placement::folder_ranks,
          .file_ranks = FileRanks::several,
          .origin =
              [](const std::string& path) {
                const int n = pair_file(fs::path(path).filename().string());
                return FileOrigin{.rank = n < 0 ? -1 : 2 * n, .ranks = 2};
              },
          .unfollowable = [](std::string_view) -> std::string_view {
            return "holds two ranks: watch follows files of one rank";
          },
          .chunked = [](const std::vector<InputFile>& files,
                        const IngestOptions& options) -> std::unique_ptr<ChunkedFormat> {
            return std::make_unique<PairFormat>(files, options);
          },
          .follow = follow_toy};
}

// ---- the tests ---------------------------------------------------------------

/// A simulated run's worker logs, and the same jobs written as toy files
/// (`toy.N` for the device of rank N) in `to`.
LoadedRun simulate_as_toy(const TempDir& dir, const std::string& to) {
  const std::string logs = dir / "logs";
  const testing::CommandResult r =
      testing::run_cli("simulate -o " + testing::shell_quote(logs) +
                       " --schedule 1f1b --stages 4 --micro-batches 6 --steps 5 --seed 3");
  EXPECT_EQ(r.status, 0) << r.output;
  LoadedRun loaded = load_run(find_inputs({logs}), {});
  fs::create_directories(to);
  for (const Device& device : loaded.run.devices) {
    std::string text;
    for (const Job& job : device.jobs) {
      text += fmt::format("TOY {} {} {} {}\n", job.start_ns, job.end_ns,
                          loaded.run.types.name(job.type), job.micro_batch);
    }
    TempDir::write_to((fs::path(to) / fmt::format("toy.{}", device.rank)).string(), text);
  }
  return loaded;
}

TEST(ToyFormat, RegisteredRowTakesAnIdAfterTheBuiltInsUntilItEnds) {
  const std::size_t built_in = input_formats().size();
  InputFormat id;
  {
    const InputFormatRegistration toy(toy_row());
    id = toy.format();
    EXPECT_GE(static_cast<int>(id), static_cast<int>(InputFormat::count));
    EXPECT_EQ(input_formats().size(), built_in + 1);
    EXPECT_EQ(input_formats().back().format, InputFormat::worker_log);  // still the fallback
    EXPECT_EQ(format_by_name("toy.3"), id);
    EXPECT_EQ(input_format_spec(id).name, "toy records");
    EXPECT_TRUE(is_input_format(static_cast<std::uint8_t>(id)));

    // analyze --mpi carries the id in its messages.
    InputFile input;
    input.path = "run/toy.3";
    input.format = id;
    distributed::ByteWriter w;
    distributed::put_input(w, input);
    distributed::ByteReader r(w.data());
    EXPECT_EQ(distributed::get_input(r).format, id);
  }
  EXPECT_EQ(input_formats().size(), built_in);
  EXPECT_FALSE(format_by_name("toy.3").has_value());
  EXPECT_FALSE(is_input_format(static_cast<std::uint8_t>(id)));
  EXPECT_THROW(input_format_spec(id), InputError);
}

TEST(ToyFormat, DiscoveryFindsItByNameAndByContentAndKeepsItsFamilyApart) {
  const InputFormatRegistration toy(toy_row());
  TempDir dir;
  dir.write("run/toy.1", "TOY 10 20 forward 0\n");
  dir.write("run/toy.0", "TOY 10 20 forward 0\n");
  dir.write("run/notes.txt", "not a toy\n");
  const std::vector<InputFile> inputs = discover_inputs({dir / "run"});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].path, (fs::path(dir / "run") / "toy.0").string());
  EXPECT_EQ(inputs[1].rank, 1);
  EXPECT_EQ(inputs[1].device, 1);
  for (const InputFile& input : inputs) EXPECT_EQ(input.format, toy.format());

  // Given directly under another name: its first bytes say it is a toy file.
  dir.write("records.txt", "TOY 10 20 forward 0\n");
  const std::vector<InputFile> sniffed = discover_inputs({dir / "records.txt"});
  ASSERT_EQ(sniffed.size(), 1u);
  EXPECT_EQ(sniffed[0].format, toy.format());

  // Another family: not merged with worker logs.
  dir.write("mixed/toy.0", "TOY 10 20 forward 0\n");
  dir.write("mixed/workerlog.1", "");
  try {
    discover_inputs({dir / "mixed"});
    ADD_FAILURE() << "a toy file and a worker log were merged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a toy record file and"), std::string::npos)
        << e.what();
  }
  // The folder that holds no input names the toy files among those looked for.
  dir.write("empty/readme", "");
  try {
    discover_inputs({dir / "empty"});
    ADD_FAILURE() << "an empty folder was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("toy.N"), std::string::npos) << e.what();
  }
}

TEST(ToyFormat, AnalyzeReadsItToTheFiguresOfTheLogsItWasWrittenFrom) {
  const InputFormatRegistration toy(toy_row());
  TempDir dir;
  const LoadedRun logs = simulate_as_toy(dir, dir / "toy");
  const std::vector<InputFile> inputs = find_inputs({dir / "toy"});
  ASSERT_EQ(inputs.size(), logs.run.devices.size());
  const LoadedRun loaded = load_run(inputs, {});
  EXPECT_EQ(loaded.run.job_count(), logs.run.job_count());
  const auto toy_steps = testing::complete_steps(loaded);
  const auto log_steps = testing::complete_steps(logs);
  ASSERT_EQ(toy_steps.size(), log_steps.size());
  ASSERT_GE(toy_steps.size(), 4u);
  for (std::size_t i = 0; i < toy_steps.size(); ++i) {
    EXPECT_EQ(toy_steps[i].start_ns, log_steps[i].start_ns);
    EXPECT_EQ(toy_steps[i].end_ns, log_steps[i].end_ns);
    EXPECT_EQ(toy_steps[i].bubble_ratio, log_steps[i].bubble_ratio);
  }

  // A bad line is skipped and named, as every reader does.
  TempDir bad;
  bad.write("toy.0", "TOY 10 20 forward 0\nTOY ten 20 forward 0\n");
  const pipescope::Run run = ingest_inputs(discover_inputs({bad / "toy.0"}), {});
  ASSERT_EQ(run.devices.size(), 1u);
  EXPECT_EQ(run.devices[0].jobs.size(), 1u);
  EXPECT_EQ(run.inputs[0].malformed, 1u);
  ASSERT_EQ(run.diagnostics.size(), 1u);
  EXPECT_EQ(run.diagnostics[0].line, 2u);
}

TEST(ToyFormat, AFileOfTwoRanksIsTwoDevicesOfTheAnalysis) {
  const InputFormatRegistration pair(pair_row());
  TempDir dir;
  const LoadedRun logs = simulate_as_toy(dir, dir / "toy");
  ASSERT_EQ(logs.run.devices.size(), 4u);
  // The ranks two by two: pair.0 holds ranks 0 and 1, pair.1 ranks 2 and 3.
  std::string files[2];
  for (const Device& device : logs.run.devices) {
    for (const Job& job : device.jobs) {
      files[device.rank / 2] +=
          fmt::format("{} TOY {} {} {} {}\n", device.rank % 2, job.start_ns, job.end_ns,
                      logs.run.types.name(job.type), job.micro_batch);
    }
  }
  for (int n = 0; n < 2; ++n) dir.write(fmt::format("pair/pair.{}", n), files[n]);

  const std::vector<InputFile> inputs = find_inputs({dir / "pair"});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].device, 0);
  EXPECT_EQ(inputs[1].device, 2);  // after both of pair.0's devices
  EXPECT_EQ(inputs[1].ranks, 2);
  const LoadedRun loaded = load_run(inputs, {});
  ASSERT_EQ(loaded.run.devices.size(), 4u);
  for (std::size_t d = 0; d < 4; ++d) {
    const Device& device = loaded.run.devices[d];
    EXPECT_EQ(device.index, static_cast<int>(d));
    EXPECT_EQ(device.rank, static_cast<int>(d));
    ASSERT_EQ(device.jobs.size(), logs.run.devices[d].jobs.size()) << d;
    EXPECT_EQ(device.jobs.front().start_ns, logs.run.devices[d].jobs.front().start_ns);
  }
  const auto pair_steps = testing::complete_steps(loaded);
  const auto log_steps = testing::complete_steps(logs);
  ASSERT_EQ(pair_steps.size(), log_steps.size());
  ASSERT_GE(pair_steps.size(), 4u);
  for (std::size_t i = 0; i < pair_steps.size(); ++i) {
    EXPECT_EQ(pair_steps[i].start_ns, log_steps[i].start_ns);
    EXPECT_EQ(pair_steps[i].end_ns, log_steps[i].end_ns);
    EXPECT_EQ(pair_steps[i].bubble_ratio, log_steps[i].bubble_ratio);
  }
  // A device of the second rank of a file selects the file.
  EXPECT_EQ(select_devices(inputs, {3}).size(), 1u);
  EXPECT_THROW(select_devices(inputs, {4}), InputError);
}

TEST(ToyFormat, WatchFollowsItWhileItGrows) {
  const InputFormatRegistration toy(toy_row());
  TempDir dir;
  simulate_as_toy(dir, dir / "toy");
  testing::LiveFeeder feeder(dir / "toy", dir / "live", 7);
  feeder.append_until(0.5, 300);  // pieces that cut lines anywhere
  const std::size_t halfway = feeder.live().jobs_seen();
  EXPECT_GT(halfway, 0u);
  feeder.append_until(1.0, 300);
  feeder.look(true);
  const LoadedRun final = load_run(find_inputs({dir / "live"}), {});
  EXPECT_EQ(feeder.live().jobs_seen(), final.run.job_count());
  EXPECT_GT(feeder.live().jobs_seen(), halfway);
  testing::expect_same_steps(feeder.steps(), testing::complete_steps(final));
  EXPECT_TRUE(feeder.notes().empty());
}

}  // namespace
}  // namespace pipescope
