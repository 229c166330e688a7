#include "analysis/layout.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>

#include "numeric/statistics.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

constexpr std::size_t npos = StageMap::npos;

int axis_size(const LayoutShape& shape, LayoutAxis axis) {
  switch (axis) {
    case LayoutAxis::dp:
      return shape.dp;
    case LayoutAxis::pp:
      return shape.pp;
    case LayoutAxis::tp:
      return shape.tp;
  }
  return 1;
}

std::string_view axis_name(LayoutAxis axis) {
  switch (axis) {
    case LayoutAxis::dp:
      return "dp";
    case LayoutAxis::pp:
      return "pp";
    case LayoutAxis::tp:
      return "tp";
  }
  return "?";
}

/// The global rank of a place: the axes in order, the last varying fastest.
std::int64_t rank_of(const LayoutShape& shape, const MeshPlace& place) {
  std::int64_t rank = 0;
  for (const LayoutAxis axis : shape.order) {
    const int c = axis == LayoutAxis::dp   ? place.replica
                  : axis == LayoutAxis::pp ? place.stage
                                           : place.peer;
    rank = rank * axis_size(shape, axis) + c;
  }
  return rank;
}

/// Each device's place in the run's rank order: machine × ranks per machine
/// + its rank on the machine, so that a missing rank leaves a hole where it
/// belongs (the global device index closes it up). Runs whose devices do not
/// all have distinct (machine, rank) places (made by hand) use the global index.
std::vector<std::int64_t> mesh_ranks(const Run& run) {
  // A machine's width: its highest rank + 1; the run's, the most common.
  std::map<int, int> width_of;
  for (const Device& d : run.devices) {
    int& w = width_of[d.machine];
    w = std::max(w, d.rank + 1);
  }
  std::map<int, std::size_t> count;
  for (const auto& [m, w] : width_of) ++count[w];
  int width = 0;
  std::size_t most = 0;
  for (const auto& [w, c] : count) {
    if (c > most || (c == most && w > width)) width = w, most = c;
  }
  // Machines of the common width (or narrower: a last rank missing) sit at
  // machine × width; a wider one pushes the machines after it on.
  std::map<int, std::int64_t> offset;
  std::int64_t next = 0;
  for (const auto& [m, w] : width_of) {
    offset[m] = next;
    next += std::max(w, width);
  }
  std::vector<std::int64_t> out;
  out.reserve(run.devices.size());
  for (const Device& d : run.devices) out.push_back(offset[d.machine] + std::max(d.rank, 0));
  std::vector<std::int64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    for (std::size_t d = 0; d < out.size(); ++d) out[d] = std::max(run.devices[d].index, 0);
  }
  return out;
}

/// Position in Run::devices of each mesh rank below `ranks` (npos: absent).
std::vector<std::size_t> positions_by_rank(const std::vector<std::int64_t>& rank_of,
                                           std::int64_t ranks) {
  std::vector<std::size_t> out(static_cast<std::size_t>(std::max<std::int64_t>(ranks, 0)), npos);
  for (std::size_t d = 0; d < rank_of.size(); ++d) {
    const std::int64_t r = rank_of[d];
    if (r >= 0 && r < ranks && out[static_cast<std::size_t>(r)] == npos) {
      out[static_cast<std::size_t>(r)] = d;
    }
  }
  return out;
}

