#include "simulate/kernel_timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include "simulate/split_mix.h"

namespace pipescope::sim {

namespace {

constexpr int kMaxKernelsPerJob = 10'000;
constexpr std::int64_t kMinJobNs = 1'000;

/// A draw from the seed and up to four coordinates.
std::uint64_t draw(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0,
                   std::uint64_t d = 0) {
  std::uint64_t h = mix(seed ^ 0x6B65726E656C73ULL);  // "kernels"
  h = mix(h ^ a);
  h = mix(h ^ b);
  h = mix(h ^ c);
  return mix(h ^ d);
}

/// Uniform in [lo, hi].
std::int64_t uniform(std::uint64_t h, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(hi - lo + 1));
}

struct PatternKernel {
  const char* name;
  int weight;  // relative cost, tenths
};

constexpr const char* kGemm =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";
constexpr const char* kGemmWgrad =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";
constexpr const char* kLayerNorm =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>("
    "int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
    "c10::BFloat16*)";
constexpr const char* kLayerNormGrad =
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<"
    "c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
    "c10::BFloat16 const*, c10::BFloat16*, int)";
constexpr const char* kAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3>)";
constexpr const char* kGelu =
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda("
    "c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, ...)";
constexpr const char* kGeluGrad =
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >("
    "int, ...)";
constexpr const char* kFlash =
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)";
constexpr const char* kFlashGrad =
    "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, "
    "4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, true, false>("
    "Flash_bwd_params)";
constexpr const char* kAdam =
    "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, "
    "float, "
    "float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, "
    "AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float)";

// One transformer layer, repeated to fill a job.
constexpr std::array kForward = {PatternKernel{kLayerNorm, 10}, PatternKernel{kGemm, 60},
                                 PatternKernel{kFlash, 80},     PatternKernel{kGemm, 30},
                                 PatternKernel{kAdd, 10},       PatternKernel{kLayerNorm, 10},
                                 PatternKernel{kGemm, 100},     PatternKernel{kGelu, 15},
                                 PatternKernel{kGemm, 100},     PatternKernel{kAdd, 10}};
constexpr std::array kBackward = {
    PatternKernel{kAdd, 10},           PatternKernel{kGemm, 100}, PatternKernel{kGemmWgrad, 100},
    PatternKernel{kGeluGrad, 15},      PatternKernel{kGemm, 100}, PatternKernel{kGemmWgrad, 100},
    PatternKernel{kLayerNormGrad, 15}, PatternKernel{kGemm, 30},  PatternKernel{kGemmWgrad, 30},
    PatternKernel{kFlashGrad, 160},    PatternKernel{kGemm, 60},  PatternKernel{kGemmWgrad, 60},
    PatternKernel{kLayerNormGrad, 15}};
// The input half of a split backward, and its weight half.
constexpr std::array kBackwardInput = {PatternKernel{kAdd, 10},           PatternKernel{kGemm, 100},
                                       PatternKernel{kGeluGrad, 15},      PatternKernel{kGemm, 100},
                                       PatternKernel{kLayerNormGrad, 15}, PatternKernel{kGemm, 30},
                                       PatternKernel{kFlashGrad, 160},    PatternKernel{kGemm, 60},
                                       PatternKernel{kLayerNormGrad, 15}};
constexpr std::array kBackwardWeight = {
    PatternKernel{kGemmWgrad, 100}, PatternKernel{kGemmWgrad, 100}, PatternKernel{kGemmWgrad, 30},
    PatternKernel{kGemmWgrad, 60}};
constexpr std::array kOptimizer = {PatternKernel{kAdam, 10}};

std::span<const PatternKernel> pattern_of(SimJobType type) {
  switch (type) {
    case SimJobType::forward:
      return kForward;
    case SimJobType::backward:
      return kBackward;
    case SimJobType::backward_b:
      return kBackwardInput;
    case SimJobType::backward_w:
      return kBackwardWeight;
    default:
      return kOptimizer;
  }
}

/// Splits [begin, end) into at most `k_max` kernels of `pattern` (begin and
/// end exact, small gaps between them), appended to `out`.
void split_into_kernels(std::int64_t begin, std::int64_t end, int k_max,
                        std::span<const PatternKernel> pattern, std::uint64_t salt,
                        std::int32_t step, std::vector<KernelActivity>& out) {
  const std::int64_t length = end - begin;
  const int k =
      static_cast<int>(std::min<std::int64_t>(k_max, std::max<std::int64_t>(1, length / 1000)));
  std::vector<std::int64_t> gaps(static_cast<std::size_t>(k - 1));
  std::int64_t gap_sum = 0;
  for (int i = 0; i + 1 < k; ++i) {
    gaps[i] = uniform(mix(salt ^ (0x1000 + static_cast<std::uint64_t>(i))), 300, 2'500);
    gap_sum += gaps[i];
  }
  const std::int64_t gap_cap = length / 8;
  if (gap_sum > gap_cap) {
    std::int64_t scaled = 0;
    for (auto& g : gaps) {
      g = g * gap_cap / gap_sum;
      scaled += g;
    }
    gap_sum = scaled;
  }
  const std::int64_t busy = length - gap_sum;
  std::vector<std::int64_t> weights(static_cast<std::size_t>(k));
  std::int64_t weight_sum = 0;
  for (int j = 0; j < k; ++j) {
    const PatternKernel& p = pattern[static_cast<std::size_t>(j) % pattern.size()];
    weights[j] =
        p.weight * uniform(mix(salt ^ (0x2000 + static_cast<std::uint64_t>(j))), 700, 1'300);
    weight_sum += weights[j];
  }
  // Kernel j covers busy·W_j/W .. busy·W_{j+1}/W of the busy time (W_j the
  // running weight sum), so the durations add up to `busy` exactly.
  std::int64_t t = begin;
  std::int64_t cumulative = 0;
  std::int64_t done = 0;
  for (int j = 0; j < k; ++j) {
    cumulative += weights[j];
    const auto upto =
        static_cast<std::int64_t>(static_cast<__int128>(busy) * cumulative / weight_sum);
    KernelActivity a;
    a.start_ns = t;
    a.end_ns = t + (upto - done);
    a.step = step;
    a.name = pattern[static_cast<std::size_t>(j) % pattern.size()].name;
    out.push_back(a);
    t = a.end_ns + (j + 1 < k ? gaps[j] : 0);
    done = upto;
  }
}

/// A point-to-point transfer before it is placed.
struct PendingP2p {
  int from = 0;
  int to = 0;
  std::int32_t step = 0;
  std::int64_t produced = 0;   // the producing job's end
  std::int64_t consumed = 0;   // the consuming job's start
  std::int64_t free_from = 0;  // when the consumer's rank is free before it
};

bool is_backward_class(SimJobType type) {
  return type == SimJobType::backward || type == SimJobType::backward_b;
}

/// The options a kernel timeline cannot honour. Throws std::invalid_argument.
void check_kernel_config(const SimConfig& config, int kernels_per_job) {
  if (kernels_per_job < 1 || kernels_per_job > kMaxKernelsPerJob) {
    throw std::invalid_argument(fmt::format("kernels per job must be in 1..{}, got {}",
                                            kMaxKernelsPerJob, kernels_per_job));
  }
  if (config.lr_jobs) {
    throw std::invalid_argument("kernel traces have no lr jobs (they are Paddle's)");
  }
  if (config.comm_jobs) {
    throw std::invalid_argument(
        "kernel traces have no send/recv jobs: their NCCL kernels are the transfers");
  }
  if (config.p2p_latency_ns < config.resolution_ns) {
    throw std::invalid_argument(fmt::format(
        "the p2p latency ({} ns) is the NCCL transfer's duration: it must be at least the time "
        "resolution ({} ns)",
        config.p2p_latency_ns, config.resolution_ns));
  }
}

/// The point-to-point kernels of every input taken from another rank, rank
/// pair by rank pair in send order, appended to the ranks' activities;
/// returns each communication's members (rank, position before sorting).
std::vector<std::pair<ActivityKind, std::vector<std::pair<int, std::size_t>>>> place_p2p_kernels(
    std::vector<PendingP2p>& pending, const SimConfig& config, KernelTimeline& timeline) {
  // Point-to-point kernels, rank pair by rank pair in send order.
  std::sort(pending.begin(), pending.end(), [](const PendingP2p& a, const PendingP2p& b) {
    return std::tie(a.from, a.to, a.produced) < std::tie(b.from, b.to, b.produced);
  });
  std::vector<std::pair<ActivityKind, std::vector<std::pair<int, std::size_t>>>> members;
  std::int64_t previous_posted = 0;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const PendingP2p& x = pending[i];
    if (x.consumed <= x.produced) {
      throw std::logic_error("a consumer starts before its input was sent (kernel timeline bug)");
    }
    const std::int64_t arrival =
        x.produced + std::min(config.p2p_latency_ns, x.consumed - x.produced);
    const std::int64_t lead = uniform(draw(config.seed, 0x9E37, static_cast<std::uint64_t>(x.from),
                                           static_cast<std::uint64_t>(x.to), i),
                                      1'000, 5'000);
    std::int64_t posted = std::min(x.free_from, x.produced - lead);
    // After the pair's previous recv: NCCL matches the k-th send from a to b
    // with the k-th recv on b from a.
    const bool same_pair = i > 0 && pending[i - 1].from == x.from && pending[i - 1].to == x.to;
    if (same_pair) posted = std::max(posted, previous_posted + 1);
    previous_posted = posted;
    KernelActivity send;
    send.start_ns = x.produced;
    send.end_ns = arrival;
    send.step = x.step;
    send.kind = ActivityKind::send;
    send.peer = x.to;
    KernelActivity recv = send;
    recv.kind = ActivityKind::recv;
    recv.start_ns = posted;
    recv.peer = x.from;
    members.push_back(
        {ActivityKind::send,
         {{x.from, timeline.ranks[x.from].size()}, {x.to, timeline.ranks[x.to].size()}}});
    timeline.ranks[x.from].push_back(send);
    timeline.ranks[x.to].push_back(recv);
  }
  return members;
}

/// Sorts each rank's activities and points the communications (`members`:
/// rank, position before sorting) at them, each with its Comms Id.
void sort_and_link(
    KernelTimeline& timeline,
    const std::vector<std::pair<ActivityKind, std::vector<std::pair<int, std::size_t>>>>& members,
    std::uint64_t seed) {
  const auto world = timeline.devices.size();
  // Sort each rank's activities and point the communications at them.
  std::vector<std::vector<std::size_t>> moved(world);  // old position -> new
  for (std::size_t g = 0; g < world; ++g) {
    auto& acts = timeline.ranks[g];
    std::vector<std::size_t> order(acts.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&acts](std::size_t a, std::size_t b) {
      return std::tie(acts[a].start_ns, acts[a].end_ns, acts[a].kind) <
             std::tie(acts[b].start_ns, acts[b].end_ns, acts[b].kind);
    });
    std::vector<KernelActivity> sorted;
    sorted.reserve(acts.size());
    moved[g].resize(acts.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      moved[g][order[i]] = i;
      sorted.push_back(acts[order[i]]);
    }
    acts = std::move(sorted);
  }
  std::unordered_set<std::uint64_t> ids;
  timeline.comms.reserve(members.size());
  for (std::size_t c = 0; c < members.size(); ++c) {
    KernelComm comm;
    comm.kind = members[c].first;
    std::uint64_t id = draw(seed, 0xC0FFEE, c);
    while (id == 0 || !ids.insert(id).second) id = mix(id);
    comm.comms_id = id;
    for (const auto& [rank, old] : members[c].second) {
      const std::size_t at = moved[rank][old];
      timeline.ranks[rank][at].comm = static_cast<std::int32_t>(c);
      comm.members.emplace_back(rank, at);
    }
    timeline.comms.push_back(std::move(comm));
  }
}

/// Each rank's peer streams, in the order of its first kernel with the peer.
void assign_peer_streams(KernelTimeline& timeline) {
  // Peer streams in the order of each rank's first kernel with the peer.
  for (auto& acts : timeline.ranks) {
    std::map<int, int> stream_of;
    for (auto& a : acts) {
      if (a.kind != ActivityKind::send && a.kind != ActivityKind::recv) continue;
      const auto [it, added] =
          stream_of.emplace(a.peer, kFirstPeerStream + 4 * static_cast<int>(stream_of.size()));
      a.stream = it->second;
    }
  }
}

}  // namespace

KernelTimeline build_kernel_timeline(SimConfig config, int kernels_per_job) {
  check_kernel_config(config, kernels_per_job);
  config.machine_skew_ns.clear();
  Simulator simulator(config);
  const ScheduleShape& shape = config.shape;
  const int p = shape.stages;
  const int v = shape.chunks;
  const int m = shape.micro_batches;
  const int d_count = config.devices_per_stage;

  KernelTimeline timeline;
  timeline.devices = simulator.devices();
  timeline.stages = p;
  timeline.replicas = d_count;
  timeline.steps = config.steps;
  const auto world = timeline.devices.size();
  timeline.ranks.resize(world);

  // The rank holding each global stage, and the chunk it is there.
  std::vector<int> rank_of(static_cast<std::size_t>(p) * v);
  std::vector<int> chunk_of(rank_of.size());
  for (int s = 0; s < p; ++s) {
    for (int c = 0; c < v; ++c) {
      rank_of[global_stage(shape, s, c)] = s;
      chunk_of[global_stage(shape, s, c)] = c;
    }
  }
  const int global_stages = p * v;
  auto job_slot = [&](bool backward, int chunk, int mb) {
    return (static_cast<std::size_t>(backward) * v + chunk) * m + mb;
  };

  std::vector<PendingP2p> pending;
  // Per allreduce: its members' activity (rank, position in ranks[rank])
  // before sorting; resolved to KernelComm after.
  std::vector<std::vector<std::pair<int, std::size_t>>> allreduces;
  std::vector<std::vector<SimJob>> jobs;
  std::vector<std::int64_t> step_start(static_cast<std::size_t>(p));
  for (int step = 0; step < config.steps; ++step) {
    for (int s = 0; s < p; ++s) step_start[s] = simulator.step_start(s);
    simulator.next_step(jobs);
    // Each device's compute jobs by (forward or backward, chunk, micro-batch).
    std::vector<std::vector<const SimJob*>> by_slot(world);
    for (std::size_t g = 0; g < world; ++g) {
      by_slot[g].assign(static_cast<std::size_t>(2) * v * m, nullptr);
      for (const SimJob& job : jobs[g]) {
        if (job.type == SimJobType::forward || is_backward_class(job.type)) {
          by_slot[g][job_slot(is_backward_class(job.type), job.chunk, job.micro_batch)] = &job;
        }
      }
    }
    // One allreduce per data-parallel group (stage) this step.
    std::vector<std::size_t> allreduce_of(static_cast<std::size_t>(p));
    if (d_count > 1) {
      for (int s = 0; s < p; ++s) {
        allreduce_of[s] = allreduces.size();
        allreduces.emplace_back();
      }
    }
    for (std::size_t g = 0; g < world; ++g) {
      const SimDeviceInfo& device = timeline.devices[g];
      const int s = device.stage;
      const int replica = static_cast<int>(g) % d_count;
      auto& out = timeline.ranks[g];
      for (std::size_t i = 0; i < jobs[g].size(); ++i) {
        const SimJob& job = jobs[g][i];
        if (job.end_ns - job.start_ns < kMinJobNs) {
          throw std::invalid_argument(fmt::format(
              "a {} job of {} ns is too short to split into kernels (at least {} ns; raise its "
              "cost or use {} us)",
              job_type_name(job, false, ChunkNaming::digit), job.end_ns - job.start_ns, kMinJobNs,
              config.words->name(CallerOption::resolution)));
        }
        const std::uint64_t salt = draw(config.seed, g, static_cast<std::uint64_t>(step), i);
        std::int64_t begin = job.start_ns;
        if (job.type == SimJobType::optimizer && d_count > 1) {
          const std::int64_t length = job.end_ns - job.start_ns;
          const std::int64_t delay =
              std::min(uniform(mix(salt ^ 0xA11), 1'000, 31'000), length / 8);
          KernelActivity a;
          a.start_ns = job.start_ns + delay;
          a.end_ns = job.start_ns + length / 2;
          a.step = step;
          a.kind = ActivityKind::allreduce;
          a.stream = kDataParallelStream;
          allreduces[allreduce_of[s]].emplace_back(static_cast<int>(g), out.size());
          out.push_back(a);
          begin = a.end_ns;
        }
        const int k =
            job.type == SimJobType::optimizer ? std::max(1, kernels_per_job / 4) : kernels_per_job;
        split_into_kernels(begin, job.end_ns, k, pattern_of(job.type), salt, step, out);

        // Its input from another rank.
        const int gs = global_stage(shape, s, job.chunk);
        int from_stage = -1;
        if (job.type == SimJobType::forward && gs > 0) from_stage = gs - 1;
        if (is_backward_class(job.type) && gs < global_stages - 1) from_stage = gs + 1;
        if (from_stage < 0 || rank_of[from_stage] == s) continue;
        const int from = replica + d_count * rank_of[from_stage];
        const SimJob* producer = by_slot[from][job_slot(job.type != SimJobType::forward,
                                                        chunk_of[from_stage], job.micro_batch)];
        if (producer == nullptr) {
          throw std::logic_error("simulated job without its producer (kernel timeline bug)");
        }
        pending.push_back({from, static_cast<int>(g), step, producer->end_ns, job.start_ns,
                           i == 0 ? step_start[s] : jobs[g][i - 1].end_ns});
      }
    }
  }

  // (rank, position before sorting) of each communication's members.
  std::vector<std::pair<ActivityKind, std::vector<std::pair<int, std::size_t>>>> members =
      place_p2p_kernels(pending, config, timeline);
  for (auto& group : allreduces) members.push_back({ActivityKind::allreduce, std::move(group)});

  sort_and_link(timeline, members, config.seed);
  assign_peer_streams(timeline);
  return timeline;
}

}  // namespace pipescope::sim
