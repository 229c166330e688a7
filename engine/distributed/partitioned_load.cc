#include "distributed/partitioned_load.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "analysis/bad_timestamps.h"
#include "analysis/clock_steps.h"
#include "analysis/launch_segments.h"
#include "analysis/step_rule.h"
#include "distributed/collectives.h"
#include "distributed/run_transfer.h"
#include "distributed/wire.h"
#include "ingest/run_merge.h"
#include "load/input_rules.h"
#include "load/load_prelude.h"
#include "model/errors.h"

namespace pipescope::distributed {

namespace {

constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::max();

/// One value per device of the run, each rank giving those of the devices
/// it holds (`held`); every rank gets every device's.
template <typename T>
std::vector<T> gather_per_device(Exchange& exchange, const std::vector<char>& held,
                                 const std::vector<T>& values) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<std::uint64_t> index;
  std::vector<T> mine;
  for (std::size_t d = 0; d < held.size(); ++d) {
    if (!held[d]) continue;
    index.push_back(d);
    mine.push_back(values[d]);
  }
  ByteWriter w;
  w.list(index);
  w.list(mine);
  std::vector<T> all(held.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    r.list(index);
    r.list(mine);
    if (index.size() != mine.size()) throw WireError("per-device values without their devices");
    for (std::size_t k = 0; k < index.size(); ++k) {
      if (index[k] >= all.size()) throw WireError("a value of a device the run does not have");
      all[index[k]] = mine[k];
    }
  }
  return all;
}

/// Every file's header, and beside it what the merge reads of a file besides
/// its jobs (devices placed, resolution, notes, whether it has GPU
/// activities): one all-gather. Own files keep their jobs.
struct Headers {
  std::vector<FileResult> files;
  /// Per file: the job count of `device`, then of each of `more_devices`.
  std::vector<std::vector<std::uint64_t>> jobs;
  std::vector<char> held;
  bool kernels = false;
};

Headers gather_headers(Exchange& exchange, std::vector<FileResult>&& mine,
                       const std::vector<std::size_t>& global_index, std::size_t files) {
  if (global_index.size() != mine.size()) {
    throw std::invalid_argument("load_partitioned: one global index per file expected");
  }
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const FileResult& f = mine[i];
    if (!f.placement.empty()) {
      // A format with a join is gathered on rank 0 (cluster.h), never here.
      throw std::logic_error("load_partitioned: a file whose format's join has not run");
    }
    w.put(static_cast<std::uint64_t>(global_index[i]));
    put_file_header(w, f);
    w.put(static_cast<std::uint8_t>(f.has_device ? 1 : 0));
    w.put(f.time_resolution_ns);
    w.put(static_cast<std::uint8_t>(f.kernels.empty() ? 0 : 1));
    w.put(static_cast<std::uint32_t>(f.notes.size()));
    for (const Warning& note : f.notes) put_warning(w, note);
    w.put(static_cast<std::uint32_t>(f.more_devices.size()));
    for (const Device& more : f.more_devices) {
      put_device(w, more);
      w.put(static_cast<std::uint64_t>(more.jobs.size()));
    }
  }
  Headers out;
  out.files.resize(files);
  out.jobs.resize(files);
  out.held.assign(files, 0);
  std::vector<char> seen(files, 0);
  const std::vector<std::string> all = exchange.all_gather(w.take());
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    const bool own = static_cast<int>(rank) == exchange.rank();
    ByteReader r(all[rank]);
    const auto count = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto file = r.get<std::uint64_t>();
      if (file >= files || seen[file]) throw WireError(fmt::format("file {} arrived twice", file));
      seen[file] = 1;
      FileResult header;
      const std::uint64_t jobs = get_file_header(r, header);
      header.has_device = r.get<std::uint8_t>() != 0;
      header.time_resolution_ns = r.get<std::int64_t>();
      out.kernels = out.kernels || r.get<std::uint8_t>() != 0;
      const auto notes = r.get<std::uint32_t>();
      for (std::uint32_t n = 0; n < notes; ++n) header.notes.push_back(get_warning(r));
      std::vector<std::uint64_t>& counts = out.jobs[file];
      if (header.has_device) counts.push_back(jobs);
      const auto more = r.get<std::uint32_t>();
      for (std::uint32_t m = 0; m < more; ++m) {
        header.more_devices.push_back(get_device(r));
        counts.push_back(r.get<std::uint64_t>());
      }
      if (own) {
        out.held[file] = 1;
        continue;  // its own result, jobs and all, below
      }
      out.files[file] = std::move(header);
    }
  }
  for (std::size_t i = 0; i < mine.size(); ++i) out.files[global_index[i]] = std::move(mine[i]);
  if (std::count(seen.begin(), seen.end(), 1) != static_cast<std::ptrdiff_t>(files)) {
    throw WireError("some input files were read by no rank");
  }
  return out;
}

