// The HTML report: rendered by headless Chromium (Debian's `chromium`), which
// must parse it into the expected DOM (device rows, job boxes, bubbles,
// figures, bars) and take a screenshot; plus unit tests of the step choice,
// escaping, the embedded data of the interactive timeline and the size bound
// for big steps. The static timelines are the no-script fallback: with
// scripts on they sit in <noscript>, which a DOM dump writes out as its
// markup, so the counts below are of the fallback; the interactive timeline
// itself is driven in tests/browser/report_test.py (ctest -L browser).
//
// Chromium is required (CI installs it); set PIPESCOPE_NO_BROWSER=1 to skip
// the browser tests on a machine without it.
#include "export/html_report.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/html_report_data.h"
#include "support/command_runner.h"
#include "support/hand_run.h"
#include "support/log_event_run.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::read_file;
using testing::run_cli;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The text content of the element with id `id` in a DOM dump.
std::string element_text(const std::string& dom, const std::string& id) {
  const std::regex re("id=\"" + id + "\">([^<]*)<");
  std::smatch m;
  return std::regex_search(dom, m, re) ? m[1].str() : "<missing " + id + ">";
}

// "STEP DEVICE ID SEVERITY" of each log-event mark, in page order: the
// timeline (data-step) and device row (data-device) it is drawn in.
std::vector<std::string> event_marks(const std::string& page) {
  std::vector<std::string> out;
  std::string step, device;
  const std::regex token(
      "<svg class=\"timeline\" data-step=\"([0-9]+)\"|<g class=\"device-row\" "
      "data-device=\"([0-9]+)\"|<g class=\"event ([a-z]+)\" data-event=\"([a-z_]+)\"");
  for (std::sregex_iterator m(page.begin(), page.end(), token), end; m != end; ++m) {
    if ((*m)[1].matched) step = (*m)[1].str();
    if ((*m)[2].matched) device = (*m)[2].str();
    if ((*m)[3].matched) {
      out.push_back(step + " " + device + " " + (*m)[4].str() + " " + (*m)[3].str());
    }
  }
  return out;
}

bool browser_skipped() {
  const char* skip = std::getenv("PIPESCOPE_NO_BROWSER");
  return skip != nullptr && std::string(skip) == "1";
}

// Chromium flags for a sandbox-less CI container with no network: every
// background request is switched off so nothing tries to leave the machine.
std::string chromium(const std::string& profile) {
  return "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync "
         "--hide-scrollbars --user-data-dir=" +
         shell_quote(profile) + " ";
}

TEST(HtmlReportBrowser, ChromiumRendersRowsBoxesFiguresAndScreenshot) {
  if (browser_skipped()) GTEST_SKIP() << "PIPESCOPE_NO_BROWSER=1";
  ASSERT_EQ(run_command("command -v chromium >/dev/null 2>&1").status, 0)
      << "chromium is not installed: the HTML report tests need Debian's `chromium` package "
         "(apt-get install chromium; scripts/dev.sh installs it), or set PIPESCOPE_NO_BROWSER=1 "
         "to skip them";

  TempDir dir;
  const std::string html = dir / "out/report.html";
  const CommandResult analyze =
      run_cli("analyze -q --no-trace " + shell_quote(std::string(PIPESCOPE_TESTDATA) + "/single") +
              " -o " + shell_quote(dir / "out") + " --html " + shell_quote(html));
  ASSERT_EQ(analyze.status, 0) << analyze.output;

  // The DOM dump and the screenshot run side by side to keep the wall time down.
  const std::string url = "file://" + html;
  const std::string png = dir / "shot.png";
  const CommandResult browser = run_command(
      "(" + chromium(dir / "p1") + "--dump-dom " + shell_quote(url) + " > " +
      shell_quote(dir / "dom.html") + " 2>" + shell_quote(dir / "dom.err") + " & " +
      chromium(dir / "p2") + "--window-size=1200,1000 --screenshot=" + shell_quote(png) + " " +
      shell_quote(url) + " >" + shell_quote(dir / "shot.err") + " 2>&1 & wait)");
  const std::string dom = read_file(dir / "dom.html");
  ASSERT_FALSE(dom.empty()) << "chromium --dump-dom printed nothing: "
                            << read_file(dir / "dom.err");

  // testdata/single: 4 devices, 72 jobs in 2 steps (5 and 6), bubble ratio 42.2%.
  EXPECT_EQ(element_text(dom, "fig-devices"), "4 on 1 machine");
  EXPECT_EQ(element_text(dom, "fig-jobs"), "72");
  EXPECT_EQ(element_text(dom, "fig-steps"), "2");
  EXPECT_EQ(element_text(dom, "fig-bubble-ratio"), "42.2%");
  EXPECT_EQ(element_text(dom, "fig-window"), "435.000 ms");
  // Default choice with two steps: the median (step 5) and the slowest (6).
  EXPECT_EQ(count(dom, "<svg class=\"timeline\""), 2u);
  EXPECT_NE(dom.find("data-step=\"5\""), std::string::npos);
  EXPECT_NE(dom.find("data-step=\"6\""), std::string::npos);
  EXPECT_EQ(count(dom, "<g class=\"device-row\""), 8u);  // 4 devices x 2 steps
  // Every job of both windows is one box (none is narrower than a pixel here).
  EXPECT_EQ(count(dom, "<rect class=\"job\""), 72u);
  EXPECT_EQ(count(dom, "data-kind=\"forward\""), 32u);
  EXPECT_EQ(count(dom, "data-kind=\"optimizer\""), 8u);
  EXPECT_GT(count(dom, "<rect class=\"idle\""), 8u);  // bubbles are drawn
  EXPECT_GT(count(dom, "<text class=\"mb\""), 40u);   // micro-batch numbers on the boxes
  EXPECT_EQ(count(dom, "<rect class=\"util-bar\""), 4u);
  EXPECT_EQ(count(dom, "<rect class=\"step-bar"), 2u);
  // The script ran: the interactive frame is shown.
  EXPECT_NE(dom.find("<html lang=\"en\" class=\"js\">"), std::string::npos);
  EXPECT_NE(dom.find("<div id=\"explorer\" class=\"explorer\">"), std::string::npos);
  // Self-contained: nothing is fetched.
  EXPECT_EQ(dom.find("<script src"), std::string::npos);
  EXPECT_EQ(dom.find("<link"), std::string::npos);
  EXPECT_EQ(dom.find("http://w"), dom.find("http://www.w3.org"));

  std::ifstream shot(png, std::ios::binary);
  ASSERT_TRUE(shot.good()) << "no screenshot: " << read_file(dir / "shot.err") << browser.output;
  char magic[8] = {};
  shot.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  shot.seekg(0, std::ios::end);
  EXPECT_GT(static_cast<long>(shot.tellg()), 20000) << "a blank page compresses far smaller";
}