/// The layout of a mesh, its devices found by mesh rank.
Layout layout_of_mesh(const Run& run, const LayoutShape& shape,
                      const std::vector<std::size_t>& position) {
  Layout layout;
  layout.shape = shape;
  const std::size_t n = run.devices.size();
  const auto copies = static_cast<std::size_t>(shape.dp) * static_cast<std::size_t>(shape.tp);
  StageMap& map = layout.stages;
  map.source = StageSource::layout;
  map.stage_of.assign(n, -1);
  map.slot_of.assign(n, npos);
  map.devices.assign(static_cast<std::size_t>(shape.pp), {});
  map.slots.assign(static_cast<std::size_t>(shape.pp), std::vector<std::size_t>(copies, npos));
  layout.replicas.assign(static_cast<std::size_t>(shape.dp), {});
  for (int r = 0; r < shape.dp; ++r) {
    for (int s = 0; s < shape.pp; ++s) {
      for (int t = 0; t < shape.tp; ++t) {
        const std::int64_t rank = rank_of(shape, {r, s, t});
        if (rank >= static_cast<std::int64_t>(position.size())) continue;
        const std::size_t d = position[static_cast<std::size_t>(rank)];
        if (d == npos) continue;
        const std::size_t slot = static_cast<std::size_t>(r) * static_cast<std::size_t>(shape.tp) +
                                 static_cast<std::size_t>(t);
        map.stage_of[d] = s;
        map.slot_of[d] = slot;
        map.slots[static_cast<std::size_t>(s)][slot] = d;
        map.devices[static_cast<std::size_t>(s)].push_back(d);
        layout.replicas[static_cast<std::size_t>(r)].push_back(d);
      }
    }
  }
  for (auto& group : map.devices) std::sort(group.begin(), group.end());
  for (auto& replica : layout.replicas) std::sort(replica.begin(), replica.end());
  // A stage none of whose ranks is analysed (a missing or empty log) is no
  // stage of the analysis: the stages after it move up, so P, the stages'
  // mean load and the dependencies are those of the stages observed (the
  // mesh keeps its size).
  std::size_t kept = 0;
  for (std::size_t s = 0; s < map.devices.size(); ++s) {
    if (map.devices[s].empty()) continue;
    for (const std::size_t d : map.devices[s]) map.stage_of[d] = static_cast<int>(kept);
    if (kept != s) {
      map.devices[kept] = std::move(map.devices[s]);
      map.slots[kept] = std::move(map.slots[s]);
    }
    ++kept;
  }
  map.devices.resize(kept);
  map.slots.resize(kept);
  return layout;
}

Layout no_layout(const Run& run, std::string reason) {
  Layout layout;
  layout.method = LayoutMethod::none;
  layout.shape.pp = static_cast<int>(run.devices.size());
  layout.stages = one_stage_per_device(run.devices.size());
  layout.replicas.assign(1, {});
  for (std::size_t d = 0; d < run.devices.size(); ++d) layout.replicas[0].push_back(d);
  layout.reason = std::move(reason);
  return layout;
}

// --- what detection reads of each device -------------------------------------

/// A chunk-0 forward or backward of one step: when it ran.
struct OpTime {
  std::uint64_t key = 0;  ///< step, role, micro-batch
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

std::uint64_t op_key(std::int32_t step, bool backward, std::int32_t micro_batch) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(step)) << 33) |
         (static_cast<std::uint64_t>(backward) << 32) |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(micro_batch));
}

struct DeviceDigest {
  /// Per step (ascending): a hash of its job list (type and micro-batch of each job).
  std::vector<std::pair<std::int32_t, std::uint64_t>> steps;
  /// Forwards, then... all chunk-0 F and B ops, sorted by key (first of a key kept).
  std::vector<OpTime> ops;
  std::int64_t median_forward_ns = 0;
  std::int64_t median_backward_ns = 0;

  const OpTime* find(std::uint64_t key) const {
    const auto it = std::lower_bound(ops.begin(), ops.end(), key,
                                     [](const OpTime& op, std::uint64_t k) { return op.key < k; });
    return it != ops.end() && it->key == key ? &*it : nullptr;
  }
};

/// The step windows detection reads: the first ones. A layout does not
/// change within a run, and the digest of a run of millions of jobs stays
/// a few kilobytes per device (the dense 1 GB folder holds 41 k steps).
constexpr std::int32_t kDigestSteps = kLayoutSteps;