/// What is known of each device of the run: its job count, whether this
/// rank holds its jobs, and its place (to follow it through leave-outs).
struct DeviceFacts {
  std::uint64_t jobs = 0;
  char held = 0;
  int index = 0;
  std::string path;
};

/// `facts` for the devices left in `run` (a subsequence of those before).
void follow(const Run& run, std::vector<DeviceFacts>& facts) {
  std::vector<DeviceFacts> kept;
  std::size_t j = 0;
  for (const Device& device : run.devices) {
    while (j < facts.size() && (facts[j].index != device.index || facts[j].path != device.path)) {
      ++j;
    }
    if (j == facts.size()) throw std::logic_error("load_partitioned: a device lost its facts");
    kept.push_back(std::move(facts[j++]));
  }
  facts = std::move(kept);
}

std::vector<char> held_of(const std::vector<DeviceFacts>& facts) {
  std::vector<char> held;
  for (const DeviceFacts& f : facts) held.push_back(f.held);
  return held;
}

/// refuse_duplicate_inputs: the pairs with the same fingerprint are asked
/// whether their files hold the same bytes by the rank holding the first;
/// the jobs, time for time, are what the fingerprints say (the 64-bit hash
/// stands in for the comparison a single process makes).
void refuse_duplicates(Exchange& exchange, const Run& run, const std::vector<char>& held) {
  std::vector<DeviceFingerprint> prints(run.devices.size());
  for (std::size_t d = 0; d < prints.size(); ++d) {
    if (held[d]) prints[d] = device_fingerprint(run.devices[d]);
  }
  prints = gather_per_device(exchange, held, prints);
  const auto pairs = duplicate_candidates(run, prints);
  if (pairs.empty()) return;
  std::vector<char> same(pairs.size(), 0);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    if (held[a]) same[k] = same_file_bytes(run.devices[a].path, run.devices[b].path) ? 1 : 0;
  }
  ByteWriter w;
  w.list(same);
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    std::vector<char> theirs;
    r.list(theirs);
    if (theirs.size() != same.size()) throw WireError("answers for other pairs");
    for (std::size_t k = 0; k < same.size(); ++k) same[k] = same[k] || theirs[k];
  }
  std::map<std::pair<std::size_t, std::size_t>, bool> answer;
  for (std::size_t k = 0; k < pairs.size(); ++k) answer[pairs[k]] = same[k] != 0;
  refuse_duplicate_inputs(run, prints, [&](std::size_t a, std::size_t b) {
    return answer.at({a, b});
  });
}

/// The bad timestamps of the held devices left out; the warning from every
/// device's count and first.
struct BadSummary {
  std::uint64_t count = 0;
  std::uint32_t line = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

void leave_out_bad(Exchange& exchange, Run& run, std::vector<DeviceFacts>& facts,
                   std::vector<Warning>& warnings) {
  const std::vector<char> held = held_of(facts);
  std::vector<BadSummary> mine(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!held[d]) continue;
    const std::vector<BadTimestamp> bad = leave_out_bad_timestamps(run.devices[d], d);
    if (!bad.empty())
      mine[d] = {bad.size(), bad.front().line, bad.front().start_ns, bad.front().end_ns};
  }
  const std::vector<BadSummary> all = gather_per_device(exchange, held, mine);
  std::uint64_t total = 0;
  std::optional<std::size_t> first;
  for (std::size_t d = 0; d < all.size(); ++d) {
    facts[d].jobs -= all[d].count;
    total += all[d].count;
    if (all[d].count > 0 && !first) first = d;
  }
  if (!first) return;
  const BadSummary& b = all[*first];
  warnings.push_back(bad_timestamp_warning(run.devices[*first],
                                           {*first, b.line, b.start_ns, b.end_ns},
                                           static_cast<std::size_t>(total)));
}

/// A device's part of a step, as it travels (found or not).
template <typename Part>
struct Found {
  bool found = false;
  Part part;
};

