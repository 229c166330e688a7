#include "load/input_rules.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "analysis/job_kind.h"
#include "analysis/kernel_view.h"
#include "model/errors.h"
#include "numeric/statistics.h"

namespace pipescope {

namespace {

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

/// "machine1 (logs/machine1)" or "machine 0 (logs)": the machine as a
/// person finds it, from one of its devices.
std::string machine_label(const Device& device) {
  const std::string folder = std::filesystem::path(device.path).parent_path().string();
  const std::string name =
      device.machine_name.empty() ? fmt::format("machine {}", device.machine) : device.machine_name;
  return folder.empty() ? name : fmt::format("{} ({})", name, folder);
}

}  // namespace

bool is_input_warning(std::string_view code) {
  const std::optional<WarningCode> known = warning_from_name(code);
  return known && warning_severity(*known) == WarningSeverity::input;
}

void refuse_unreadable(const Run& run, const InputRules& rules) {
  if (rules.allow_unreadable) return;
  std::vector<const InputStats*> bad;
  for (const InputStats& input : run.inputs) {
    if (input.unreadable) bad.push_back(&input);
  }
  if (bad.empty()) return;
  std::string message =
      fmt::format("cannot read {} of {} input files", bad.size(), run.inputs.size());
  if (bad.size() == 1) message = "cannot read an input file";
  for (const InputStats* input : bad)
    message += fmt::format("\n  {}: {}", input->path, input->error);
  message += "\nan input that cannot be read is not analysed as a device idle all run";
  if (const std::string& advice = rules.words->advice(CallerOption::allow_missing); !advice.empty())
    message += fmt::format("; {}", advice);
  throw InputError(message);
}

void refuse_unplaced(const Run& run) {
  std::vector<const InputStats*> missing;
  std::size_t given = 0;
  for (const InputStats& input : run.inputs) {
    if (input.time_base == TimeBase::missing) missing.push_back(&input);
    given += input.time_base == TimeBase::given;
  }
  if (missing.empty() || given == 0) return;
  std::string message = fmt::format(
      "{} of {} traces {} no baseTimeNanoseconds while {} {} one: {} times count from an "
      "unknown base and cannot be placed on theirs",
      missing.size(), missing.size() + given, missing.size() == 1 ? "has" : "have", given,
      given == 1 ? "has" : "have", missing.size() == 1 ? "its" : "their");
  for (const InputStats* input : missing) {
    message += fmt::format("\n  {}{}", input->path,
                           input->error.empty() ? std::string(" (no baseTimeNanoseconds key)")
                                                : fmt::format(" ({})", input->error));
  }
  message +=
      "\nKineto writes the base time after the events, so a trace a crash cut short loses it; "
      "analyse the other traces without it (name them, or move it out of the folder)";
  throw InputError(message);
}

DeviceFingerprint device_fingerprint(const Device& device) {
  // A word at a time (multiply and fold), not a byte: every job of the run
  // goes through it.
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ device.jobs.size();
  auto mix = [&h](std::uint64_t v) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  };
  for (const Job& job : device.jobs) {
    mix(static_cast<std::uint64_t>(job.start_ns));
    mix(static_cast<std::uint64_t>(job.end_ns));
    mix((static_cast<std::uint64_t>(job.type) << 40) ^ static_cast<std::uint64_t>(job.micro_batch));
  }
  return {device.jobs.size(), h};
}