DeviceDigest digest(const Device& device, const std::vector<std::int32_t>& steps,
                    const std::vector<JobRole>& roles) {
  DeviceDigest out;
  std::vector<std::int64_t> forwards, backwards;
  const std::size_t n = std::min(device.jobs.size(), steps.size());
  std::uint64_t hash = 0;
  std::int32_t current = std::numeric_limits<std::int32_t>::min();
  for (std::size_t i = 0; i < n; ++i) {
    const Job& job = device.jobs[i];
    const std::int32_t step = steps[i];
    if (step < 0 || step >= kDigestSteps) continue;
    if (step != current) {
      if (current != std::numeric_limits<std::int32_t>::min())
        out.steps.emplace_back(current, hash);
      current = step;
      hash = 1469598103934665603ull;
    }
    // FNV-1a over (type, micro-batch): type ids are the run's, so equal
    // lists hash equally on every device.
    for (const std::uint64_t part :
         {static_cast<std::uint64_t>(job.type),
          static_cast<std::uint64_t>(static_cast<std::uint32_t>(job.micro_batch))}) {
      hash = (hash ^ part) * 1099511628211ull;
    }
    if (job.type >= roles.size() || roles[job.type].chunk != 0) continue;
    const PipelineRole role = roles[job.type].role;
    if (role != PipelineRole::forward && role != PipelineRole::backward) continue;
    const bool backward = role == PipelineRole::backward;
    out.ops.push_back({op_key(step, backward, job.micro_batch), job.start_ns, job.end_ns});
    (backward ? backwards : forwards).push_back(job.duration_ns());
  }
  if (current != std::numeric_limits<std::int32_t>::min()) out.steps.emplace_back(current, hash);
  // Steps of one device may interleave in job order (a straggler): keep one
  // entry per step, the last hash written for it.
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::stable_sort(out.ops.begin(), out.ops.end(),
                   [](const OpTime& a, const OpTime& b) { return a.key < b.key; });
  out.ops.erase(std::unique(out.ops.begin(), out.ops.end(),
                            [](const OpTime& a, const OpTime& b) { return a.key == b.key; }),
                out.ops.end());
  out.median_forward_ns = upper_middle(forwards);
  out.median_backward_ns = upper_middle(backwards);
  return out;
}

/// How many steps of `b` differ from `a` (a step one of them lacks counts),
/// and how many were compared.
std::pair<std::size_t, std::size_t> signature_mismatches(const DeviceDigest& a,
                                                         const DeviceDigest& b) {
  std::size_t differ = 0, compared = 0, i = 0, j = 0;
  while (i < a.steps.size() || j < b.steps.size()) {
    ++compared;
    if (j == b.steps.size() || (i < a.steps.size() && a.steps[i].first < b.steps[j].first)) {
      ++differ;
      ++i;
    } else if (i == a.steps.size() || b.steps[j].first < a.steps[i].first) {
      ++differ;
      ++j;
    } else {
      differ += a.steps[i].second != b.steps[j].second;
      ++i;
      ++j;
    }
  }
  return {differ, compared};
}

/// Whether b follows a as the next stage of one pipeline (see the header).
struct LinkFit {
  bool evidence = false;
  bool fits = true;
  std::int64_t round_trip_ns = 0;
  std::int64_t tolerance_ns = 0;
};

/// The 1% quantile (a damaged line does not decide).
std::int64_t low_quantile(std::vector<std::int64_t>& v) { return select_rank(v, v.size() / 100); }

LinkFit link_fit(const DeviceDigest& a, const DeviceDigest& b) {
  std::vector<std::int64_t> forward, backward;
  for (const OpTime& op : b.ops) {
    const bool is_backward = (op.key >> 32) & 1;
    if (!is_backward) {
      // b's forward needs a's forward.
      if (const OpTime* in = a.find(op.key)) forward.push_back(op.start_ns - in->end_ns);
    } else {
      // a's backward needs b's backward.
      if (const OpTime* out = a.find(op.key)) backward.push_back(out->start_ns - op.end_ns);
    }
  }
  LinkFit fit;
  if (forward.empty() && backward.empty()) return fit;
  fit.evidence = true;
  fit.tolerance_ns = (b.median_forward_ns + b.median_backward_ns) / 4;
  fit.round_trip_ns = (forward.empty() ? 0 : low_quantile(forward)) +
                      (backward.empty() ? 0 : low_quantile(backward));
  fit.fits = fit.round_trip_ns >= -fit.tolerance_ns;
  return fit;
}

struct ShapeTrial {
  LayoutShape shape;
  bool fits = false;
  std::string why_not;
};