/// undo_clock_steps by its parts (clock_steps.h), every rank undoing the
/// steps on the devices it read, the machine-wide decisions taken alike on
/// every rank from gathered parts. The steps back of every machine go
/// together, round by round (a machine's steps touch only its devices);
/// the steps forward machine by machine, as undo_clock_steps takes them
/// (each compares the machine with the others as they stand).
std::vector<ClockStep> undo_clock_steps_by_parts(Exchange& exchange, Run& run,
                                                 const std::vector<DeviceFacts>& facts) {
  const TypeKinds kinds(run.types);
  const ClockStepOptions options;
  const std::vector<char> held = held_of(facts);
  std::map<int, std::vector<std::size_t>> machines;  // machine -> devices with jobs
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (facts[d].jobs > 0) machines[run.devices[d].machine].push_back(d);
  }
  std::vector<ClockStep> steps;
  bool moved = false;
  // The local shift of one machine's step, and the step as the run sees it.
  const auto undo = [&](int machine, const std::vector<std::size_t>& devices, const auto& line_of,
                        const auto& mended_of, std::int64_t shift, std::int64_t size) {
    DeviceShift mine;
    for (const std::size_t d : devices) {
      if (!held[d]) continue;
      const DeviceShift s = shift_device_jobs(run.devices[d], line_of(d), shift, mended_of(d));
      mine.first_start = std::min(mine.first_start, s.first_start);
      mine.jobs += s.jobs;
    }
    return ClockStep{machine, gather_min(exchange, mine.first_start), size,
                     gather_sum(exchange, mine.jobs)};
  };

  // Steps back: every machine still looking, round by round.
  std::map<int, int> rounds;  // machine -> rounds taken
  for (const auto& [machine, devices] : machines) rounds[machine] = 0;
  while (!rounds.empty()) {
    // Only the machines still looking; a device's first jump only where it
    // jumps (the same condition: none in the common run without a step).
    std::vector<std::uint64_t> counts(run.devices.size(), 0);
    std::vector<Found<DeviceBackStep>> parts(run.devices.size());
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      if (!held[d] || !rounds.contains(run.devices[d].machine)) continue;
      counts[d] = device_back_jumps(run.devices[d], kinds, options);
      if (counts[d] == 0) continue;
      if (const auto part = device_back_step(run.devices[d], kinds, options)) {
        parts[d] = {true, *part};
      }
    }
    counts = gather_per_device(exchange, held, counts);
    parts = gather_per_device(exchange, held, parts);
    for (auto it = rounds.begin(); it != rounds.end();) {
      const int machine = it->first;
      const std::vector<std::size_t>& devices = machines[machine];
      std::vector<std::uint64_t> machine_counts;
      std::vector<DeviceBackStep> machine_parts;
      for (const std::size_t d : devices) {
        machine_counts.push_back(counts[d]);
        if (parts[d].found) machine_parts.push_back(parts[d].part);
      }
      // A clock step makes every device of the machine jump back the same
      // number of times, every one of them found.
      if (!shows_back_step(machine_counts) || machine_parts.size() < devices.size()) {
        it = rounds.erase(it);
        continue;
      }
      const std::int64_t size = back_step_size(machine_parts);
      steps.push_back(undo(
          machine, devices, [&](std::size_t d) { return parts[d].part.line; },
          [&](std::size_t d) { return parts[d].part.cut_job; }, size, -size));
      moved = true;
      it = ++it->second >= kMaxBackRounds ? rounds.erase(it) : std::next(it);
    }
  }

  // Steps forward, once the steps back are undone: they need the other
  // machines to compare with.
  if (machines.size() >= 2) {
    for (const auto& [machine, devices] : machines) {
      for (int round = 0; round < kMaxForwardRounds; ++round) {
        std::vector<Found<DeviceForwardStep>> parts(run.devices.size());
        for (const std::size_t d : devices) {
          if (!held[d]) continue;
          if (const auto part = device_forward_step(run.devices[d], kinds, options)) {
            parts[d] = {true, *part};
          }
        }
        parts = gather_per_device(exchange, held, parts);
        std::vector<ForwardJumpSpan> spans;
        for (const std::size_t d : devices) {
          if (parts[d].found) spans.push_back(parts[d].part.span);
        }
        if (spans.size() < devices.size()) break;  // every device of the machine at once
        const std::optional<ForwardStepWindow> window = forward_step_window(spans);
        if (!window) break;
        // Every rank knows there is a window here: each adds its devices'
        // step starts, and the starts are combined by min.
        MachineStepStarts starts;
        for (std::size_t d = 0; d < run.devices.size(); ++d) {
          if (!held[d]) continue;
          const JobVector& jobs = run.devices[d].jobs;
          std::vector<std::int32_t> local(jobs.size());
          assign_steps(jobs, 0, jobs.size(), kinds, local);
          add_step_starts(starts, run.devices[d], local, run.devices[d].machine == machine);
        }
        ByteWriter w;
        w.put(static_cast<std::uint64_t>(starts.size()));
        for (const auto& [step, pair] : starts) {
          w.put(step);
          w.put(pair.first);
          w.put(pair.second);
        }
        MachineStepStarts all;
        for (const std::string& message : exchange.all_gather(w.take())) {
          ByteReader r(message);
          MachineStepStarts theirs;
          const auto n = r.get<std::uint64_t>();
          for (std::uint64_t i = 0; i < n; ++i) {
            const auto step = r.get<std::int32_t>();
            const auto first = r.get<std::int64_t>();
            theirs[step] = {first, r.get<std::int64_t>()};
          }
          add_step_starts(all, theirs);
        }
        if (!forward_step_moves_machine(all, *window)) break;
        steps.push_back(undo(
            machine, devices, [&](std::size_t d) { return parts[d].part.line; },
            [&](std::size_t d) { return parts[d].part.stretched_job; }, -window->size,
            window->size));
        moved = true;
        run.finalize();
      }
    }
  }
  finish_clock_steps(run, moved, steps);
  return steps;
}

