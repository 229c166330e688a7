#include "whatif/whatif_json.h"

#include "export/atomic_file.h"
#include "export/json_writer.h"

namespace pipescope {

namespace {

void write_array(JsonWriter& w, std::string_view key, const std::vector<double>& values) {
  w.key(key);
  w.begin_array(true);
  for (double v : values) w.value(v);
  w.end_array();
}

}  // namespace

double step_change(const MeasuredRun& measured, const Prediction& prediction) {
  return measured.step_ns > 0 ? prediction.step_ns / measured.step_ns - 1 : 0;
}

void write_whatif_json(const WhatifInputs& inputs, const std::vector<Prediction>& predictions,
                       const ReplayOptions& options, const std::string& path) {
  AtomicFile file(path);
  JsonWriter w(file, JsonStyle::pretty());
  const MeasuredRun& measured = inputs.measured;
  w.begin_object();
  w.field("schema", kWhatifSchema);
  w.key("measured");
  w.begin_object();
  w.field("schedule", std::string_view(measured.schedule));
  w.field("stages", measured.stages);
  w.field("micro_batches", measured.micro_batches);
  w.field("chunks", measured.chunks);
  w.field("step_ns", measured.step_ns);
  w.field("bubble_ratio", measured.bubble_ratio);
  w.field("complete_steps", static_cast<std::uint64_t>(measured.complete_steps));
  w.field("split_backward", inputs.split_backward);
  if (measured.replica >= 0) {
    w.field("replica", measured.replica);
    w.field("replicas", measured.replicas);
  }
  w.end_object();
  w.key("model");
  w.begin_object();
  w.field("weight_share", options.weight_share);
  w.field("replayed_steps", options.steps);
  w.field("latency_same_machine_samples",
          static_cast<std::uint64_t>(inputs.latency_same_machine.size()));
  w.field("latency_cross_machine_samples",
          static_cast<std::uint64_t>(inputs.latency_cross_machine.size()));
  w.field("step_overhead_samples", static_cast<std::uint64_t>(inputs.step_overhead.size()));
  w.end_object();
  w.key("scenarios");
  w.begin_array();
  for (const Prediction& p : predictions) {
    w.begin_object();
    w.field("schedule", whatif_schedule_name(p.scenario.schedule));
    w.field("stages", measured.stages);
    w.field("micro_batches", p.scenario.micro_batches);
    w.field("chunks", p.scenario.chunks);
    w.field("step_ns", p.step_ns);
    w.field("step_p10_ns", p.step_p10_ns);
    w.field("step_p90_ns", p.step_p90_ns);
    w.field("step_change", step_change(measured, p));
    w.field("step_ns_per_micro_batch", p.step_ns_per_micro_batch);
    w.field("bubble_ratio", p.bubble_ratio);
    write_array(w, "in_flight_max", p.in_flight_max);
    w.key("costs");
    w.begin_object();
    write_array(w, "forward_ns", p.costs.forward_ns);
    write_array(w, "backward_ns", p.costs.backward_ns);
    write_array(w, "weight_ns", p.costs.weight_ns);
    write_array(w, "optimizer_ns", p.costs.optimizer_ns);
    w.field("latency_same_machine_ns", p.costs.latency_same_machine_ns);
    w.field("latency_cross_machine_ns", p.costs.latency_cross_machine_ns);
    w.field("step_overhead_ns", p.costs.step_overhead_ns);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  file.append("\n");
  file.commit();
}

}  // namespace pipescope
