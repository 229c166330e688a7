#include "analysis/stage_map.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "numeric/units.h"

namespace pipescope {

namespace {

StageMap from_groups(std::vector<std::vector<std::size_t>> groups, std::size_t device_count,
                     std::string source) {
  StageMap map;
  map.stage_of.assign(device_count, -1);
  for (auto& group : groups) std::sort(group.begin(), group.end());
  std::sort(groups.begin(), groups.end());
  for (std::size_t s = 0; s < groups.size(); ++s) {
    for (const std::size_t d : groups[s]) map.stage_of[d] = static_cast<int>(s);
  }
  map.devices = std::move(groups);
  map.source = std::move(source);
  return map;
}

std::int64_t parse_index(std::string_view text, std::string_view where) {
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not a device index", where, text));
  }
  return value;
}

// Whether two devices look like tensor-parallel peers (see guess_stage_map).
bool peers(const Device& a, const Device& b) {
  if (a.machine != b.machine || a.jobs.size() != b.jobs.size() || a.jobs.empty()) return false;
  std::size_t close = 0;
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    const Job& x = a.jobs[i];
    const Job& y = b.jobs[i];
    if (x.type != y.type || x.micro_batch != y.micro_batch) return false;
    const std::int64_t diff =
        x.start_ns > y.start_ns ? x.start_ns - y.start_ns : y.start_ns - x.start_ns;
    const std::int64_t length = std::max(x.duration_ns(), y.duration_ns());
    if (diff <= length / 4) ++close;
  }
  return close * 10 >= a.jobs.size() * 9;
}

}  // namespace

std::size_t StageMap::rank_in_stage(std::size_t d) const {
  if (d >= stage_of.size() || stage_of[d] < 0) return 0;
  const auto& group = devices[static_cast<std::size_t>(stage_of[d])];
  return static_cast<std::size_t>(std::lower_bound(group.begin(), group.end(), d) - group.begin());
}

std::size_t StageMap::partner(std::size_t d, std::size_t stage) const {
  if (stage >= devices.size() || devices[stage].empty()) return npos;
  if (!slots.empty()) {
    if (d >= slot_of.size() || slot_of[d] == npos || stage >= slots.size()) return npos;
    const auto& row = slots[stage];
    return slot_of[d] < row.size() ? row[slot_of[d]] : npos;
  }
  const auto& group = devices[stage];
  return group[rank_in_stage(d) % group.size()];
}

StageMap one_stage_per_device(std::size_t device_count) {
  std::vector<std::vector<std::size_t>> groups(device_count);
  for (std::size_t d = 0; d < device_count; ++d) groups[d] = {d};
  return from_groups(std::move(groups), device_count, "device");
}

StageMap guess_stage_map(const Run& run) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!groups.empty() && peers(run.devices[groups.back().front()], run.devices[d])) {
      groups.back().push_back(d);
    } else {
      groups.push_back({d});
    }
  }
  return from_groups(std::move(groups), run.devices.size(), "auto");
}

StageMap resolve_stage_map(const Run& run, std::string_view spec, std::string_view label) {
  const std::string where = fmt::format("{} {}", label, spec);
  const std::size_t n = run.devices.size();
  if (spec.empty() || spec == "device") return one_stage_per_device(n);
  if (spec == "auto") return guess_stage_map(run);
  if (spec.starts_with("tp=")) {
    const std::int64_t size = parse_index(spec.substr(3), where);
    if (size < 1 || n % static_cast<std::size_t>(size) != 0) {
      throw std::invalid_argument(
          fmt::format("{}: {} devices cannot be split into groups of {}", where, n, size));
    }
    std::vector<std::vector<std::size_t>> groups(n / static_cast<std::size_t>(size));
    for (std::size_t d = 0; d < n; ++d) groups[d / static_cast<std::size_t>(size)].push_back(d);
    return from_groups(std::move(groups), n, "tp");
  }

  std::unordered_map<std::int64_t, std::size_t> position;
  for (std::size_t d = 0; d < n; ++d) position.emplace(run.devices[d].index, d);
  auto position_of = [&](std::int64_t index) {
    const auto it = position.find(index);
    if (it == position.end()) {
      throw std::invalid_argument(
          fmt::format("{}: device {} is not an analysed device", where, index));
    }
    return it->second;
  };

  std::vector<std::vector<std::size_t>> groups;
  std::vector<int> seen(n, 0);
  std::string_view rest = spec;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::vector<std::size_t> group;
    if (const std::size_t dash = item.find('-'); dash != std::string_view::npos) {
      const std::int64_t lo = parse_index(item.substr(0, dash), where);
      const std::int64_t hi = parse_index(item.substr(dash + 1), where);
      if (hi < lo || hi - lo > 1'000'000) {
        throw std::invalid_argument(fmt::format("{}: bad range '{}'", where, item));
      }
      for (std::int64_t i = lo; i <= hi; ++i) group.push_back(position_of(i));
    } else {
      std::string_view parts = item;
      while (true) {
        const std::size_t plus = parts.find('+');
        group.push_back(position_of(parse_index(parts.substr(0, plus), where)));
        if (plus == std::string_view::npos) break;
        parts.remove_prefix(plus + 1);
      }
    }
    for (const std::size_t d : group) {
      if (seen[d]++ != 0) {
        throw std::invalid_argument(
            fmt::format("{}: device {} is in two stages", where, run.devices[d].index));
      }
    }
    groups.push_back(std::move(group));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  for (std::size_t d = 0; d < n; ++d) {
    if (seen[d] == 0) {
      throw std::invalid_argument(
          fmt::format("{}: device {} is in no stage", where, run.devices[d].index));
    }
  }
  // Stages keep the order given (pipeline order), not sorted by device.
  StageMap map;
  map.stage_of.assign(n, -1);
  for (auto& group : groups) std::sort(group.begin(), group.end());
  for (std::size_t s = 0; s < groups.size(); ++s) {
    for (const std::size_t d : groups[s]) map.stage_of[d] = static_cast<int>(s);
  }
  map.devices = std::move(groups);
  map.source = "list";
  return map;
}