void put_signal(ByteWriter& w, LaunchSignal found_by, const std::string& where) {
  w.put(static_cast<std::uint8_t>(found_by));
  w.str(where);
}

LaunchSignal get_signal(ByteReader& r) {
  const auto signal = r.get<std::uint8_t>();
  if (signal > static_cast<std::uint8_t>(LaunchSignal::profiler_window)) {
    throw WireError("launch evidence with an unknown signal");
  }
  return static_cast<LaunchSignal>(signal);
}

/// Every device's launch evidence, in device order.
std::vector<DeviceLaunchEvidence> gather_launch_evidence(Exchange& exchange, const Run& run,
                                                         const std::vector<char>& held,
                                                         const TypeKinds& kinds,
                                                         const SegmentOptions& options) {
  ByteWriter w;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!held[d]) continue;
    const DeviceLaunchEvidence e = device_launch_evidence(run.devices[d], kinds, options);
    w.put(static_cast<std::uint64_t>(d));
    w.put(static_cast<std::uint32_t>(e.candidates.size()));
    for (const LaunchCandidate& c : e.candidates) {
      w.put(c.stop_ns);
      w.put(c.restart_ns);
      put_signal(w, c.found_by, c.where);
    }
    w.put(static_cast<std::uint32_t>(e.ignored.size()));
    for (const IgnoredLaunchSignal& s : e.ignored) put_signal(w, s.found_by, s.where);
  }
  std::vector<DeviceLaunchEvidence> all(run.devices.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    while (!r.done()) {
      const auto d = r.get<std::uint64_t>();
      if (d >= all.size()) throw WireError("launch evidence of a device the run does not have");
      DeviceLaunchEvidence& e = all[d];
      const auto candidates = r.get<std::uint32_t>();
      for (std::uint32_t i = 0; i < candidates; ++i) {
        LaunchCandidate c;
        c.stop_ns = r.get<std::int64_t>();
        c.restart_ns = r.get<std::int64_t>();
        c.found_by = get_signal(r);
        c.where = r.str();
        e.candidates.push_back(std::move(c));
      }
      const auto ignored = r.get<std::uint32_t>();
      for (std::uint32_t i = 0; i < ignored; ++i) {
        IgnoredLaunchSignal s;
        s.found_by = get_signal(r);
        s.where = r.str();
        e.ignored.push_back(std::move(s));
      }
    }
  }
  return all;
}

/// Every device's busy intervals inside each candidate, asked in the order
/// decide_launch_cuts asks (device order, each device's candidates in
/// order): one all-gather for them all.
std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> gather_busy(
    Exchange& exchange, const Run& run, const std::vector<char>& held,
    const std::vector<DeviceLaunchEvidence>& evidence) {
  std::vector<std::pair<std::int64_t, std::int64_t>> asked;
  for (const DeviceLaunchEvidence& e : evidence) {
    for (const LaunchCandidate& c : e.candidates) asked.emplace_back(c.stop_ns, c.restart_ns);
  }
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> busy(asked.size());
  if (asked.empty()) return busy;
  // std::pair is not trivially copyable: intervals travel as two words.
  struct Interval {
    std::int64_t from, to;
  };
  ByteWriter w;
  for (const auto& [from, to] : asked) {
    std::vector<Interval> inside;
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      if (!held[d]) continue;
      for (const auto& [a, b] : busy_between(run.devices[d], from, to)) inside.push_back({a, b});
    }
    w.list(inside);
  }
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    for (auto& into : busy) {
      std::vector<Interval> theirs;
      r.list(theirs);
      for (const Interval& i : theirs) into.emplace_back(i.from, i.to);
    }
  }
  return busy;
}

