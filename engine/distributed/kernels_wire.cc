#include "distributed/kernels_wire.h"

#include <fmt/core.h>

#include <string>
#include <vector>

namespace pipescope::distributed {

namespace {

// Every field travels; a new one must be added below (the sizes catch a
// forgotten one on the usual 64-bit targets).
static_assert(sizeof(void*) != 8 || sizeof(RankKernels) == sizeof(std::string) + 32 +
                                                               3 * sizeof(std::vector<int>) + 8 +
                                                               16 + 5 * 8,
              "RankKernels changed: update put_rank_kernels/get_rank_kernels");
static_assert(sizeof(void*) != 8 || sizeof(CommKernel) == 2 * 8 + 16 + 8 + 3 * sizeof(std::string) +
                                                              2 * sizeof(std::vector<int>) + 8 +
                                                              16 + 8,
              "CommKernel changed: update put_comm/get_comm");
static_assert(sizeof(PeerOp) == 16 && sizeof(TimeSpan) == 16 &&
                  sizeof(RankKernels::StepExtent) == 24,
              "PeerOp, TimeSpan or StepExtent changed: they travel as copies");

template <typename T>
void put_kernel_optional(ByteWriter& w, const std::optional<T>& value) {
  w.put(static_cast<std::uint8_t>(value.has_value()));
  w.put(value.value_or(T{}));
}

template <typename T>
std::optional<T> get_kernel_optional(ByteReader& r) {
  const bool has = r.get<std::uint8_t>() != 0;
  const T value = r.get<T>();
  return has ? std::optional<T>(value) : std::nullopt;
}

template <typename Enum>
Enum get_kernel_enum(ByteReader& r, Enum last, const char* what) {
  const auto v = r.get<std::uint8_t>();
  if (v > static_cast<std::uint8_t>(last)) throw WireError(fmt::format("bad {} {}", what, v));
  return static_cast<Enum>(v);
}

void put_comm(ByteWriter& w, const CommKernel& c) {
  w.put(c.start);
  w.put(c.end);
  put_kernel_optional(w, c.step);
  w.put(static_cast<std::uint8_t>(c.op));
  w.put(static_cast<std::uint8_t>(c.source));
  w.str(c.collective);
  w.str(c.group_name);
  w.str(c.group_description);
  w.list(c.group_ranks);
  w.put(static_cast<std::int32_t>(c.group_size));
  w.list(c.p2p);
  put_kernel_optional(w, c.comms_id);
  w.put(static_cast<std::int32_t>(c.group_rank));
}

CommKernel get_comm(ByteReader& r) {
  CommKernel c;
  c.start = r.get<std::int64_t>();
  c.end = r.get<std::int64_t>();
  c.step = get_kernel_optional<std::int64_t>(r);
  c.op = get_kernel_enum(r, CommOp::collective, "communication op");
  c.source = get_kernel_enum(r, CommSource::kernel, "communication source");
  c.collective = r.str();
  c.group_name = r.str();
  c.group_description = r.str();
  r.list(c.group_ranks);
  c.group_size = r.get<std::int32_t>();
  r.list(c.p2p);
  for (const PeerOp& op : c.p2p) {
    if (static_cast<std::uint8_t>(op.op) > static_cast<std::uint8_t>(CommOp::collective)) {
      throw WireError("bad point-to-point op");
    }
  }
  c.comms_id = get_kernel_optional<std::uint64_t>(r);
  c.group_rank = r.get<std::int32_t>();
  return c;
}

}  // namespace

void put_rank_kernels(ByteWriter& w, const RankKernels& k) {
  w.str(k.path);
  w.put(static_cast<std::int32_t>(k.pid));
  w.put(static_cast<std::int32_t>(k.device));
  w.put(static_cast<std::int32_t>(k.machine));
  w.put(static_cast<std::int32_t>(k.global_rank));
  w.put(static_cast<std::uint8_t>(k.rank_claim));
  w.put(static_cast<std::uint8_t>(k.origin));
  w.put(static_cast<std::int32_t>(k.comm_rank));
  w.put(static_cast<std::int32_t>(k.world_size));
  w.put(static_cast<std::int32_t>(k.device_ordinal));
  w.list(k.compute);
  w.put(static_cast<std::uint64_t>(k.comm.size()));
  for (const CommKernel& c : k.comm) put_comm(w, c);
  w.list(k.steps);
  w.put(static_cast<std::uint8_t>(k.step_spans));
  put_kernel_optional(w, k.partial_step);
  w.put(k.activities);
  w.put(k.without_launch);
  w.put(k.first_start);
  w.put(k.last_end);
  w.put(k.cut_ns);
}

RankKernels get_rank_kernels(ByteReader& r) {
  RankKernels k;
  k.path = r.str();
  k.pid = r.get<std::int32_t>();
  k.device = r.get<std::int32_t>();
  k.machine = r.get<std::int32_t>();
  k.global_rank = r.get<std::int32_t>();
  k.rank_claim = get_kernel_enum(r, RankKernels::Claim::nccl, "rank claim");
  k.origin = get_kernel_enum(r, RankKernels::Origin::nsys_export, "kernels' origin");
  k.comm_rank = r.get<std::int32_t>();
  k.world_size = r.get<std::int32_t>();
  k.device_ordinal = r.get<std::int32_t>();
  r.list(k.compute);
  const auto comm = r.get<std::uint64_t>();
  if (comm > r.left() / 8) throw WireError("more NCCL kernels than bytes");
  k.comm.reserve(comm);
  for (std::uint64_t i = 0; i < comm; ++i) k.comm.push_back(get_comm(r));
  r.list(k.steps);
  k.step_spans = r.get<std::uint8_t>() != 0;
  k.partial_step = get_kernel_optional<std::int64_t>(r);
  k.activities = r.get<std::uint64_t>();
  k.without_launch = r.get<std::uint64_t>();
  k.first_start = r.get<std::int64_t>();
  k.last_end = r.get<std::int64_t>();
  k.cut_ns = r.get<std::int64_t>();
  return k;
}

}  // namespace pipescope::distributed
