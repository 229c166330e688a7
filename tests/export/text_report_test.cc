// The text report: figures, alignment, step elision, diagnostics and colour.
#include "export/text_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace pipescope {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::string render(const Run& run, const Metrics& metrics, ReportOptions options = {}) {
  std::unique_ptr<std::FILE, FileCloser> file(std::tmpfile());
  EXPECT_NE(file, nullptr);
  write_text_report(run, metrics, file.get(), options);
  std::fflush(file.get());
  std::rewind(file.get());
  std::string text;
  char chunk[4096];
  std::size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) text.append(chunk, n);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines after the section title `title` up to the next blank line.
std::vector<std::string> section(const std::string& text, const std::string& title) {
  const auto lines = lines_of(text);
  std::vector<std::string> out;
  bool inside = false;
  for (const std::string& line : lines) {
    if (inside && line.empty()) break;
    if (inside) out.push_back(line);
    if (line == title) inside = true;
  }
  return out;
}

Job make_job(std::int64_t start, std::int64_t end) {
  Job job;
  job.start_ns = start;
  job.end_ns = end;
  return job;
}

struct Sample {
  pipescope::Run run;
  Metrics metrics;
};

Sample make_sample(int steps) {
  Sample s;
  s.run.types.intern("forward");
  for (int d = 0; d < 3; ++d) {
    Device device;
    device.index = d;
    device.machine = d < 2 ? 0 : 1;
    device.machine_name = d < 2 ? "machine0" : "machine1";
    device.rank = d < 2 ? d : 0;
    device.path = "/logs/" + device.machine_name + "/workerlog." + std::to_string(device.rank);
    device.jobs.assign(static_cast<std::size_t>(d + 2), make_job(0, 1));
    s.run.devices.push_back(device);
  }
  s.run.first_step = 40;
  s.run.inputs = {{"/logs/machine0/workerlog.0", 100, 12, 2, 3, 1, ""},
                  {"/logs/machine0/workerlog.1", 100, 12, 3, 0, 0, ""},
                  {"/logs/machine1/workerlog.0", 0, 0, 0, 0, 0, "cannot read: Permission denied"}};
  s.run.diagnostics = {{"/logs/machine0/workerlog.0", 7, "malformed job line"},
                       {"/logs/machine0/workerlog.0", 9, "bad\x1b[2Jescape"},
                       {"/logs/machine1/workerlog.0", 0, "file is empty"}};
  for (int k = 0; k < steps; ++k) {
    StepWindow w;
    w.step = 40 + k;
    w.start_ns = 1'000'000'000 + std::int64_t{k} * 12'345'678;
    w.end_ns = w.start_ns + 12'345'678;
    w.bubble_ratio = 0.125;
    w.devices.assign(3, {});
    s.metrics.steps.push_back(w);
  }
  s.metrics.devices = {{1'234'567'891, 12'345'678, 0.990099, static_cast<std::int64_t>(steps)},
                       {999'999, 1'000, 0.5, static_cast<std::int64_t>(steps)},
                       {0, 999, 0.0, 0}};
  s.metrics.bubble_ratio = 0.234;
  s.metrics.total_window_ns = 12'345'678 * std::int64_t{steps};
  return s;
}

// `n` devices, one input each, all alike but device `odd`, whose utilization
// is far from the others'.
Sample make_wide_sample(int n, int odd) {
  Sample s;
  s.run.types.intern("forward");
  for (int d = 0; d < n; ++d) {
    Device device;
    device.index = d;
    device.rank = d;
    device.path = "/logs/workerlog." + std::to_string(d);
    device.jobs.assign(2, make_job(0, 1));
    s.run.devices.push_back(device);
    s.run.inputs.push_back({device.path, 10, 2, 0, 0, 0, ""});
    const double u = d == odd ? 0.9 : 0.5 + 0.001 * (d % 3);
    s.metrics.devices.push_back(
        {static_cast<std::int64_t>(u * 1e9), static_cast<std::int64_t>((1 - u) * 1e9), u, 1});
  }
  StepWindow w;
  w.step = 0;
  w.start_ns = 0;
  w.end_ns = 1'000'000'000;
  w.bubble_ratio = 0.5;
  w.devices.assign(static_cast<std::size_t>(n), {});
  s.metrics.steps.push_back(w);
  s.metrics.bubble_ratio = 0.5;
  s.metrics.total_window_ns = 1'000'000'000;
  return s;
}

TEST(ExportReport, TheHeadlineComesBeforeAnyTable) {
  const Sample s = make_wide_sample(100, 50);
  const auto lines = lines_of(render(s.run, s.metrics));
  const auto at = [&](const std::string& prefix) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind(prefix, 0) == 0) return i;
    }
    return lines.size();
  };
  EXPECT_EQ(at("Bubble ratio: 50.0%"), 1u);
  EXPECT_LT(at("Bubble ratio:"), at("Devices"));
  EXPECT_LT(at("Bubble ratio:"), at("Steps"));
}