// A VPP run with a slow stage: the page leads with the explanation, shows
// the schedule and its split, highlights the slow stage's rows, shades and
// labels chunks, lists the longest bubbles, and renders without a console
// message (a parse or load error, or one from its script).
TEST(HtmlReportBrowser, ExplainsWhyAndRendersWithoutConsoleErrors) {
  if (browser_skipped()) GTEST_SKIP() << "PIPESCOPE_NO_BROWSER=1";
  ASSERT_EQ(run_command("command -v chromium >/dev/null 2>&1").status, 0)
      << "chromium is not installed (see above), or set PIPESCOPE_NO_BROWSER=1";
  TempDir dir;
  const CommandResult sim = run_cli(
      "simulate -o " + shell_quote(dir / "logs") +
      " --schedule vpp --stages 4 --micro-batches 8 --chunks 2 --slow-stage 2:1.5 --steps 2");
  ASSERT_EQ(sim.status, 0) << sim.output;
  const std::string html = dir / "report.html";
  const CommandResult analyze = run_cli("analyze --no-trace " + shell_quote(dir / "logs") + " -o " +
                                        shell_quote(dir / "out") + " --html " + shell_quote(html));
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  // The "wrote" line names every file written, the report included.
  EXPECT_NE(analyze.output.find("wrote " + (dir / "out/summary.json") + " and " + html),
            std::string::npos)
      << analyze.output;

  const CommandResult browser =
      run_command(chromium(dir / "p") + "--enable-logging=stderr --v=0 --dump-dom " +
                  shell_quote("file://" + html) + " > " + shell_quote(dir / "dom.html") + " 2> " +
                  shell_quote(dir / "log.txt"));
  const std::string dom = read_file(dir / "dom.html");
  ASSERT_FALSE(dom.empty()) << read_file(dir / "log.txt");
  const std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
  EXPECT_EQ(log.find("Uncaught"), std::string::npos) << log;

  const std::string why = element_text(dom, "why");
  EXPECT_NE(why.find("inherent to VPP with P=4, M=8, V=2"), std::string::npos) << why;
  EXPECT_NE(why.find("mostly waiting on stage 2"), std::string::npos) << why;
  EXPECT_EQ(element_text(dom, "fig-schedule"), "VPP P=4 M=8 V=2");
  EXPECT_EQ(element_text(dom, "fig-ideal"), "15.8%");
  EXPECT_NE(element_text(dom, "fig-inherent").find(" points"), std::string::npos);
  EXPECT_NE(element_text(dom, "fig-bottleneck").find("stage 2"), std::string::npos);
  // Device 2 is stage 2: its row is highlighted in each drawn step (2 steps).
  EXPECT_EQ(count(dom, "<g class=\"device-row bottleneck\" data-device=\"2\""), 2u);
  EXPECT_EQ(count(dom, "<g class=\"device-row bottleneck\""), 2u);
  EXPECT_GT(count(dom, "data-chunk=\"1\""), 0u);
  EXPECT_NE(dom.find("\u00b7c1</text>"), std::string::npos) << "chunk labels such as F3\u00b7c1";
  EXPECT_NE(dom.find("<table class=\"bubbles\">"), std::string::npos);
  // Axis labels in readable units, no "ms" with three decimals.
  EXPECT_NE(dom.find(" ms</text>"), std::string::npos);
  EXPECT_EQ(dom.find("0.000 ms</text>"), std::string::npos);
}

