// A format added by one table row and one reader, both in this file and no
// other (ingest/input_formats.h): lines `TOY start_ns end_ns type mb`, one
// file `toy.N` per rank. Registered at run time, it is found by discovery (by
// name, and by its first bytes under another name), read by analyze's ingest
// to the figures of the worker logs it was written from, followed by `watch`'s
// live sources while it grows, and carried by analyze --mpi's messages.
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

/// The reader at rest: each file whole through the same parser.
std::vector<FileResult> read_toy_files(const std::vector<InputFile>& files,
                                       const IngestOptions& options, ProgressMeter& progress) {
  std::vector<FileResult> results;
  for (const InputFile& input : files) {
    const std::string text = testing::read_file(input.path);
    ToyLines parser(input, options.diagnostics_per_file);
    FileResult result = parser.lines(text);
    result.stats.bytes = text.size();
    results.push_back(std::move(result));
    progress.advance(text.size(), 1);
  }
  return results;
}

std::unique_ptr<InputFollower> follow_toy(const InputFile& input, const FollowOptions& options) {
  return follow_line_records(input, options, [](const InputFile& file, std::size_t max) {
    return std::make_unique<ToyLines>(file, max);
  });
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
          .read = read_toy_files,
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