class Detector {
 public:
  Detector(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
           const std::vector<JobRole>& roles)
      : run_(run), digests_(run.devices.size()) {
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      static const std::vector<std::int32_t> kNone;
      digests_[d] = digest(run.devices[d], d < job_step.size() ? job_step[d] : kNone, roles);
    }
  }

  ShapeTrial test(const LayoutShape& shape, const std::vector<std::size_t>& position) {
    ShapeTrial c{shape, false, {}};
    const auto at = [&](int r, int s, int t) {
      const std::int64_t rank = rank_of(shape, {r, s, t});
      return rank < static_cast<std::int64_t>(position.size())
                 ? position[static_cast<std::size_t>(rank)]
                 : npos;
    };
    // Every stage's copies run its job list.
    for (int s = 0; s < shape.pp; ++s) {
      std::size_t reference = npos, differ = 0, compared = 0;
      std::size_t example = npos;
      for (int r = 0; r < shape.dp; ++r) {
        for (int t = 0; t < shape.tp; ++t) {
          const std::size_t d = at(r, s, t);
          if (d == npos) continue;
          if (reference == npos) {
            reference = d;
            continue;
          }
          const auto [x, n] = signature_mismatches(digests_[reference], digests_[d]);
          if (x > 0 && example == npos) example = d;
          differ += x;
          compared += n;
        }
      }
      if (differ * 10 > compared) {
        c.why_not = fmt::format(
            "devices {} and {}, both stage {} of {}, run different job lists in {} of {} steps "
            "compared",
            run_.devices[reference].index, run_.devices[example].index, s,
            describe_layout_shape(shape), differ, compared);
        return c;
      }
    }
    // Along every replica (peer 0, or the first peer present), each stage
    // follows the one before.
    bool evidence = shape.pp == 1;
    for (int r = 0; r < shape.dp; ++r) {
      std::size_t previous = npos;
      for (int s = 0; s < shape.pp; ++s) {
        std::size_t d = npos;
        for (int t = 0; t < shape.tp && d == npos; ++t) d = at(r, s, t);
        if (d == npos) continue;
        if (previous != npos) {
          const LinkFit fit = link(previous, d);
          evidence |= fit.evidence;
          if (!fit.fits) {
            c.why_not = fmt::format(
                "in {}, device {} (stage {}) does not follow device {}: its forwards' and the "
                "backwards' slack add up to {} ms (at least -{} ms for a real link; two copies "
                "of one stage give about minus a forward and a backward)",
                describe_layout_shape(shape), run_.devices[d].index, s,
                run_.devices[previous].index, format_ms(fit.round_trip_ns),
                format_ms(fit.tolerance_ns));
            return c;
          }
        }
        previous = d;
      }
    }
    if (!evidence) {
      c.why_not = fmt::format("in {}, no forward or backward links one stage to the next",
                              describe_layout_shape(shape));
      return c;
    }
    c.fits = true;
    return c;
  }

 private:
  LinkFit link(std::size_t a, std::size_t b) {
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
    if (const auto it = links_.find(key); it != links_.end()) return it->second;
    return links_[key] = link_fit(digests_[a], digests_[b]);
  }

  const Run& run_;
  std::vector<DeviceDigest> digests_;
  std::unordered_map<std::uint64_t, LinkFit> links_;
};

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> out;
  for (std::int64_t i = 1; i <= n && i <= std::numeric_limits<int>::max(); ++i) {
    if (n % i == 0) out.push_back(static_cast<int>(i));
    if (i * i > n) break;
  }
  const std::size_t small = out.size();
  for (std::size_t k = small; k-- > 0;) {
    const std::int64_t other = n / out[k];
    if (other != out[k] && other <= std::numeric_limits<int>::max()) {
      out.push_back(static_cast<int>(other));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Whether b runs a's jobs as a tensor-parallel peer: the same job list on
/// the same machine, 90% of the jobs starting and ending within 5% of the
/// length of a's (peers meet in an all-reduce inside every job, so they end
/// together; data-parallel replicas drift apart by their own jitter, by more
/// than guess_stage_map's quarter of a job allows to tell). Like the digests,
/// it reads the jobs of the first kDigestSteps steps only: a layout does not
/// change within a run, and so the layout needs only the head of each
/// device's jobs (the partitioned analysis ships no more to decide it).
bool tight_peers(const Device& a, std::span<const std::int32_t> steps_a, const Device& b,
                 std::span<const std::int32_t> steps_b) {
  if (a.machine != b.machine || a.jobs.empty()) return false;
  const auto head = [](std::span<const std::int32_t> steps, std::size_t n, std::size_t i) {
    while (i < n && i < steps.size() && (steps[i] < 0 || steps[i] >= kDigestSteps)) ++i;
    return i < steps.size() ? i : n;
  };
  const std::size_t na = a.jobs.size(), nb = b.jobs.size();
  std::size_t close = 0, compared = 0;
  std::size_t i = head(steps_a, na, 0), j = head(steps_b, nb, 0);
  for (; i < na && j < nb; i = head(steps_a, na, i + 1), j = head(steps_b, nb, j + 1)) {
    const Job& x = a.jobs[i];
    const Job& y = b.jobs[j];
    if (x.type != y.type || x.micro_batch != y.micro_batch) return false;
    const std::int64_t length = std::max(x.duration_ns(), y.duration_ns());
    const auto near = [&](std::int64_t p, std::int64_t q) {
      return (p > q ? p - q : q - p) * 20 <= length;
    };
    if (near(x.start_ns, y.start_ns) && near(x.end_ns, y.end_ns)) ++close;
    ++compared;
  }
  // The same number of jobs: both lists end together.
  if (i < na || j < nb || compared == 0) return false;
  return close * 10 >= compared * 9;
}

/// The tensor-parallel size the peers show: every group of consecutive
/// peers (tight_peers with the group's first device) starts at a multiple
/// of it and none is larger, half of them at least full; else 1.
int peer_group_size(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                    const std::vector<std::int64_t>& rank_of) {
  const auto steps_of = [&](std::size_t d) {
    return d < job_step.size() ? std::span<const std::int32_t>(job_step[d])
                               : std::span<const std::int32_t>();
  };
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const std::size_t first = groups.empty() ? 0 : groups.back().front();
    if (!groups.empty() &&
        tight_peers(run.devices[first], steps_of(first), run.devices[d], steps_of(d))) {
      groups.back().push_back(d);
    } else {
      groups.push_back({d});
    }
  }
  std::unordered_map<std::size_t, std::size_t> count;
  for (const auto& group : groups) ++count[group.size()];
  std::size_t size = 1, most = 0;
  for (const auto& [s, c] : count) {
    if (c > most || (c == most && s > size)) size = s, most = c;
  }
  if (size <= 1 || most * 2 < groups.size()) return 1;
  for (const auto& group : groups) {
    if (group.size() > size || rank_of[group.front()] % static_cast<std::int64_t>(size) != 0) {
      return 1;
    }
  }
  return static_cast<int>(size);
}

}  // namespace