TEST(ExportReport, ALongTableShowsItsEndsAndTheRowsThatStandOut) {
  const Sample s = make_wide_sample(100, 50);
  const auto devices = section(render(s.run, s.metrics), "Devices");
  // Header, 16 rows, the note, device 50, "...", the last 8.
  ASSERT_EQ(devices.size(), 1u + 16 + 1 + 1 + 1 + 8);
  EXPECT_EQ(devices[17],
            "  ... 75 of 100 devices not shown: the first 16, the last 8 and 1 beyond 3 MADs of "
            "their column are listed (all rows can be listed) ...");
  EXPECT_EQ(devices[18].substr(0, 8), "      50");
  EXPECT_NE(devices[18].find("90.0%"), std::string::npos);
  EXPECT_EQ(devices[19], "  ...");
  EXPECT_EQ(devices[20].substr(0, 8), "      92");
  EXPECT_EQ(devices.back().substr(0, 8), "      99");
  const auto inputs = section(render(s.run, s.metrics), "Inputs");
  EXPECT_EQ(inputs.size(), 1u + 16 + 1 + 8) << "no input stands out";

  ReportOptions all;
  all.all_rows = true;
  const std::string every = render(s.run, s.metrics, all);
  EXPECT_EQ(section(every, "Devices").size(), 101u);
  EXPECT_EQ(section(every, "Inputs").size(), 101u);
  EXPECT_EQ(every.find("not shown"), std::string::npos);
}

TEST(ExportReport, ContainsTheFigures) {
  const Sample s = make_sample(3);
  const std::string text = render(s.run, s.metrics);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "no colour unless asked";
  const auto lines = lines_of(text);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0],
            "pipescope: 3 devices on 2 machines, 9 jobs, 3 steps (first step 40), 3 inputs");

  const auto devices = section(text, "Devices");
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0],
            "  device  machine   rank  jobs  steps        busy       idle  utilization");
  EXPECT_EQ(devices[1],
            "       0  machine0     0     2      3     1.235 s  12.346 ms        99.0%");
  EXPECT_EQ(devices[2],
            "       1  machine0     1     3      3  999.999 us   1.000 us        50.0%");
  EXPECT_EQ(devices[3],
            "       2  machine1     0     4      0        0 ns     999 ns         0.0%");

  const auto steps = section(text, "Steps");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0], "  step  start ms   duration  bubble");
  EXPECT_EQ(steps[1], "    40     0.000  12.346 ms   12.5%");
  EXPECT_EQ(steps[3], "    42    24.691  12.346 ms   12.5%");

  EXPECT_NE(
      text.find("Bubble ratio: 23.4% (idle share of 3 devices over 37.037 ms of step windows)"),
      std::string::npos)
      << text;

  const auto inputs = section(text, "Inputs");
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_EQ(inputs[0], "  path                        lines  matched  malformed  oversized  error");
  EXPECT_EQ(inputs[1], "  /logs/machine0/workerlog.0     12        2          3          1");
  EXPECT_EQ(inputs[3],
            "  /logs/machine1/workerlog.0      0        0          0          0  cannot read: "
            "Permission denied");

  const auto diagnostics = section(text, "Diagnostics (3)");
  ASSERT_EQ(diagnostics.size(), 3u);
  EXPECT_EQ(diagnostics[0], "  /logs/machine0/workerlog.0:7: malformed job line");
  EXPECT_EQ(diagnostics[1], "  /logs/machine0/workerlog.0:9: bad?[2Jescape");
  EXPECT_EQ(diagnostics[2], "  /logs/machine1/workerlog.0: file is empty");  // no ":0"
}

TEST(ExportReport, ManyStepsAreElided) {
  const Sample s = make_sample(30);
  const std::string text = render(s.run, s.metrics);
  const auto steps = section(text, "Steps");
  ASSERT_EQ(steps.size(), 1u + 10u + 1u + 5u);
  EXPECT_EQ(steps[1].substr(0, 6), "    40");
  EXPECT_EQ(steps[10].substr(0, 6), "    49");
  EXPECT_EQ(steps[11],
            "  ... 15 steps not shown (first 10 and last 5 of 30 listed; all rows can be listed) "
            "...");
  EXPECT_EQ(steps[12].substr(0, 6), "    65");
  EXPECT_EQ(steps[16].substr(0, 6), "    69");
  // The note names the option in the caller's words.
  ReportOptions options;
  auto flags = std::make_shared<OptionWords>();
  flags->set(CallerOption::all_rows, "--all-rows", "--all-rows lists every one");
  options.words = flags;
  EXPECT_EQ(section(render(s.run, s.metrics, options), "Steps")[11],
            "  ... 15 steps not shown (first 10 and last 5 of 30 listed; --all-rows lists every "
            "one) ...");
  // All table rows line up.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (i != 11) {
      EXPECT_EQ(steps[i].size(), steps[0].size()) << steps[i];
    }
  }
}

TEST(ExportReport, TwentyStepsAreAllListed) {
  const Sample s = make_sample(20);
  EXPECT_EQ(section(render(s.run, s.metrics), "Steps").size(), 21u);
}

TEST(ExportReport, EmptyRun) {
  const std::string text = render(pipescope::Run{}, Metrics{});
  EXPECT_NE(text.find("pipescope: 0 devices on 0 machines, 0 jobs, 0 steps"), std::string::npos);
  EXPECT_NE(text.find("no steps found"), std::string::npos);
  EXPECT_NE(text.find("Bubble ratio: 0.0%"), std::string::npos);
}

TEST(ExportReport, ColourOnlyWhenAsked) {
  const Sample s = make_sample(2);
  const std::string text = render(s.run, s.metrics, ReportOptions{.color = true});
  EXPECT_NE(text.find("\x1b[1mDevices\x1b[0m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[33m23.4%\x1b[0m"), std::string::npos);
  // Escapes from the logs are still neutralised.
  EXPECT_EQ(text.find("\x1b[2J"), std::string::npos);
}

}  // namespace
}  // namespace pipescope