// Simulated worker logs with three event lines: a checkpoint save (a GLOG
// line) in step 2 and a NCCL warning (no timestamp: placed at the line
// before it) in step 3 on rank 0, a CUDA out-of-memory error in step 2 on
// rank 1. The report marks each on its step's timeline, the traces hold
// them as instants, and the page renders without a console message.
TEST(HtmlReportBrowser, MarksLogEventsOnTheTimeline) {
  if (browser_skipped()) GTEST_SKIP() << "PIPESCOPE_NO_BROWSER=1";
  ASSERT_EQ(run_command("command -v chromium >/dev/null 2>&1").status, 0)
      << "chromium is not installed (see above), or set PIPESCOPE_NO_BROWSER=1";
  TempDir dir;
  const CommandResult sim = run_cli("simulate -o " + shell_quote(dir / "logs") +
                                    " --stages 2 --micro-batches 4 --steps 6");
  ASSERT_EQ(sim.status, 0) << sim.output;
  // Inserts `text` after 1-based line `after`; "{time}" becomes that line's
  // GLOG time (the job's end: inside its step's window).
  const auto insert = [](const std::string& path,
                         std::vector<std::pair<std::size_t, std::string>> at) {
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [after, text] : at) {
      ASSERT_LE(after, lines.size());
      const std::string& job = lines[after - 1];
      const std::string time = job.substr(job.find(' ') + 1, 15);  // 09:15:07.601910
      const std::size_t slot = text.find("{time}");
      if (slot != std::string::npos) text.replace(slot, 6, time);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(after), text);
    }
    std::ofstream out(path, std::ios::trunc);
    for (const std::string& line : lines) out << line << '\n';
  };
  insert(dir / "logs/workerlog.0",
         {{20, "I1020 {time} 55700 checkpoint.py:10] Saving model checkpoint to /ckpt/step_2"},
          {30, "gpu0:1:2 [0] NCCL WARN Call to ibv_reg_mr failed"}});
  insert(dir / "logs/workerlog.1",
         {{22,
           "I1020 {time} 55701 train.py:88] torch.cuda.OutOfMemoryError: CUDA out of memory. "
           "Tried to allocate 1.74 GiB (GPU 1; 47.54 GiB total capacity)"}});

  const std::string html = dir / "report.html";
  const CommandResult analyze =
      run_cli("analyze " + shell_quote(dir / "logs") + " -o " + shell_quote(dir / "out") +
              " --html " + shell_quote(html) + " --html-steps 1-3");
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  EXPECT_NE(analyze.output.find("Log events: 3 (checkpoint 1, memory 1, nccl 1)"),
            std::string::npos)
      << analyze.output;
  // trace.json: one instant per event, on the track of the device's jobs.
  const std::string trace = read_file(dir / "out/trace.json");
  EXPECT_EQ(count(trace, "\"ph\":\"i\""), 3u);
  EXPECT_EQ(count(trace, "\"name\":\"paddlenlp_saving_checkpoint\",\"cat\":\"event,checkpoint\""),
            1u);
  EXPECT_EQ(count(trace, "\"approximate\":true"), 1u);

  const CommandResult browser =
      run_command(chromium(dir / "p") + "--enable-logging=stderr --v=0 --dump-dom " +
                  shell_quote("file://" + html) + " > " + shell_quote(dir / "dom.html") + " 2> " +
                  shell_quote(dir / "log.txt"));
  const std::string dom = read_file(dir / "dom.html");
  ASSERT_FALSE(dom.empty()) << read_file(dir / "log.txt");
  const std::string log = read_file(dir / "log.txt");
  EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
  EXPECT_EQ(count(dom, "<svg class=\"timeline\""), 3u);
  // One mark per event, in the row of its device in its step's timeline.
  EXPECT_EQ(count(dom, "<g class=\"event "), 3u);
  EXPECT_EQ(count(dom, "data-severity=\"info\""), 1u);
  EXPECT_EQ(count(dom, "data-severity=\"warning\""), 1u);
  EXPECT_EQ(count(dom, "data-severity=\"error\""), 1u);
  EXPECT_EQ(event_marks(dom),
            (std::vector<std::string>{"2 0 paddlenlp_saving_checkpoint info",
                                      "2 1 torch_cuda_oom error", "3 0 nccl_warn warning"}));
  EXPECT_NE(dom.find("paddlenlp_saving_checkpoint (checkpoint, info) at +"), std::string::npos);
  EXPECT_NE(dom.find("in the step: " + (dir / "logs/workerlog.0") + ":21; path=/ckpt/step_2"),
            std::string::npos);
  EXPECT_NE(dom.find("(about) in the step: " + (dir / "logs/workerlog.0") + ":32"),
            std::string::npos);
  EXPECT_NE(dom.find("log event (error)"), std::string::npos);
}