std::vector<std::string> stage_map_contradictions(const Run& run, const StageMap& map) {
  std::vector<std::string> out;
  if (map.source != "tp" && map.source != "list") return out;
  const auto label = [&](const Job& job) {
    return fmt::format("{} mb{}", job.type < run.types.size() ? run.types.name(job.type) : "?",
                       job.micro_batch);
  };
  const std::int64_t origin = [&] {
    std::int64_t t = std::numeric_limits<std::int64_t>::max();
    for (const Device& d : run.devices) {
      if (!d.jobs.empty()) t = std::min(t, d.jobs.front().start_ns);
    }
    return t;
  }();
  const auto ms = [&](std::int64_t t) { return format_ms(t - origin); };
  for (std::size_t s = 0; s < map.stage_count(); ++s) {
    const auto& group = map.devices[s];
    if (group.size() < 2 || group.front() >= run.devices.size()) continue;
    const Device& first = run.devices[group.front()];
    for (std::size_t g = 1; g < group.size(); ++g) {
      if (group[g] >= run.devices.size()) continue;
      const Device& other = run.devices[group[g]];
      const std::size_t n = std::min(first.jobs.size(), other.jobs.size());
      std::string evidence;
      std::size_t after = 0;
      const Job* example = nullptr;
      std::size_t example_index = 0;
      for (std::size_t i = 0; i < n && evidence.empty(); ++i) {
        const Job& x = first.jobs[i];
        const Job& y = other.jobs[i];
        if (x.type != y.type || x.micro_batch != y.micro_batch) {
          evidence = fmt::format("its job {} is {} where device {} runs {}", i + 1, label(y),
                                 first.index, label(x));
          break;
        }
        // Peers run each job together; stages run it one after the other
        // (forwards down the pipeline, backwards up it).
        if ((y.start_ns >= x.end_ns || x.start_ns >= y.end_ns) && x.end_ns > x.start_ns &&
            y.end_ns > y.start_ns) {
          if (after++ == 0) {
            example = &y;
            example_index = i;
          }
        }
      }
      if (evidence.empty() && n > 0 && after * 2 > n) {
        const Job& x = first.jobs[example_index];
        evidence = fmt::format(
            "{} of its {} jobs do not overlap device {}'s same job at all (first: {}, device "
            "{} {}-{} ms, device {} {}-{} ms after the first job): one waits for "
            "the other, a pipeline dependency",
            after, n, first.index, label(*example), first.index, ms(x.start_ns), ms(x.end_ns),
            other.index, ms(example->start_ns), ms(example->end_ns));
      }
      if (evidence.empty()) continue;
      out.push_back(fmt::format(
          "stage {} (devices {}) does not look like one stage: device {}: {}; devices of one "
          "stage (tensor-parallel peers) run the same jobs at the same times",
          s, describe_stage_devices(run, map, s), other.index, evidence));
      break;  // one line per stage
    }
  }
  return out;
}

std::string describe_stage_devices(const Run& run, const StageMap& map, std::size_t stage) {
  if (stage >= map.devices.size()) return "";
  const auto& group = map.devices[stage];
  std::vector<int> indices;
  for (const std::size_t d : group) indices.push_back(run.devices[d].index);
  if (indices.empty()) return "";
  if (indices.size() == 1) return fmt::format("{}", indices[0]);
  bool consecutive = true;
  for (std::size_t i = 1; i < indices.size(); ++i) consecutive &= indices[i] == indices[i - 1] + 1;
  if (consecutive) return fmt::format("{}-{}", indices.front(), indices.back());
  // Up to 8 devices each by its index, as --stages writes a stage; a stage
  // of many replicas' devices by its first runs of consecutive indices and
  // how many devices it has.
  std::string out;
  if (indices.size() <= 8) {
    for (const int i : indices) {
      if (!out.empty()) out.push_back('+');
      out += fmt::format("{}", i);
    }
    return out;
  }
  std::size_t runs = 0;
  for (std::size_t i = 0; i < indices.size() && runs < 3; ++runs) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out.push_back('+');
    out += i == j ? fmt::format("{}", indices[i]) : fmt::format("{}-{}", indices[i], indices[j]);
    i = j + 1;
  }
  return out + fmt::format("+... ({} devices)", indices.size());
}

}  // namespace pipescope