MeshPlace mesh_place(const LayoutShape& shape, std::int64_t rank) {
  MeshPlace place;
  for (std::size_t i = 3; i-- > 0;) {
    const LayoutAxis axis = shape.order[i];
    const int size = std::max(1, axis_size(shape, axis));
    const int c = static_cast<int>(rank % size);
    rank /= size;
    (axis == LayoutAxis::dp   ? place.replica
     : axis == LayoutAxis::pp ? place.stage
                              : place.peer) = c;
  }
  return place;
}

std::string layout_order_name(const std::array<LayoutAxis, 3>& order) {
  return fmt::format("{},{},{}", axis_name(order[0]), axis_name(order[1]), axis_name(order[2]));
}

std::string describe_layout_shape(const LayoutShape& shape) {
  return fmt::format("pp={} \u00d7 dp={} \u00d7 tp={}", shape.pp, shape.dp, shape.tp);
}

std::string_view layout_method_name(LayoutMethod method) {
  switch (method) {
    case LayoutMethod::detected:
      return "detected";
    case LayoutMethod::given:
      return "given";
    case LayoutMethod::stages:
      return "stages";
    case LayoutMethod::none:
      return "none";
  }
  return "none";
}

LayoutShape parse_layout_spec(std::string_view spec, std::string_view label) {
  const auto fail = [&](std::string_view why) {
    return std::invalid_argument(fmt::format(
        "{} {}: {} (expected e.g. pp=4,dp=8,tp=8 or pp=4,dp=2,order=pp,dp,tp)", label, spec, why));
  };
  LayoutShape shape;
  bool seen[3] = {false, false, false};
  std::string_view rest = spec;
  const auto axis_of = [](std::string_view name) -> std::optional<LayoutAxis> {
    if (name == "dp") return LayoutAxis::dp;
    if (name == "pp") return LayoutAxis::pp;
    if (name == "tp") return LayoutAxis::tp;
    return std::nullopt;
  };
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw fail(fmt::format("'{}' is not NAME=VALUE", item));
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "order") {
      // The order's other two names follow as the next items.
      std::array<LayoutAxis, 3> order{};
      std::string_view names = value;
      for (int i = 0; i < 3; ++i) {
        if (i > 0) {
          const std::size_t next = rest.find(',');
          names = rest.substr(0, next);
          rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
        }
        const auto axis = axis_of(names);
        if (!axis) throw fail("order names each of dp, pp and tp once");
        order[static_cast<std::size_t>(i)] = *axis;
      }
      if (order[0] == order[1] || order[1] == order[2] || order[0] == order[2]) {
        throw fail("order names each of dp, pp and tp once");
      }
      shape.order = order;
      continue;
    }
    const auto axis = axis_of(name);
    if (!axis) throw fail(fmt::format("unknown size '{}' (pp, dp, tp or order)", name));
    int size = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || size < 1 ||
        size > 1'000'000) {
      throw fail(fmt::format("'{}' is not a size of at least 1", value));
    }
    auto& flag = seen[static_cast<int>(*axis)];
    if (flag) throw fail(fmt::format("{} given twice", name));
    flag = true;
    (*axis == LayoutAxis::dp ? shape.dp : *axis == LayoutAxis::pp ? shape.pp : shape.tp) = size;
  }
  if (shape.ranks() > (std::int64_t{1} << 31)) throw fail("more ranks than any run has");
  return shape;
}

