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
                     StageSource source) {
  StageMap map;
  map.stage_of.assign(device_count, -1);
  for (auto& group : groups) std::sort(group.begin(), group.end());
  std::sort(groups.begin(), groups.end());
  for (std::size_t s = 0; s < groups.size(); ++s) {
    for (const std::size_t d : groups[s]) map.stage_of[d] = static_cast<int>(s);
  }
  map.devices = std::move(groups);
  map.source = source;
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

// Whether two devices look like tensor-parallel peers (see guess_stage_map):
// the same machine, the same jobs in the same order, 90% of them starting
// within a quarter of a job of each other.
bool peers(const Device& a, const Device& b, const StageJobEvidence& evidence, std::size_t ia,
           std::size_t ib) {
  const std::uint64_t n = evidence.job_counts[ia];
  if (a.machine != b.machine || n != evidence.job_counts[ib] || n == 0) return false;
  const JobPairEvidence e = evidence.compare(ia, ib);
  return e.mismatch == JobPairEvidence::npos && e.close * 10 >= n * 9;
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
  return from_groups(std::move(groups), device_count, StageSource::device);
}

JobPairEvidence compare_job_range(std::span<const Job> a, std::span<const Job> b,
                                  std::size_t first) {
  JobPairEvidence e;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Job& x = a[i];
    const Job& y = b[i];
    if (x.type != y.type || x.micro_batch != y.micro_batch) {
      e.mismatch = first + i;
      e.mismatch_a = x;
      e.mismatch_b = y;
      break;
    }
    const std::int64_t diff =
        x.start_ns > y.start_ns ? x.start_ns - y.start_ns : y.start_ns - x.start_ns;
    if (diff <= std::max(x.duration_ns(), y.duration_ns()) / 4) ++e.close;
    // Peers run each job together; stages run it one after the other
    // (forwards down the pipeline, backwards up it).
    if ((y.start_ns >= x.end_ns || x.start_ns >= y.end_ns) && x.end_ns > x.start_ns &&
        y.end_ns > y.start_ns) {
      if (e.apart++ == 0) {
        e.first_apart = first + i;
        e.apart_a = x;
        e.apart_b = y;
      }
    }
  }
  return e;
}

void merge_job_pair_evidence(JobPairEvidence& into, const JobPairEvidence& next) {
  // Nothing after the first mismatch is read.
  if (into.mismatch != JobPairEvidence::npos) return;
  into.close += next.close;
  if (into.first_apart == JobPairEvidence::npos && next.first_apart != JobPairEvidence::npos) {
    into.first_apart = next.first_apart;
    into.apart_a = next.apart_a;
    into.apart_b = next.apart_b;
  }
  into.apart += next.apart;
  into.mismatch = next.mismatch;
  into.mismatch_a = next.mismatch_a;
  into.mismatch_b = next.mismatch_b;
}

StageJobEvidence stage_job_evidence(const Run& run) {
  StageJobEvidence e;
  for (const Device& d : run.devices) {
    e.job_counts.push_back(d.jobs.size());
    if (!d.jobs.empty()) e.origin = std::min(e.origin, d.jobs.front().start_ns);
  }
  e.compare = [&run](std::size_t a, std::size_t b) {
    return compare_job_range(run.devices[a].jobs, run.devices[b].jobs, 0);
  };
  return e;
}

std::vector<std::pair<std::size_t, std::size_t>> stage_check_pairs(
    const Run& run, const StageMap& map, std::span<const std::uint64_t> job_counts) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  if (map.source == StageSource::tp || map.source == StageSource::list) {
    for (const auto& group : map.devices) {
      for (std::size_t g = 1; g < group.size(); ++g) pairs.emplace_back(group.front(), group[g]);
    }
  } else if (map.source == StageSource::device) {
    // The guess compares a device with the first of the group before it,
    // whose devices are all of one machine and job count: every pair of a
    // stretch of such devices may be asked.
    const std::size_t n = std::min(run.devices.size(), job_counts.size());
    for (std::size_t s = 0; s < n;) {
      std::size_t e = s + 1;
      while (e < n && run.devices[e].machine == run.devices[s].machine &&
             job_counts[e] == job_counts[s]) {
        ++e;
      }
      if (job_counts[s] > 0) {
        for (std::size_t a = s; a < e; ++a) {
          for (std::size_t b = a + 1; b < e; ++b) pairs.emplace_back(a, b);
        }
      }
      s = e;
    }
  }
  return pairs;
}

StageMap guess_stage_map(const Run& run, const StageJobEvidence& evidence) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!groups.empty() && peers(run.devices[groups.back().front()], run.devices[d], evidence,
                                 groups.back().front(), d)) {
      groups.back().push_back(d);
    } else {
      groups.push_back({d});
    }
  }
  return from_groups(std::move(groups), run.devices.size(), StageSource::automatic);
}

StageMap guess_stage_map(const Run& run) { return guess_stage_map(run, stage_job_evidence(run)); }

std::string_view stage_source_name(StageSource source) {
  switch (source) {
    case StageSource::device:
      return "device";
    case StageSource::tp:
      return "tp";
    case StageSource::list:
      return "list";
    case StageSource::automatic:
      return "auto";
    case StageSource::layout:
      return "layout";
  }
  return "device";
}

