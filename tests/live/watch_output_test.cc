// live/watch_output.h: the printed line, the JSON object and the .prom file
// of one step, exactly (written whole by write_file_atomically:
// tests/export/atomic_file_test.cc).
#include "live/watch_output.h"

#include <gtest/gtest.h>

#include <string>

namespace pipescope {
namespace {

LiveStep sample_step() {
  LiveStep step;
  step.segment = 1;
  step.step = 12;
  step.label = "1:12";
  step.start_ns = 1'000'000'000;
  step.end_ns = 1'812'345'678;
  step.bubble_ratio = 0.25;
  step.devices = 4;
  step.inherent_points = 20.125;
  step.excess_points = 4.875;
  step.most_waited_stage = 2;
  return step;
}

TEST(WatchOutput, Line) {
  LiveStep step = sample_step();
  EXPECT_EQ(format_step_line(step),
            "step 1:12  window 812.346 ms  bubble 25.00%  inherent 20.12 pts  excess 4.88 pts  "
            "waited on stage 2");
  step.beyond_spread = true;
  step.provisional = true;
  step.inherent_points.reset();
  step.excess_points.reset();
  step.most_waited_stage.reset();
  EXPECT_EQ(format_step_line(step),
            "step 1:12  window 812.346 ms  bubble 25.00%  inherent - pts  excess - pts  waited on "
            "-  beyond recent spread  provisional");
  step.beyond_spread = false;
  step.unwritten = {3};
  EXPECT_EQ(format_step_line(step),
            "step 1:12  window 812.346 ms  bubble 25.00%  inherent - pts  excess - pts  waited on "
            "-  provisional (device 3 has not logged it yet)");
  step.unwritten = {3, 5};
  EXPECT_NE(format_step_line(step).find("  provisional (devices 3, 5 have not logged it yet)"),
            std::string::npos);
  EXPECT_NE(step_json("r", step).find(R"("provisional":true,"unwritten_devices":[3,5],)"),
            std::string::npos)
      << step_json("r", step);
}

TEST(WatchOutput, WindowRoundsFromIntegerNanoseconds) {
  // Half a microsecond rounds away from zero, as every duration pipescope
  // prints (a double 1.0005 would print 1.000).
  LiveStep step = sample_step();
  step.start_ns = 0;
  step.end_ns = 1'000'500;
  EXPECT_NE(format_step_line(step).find("window 1.001 ms"), std::string::npos);
}

TEST(WatchOutput, JsonObject) {
  EXPECT_EQ(step_json("job \"7\"", sample_step()),
            R"({"run":"job \"7\"","segment":1,"step":12,"label":"1:12","start_ns":1000000000,)"
            R"("end_ns":1812345678,"window_ns":812345678,"bubble_ratio":0.25,"devices":4,)"
            R"("inherent_points":20.125,"excess_points":4.875,"most_waited_stage":2,)"
            R"("beyond_spread":false,"provisional":false,"unwritten_devices":[],"events":[]})");
  LiveStep with_events = sample_step();
  with_events.events = {
      {3, "nccl_warn", "nccl", "warning", -2'500'000, true},
      {0, "paddlenlp_saving_checkpoint", "checkpoint", "info", 83'000'000, false}};
  EXPECT_NE(step_json("r", with_events)
                .find(R"("events":[{"device":3,"id":"nccl_warn","category":"nccl",)"
                      R"("severity":"warning","offset_ns":-2500000,"approximate":true},)"
                      R"({"device":0,"id":"paddlenlp_saving_checkpoint","category":"checkpoint",)"
                      R"("severity":"info","offset_ns":83000000,"approximate":false}]})"),
            std::string::npos)
      << step_json("r", with_events);
  EXPECT_NE(format_step_line(with_events)
                .find("  events: device 3 nccl_warn at -0.003 s (about), device 0 "
                      "paddlenlp_saving_checkpoint at +0.083 s"),
            std::string::npos)
      << format_step_line(with_events);
  LiveStep unknown = sample_step();
  unknown.inherent_points.reset();
  unknown.excess_points.reset();
  unknown.most_waited_stage.reset();
  const std::string json = step_json("r", unknown);
  EXPECT_NE(json.find(R"("inherent_points":null,"excess_points":null,"most_waited_stage":null)"),
            std::string::npos)
      << json;
}

TEST(WatchOutput, PrometheusTextfile) {
  const std::string text = prometheus_text("logs", sample_step(), {13, 12345});
  EXPECT_EQ(text,
            "# HELP pipescope_step Number of the last completed step.\n"
            "# TYPE pipescope_step gauge\n"
            "pipescope_step{run=\"logs\"} 12\n"
            "# HELP pipescope_step_segment Launch segment of the last completed step.\n"
            "# TYPE pipescope_step_segment gauge\n"
            "pipescope_step_segment{run=\"logs\"} 1\n"
            "# HELP pipescope_step_window_seconds Window of the last completed step.\n"
            "# TYPE pipescope_step_window_seconds gauge\n"
            "pipescope_step_window_seconds{run=\"logs\"} 0.812345678\n"
            "# HELP pipescope_step_bubble_ratio Bubble ratio of the last completed step.\n"
            "# TYPE pipescope_step_bubble_ratio gauge\n"
            "pipescope_step_bubble_ratio{run=\"logs\"} 0.25\n"
            "# HELP pipescope_step_inherent_points Inherent idle of the last completed step, in "
            "points of its bubble ratio.\n"
            "# TYPE pipescope_step_inherent_points gauge\n"
            "pipescope_step_inherent_points{run=\"logs\"} 20.125\n"
            "# HELP pipescope_step_excess_points Excess idle of the last completed step, in "
            "points of its bubble ratio.\n"
            "# TYPE pipescope_step_excess_points gauge\n"
            "pipescope_step_excess_points{run=\"logs\"} 4.875\n"
            "# HELP pipescope_step_most_waited_stage Stage most waited on in the last completed "
            "step.\n"
            "# TYPE pipescope_step_most_waited_stage gauge\n"
            "pipescope_step_most_waited_stage{run=\"logs\"} 2\n"
            "# HELP pipescope_step_beyond_spread 1 when the last step's bubble ratio is beyond "
            "the run's recent spread.\n"
            "# TYPE pipescope_step_beyond_spread gauge\n"
            "pipescope_step_beyond_spread{run=\"logs\"} 0\n"
            "# HELP pipescope_step_provisional 1 when the last step's figures may change in the "
            "final pass.\n"
            "# TYPE pipescope_step_provisional gauge\n"
            "pipescope_step_provisional{run=\"logs\"} 0\n"
            "# HELP pipescope_steps_total Completed steps reported.\n"
            "# TYPE pipescope_steps_total counter\n"
            "pipescope_steps_total{run=\"logs\"} 13\n"
            "# HELP pipescope_jobs_total Job lines read.\n"
            "# TYPE pipescope_jobs_total counter\n"
            "pipescope_jobs_total{run=\"logs\"} 12345\n");
  // Label values escaped as the exposition format wants.
  EXPECT_NE(prometheus_text("a\"b\\c\nd", sample_step(), {}).find(R"({run="a\"b\\c\nd"})"),
            std::string::npos);
}

}  // namespace
}  // namespace pipescope
