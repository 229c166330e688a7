#include "simulate/noise.h"

#include <string_view>

#include "simulate/log_format.h"

namespace pipescope::sim {

namespace {

// Appends a fixed-point number "int.frac" from integer parts (no double).
void append_fixed(fmt::memory_buffer& out, std::uint64_t value, int fraction_digits) {
  std::uint64_t scale = 1;
  for (int i = 0; i < fraction_digits; ++i) scale *= 10;
  append_int(out, static_cast<std::int64_t>(value / scale));
  out.push_back('.');
  const std::uint64_t frac = value % scale;
  char digits[20];
  std::uint64_t rest = frac;
  for (int i = fraction_digits - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + rest % 10);
    rest /= 10;
  }
  out.append(digits, digits + fraction_digits);
}

}  // namespace

NoiseGenerator::NoiseGenerator(std::uint64_t seed, int thread_id, int rank, int stages)
    : random_(seed), thread_id_(thread_id), rank_(rank), stages_(stages) {}

void NoiseGenerator::append_line(fmt::memory_buffer& out, std::int64_t ns) {
  ++counter_;
  const std::uint64_t r = random_.next();
  const auto pick = r % 100;
  const auto small = static_cast<std::int64_t>((r >> 8) % 1000);
  // Mostly the executor's own chatter, as in real logs; rarer kinds below.
  if (pick < 30) {
    append_glog_prefix(out, 'I', ns, thread_id_, "interpretercore.cc:237");
    append_text(out, "New Executor is Running.");
  } else if (pick < 42) {
    append_text(out, "[");
    append_python_time(out, ns);
    append_text(out, "] [    INFO] - loss: ");
    append_fixed(out, 1'500'000 + (r >> 12) % 2'000'000, 6);
    append_text(out, ", learning_rate: 3e-05, global_step: ");
    append_int(out, counter_);
    append_text(out, ", interval_runtime: ");
    append_fixed(out, 900 + (r >> 20) % 400, 4);
    append_text(out, ", interval_samples_per_second: ");
    append_fixed(out, 20'000 + (r >> 30) % 9'000, 3);
  } else if (pick < 50) {
    append_glog_prefix(out, 'I', ns, thread_id_, "pipeline_parallel.py:1102");
    append_text(out, "[Profiler] step ");
    append_int(out, counter_);
    append_text(out, " finished, Profiler Info: step cost ");
    append_int(out, 100 + small);
    append_text(out, " ms");
  } else if (pick < 56) {
    append_glog_prefix(out, 'I', ns, thread_id_, "standalone_executor.cc:195");
    append_text(out, "Profiler Info: Joined ");
    append_int(out, 1 + small % 8);
    append_text(out, " executor threads");
  } else if (pick < 61) {
    // Two spaces and a tab: near misses of the job-line literal.
    append_glog_prefix(out, 'I', ns, thread_id_, "standalone_executor.cc:217");
    append_text(out, (r >> 40) & 1 ? "Profiler Info:  Job (" : "Profiler Info:\tJob (");
    append_int(out, small % 64);
    append_text(out, "), type = forward, skipped");
  } else if (pick < 65) {
    append_glog_prefix(out, 'E', ns, thread_id_, "standalone_executor.cc:230");
    append_text(out, "Profiler Info Job (");
    append_int(out, small % 64);
    append_text(out,
                "), type = backward, micro_batch_id = 0, job_start_time = 1, job_end_time = 2");
  } else if (pick < 71) {
    append_glog_prefix(out, 'I', ns, thread_id_, "executor.cc:88");
    append_text(out, "Job (");
    append_int(out, small % 64);
    append_text(out, ") of type backward finished in ");
    append_fixed(out, 5'000 + (r >> 20) % 40'000, 3);
    append_text(out, " ms (micro_batch_id = ");
    append_int(out, small % 16);
    append_text(out, ")");
  } else if (pick < 76) {
    append_text(out,
                "/usr/local/lib/python3.10/dist-packages/paddle/distributed/fleet/meta_parallel/"
                "pipeline_parallel.py:");
    append_int(out, 400 + small % 500);
    append_text(out,
                ": UserWarning: enable_timer is deprecated, use the Profiler instead of "
                "paddle.distributed.fleet.utils.timer_helper");
  } else if (pick < 79) {
    append_text(out, "  warnings.warn(");
  } else if (pick < 83) {
    // Blank lines occur in real logs between Python tracebacks and banners.
  } else if (pick < 87) {
    append_text(out, "LAUNCH INFO ");
    append_python_time(out, ns);
    append_text(out, " Pod status: running, ");
    append_int(out, counter_);
    append_text(out, " heartbeats");
  } else if (pick < 90) {
    append_glog_prefix(out, 'W', ns, thread_id_, "gpu_resources.cc:119");
    append_text(out, "Please NOTE: device: ");
    append_int(out, rank_);
    append_text(out,
                ", GPU Compute Capability: 8.0, Driver API Version: 12.2, Runtime API Version: "
                "11.8");
  } else if (pick < 94) {
    append_glog_prefix(out, 'I', ns, thread_id_, "nccl_comm_context.cc:72");
    append_text(out, "ncclCommInitRank\tdone, rank ");
    append_int(out, rank_);
    append_text(out, "\tnranks ");
    append_int(out, stages_);
    append_text(out, ", ring_id 0");
  } else {
    // A long configuration dump, as the launcher prints at start-up.
    append_glog_prefix(out, 'I', ns, thread_id_, "topology.py:215");
    append_text(out, "HybridParallelInfo: rank_id: ");
    append_int(out, rank_);
    append_text(out, ", mp_degree: 1, sharding_degree: 1, pp_degree: ");
    append_int(out, stages_);
    append_text(out, ", dp_degree: 1, sep_degree: 1, pp_group: [");
    for (int s = 0; s < stages_; ++s) {
      if (s > 0) append_text(out, ", ");
      append_int(out, s);
    }
    append_text(out, "], dp_group: [");
    append_int(out, rank_);
    append_text(out, "], check/clip group: [");
    for (int s = 0; s < stages_; ++s) {
      if (s > 0) append_text(out, ", ");
      append_int(out, s);
    }
    append_text(out,
                "], strategy: {\"pipeline_configs\": {\"accumulate_steps\": 8, "
                "\"micro_batch_size\": 1, \"enable_partial_send_recv\": true, "
                "\"schedule_mode\": \"1F1B\", \"p2p_cache_shape\": true, "
                "\"enable_timer\": false}, \"tensor_parallel_configs\": "
                "{\"tensor_init_seed\": -1}, \"amp_configs\": {\"init_loss_scaling\": 32768.0, "
                "\"incr_every_n_steps\": 1000, \"decr_every_n_nan_or_inf\": 2, "
                "\"use_pure_fp16\": true, \"custom_white_list\": [\"lookup_table\", "
                "\"lookup_table_v2\", \"flash_attn\"]}}");
  }
}

}  // namespace pipescope::sim