namespace {

bool same_jobs(const Device& a, const Device& b) {
  if (a.jobs.size() != b.jobs.size()) return false;
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    const Job &x = a.jobs[i], &y = b.jobs[i];
    if (x.start_ns != y.start_ns || x.end_ns != y.end_ns || x.type != y.type ||
        x.micro_batch != y.micro_batch) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool same_file_bytes(const std::string& a, const std::string& b) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(a, ec);
  if (ec || std::filesystem::file_size(b, ec) != size || ec) return false;
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  if (!x || !y) return false;
  std::vector<char> p(std::size_t{1} << 20), q(p.size());
  while (x && y) {
    x.read(p.data(), static_cast<std::streamsize>(p.size()));
    y.read(q.data(), static_cast<std::streamsize>(q.size()));
    if (x.gcount() != y.gcount() || !std::equal(p.begin(), p.begin() + x.gcount(), q.begin())) {
      return false;
    }
  }
  return x.eof() && y.eof();
}

namespace {

/// "run/machine1" for a device: the folder its input is in.
std::string folder_of(const Device& device) {
  const std::string folder = std::filesystem::path(device.path).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::string seconds(std::int64_t ns) {
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

}  // namespace

void refuse_duplicate_inputs(const Run& run) {
  std::vector<DeviceFingerprint> prints(run.devices.size());
  tbb::parallel_for(std::size_t{0}, run.devices.size(),
                    [&](std::size_t d) { prints[d] = device_fingerprint(run.devices[d]); });
  refuse_duplicate_inputs(run, prints, [&](std::size_t a, std::size_t b) {
    const Device &x = run.devices[a], &y = run.devices[b];
    return same_jobs(x, y) && same_file_bytes(x.path, y.path);
  });
}

std::vector<std::pair<std::size_t, std::size_t>> duplicate_candidates(
    const Run& run, const std::vector<DeviceFingerprint>& prints) {
  // Same jobs time for time, in files of the same bytes on two machines: a
  // copy. Same jobs alone are not enough: a simulator's tensor-parallel
  // peers, or data-parallel replicas drawn with the same costs, run identical
  // jobs in files that differ (thread ids, ranks).
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::size_t>> by_jobs;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (prints[d].jobs < 2) continue;
    by_jobs[{prints[d].jobs, prints[d].print}].push_back(d);
  }
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (const auto& [key, devices] : by_jobs) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      for (std::size_t j = i + 1; j < devices.size(); ++j) {
        if (run.devices[devices[i]].machine == run.devices[devices[j]].machine) continue;
        pairs.emplace_back(devices[i], devices[j]);
      }
    }
  }
  return pairs;
}

void refuse_duplicate_inputs(const Run& run, const std::vector<DeviceFingerprint>& prints,
                             const SameInputs& same) {
  for (const auto& [i, j] : duplicate_candidates(run, prints)) {
    if (!same(i, j)) continue;
    const Device &a = run.devices[i], &b = run.devices[j];
    throw InputError(fmt::format(
        "{} and {} are the same file (the same {} jobs, byte for byte): one is a copy of the "
        "other (a backup folder such as {}?), and reading both would count its devices "
        "twice. Analyse without the copy: move it out of the folder, or name the folders to "
        "read",
        a.path, b.path, prints[i].jobs, folder_of(b)));
  }
}

DeviceSpan device_span(const Device& device) {
  if (device.jobs.empty()) return {};
  DeviceSpan span{true, device.jobs.front().start_ns, device.jobs.front().end_ns};
  for (const Job& job : device.jobs) {
    span.first = std::min(span.first, job.start_ns);
    span.last = std::max(span.last, job.end_ns);
  }
  return span;
}

void refuse_separate_runs(const Run& run) {
  std::vector<DeviceSpan> spans;
  spans.reserve(run.devices.size());
  for (const Device& device : run.devices) spans.push_back(device_span(device));
  refuse_separate_runs(run, spans);
}

void refuse_separate_runs(const Run& run, const std::vector<DeviceSpan>& spans) {
  // Each device's time range; devices sorted by their first start.
  struct Range {
    std::int64_t first, last;
    const Device* device;
  };
  std::vector<Range> ranges;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (spans[d].has_jobs) ranges.push_back({spans[d].first, spans[d].last, &run.devices[d]});
  }
  if (ranges.size() < 2) return;
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  // A cut between the devices: every device before it ended before every
  // device after it began. A relaunch keeps its devices on both sides (its
  // logs are appended to), so it never makes one.
  std::int64_t ended = ranges.front().last;
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const std::int64_t gap = ranges[i].first - ended;
    if (gap >= kSeparateRunsGapNs) {
      const auto folders = [&](std::size_t lo, std::size_t hi) {
        std::set<std::string> names;
        for (std::size_t k = lo; k < hi; ++k) names.insert(folder_of(*ranges[k].device));
        std::string text;
        std::size_t n = 0;
        for (const std::string& name : names) {
          if (n++ == 4) {
            text += fmt::format(" and {} more", names.size() - 4);
            break;
          }
          text += fmt::format("{}'{}'", text.empty() ? "" : " ", name);
        }
        return text;
      };
      throw InputError(fmt::format(
          "the inputs hold two runs: {} of them ({}, in {}) end {} before the other {} ({}, in "
          "{}) begin, and no device has jobs in both (a relaunch appends to the same logs). "
          "Analyse one run at a time: pass its folders, e.g. {}",
          i, ranges[i - 1].device->path, folders(0, i), seconds(gap), ranges.size() - i,
          ranges[i].device->path, folders(i, ranges.size()), folders(i, ranges.size())));
    }
    ended = std::max(ended, ranges[i].last);
  }
}