/// What a device says of each segment once cut: its numbering, and its first
/// job in it.
struct SegmentFacts {
  std::uint8_t has_opening = 0;
  std::uint8_t has_job = 0;
  std::int32_t steps = 0;
  std::int64_t opening_step = 0;
  std::int64_t first_start = 0;
};

/// load_run's split_segments by parts: the segments found, said, and the one
/// asked for kept.
void split_segments(Exchange& exchange, Run& run, std::vector<DeviceFacts>& facts,
                    const LoadOptions& options, LocalLoad& out) {
  SegmentOptions segment_options;
  segment_options.first_step = options.first_step;
  run.segments.clear();
  const TypeKinds kinds(run.types);
  const std::vector<char> held = held_of(facts);
  const std::vector<DeviceLaunchEvidence> evidence =
      gather_launch_evidence(exchange, run, held, kinds, segment_options);
  const auto busy = gather_busy(exchange, run, held, evidence);
  std::size_t asked = 0;
  LaunchCuts cuts = decide_launch_cuts(
      evidence,
      [&](std::int64_t, std::int64_t) {
        if (asked == busy.size())
          throw std::logic_error("load_partitioned: a busy question unasked");
        return busy[asked++];
      },
      segment_options);
  const std::vector<IgnoredLaunchSignal> ignored = std::move(cuts.ignored);
  const std::size_t segments = cuts.cuts.size() + 1;
  std::vector<std::vector<SegmentFacts>> mine(run.devices.size());
  ByteWriter w;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    if (!held[d]) continue;
    Device& device = run.devices[d];
    cut_device(device, cuts.cuts);
    const std::vector<SegmentNumbering> numbering =
        device_segment_numbering(device, kinds, segments);
    std::vector<SegmentFacts> said(segments);
    for (std::size_t s = 0; s < segments; ++s) {
      const auto [first, last] = device.segment_jobs(s);
      said[s].has_opening = numbering[s].opening_step.has_value() ? 1 : 0;
      said[s].opening_step = numbering[s].opening_step.value_or(0);
      said[s].steps = numbering[s].steps;
      said[s].has_job = first < last ? 1 : 0;
      said[s].first_start = first < last ? device.jobs[first].start_ns : kNoTime;
    }
    w.put(static_cast<std::uint64_t>(d));
    w.list(said);
  }
  std::vector<std::vector<SegmentFacts>> all(run.devices.size());
  for (const std::string& message : exchange.all_gather(w.take())) {
    ByteReader r(message);
    while (!r.done()) {
      const auto d = r.get<std::uint64_t>();
      if (d >= all.size()) throw WireError("segments of a device the run does not have");
      r.list(all[d]);
      if (all[d].size() != segments) throw WireError("another count of segments");
    }
  }
  std::vector<SegmentNumbering> numbering;
  std::vector<std::int64_t> starts(segments, kNoTime);
  for (std::size_t d = 0; d < all.size(); ++d) {
    std::vector<SegmentNumbering> device(segments);
    for (std::size_t s = 0; s < segments && s < all[d].size(); ++s) {
      const SegmentFacts& f = all[d][s];
      if (f.has_opening) device[s].opening_step = f.opening_step;
      device[s].steps = f.steps;
      if (f.has_job) starts[s] = std::min(starts[s], f.first_start);
    }
    add_segment_numbering(numbering, device);
  }
  number_launch_segments(std::move(cuts), numbering, segment_options, run);
  out.all_segments = run.segments;
  out.launch_warnings = launch_warnings(ignored, run.segments,
                                        *std::min_element(starts.begin(), starts.end()), starts);
  if (!options.segment) return;
  const std::size_t position = segment_position(*options.segment, run.segments.size());
  std::vector<char> in_segment(run.devices.size());
  for (std::size_t d = 0; d < all.size(); ++d) {
    in_segment[d] = all[d].size() > position ? all[d][position].has_job : 0;
  }
  select_launch_segment(run, position, in_segment);
  follow(run, facts);
}

}  // namespace