Layout layout_from_shape(const Run& run, const LayoutShape& shape, std::string_view label) {
  const std::vector<std::int64_t> rank_of = mesh_ranks(run);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (rank_of[d] >= shape.ranks()) {
      throw std::invalid_argument(fmt::format(
          "{} {}: the mesh holds ranks 0-{}, but the run has device {} (rank {})", label,
          describe_layout_shape(shape), shape.ranks() - 1, run.devices[d].index, rank_of[d]));
    }
  }
  Layout layout = layout_of_mesh(run, shape, positions_by_rank(rank_of, shape.ranks()));
  layout.method = LayoutMethod::given;
  layout.evidence = std::string(label);
  return layout;
}

Layout layout_from_stage_map(const Run& run, StageMap stages) {
  Layout layout;
  layout.method = LayoutMethod::stages;
  layout.shape.pp = static_cast<int>(stages.stage_count());
  for (const auto& group : stages.devices) {
    layout.shape.tp = std::max(layout.shape.tp, static_cast<int>(group.size()));
  }
  layout.stages = std::move(stages);
  layout.replicas.assign(1, {});
  for (std::size_t d = 0; d < run.devices.size(); ++d) layout.replicas[0].push_back(d);
  return layout;
}

Layout detect_layout(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<JobRole>& roles) {
  const std::size_t n = run.devices.size();
  if (n <= 1) {
    Layout layout = n == 0 ? no_layout(run, "") : layout_of_mesh(run, LayoutShape{}, {0});
    layout.method = LayoutMethod::detected;
    layout.evidence = "one device";
    return layout;
  }
  Detector detector(run, job_step, roles);
  const std::vector<std::int64_t> rank_of = mesh_ranks(run);
  const int peers = peer_group_size(run, job_step, rank_of);

  // Two numberings of the devices: their mesh ranks (machine × ranks per
  // machine + rank: a missing rank leaves a hole where it belongs), and
  // their order (a selection such as --devices 0,2,4,6 is a pipeline of its
  // own, not a mesh of 7 with 3 holes).
  struct Numbering {
    std::vector<std::size_t> position;
    std::int64_t ranks = 0;
  };
  std::vector<Numbering> numberings;
  {
    std::int64_t ranks = 0;
    for (const std::int64_t r : rank_of) ranks = std::max(ranks, r + 1);
    numberings.push_back({positions_by_rank(rank_of, ranks), ranks});
    if (ranks != static_cast<std::int64_t>(n)) {
      Numbering compact{std::vector<std::size_t>(n), static_cast<std::int64_t>(n)};
      for (std::size_t d = 0; d < n; ++d) compact.position[d] = d;
      numberings.push_back(std::move(compact));
    }
  }
  // Meshes to test: tp innermost (peers are consecutive ranks in every
  // framework's order), both orders of dp and pp, for each numbering.
  struct Shape {
    LayoutShape shape;
    std::size_t numbering = 0;
    bool empty_stage = false;  ///< a stage with no device at all
  };
  std::vector<Shape> shapes;
  for (std::size_t k = 0; k < numberings.size(); ++k) {
    const Numbering& numbering = numberings[k];
    for (const int tp : divisors(numbering.ranks)) {
      const std::int64_t rest = numbering.ranks / tp;
      for (const int pp : divisors(rest)) {
        const auto dp = static_cast<int>(rest / pp);
        for (const auto& order : {std::array{LayoutAxis::dp, LayoutAxis::pp, LayoutAxis::tp},
                                  std::array{LayoutAxis::pp, LayoutAxis::dp, LayoutAxis::tp}}) {
          if (order[0] == LayoutAxis::pp && (dp == 1 || pp == 1)) continue;  // the same mesh
          Shape s{{pp, dp, tp, order}, k, false};
          std::vector<char> seen(static_cast<std::size_t>(pp), 0);
          for (std::int64_t r = 0; r < numbering.ranks; ++r) {
            if (numbering.position[static_cast<std::size_t>(r)] != npos) {
              seen[static_cast<std::size_t>(mesh_place(s.shape, r).stage)] = 1;
            }
          }
          s.empty_stage = std::find(seen.begin(), seen.end(), 0) != seen.end();
          shapes.push_back(s);
        }
      }
    }
  }
  // A mesh none of whose stages is empty first (a stage without a single
  // device is no evidence); then the most stages; then the mesh with fewer
  // holes (the same devices in fewer places); then the peers' size, a
  // smaller tp, the order listed.
  std::stable_sort(shapes.begin(), shapes.end(), [&](const Shape& x, const Shape& y) {
    const LayoutShape& a = x.shape;
    const LayoutShape& b = y.shape;
    if (x.empty_stage != y.empty_stage) return !x.empty_stage;
    if (a.pp != b.pp) return a.pp > b.pp;
    const std::int64_t holes_x = numberings[x.numbering].ranks,
                       holes_y = numberings[y.numbering].ranks;
    if (holes_x != holes_y) return holes_x < holes_y;  // the same devices: fewer holes
    if ((a.tp == peers) != (b.tp == peers)) return a.tp == peers;
    if (a.tp != b.tp) return a.tp < b.tp;
    return x.numbering < y.numbering;
  });
  std::string first_failure;
  for (const Shape& s : shapes) {
    const Numbering& numbering = numberings[s.numbering];
    const ShapeTrial c = detector.test(s.shape, numbering.position);
    if (c.fits) {
      Layout layout = layout_of_mesh(run, s.shape, numbering.position);
      layout.method = LayoutMethod::detected;
      layout.evidence = "job order and dependencies";
      return layout;
    }
    // The pipeline of every device (or of every peer group) is what a
    // person expects; its failure says most.
    if (first_failure.empty() && s.shape.dp == 1 && (s.shape.tp == peers || s.shape.tp == 1)) {
      first_failure = c.why_not;
    }
  }
  return no_layout(run, first_failure.empty() ? "no mesh of the ranks fits" : first_failure);
}

}  // namespace pipescope
