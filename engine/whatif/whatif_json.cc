#include "whatif/whatif_json.h"

#include <cmath>

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
                       const ReplayOptions& options, const ModelError& error,
                       const std::vector<Warning>& warnings, const std::string& path) {
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
  // How a replay draws its costs: per micro-batch on every stage at once
  // (a pattern the stages share), or apart per stage.
  w.field("cost_draws", inputs.shared_pattern ? "per_micro_batch" : "per_stage");
  if (std::isnan(inputs.micro_batch_correlation)) {
    w.key("micro_batch_correlation");
    w.null();
  } else {
    w.field("micro_batch_correlation", inputs.micro_batch_correlation);
  }
  if (measured.replica >= 0) {
    w.field("replica", measured.replica);
    w.field("replicas", measured.replicas);
  }
  w.end_object();
  w.key("model");
  w.begin_object();
  w.field("weight_share", options.weight_share);
  w.field("replayed_steps", replayed_steps(options, measured));
  const LinkCosts& links = inputs.links;
  w.field("launch_overhead_ns", links.launch_overhead_ns);
  w.field("launch_overhead_samples",
          static_cast<std::uint64_t>(links.launch_overhead_samples.size()));
  w.field("latency_same_machine_ns", links.same_machine.ns);
  w.field("latency_same_machine_pairs", static_cast<std::uint64_t>(links.same_machine.pairs));
  w.field("latency_same_machine_samples",
          static_cast<std::uint64_t>(links.same_machine.samples.size()));
  w.field("latency_cross_machine_ns", links.cross_machine.ns);
  w.field("latency_cross_machine_pairs", static_cast<std::uint64_t>(links.cross_machine.pairs));
  w.field("latency_cross_machine_samples",
          static_cast<std::uint64_t>(links.cross_machine.samples.size()));
  w.field("step_overhead_samples", static_cast<std::uint64_t>(inputs.step_overhead.size()));
  w.key("notes");
  w.begin_array(true);
  for (const std::string& note : inputs.notes) w.value(std::string_view(note));
  w.end_array();
  w.end_object();
  w.key("model_error");
  w.begin_object();
  w.field("available", error.available);
  if (!error.available) {
    w.field("reason", std::string_view(error.reason));
  } else {
    w.field("schedule", whatif_schedule_name(error.scenario.schedule));
    w.field("micro_batches", error.scenario.micro_batches);
    w.field("chunks", error.scenario.chunks);
    w.field("measured_step_ns", error.measured_step_ns);
    w.field("replayed_step_ns", error.replayed_step_ns);
    w.field("step_error", error.step_error);
    w.field("measured_bubble_ratio", error.measured_bubble_ratio);
    w.field("replayed_bubble_ratio", error.replayed_bubble_ratio);
    w.field("bubble_error", error.bubble_error);
    write_array(w, "measured_busy_ns", error.measured_busy_ns);
    write_array(w, "replayed_busy_ns", error.replayed_busy_ns);
    write_array(w, "measured_idle_ns", error.measured_idle_ns);
    write_array(w, "replayed_idle_ns", error.replayed_idle_ns);
    w.field("worst", std::string_view(model_figure_name(error.worst)));
    w.field("worst_error", error.worst_error);
    w.field("trusted", error.trusted());
  }
  w.end_object();
  w.key("warnings");
  w.begin_array();
  for (const Warning& warning : warnings) {
    w.begin_object();
    w.field("code", warning_name(warning.code));
    w.field("severity", severity_name(warning_severity(warning.code)));
    w.field("message", std::string_view(warning.message));
    w.end_object();
  }
  w.end_array();
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
    w.key("extrapolates");
    w.begin_array();
    for (const std::string& e : p.extrapolates) w.value(std::string_view(e));
    w.end_array();
    w.key("costs");
    w.begin_object();
    write_array(w, "forward_ns", p.costs.forward_ns);
    write_array(w, "backward_ns", p.costs.backward_ns);
    write_array(w, "weight_ns", p.costs.weight_ns);
    write_array(w, "optimizer_ns", p.costs.optimizer_ns);
    w.field("latency_same_machine_ns", p.costs.latency_same_machine_ns);
    w.field("latency_cross_machine_ns", p.costs.latency_cross_machine_ns);
    w.field("launch_overhead_ns", p.costs.launch_overhead_ns);
    write_array(w, "optimizer_wait_ns", p.costs.optimizer_wait_ns);
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