std::vector<Warning> check_rank_layout(const Run& run) {
  std::vector<Warning> warnings;
  // Machine ordinal -> its devices' positions, in rank order.
  std::map<int, std::vector<const Device*>> machines;
  for (const Device& device : run.devices) machines[device.machine].push_back(&device);
  for (auto& [machine, devices] : machines) {
    std::sort(devices.begin(), devices.end(),
              [](const Device* a, const Device* b) { return a->rank < b->rank; });
    std::vector<int> missing;
    int expected = 0;
    for (const Device* device : devices) {
      for (; expected < device->rank; ++expected) missing.push_back(expected);
      expected = std::max(expected, device->rank + 1);
    }
    if (missing.empty()) continue;
    std::vector<int> found;
    for (const Device* device : devices) found.push_back(device->rank);
    warnings.push_back(
        {WarningCode::rank_gap,
         fmt::format("{}: no input for rank{} {} (ranks found: {}); a log not copied, or a rank "
                     "that never started?",
                     machine_label(*devices.front()), missing.size() == 1 ? "" : "s",
                     fmt::join(missing, ", "), fmt::join(found, ", ")),
         -1, -1, static_cast<std::uint64_t>(missing.size())});
  }
  if (machines.size() < 2) return warnings;
  // The usual rank count: the most common one (the larger on a tie).
  std::map<std::size_t, std::size_t> machines_with;
  for (const auto& [machine, devices] : machines) ++machines_with[devices.size()];
  std::size_t usual = 0;
  std::size_t most = 0;
  for (const auto& [count, n] : machines_with) {
    if (n >= most) {
      usual = count;
      most = n;
    }
  }
  for (const auto& [machine, devices] : machines) {
    if (devices.size() == usual) continue;
    const std::size_t diff =
        devices.size() > usual ? devices.size() - usual : usual - devices.size();
    warnings.push_back({WarningCode::uneven_ranks,
                        fmt::format("{} has {}, {} of the run's {} machines {} {}",
                                    machine_label(*devices.front()), plural(devices.size(), "rank"),
                                    most, machines.size(), most == 1 ? "has" : "have", usual),
                        -1, -1, static_cast<std::uint64_t>(diff)});
  }
  return warnings;
}

std::vector<Warning> leave_out_devices(Run& run) {
  std::vector<std::uint64_t> counts;
  counts.reserve(run.devices.size());
  for (const Device& device : run.devices) counts.push_back(device.jobs.size());
  return leave_out_devices(run, counts);
}

std::vector<Warning> leave_out_devices(Run& run, const std::vector<std::uint64_t>& job_counts) {
  std::vector<Warning> warnings;
  if (run.devices.size() != run.inputs.size()) return warnings;  // not as merged: nothing to match
  std::size_t kept_count = 0;
  for (std::size_t i = 0; i < run.devices.size(); ++i) {
    if (!run.inputs[i].unreadable && job_counts[i] > 0) ++kept_count;
  }
  const std::size_t total = run.devices.size();
  std::vector<Device> kept;
  kept.reserve(kept_count);
  for (std::size_t i = 0; i < total; ++i) {
    Device& device = run.devices[i];
    const InputStats& input = run.inputs[i];
    if (!input.unreadable && job_counts[i] > 0) {
      kept.push_back(std::move(device));
      continue;
    }
    const WarningCode reason =
        input.unreadable ? WarningCode::unreadable_input : WarningCode::empty_input;
    const std::string message =
        input.unreadable
            ? fmt::format(
                  "could not read {} ({}): device {} is LEFT OUT of every figure, "
                  "which cover {} of {} devices",
                  input.path, input.error, device.index, kept_count, total)
            : fmt::format(
                  "{} holds no job{}: device {} is left out of the figures (not counted "
                  "as a device idle all run)",
                  input.path, input.error.empty() ? "" : fmt::format(" ({})", input.error),
                  device.index);
    warnings.push_back({reason, message, device.index, -1, job_counts[i]});
    run.left_out.push_back({device.index, device.machine, device.machine_name, device.rank,
                            device.path, std::string(warning_name(reason))});
  }
  run.devices = std::move(kept);
  return warnings;
}

std::uint64_t compute_jobs_in_steps(const Run& run, const Device& device,
                                    std::span<const std::int32_t> job_step) {
  std::vector<bool> compute(run.types.size());
  for (TypeId t = 0; t < run.types.size(); ++t) {
    const JobKind kind = classify_job_type(run.types.name(t));
    compute[t] =
        kind == JobKind::forward || kind == JobKind::backward || kind == JobKind::optimizer;
  }
  std::uint64_t count = 0;
  const JobVector& jobs = device.jobs;
  for (std::size_t i = 0; i < jobs.size() && i < job_step.size(); ++i) {
    if (job_step[i] >= 0 && jobs[i].type < compute.size() && compute[jobs[i].type]) ++count;
  }
  return count;
}