// The log events of the drawn steps' windows, marked on their device's row
// and coloured by severity; the events outside those windows are not; the
// outlier steps are listed under the steps' figures.
TEST(HtmlReport, MarksTheEventsOfTheDrawnStepsAndListsTheOutliers) {
  const auto r = testing::log_event_run();
  HtmlOptions options;
  options.steps = {0, 1};  // steps 10 and 11
  std::string html = render_html_report(r.run, r.metrics, options);
  // Step 10: device 0's save; step 11: device 0's error and device 1's warning.
  EXPECT_EQ(count(html, "<g class=\"event "), 3u);
  EXPECT_EQ(event_marks(html),
            (std::vector<std::string>{"10 0 checkpoint_save info", "11 0 cuda_error error",
                                      "11 1 nccl_warn warning"}));
  // The title: what, when in the step, where.
  EXPECT_NE(html.find("<title>checkpoint_save (checkpoint, info) at +60.000 ms in the step: "
                      "workerlog.0:7; path=/ckpt/step_10</title>"),
            std::string::npos);
  // At 60% of the 1000-unit plot, right of the 120-unit labels.
  EXPECT_NE(html.find("<line x1=\"720.0\" x2=\"720.0\" y1=\"22.0\" y2=\"42.0\"/>"),
            std::string::npos);
  EXPECT_NE(html.find("log event (warning)"), std::string::npos);

  // Step 12 is an outlier (300 ms against a median of 100 ms), with device
  // 1's error in its window.
  EXPECT_NE(html.find("<ul class=\"outliers\">\n<li>step 12 +0.200 s (bubble 20.0%): device 1 "
                      "cuda_error at +0.250 s (cuda)</li>\n</ul>"),
            std::string::npos)
      << html;
  options.steps = {2};
  EXPECT_EQ(event_marks(render_html_report(r.run, r.metrics, options)),
            (std::vector<std::string>{"12 1 cuda_error error"}));

  // Events off: no mark, no outlier list.
  pipescope::Run off = r.run;
  off.event_kinds.clear();
  for (Device& device : off.devices) device.events.clear();
  off.events_off = "--no-events";
  html = render_html_report(off, r.metrics, options);
  EXPECT_EQ(html.find("class=\"event"), std::string::npos);
  EXPECT_EQ(html.find("<ul class=\"outliers\">"), std::string::npos);
  EXPECT_EQ(html.find("log event ("), std::string::npos);
}

TEST(HtmlReport, EventMarksPerRowAreBounded) {
  auto r = testing::log_event_run();
  std::vector<LogEvent>& events = r.run.devices[0].events;
  for (int i = 0; i < 150; ++i) {
    LogEvent e;
    e.kind = 1;
    e.line = 1000 + static_cast<std::uint64_t>(i);
    e.time_ns = testing::event_run_time(10) + i * 1000;
    events.push_back(e);
  }
  HtmlOptions options;
  options.steps = {0};
  const std::string html = render_html_report(r.run, r.metrics, options);
  EXPECT_EQ(count(html, "<g class=\"event "), 100u);
  EXPECT_NE(html.find("51 more log events in this step, not marked"), std::string::npos);
}