LocalLoad load_partitioned(Exchange& exchange, std::vector<FileResult>&& mine,
                           const std::vector<std::size_t>& global_index, std::size_t files,
                           const LoadOptions& options) {
  Headers headers = gather_headers(exchange, std::move(mine), global_index, files);
  // The devices in the merge's order: files in input order, each file's
  // device then its further ones, sorted by index when a reader placed
  // them itself (run_merge.cc).
  std::vector<DeviceFacts> facts;
  bool regrouped = false;
  for (std::size_t f = 0; f < files; ++f) {
    const FileResult& file = headers.files[f];
    std::size_t k = 0;
    const auto add = [&](const Device& device) {
      facts.push_back({headers.jobs[f][k++], headers.held[f], device.index, device.path});
    };
    if (file.has_device) add(file.device);
    for (const Device& more : file.more_devices) add(more);
    if (!file.has_device || !file.more_devices.empty()) regrouped = true;
  }
  if (regrouped) {
    std::stable_sort(facts.begin(), facts.end(),
                     [](const DeviceFacts& a, const DeviceFacts& b) { return a.index < b.index; });
  }
  LocalLoad out;
  Run& run = out.run;
  run = merge_file_results(std::move(headers.files));
  if (run.devices.size() != facts.size()) throw std::logic_error("load_partitioned: devices lost");

  // The input rules, in load_run's order.
  refuse_unreadable(run, options.inputs);
  refuse_unplaced(run);
  if (headers.kernels) {
    const OptionWords& words = *options.ingest.words;
    throw InputError(fmt::format(
        "{} cannot yet analyse PyTorch traces' GPU activities (the kernel view reads every "
        "trace together): {}",
        words.name(CallerOption::mpi), words.advice(CallerOption::mpi)));
  }
  refuse_duplicates(exchange, run, held_of(facts));
  {
    const std::vector<char> held = held_of(facts);
    std::vector<DeviceSpan> spans(run.devices.size());
    for (std::size_t d = 0; d < spans.size(); ++d) {
      if (held[d]) spans[d] = device_span(run.devices[d]);
    }
    refuse_separate_runs(run, gather_per_device(exchange, held, spans));
  }
  if (options.first_step) run.first_step = options.first_step;
  out.input_warnings = options.discovery_notes;
  if (options.inputs.check_layout) {
    for (Warning& w : check_rank_layout(run)) out.input_warnings.push_back(std::move(w));
  }
  for (Warning& note : run.notes) out.input_warnings.push_back(note);
  // Untimed jobs out first, as load_run does.
  {
    const std::vector<char> held = held_of(facts);
    std::vector<UntimedJobs> untimed(run.devices.size());
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      if (held[d]) untimed[d] = leave_out_untimed_jobs(run.devices[d], run.types);
    }
    untimed = gather_per_device(exchange, held, untimed);
    for (std::size_t d = 0; d < untimed.size() && d < facts.size(); ++d) {
      facts[d].jobs -= untimed[d].count;
    }
    if (auto w = untimed_jobs_warning(run, untimed)) out.input_warnings.push_back(std::move(*w));
  }
  {
    std::vector<std::uint64_t> counts;
    for (const DeviceFacts& f : facts) counts.push_back(f.jobs);
    for (Warning& w : leave_out_devices(run, counts)) out.input_warnings.push_back(std::move(w));
    follow(run, facts);
  }
  std::uint64_t jobs = 0;
  for (const DeviceFacts& f : facts) jobs += f.jobs;
  if (jobs > 0) {
    leave_out_bad(exchange, run, facts, out.input_warnings);
    // A clock that jumped mid-run is undone first, as load_run undoes it.
    if (options.pipeline.clock.fix) {
      run.clock_steps = undo_clock_steps_by_parts(exchange, run, facts);
      if (!run.clock_steps.empty()) {
        std::int64_t first = std::numeric_limits<std::int64_t>::max();
        for (const Device& device : run.devices) {
          if (!device.jobs.empty()) first = std::min(first, device.jobs.front().start_ns);
        }
        first = gather_min(exchange, first);
        for (const ClockStep& step : run.clock_steps) {
          out.input_warnings.push_back(clock_step_warning(run, step, first));
        }
      }
    }
    split_segments(exchange, run, facts, options, out);
  }
  out.mine = held_of(facts);
  return out;
}

}  // namespace pipescope::distributed