std::vector<Warning> check_short_devices(const Run& run, const Metrics& metrics,
                                         const StageMap& stages) {
  const std::size_t n = run.devices.size();
  if (metrics.job_step.size() != n) return {};
  std::vector<std::uint64_t> jobs(n), compute(n);
  for (std::size_t d = 0; d < n; ++d) {
    jobs[d] = run.devices[d].jobs.size();
    compute[d] = compute_jobs_in_steps(run, run.devices[d], metrics.job_step[d]);
  }
  return check_short_devices(run, jobs, compute, metrics, stages);
}

std::vector<Warning> check_short_devices(const Run& run, std::span<const std::uint64_t> job_counts,
                                         std::span<const std::uint64_t> compute_in_steps,
                                         const Metrics& metrics, const StageMap& stages) {
  std::vector<Warning> warnings;
  const std::size_t n = run.devices.size();
  if (n < 2 || metrics.devices.size() != n || job_counts.size() != n ||
      compute_in_steps.size() != n || stages.stage_of.size() != n) {
    return warnings;
  }
  // Compute jobs in steps, per step the device has.
  std::vector<double> rate(n, 0);
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t steps = metrics.devices[d].steps;
    rate[d] = steps > 0 ? static_cast<double>(compute_in_steps[d]) / static_cast<double>(steps) : 0;
  }
  for (std::size_t d = 0; d < n; ++d) {
    const std::vector<std::size_t>& stage =
        stages.devices[static_cast<std::size_t>(stages.stage_of[d])];
    const bool own_stage = stage.size() < 2;
    std::vector<double> peers;
    for (std::size_t p = 0; p < n; ++p) {
      if (p == d) continue;
      if (!own_stage && stages.stage_of[p] != stages.stage_of[d]) continue;
      peers.push_back(rate[p]);
    }
    if (peers.empty()) continue;
    const double usual = median(peers);
    if (usual < 2 || rate[d] >= usual / 2) continue;
    const Device& device = run.devices[d];
    warnings.push_back(
        {WarningCode::short_device,
         fmt::format("device {} ({}): {:.1f} forward/backward/optimizer jobs per step, its {} "
                     "{:.1f} (a log that lost lines, or a rank that logs only part of its jobs?)",
                     device.index, device.path, rate[d],
                     own_stage ? "peers (the other devices)" : "stage peers", usual),
         device.index, stages.stage_of[d], job_counts[d]});
  }
  return warnings;
}

void place_traces_by_rank(Run& run) {
  if (run.kernels.size() < 2) return;
  const TraceRanks traces = trace_ranks(run.kernels);
  if (!traces.refusal.empty()) return;
  std::map<std::string, int> rank_of_path;
  for (std::size_t i = 0; i < run.kernels.size(); ++i) {
    rank_of_path.emplace(run.kernels[i].path, traces.rank[i]);
  }
  std::map<int, std::vector<std::size_t>> places;  // machine -> positions of its traces
  for (std::size_t p = 0; p < run.devices.size(); ++p) {
    if (rank_of_path.count(run.devices[p].path)) places[run.devices[p].machine].push_back(p);
  }
  bool moved = false;
  for (auto& [machine, positions] : places) {
    std::vector<std::size_t> by_rank = positions;
    std::stable_sort(by_rank.begin(), by_rank.end(), [&](std::size_t a, std::size_t b) {
      return rank_of_path[run.devices[a].path] < rank_of_path[run.devices[b].path];
    });
    if (by_rank == positions) continue;
    // The places keep where they are; the traces bring what they hold.
    struct Place {
      int index, machine, rank;
      std::string machine_name;
    };
    std::vector<Place> place;
    for (const std::size_t p : positions) {
      const Device& d = run.devices[p];
      place.push_back({d.index, d.machine, d.rank, d.machine_name});
    }
    std::vector<Device> devices;
    for (const std::size_t p : by_rank) devices.push_back(std::move(run.devices[p]));
    for (std::size_t k = 0; k < positions.size(); ++k) {
      Device& device = devices[k];
      device.index = place[k].index;
      device.machine = place[k].machine;
      device.rank = place[k].rank;
      device.machine_name = place[k].machine_name;
      run.devices[positions[k]] = std::move(device);
    }
    moved = true;
  }
  if (!moved) return;
  std::map<std::string, int> index_of_path;
  for (const Device& d : run.devices) index_of_path.emplace(d.path, d.index);
  for (RankKernels& r : run.kernels) {
    if (const auto it = index_of_path.find(r.path); it != index_of_path.end())
      r.device = it->second;
  }
}

}  // namespace pipescope