TEST(HtmlReport, StepChoice) {
  Metrics m;
  for (std::int64_t k = 0; k < 5; ++k) {
    StepWindow w;
    w.step = 10 + k;
    w.start_ns = k * 1000;
    w.end_ns = w.start_ns + (k == 3 ? 900 : 100 + k);  // step 13 is the slowest
    m.steps.push_back(w);
  }
  EXPECT_EQ(choose_html_steps(m, ""), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(choose_html_steps(m, "12-13"), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(choose_html_steps(m, "14,10"), (std::vector<std::size_t>{0, 4}));
  EXPECT_THROW(choose_html_steps(m, "9"), std::invalid_argument);
  EXPECT_THROW(choose_html_steps(m, "12-x"), std::invalid_argument);
  EXPECT_THROW(choose_html_steps(m, "13-12"), std::invalid_argument);
  EXPECT_TRUE(choose_html_steps(Metrics{}, "").empty());
}

TEST(HtmlReport, EscapesMarkupAndInvalidUtf8) {
  EXPECT_EQ(markup_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(markup_escape("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(markup_escape("x\xFFy"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(markup_escape(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(markup_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

// The shaded idle time is the bubble pass's (analysis/bubbles.h): a
// zero-length job is not busy, and a job that started long before the window
// (many jobs earlier) still makes its time busy.
TEST(HtmlReport, IdleTimeIsTheBubblePass) {
  const auto job = [](std::int64_t start, std::int64_t end) {
    Job j;
    j.start_ns = start;
    j.end_ns = end;
    return j;
  };
  const auto idle_rects = [](const std::string& html) {
    std::vector<std::string> rects;
    const std::regex re("<rect class=\"idle\" x=\"([0-9.]+)\"[^>]*><title>([^<]*)</title>");
    for (std::sregex_iterator m(html.begin(), html.end(), re), end; m != end; ++m) {
      rects.push_back((*m)[1].str() + " " + (*m)[2].str());
    }
    return rects;
  };
  StepWindow window;
  window.step = 1;

  pipescope::Run gap;
  gap.types.intern("forward");
  gap.devices.emplace_back();
  gap.devices[0].jobs = {job(0, 100), job(500, 500), job(900, 1000)};
  gap.finalize();
  Metrics gap_metrics;
  window.start_ns = 0;
  window.end_ns = 1000;
  gap_metrics.steps = {window};
  HtmlOptions options;
  options.steps = {0};
  EXPECT_EQ(idle_rects(render_html_report(gap, gap_metrics, options)),
            (std::vector<std::string>{"220.0 idle 800 ns"}));

  pipescope::Run long_job;
  long_job.types.intern("forward");
  long_job.devices.emplace_back();
  JobVector& jobs = long_job.devices[0].jobs;
  jobs.push_back(job(0, 10000));
  for (std::int64_t i = 0; i < 70; ++i) jobs.push_back(job(10 + i * 10, 15 + i * 10));
  jobs.push_back(job(9000, 12000));
  long_job.finalize();
  Metrics long_metrics;
  window.start_ns = 5000;
  window.end_ns = 15000;
  long_metrics.steps = {window};
  EXPECT_EQ(idle_rects(render_html_report(long_job, long_metrics, options)),
            (std::vector<std::string>{"820.0 idle 3.000 us"}));
}

// The interactive timeline's data (html_report_data.h): the JSON between
// <script type="application/json" id="pipescope-data"> and its </script>,
// or "" when the page has none.
std::string embedded_json(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"pipescope-data\">";
  const std::size_t begin = html.find(open);
  if (begin == std::string::npos) return "";
  const std::size_t from = begin + open.size();
  return html.substr(from, html.find("</script>", from) - from);
}

std::vector<std::int64_t> ints(simdjson::dom::element e) {
  std::vector<std::int64_t> out;
  for (const simdjson::dom::element v : e.get_array()) out.push_back(std::int64_t(v));
  return out;
}

TEST(HtmlReport, EmbeddedStepsAreTheDrawnOnesFirstThenInOrderWithinTheBound) {
  EXPECT_EQ(choose_embedded_steps({5, 5, 5, 5}, {2}, 10), (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(choose_embedded_steps({5, 5, 5, 5}, {3, 1}, 10), (std::vector<std::size_t>{1, 3}));
  // A step that does not fit is skipped; a later one may still fit.
  EXPECT_EQ(choose_embedded_steps({5, 20, 5}, {}, 10), (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(choose_embedded_steps({5, 5, 5}, {}, 15), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_TRUE(choose_embedded_steps({30}, {0}, 10).empty());
  EXPECT_TRUE(choose_embedded_steps({}, {}, 10).empty());
  // The drawn steps only (a partitioned run's report), each that fits.
  EXPECT_EQ(choose_embedded_steps({5, 5, 5, 5}, {2}, 10, false), (std::vector<std::size_t>{2}));
  EXPECT_EQ(choose_embedded_steps({5, 20, 5}, {2, 1, 0}, 10, false),
            (std::vector<std::size_t>{0, 2}));
}

// Every job of an embedded step, exactly: the step's own jobs and the other
// jobs that overlap its window, start and duration in ns from the window's
// start, type, micro-batch and input line; the page names the steps it
// embeds when the bound leaves some out.
TEST(HtmlReport, EmbedsEachStepsJobsExactly) {
  const auto r = testing::log_event_run();
  HtmlOptions options;
  options.steps = {0};
  std::string html = render_html_report(r.run, r.metrics, options);
  std::string json = embedded_json(html);
  ASSERT_FALSE(json.empty());
  EXPECT_NE(html.find("Every step can be picked (3)."), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::uint64_t(doc["run_jobs"]), r.run.job_count());
  EXPECT_EQ(ints(doc["drawn"]), (std::vector<std::int64_t>{0}));
  simdjson::dom::array steps = doc["steps"];
  ASSERT_EQ(steps.size(), r.metrics.steps.size());
  std::size_t e = 0;
  for (const simdjson::dom::element step : steps) {
    const StepWindow& w = r.metrics.steps[e];
    EXPECT_EQ(std::int64_t(step["step"]), w.step);
    EXPECT_EQ(std::int64_t(step["window"]), w.window_ns());
    EXPECT_EQ(std::int64_t(step["start"]), w.start_ns - r.metrics.steps[0].start_ns);
    std::size_t d = 0;
    for (const simdjson::dom::element device : step["devices"].get_array()) {
      std::vector<std::int64_t> start, duration, type, micro_batch, line;
      const JobVector& jobs = r.run.devices[d].jobs;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const bool own = r.metrics.job_step[d][i] == static_cast<std::int32_t>(e);
        if (!own && (jobs[i].end_ns <= w.start_ns || jobs[i].start_ns >= w.end_ns)) continue;
        start.push_back(jobs[i].start_ns - w.start_ns);
        duration.push_back(jobs[i].duration_ns());
        type.push_back(jobs[i].type);
        micro_batch.push_back(jobs[i].micro_batch);
        line.push_back(jobs[i].line);
      }
      EXPECT_FALSE(start.empty());
      EXPECT_EQ(ints(device["start"]), start) << "step " << w.step << " device " << d;
      EXPECT_EQ(ints(device["dur"]), duration);
      EXPECT_EQ(ints(device["type"]), type);
      EXPECT_EQ(ints(device["mb"]), micro_batch);
      EXPECT_EQ(ints(device["line"]), line);
      ++d;
    }
    EXPECT_EQ(d, r.run.devices.size());
    ++e;
  }

  // A bound of 5 jobs: the drawn step 12 (4 jobs) first, then nothing else
  // fits; the page says which steps can be picked and what the bound is.
  options.steps = {2};
  options.max_embedded_jobs = 5;
  html = render_html_report(r.run, r.metrics, options);
  ASSERT_EQ(parser.parse(embedded_json(html)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(doc["steps"].get_array().size(), 1u);
  EXPECT_EQ(std::int64_t(doc["steps"].at(0)["step"]), 12);
  EXPECT_NE(html.find("1 of the 3 steps can be picked: steps 12. The report embeds at most 5 jobs"),
            std::string::npos);
  // How to write a trace of other steps, in the engine's words or the caller's.
  EXPECT_NE(html.find("cover every step, and a step list of the traces writes a trace of the "
                      "steps you choose."),
            std::string::npos);
  auto flags = std::make_shared<OptionWords>();
  flags->set(CallerOption::trace_steps, "analyze --steps", "");
  flags->set(CallerOption::mpi, "--mpi", "");
  flags->set(CallerOption::html_steps, "--html-steps", "");
  options.words = flags;
  EXPECT_NE(render_html_report(r.run, r.metrics, options)
                .find("and analyze --steps writes a trace of the steps you choose."),
            std::string::npos);
  options.max_embedded_jobs = 8;
  html = render_html_report(r.run, r.metrics, options);
  EXPECT_NE(html.find("2 of the 3 steps can be picked: steps 10, 12."), std::string::npos);
  // The drawn steps only, whatever else would fit, and the page says why.
  options.max_embedded_jobs = kHtmlMaxEmbeddedJobs;
  options.embed_drawn_only = true;
  html = render_html_report(r.run, r.metrics, options);
  ASSERT_EQ(parser.parse(embedded_json(html)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(doc["steps"].get_array().size(), 1u);
  EXPECT_EQ(std::int64_t(doc["steps"].at(0)["step"]), 12);
  EXPECT_NE(html.find("1 of the 3 steps can be picked: steps 12. The report of a run analysed "
                      "with --mpi embeds only the steps it draws (--html-steps), at most 200000 "
                      "jobs"),
            std::string::npos);
}

// Type names are log bytes: the data stays valid JSON, and nothing in it can
// end its script element or open a comment.
TEST(HtmlReport, EmbeddedDataIsValidJsonThatCannotCloseItsElement) {
  pipescope::Run run;
  testing::add_job(run, 0, "forward</script><!--x", 0, 0, 10);
  testing::add_job(run, 0, "backward\xff\"", 0, 10, 20);
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  HtmlOptions options;
  options.steps = choose_html_steps(metrics, "");
  const std::string html = render_html_report(run, metrics, options);
  const std::string json = embedded_json(html);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.find('<'), std::string::npos);  // so no "</script" and no "<!--"
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["types"].at(0)["name"]), "forward</script><!--x");
  EXPECT_EQ(std::string_view(doc["types"].at(1)["name"]), "backward\xEF\xBF\xBD\"");
  // The script cannot end its element early or open a comment in it.
  std::string script(html_report_script());
  std::transform(script.begin(), script.end(), script.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  EXPECT_EQ(script.find("</script"), std::string::npos);
  EXPECT_EQ(script.find("<!--"), std::string::npos);
  EXPECT_NE(html.find("<script>" + std::string(html_report_script()) + "</script>"),
            std::string::npos);
}

// The pipeline's figures per embedded step, worked out by hand (comm_jobs_test,
// critical_path_test's rules). P = 2, M = 1, one stage per device:
//   device 0: F0 [0,10) send_forward [10,14) recv_backward [14,40) B0 [40,50)
//   device 1: recv_forward [3,16) F0 [16,26) B0 [26,36) send_backward [36,38)
// Window [0,50). Bubbles (comm is not busy): device 0 interior [10,40) after
// F0 (0), waiting for B0 (3), whose input is device 1's B0 (local 2);
// device 1 fill [0,16) waiting for F0 (1), whose input is device 0's F0 (0),
// and drain [36,50) after B0 (2). Comm: local, wait, transfer, data, peer.
// Critical path: d0.j0 d1.j0 d1.j1 d1.j2 d0.j2 d0.j3, entered through a
// dependency at d1.j0 and d0.j2, no wait.
TEST(HtmlReport, EmbedsBubblesCommSplitsAndTheCriticalPath) {
  pipescope::Run run;
  testing::add_job(run, 0, "forward", 0, 0, 10);
  testing::add_job(run, 0, "send_forward", 0, 10, 14);
  testing::add_job(run, 0, "recv_backward", 0, 14, 40);
  testing::add_job(run, 0, "backward", 0, 40, 50);
  testing::add_job(run, 1, "recv_forward", 0, 3, 16);
  testing::add_job(run, 1, "forward", 0, 16, 26);
  testing::add_job(run, 1, "backward", 0, 26, 36);
  testing::add_job(run, 1, "send_backward", 0, 36, 38);
  run.finalize();
  PipelineOptions pipeline_options;
  pipeline_options.stages = parse_stage_spec("device", "--stages");
  const AnalyzedRun analysed = analyze_run(run, pipeline_options);
  HtmlOptions options;
  options.steps = {0};
  options.pipeline = &analysed.pipeline;
  const std::string html = render_html_report(run, analysed.metrics, options);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(embedded_json(html)).get(doc), simdjson::SUCCESS);
  const simdjson::dom::element step = doc["steps"].at(0);
  EXPECT_EQ(std::int64_t(step["window"]), 50);
  const simdjson::dom::element d0 = step["devices"].at(0), d1 = step["devices"].at(1);
  // Bubbles: start, length, kind, inherent (not checked here), before, after, input.
  std::vector<std::int64_t> b = ints(d0["bubbles"]);
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ((std::vector<std::int64_t>{b[0], b[1], b[2], b[4], b[5], b[6], b[7]}),
            (std::vector<std::int64_t>{10, 30, 1, 0, 3, 1, 2}));
  b = ints(d1["bubbles"]);
  ASSERT_EQ(b.size(), 16u);
  EXPECT_EQ((std::vector<std::int64_t>{b[0], b[1], b[2], b[4], b[5], b[6], b[7]}),
            (std::vector<std::int64_t>{0, 16, 0, -1, 1, 0, 0}));
  EXPECT_EQ((std::vector<std::int64_t>{b[8], b[9], b[10], b[12], b[13], b[14], b[15]}),
            (std::vector<std::int64_t>{36, 14, 2, 2, -1, -1, -1}));
  EXPECT_EQ(ints(d0["comm"]),
            (std::vector<std::int64_t>{1, 0, 4, 1, 1, 1, 0, 2, 22, 4, 1, 2, 1, 3}));
  EXPECT_EQ(ints(d1["comm"]),
            (std::vector<std::int64_t>{0, 7, 6, 0, 0, 0, 1, 3, 0, 2, 0, 3, 0, 2}));
  EXPECT_EQ(ints(step["critical"]),
            (std::vector<std::int64_t>{0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0,
                                       1, 2, 0, 0, 0, 2, 0, 1, 0, 3, 0, 0}));
}

TEST(HtmlReport, BigStepStaysSmall) {
  // One step of 200,000 one-microsecond jobs per device: boxes narrower than
  // a pixel are merged, so the page stays far below one box per job.
  pipescope::Run run;
  const TypeId fwd = run.types.intern("forward");
  const TypeId bwd = run.types.intern("backward");
  for (int d = 0; d < 4; ++d) {
    Device device;
    device.index = d;
    for (std::int64_t i = 0; i < 200000; ++i) {
      Job job;
      job.start_ns = i * 2000;
      job.end_ns = job.start_ns + 1000;
      job.micro_batch = i % 8;
      job.type = i < 100000 ? fwd : bwd;
      device.jobs.push_back(job);
    }
    run.devices.push_back(std::move(device));
  }
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  HtmlOptions options;
  options.steps = choose_html_steps(metrics, "");
  const std::string html = render_html_report(run, metrics, options);
  EXPECT_LT(html.size(), 1000000u);
  EXPECT_EQ(count(html, "<g class=\"device-row\""), 4u * options.steps.size());
  const std::size_t boxes = count(html, "<rect class=\"job\"");
  EXPECT_GT(boxes, 4u);
  EXPECT_LT(boxes, 4u * 2000u);
  EXPECT_NE(html.find("jobs over"), std::string::npos);  // merged boxes say how many jobs
  // 800,000 jobs in one step: past the embedded bound, so no interactive
  // timeline; the static one shows with scripts too (not in <noscript>).
  EXPECT_EQ(embedded_json(html), "");
  EXPECT_EQ(html.find("<noscript>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"explorer\""), std::string::npos);
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// 4 stages of 8 tensor-parallel peers, the peers of stage 2 but one alike.
pipescope::Run peer_run() {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.devices_per_stage = 8;
  config.steps = 3;
  pipescope::Run run = testing::run_from_simulation(config);
  // Device 21 (stage 2) computes 5% longer per job: its figures differ.
  for (Job& job : run.devices[21].jobs) job.end_ns += job.duration_ns() / 20;
  return run;
}

TEST(HtmlReport, DevicesWhoseFiguresAgreeWithinOnePercentShareARow) {
  pipescope::Run run = peer_run();
  PipelineOptions pipeline_options;
  pipeline_options.stages = parse_stage_spec("0-7,8-15,16-23,24-31", "--stages");
  const AnalyzedRun analysed = analyze_run(run, pipeline_options);
  const Metrics& metrics = analysed.metrics;
  const HtmlDeviceRows rows = html_device_rows(run, metrics, &analysed.pipeline, 512);
  // Checked here apart from the grouping: a row's devices share a stage and
  // their busy and idle time each agree within 1%; two rows of one stage do not.
  const auto& stage_of = analysed.pipeline.stages.stage_of;
  std::size_t devices = 0;
  for (const std::vector<std::size_t>& row : rows.rows) {
    devices += row.size();
    std::int64_t busy_lo = INT64_MAX, busy_hi = 0, idle_lo = INT64_MAX, idle_hi = 0;
    for (const std::size_t d : row) {
      EXPECT_EQ(stage_of[d], stage_of[row.front()]);
      busy_lo = std::min(busy_lo, metrics.devices[d].busy_ns);
      busy_hi = std::max(busy_hi, metrics.devices[d].busy_ns);
      idle_lo = std::min(idle_lo, metrics.devices[d].idle_ns);
      idle_hi = std::max(idle_hi, metrics.devices[d].idle_ns);
    }
    EXPECT_LE(static_cast<double>(busy_hi), static_cast<double>(busy_lo) * 1.01);
    EXPECT_LE(static_cast<double>(idle_hi), static_cast<double>(idle_lo) * 1.01);
  }
  EXPECT_EQ(devices, run.devices.size());
  ASSERT_EQ(rows.rows.size(), 5u) << "one row per stage, and device 21 alone";
  EXPECT_EQ(rows.rows[2], (std::vector<std::size_t>{16, 17, 18, 19, 20, 22, 23}));
  EXPECT_EQ(rows.rows[3], (std::vector<std::size_t>{21}));
  EXPECT_EQ(rows.drawn, 5u);

  HtmlOptions options;
  options.steps = {1};
  options.pipeline = &analysed.pipeline;
  const std::string html = render_html_report(run, metrics, options);
  // One static row and one utilization bar per row; a folded row says so.
  EXPECT_EQ(count(html, "<g class=\"device-row"), 5u);
  EXPECT_EQ(count(html, "class=\"util-bar\""), 5u);
  EXPECT_EQ(count(html, "data-devices=\"8\""), 2u * 3) << "stages 0, 1, 3: timeline and bar";
  EXPECT_NE(html.find("GPU 0 (m0) \u00d78"), std::string::npos);
  EXPECT_NE(html.find("8 devices (0-7), utilization"), std::string::npos);
  // The interactive data: jobs only for the first device of each row.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(embedded_json(html)).get(doc), simdjson::SUCCESS);
  std::size_t with_jobs = 0, undrawn = 0;
  simdjson::dom::array steps = doc["steps"];
  simdjson::dom::array step_devices = steps.at(0)["devices"];
  std::size_t d = 0;
  simdjson::dom::array all_devices = doc["devices"];
  for (const simdjson::dom::element device : all_devices) {
    const bool drawn = device["row"].error() != simdjson::SUCCESS;
    undrawn += drawn ? 0 : 1;
    const std::size_t jobs = simdjson::dom::array(step_devices.at(d)["start"]).size();
    with_jobs += jobs > 0 ? 1 : 0;
    EXPECT_EQ(drawn, jobs > 0) << d;
    ++d;
  }
  EXPECT_EQ(with_jobs, 5u);
  EXPECT_EQ(undrawn, run.devices.size() - 5);

  // The longest bubbles: one row per stage and time, the 8 peers counted.
  EXPECT_GE(count(html, "<tr data-peers=\"8\">"), 1u);
  EXPECT_EQ(count(html, "<tr data-peers="), analysed.pipeline.bubbles.longest_folded.size());
}

TEST(HtmlReport, AtMostMaxRowsAreDrawnAndTheRestListed) {
  const pipescope::Run run = peer_run();
  const Metrics metrics = compute_metrics(run);
  HtmlOptions options;
  options.steps = {1};
  options.max_rows = 12;
  // Without the pipeline analysis no stage is known: a row per device.
  const HtmlDeviceRows rows = html_device_rows(run, metrics, nullptr, options.max_rows);
  ASSERT_EQ(rows.rows.size(), run.devices.size());
  EXPECT_EQ(rows.drawn, 12u);
  const std::string html = render_html_report(run, metrics, options);
  EXPECT_EQ(count(html, "<g class=\"device-row"), 12u);
  EXPECT_EQ(count(html, "class=\"util-bar\""), 12u);
  EXPECT_NE(html.find("Devices not drawn (20 rows past the first 12)"), std::string::npos);
  const std::size_t table = html.find("<table class=\"undrawn\">");
  ASSERT_NE(table, std::string::npos);
  const std::string listed = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(count(listed, "<tr><td>"), 20u);
  EXPECT_NE(listed.find("<tr><td>12</td>"), std::string::npos);
  EXPECT_NE(listed.find("<tr><td>31</td>"), std::string::npos);
}

}  // namespace
}  // namespace pipescope