StageSpec parse_stage_spec(std::string_view text, std::string_view label) {
  StageSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return spec;
  const std::string where = fmt::format("{} {}", label, text);
  if (text == "device") {
    spec.form = StageSpec::Form::device;
  } else if (text == "auto") {
    spec.form = StageSpec::Form::automatic;
  } else if (text.starts_with("tp=")) {
    spec.form = StageSpec::Form::tp;
    spec.tp = parse_index(text.substr(3), where);
  } else {
    spec.form = StageSpec::Form::list;
    std::string_view rest = text;
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      std::vector<std::int64_t> group;
      if (const std::size_t dash = item.find('-'); dash != std::string_view::npos) {
        const std::int64_t lo = parse_index(item.substr(0, dash), where);
        const std::int64_t hi = parse_index(item.substr(dash + 1), where);
        if (hi < lo || hi - lo > 1'000'000) {
          throw std::invalid_argument(fmt::format("{}: bad range '{}'", where, item));
        }
        for (std::int64_t i = lo; i <= hi; ++i) group.push_back(i);
      } else {
        std::string_view parts = item;
        while (true) {
          const std::size_t plus = parts.find('+');
          group.push_back(parse_index(parts.substr(0, plus), where));
          if (plus == std::string_view::npos) break;
          parts.remove_prefix(plus + 1);
        }
      }
      spec.groups.push_back(std::move(group));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return spec;
}

StageMap resolve_stage_map(const Run& run, std::string_view spec, std::string_view label) {
  return resolve_stage_map(run, parse_stage_spec(spec, label), label);
}

StageMap resolve_stage_map(const Run& run, const StageSpec& spec, std::string_view label) {
  const std::string where = fmt::format("{} {}", label, spec.text);
  const std::size_t n = run.devices.size();
  switch (spec.form) {
    case StageSpec::Form::none:
    case StageSpec::Form::device:
      return one_stage_per_device(n);
    case StageSpec::Form::automatic:
      return guess_stage_map(run);
    case StageSpec::Form::tp: {
      const auto size = static_cast<std::size_t>(spec.tp);
      if (size < 1 || n % size != 0) {
        throw std::invalid_argument(
            fmt::format("{}: {} devices cannot be split into groups of {}", where, n, size));
      }
      std::vector<std::vector<std::size_t>> groups(n / size);
      for (std::size_t d = 0; d < n; ++d) groups[d / size].push_back(d);
      return from_groups(std::move(groups), n, StageSource::tp);
    }
    case StageSpec::Form::list:
      break;
  }

  std::unordered_map<std::int64_t, std::size_t> position;
  for (std::size_t d = 0; d < n; ++d) position.emplace(run.devices[d].index, d);
  std::vector<std::vector<std::size_t>> groups;
  std::vector<int> seen(n, 0);
  for (const std::vector<std::int64_t>& given : spec.groups) {
    std::vector<std::size_t> group;
    for (const std::int64_t index : given) {
      const auto it = position.find(index);
      if (it == position.end()) {
        throw std::invalid_argument(
            fmt::format("{}: device {} is not an analysed device", where, index));
      }
      group.push_back(it->second);
    }
    for (const std::size_t d : group) {
      if (seen[d]++ != 0) {
        throw std::invalid_argument(
            fmt::format("{}: device {} is in two stages", where, run.devices[d].index));
      }
    }
    groups.push_back(std::move(group));
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
  map.source = StageSource::list;
  return map;
}

std::vector<std::string> stage_map_contradictions(const Run& run, const StageMap& map) {
  return stage_map_contradictions(run, map, stage_job_evidence(run));
}

std::vector<std::string> stage_map_contradictions(const Run& run, const StageMap& map,
                                                  const StageJobEvidence& evidence) {
  std::vector<std::string> out;
  if (map.source != StageSource::tp && map.source != StageSource::list) return out;
  const auto label = [&](const Job& job) {
    return fmt::format("{} mb{}", job.type < run.types.size() ? run.types.name(job.type) : "?",
                       job.micro_batch);
  };
  const auto ms = [&](std::int64_t t) { return format_ms(t - evidence.origin); };
  for (std::size_t s = 0; s < map.stage_count(); ++s) {
    const auto& group = map.devices[s];
    if (group.size() < 2 || group.front() >= run.devices.size()) continue;
    const Device& first = run.devices[group.front()];
    for (std::size_t g = 1; g < group.size(); ++g) {
      if (group[g] >= run.devices.size()) continue;
      const Device& other = run.devices[group[g]];
      const std::uint64_t n =
          std::min(evidence.job_counts[group.front()], evidence.job_counts[group[g]]);
      const JobPairEvidence e = evidence.compare(group.front(), group[g]);
      std::string evidence_text;
      if (e.mismatch != JobPairEvidence::npos) {
        evidence_text = fmt::format("its job {} is {} where device {} runs {}", e.mismatch + 1,
                                    label(e.mismatch_b), first.index, label(e.mismatch_a));
      } else if (n > 0 && e.apart * 2 > n) {
        const Job& x = e.apart_a;
        const Job& y = e.apart_b;
        evidence_text = fmt::format(
            "{} of its {} jobs do not overlap device {}'s same job at all (first: {}, device "
            "{} {}-{} ms, device {} {}-{} ms after the first job): one waits for "
            "the other, a pipeline dependency",
            e.apart, n, first.index, label(y), first.index, ms(x.start_ns), ms(x.end_ns),
            other.index, ms(y.start_ns), ms(y.end_ns));
      }
      if (evidence_text.empty()) continue;
      out.push_back(fmt::format(
          "stage {} (devices {}) does not look like one stage: device {}: {}; devices of one "
          "stage (tensor-parallel peers) run the same jobs at the same times",
          s, describe_stage_devices(run, map, s), other.index, evidence_text));
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
