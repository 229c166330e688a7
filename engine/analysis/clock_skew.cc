#include "analysis/clock_skew.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "numeric/units.h"

namespace pipescope {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

int machine_count(const Run& run) {
  int n = 0;
  for (const Device& device : run.devices) n = std::max(n, device.machine + 1);
  return n;
}

std::string machine_name(const Run& run, int machine) {
  for (const Device& device : run.devices) {
    if (device.machine == machine && !device.machine_name.empty()) return device.machine_name;
  }
  return fmt::format("machine{}", machine);
}

// Violations per pair with the current times. Blocks of dependencies are
// counted in parallel, each into its own pairs; the integer counts are then
// added into `pairs` (a sum, so the result does not depend on the blocks).
void count_violations(const Run& run, const Dependencies& deps,
                      std::map<std::pair<int, int>, MachinePairClock>& pairs, bool before,
                      std::int64_t noise_ns) {
  constexpr std::size_t kBlock = std::size_t{1} << 14;
  struct Block {
    std::size_t device, first, last;
  };
  std::vector<Block> blocks;
  for (std::size_t d = 0; d < deps.consumer_devices(); ++d) {
    for (std::size_t j = 0; j < deps.jobs_of(d); j += kBlock) blocks.push_back({d, j, j + kBlock});
  }
  std::vector<std::map<std::pair<int, int>, MachinePairClock>> counted(blocks.size());
  tbb::parallel_for(std::size_t{0}, blocks.size(), [&](std::size_t b) {
    auto& mine = counted[b];
    // Dependencies come in long runs between the same two machines: the pair
    // of the previous one is looked up again only when the machines change.
    std::pair<int, int> last_key{-1, -1};
    MachinePairClock* last_pair = nullptr;
    deps.for_each_in(blocks[b].device, blocks[b].first, blocks[b].last, [&](const Dependency& dep) {
      const Device& pd = run.devices[dep.producer.device];
      const Device& cd = run.devices[dep.consumer.device];
      const Job& p = pd.jobs[dep.producer.job];
      const Job& c = cd.jobs[dep.consumer.job];
      const auto key = std::minmax(pd.machine, cd.machine);
      if (last_pair == nullptr || last_key.first != key.first || last_key.second != key.second) {
        last_key = {key.first, key.second};
        last_pair = &mine[last_key];
      }
      MachinePairClock& pair = *last_pair;
      if (before) ++pair.dependencies;
      if (c.start_ns < p.end_ns) ++(before ? pair.violations_before : pair.violations_after);
      if (c.start_ns < p.end_ns - noise_ns) {
        ++(before ? pair.beyond_noise_before : pair.beyond_noise_after);
      }
    });
  });
  for (const auto& mine : counted) add_pair_clocks(pairs, mine);
}

// Solves the least-squares offsets: minimise Σ (o_b - o_a - e_ab)² with the
// lowest machine of each connected group at 0 (Gaussian elimination on the
// normal equations; a handful of machines).
std::vector<double> solve_offsets(int n, const std::vector<std::tuple<int, int, double>>& edges) {
  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> adjacent(n);
  for (const auto& [a, b, e] : edges) {
    adjacent[a].push_back(b);
    adjacent[b].push_back(a);
  }
  for (int start = 0; start < n; ++start) {
    if (group[start] >= 0) continue;
    std::vector<int> stack{start};
    group[start] = start;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      for (const int y : adjacent[x]) {
        if (group[y] < 0) {
          group[y] = start;
          stack.push_back(y);
        }
      }
    }
  }
  // Unknowns: every machine that is not its group's anchor.
  std::vector<int> column(n, -1);
  int unknowns = 0;
  for (int m = 0; m < n; ++m) {
    if (group[m] != m) column[m] = unknowns++;
  }
  std::vector<std::vector<long double>> a(unknowns, std::vector<long double>(unknowns + 1, 0));
  for (const auto& [x, y, e] : edges) {
    // Residual r = o_y - o_x - e; normal equations add ∂r²/∂o.
    const int cx = column[x], cy = column[y];
    if (cy >= 0) {
      a[cy][cy] += 1;
      if (cx >= 0) a[cy][cx] -= 1;
      a[cy][unknowns] += e;
    }
    if (cx >= 0) {
      a[cx][cx] += 1;
      if (cy >= 0) a[cx][cy] -= 1;
      a[cx][unknowns] -= e;
    }
  }
  for (int i = 0; i < unknowns; ++i) {
    int pivot = i;
    for (int r = i + 1; r < unknowns; ++r) {
      if (std::fabs(static_cast<double>(a[r][i])) > std::fabs(static_cast<double>(a[pivot][i]))) {
        pivot = r;
      }
    }
    std::swap(a[i], a[pivot]);
    if (a[i][i] == 0) continue;
    for (int r = 0; r < unknowns; ++r) {
      if (r == i || a[r][i] == 0) continue;
      const long double f = a[r][i] / a[i][i];
      for (int c = i; c <= unknowns; ++c) a[r][c] -= f * a[i][c];
    }
  }
  std::vector<double> offsets(n, 0.0);
  for (int m = 0; m < n; ++m) {
    const int c = column[m];
    if (c >= 0 && a[c][c] != 0) offsets[m] = static_cast<double>(a[c][unknowns] / a[c][c]);
  }
  return offsets;
}

}  // namespace

std::string_view clock_method_name(ClockMethod method) {
  // Indexed by ClockMethod, in its order.
  constexpr std::array<std::string_view, 7> kNames = {
      "single-machine", "disabled", "imposed", "consistent", "estimated", "rejected", "no-layout"};
  return kNames[static_cast<std::size_t>(method)];
}

std::optional<std::int64_t> parse_duration_ns(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  std::int64_t scale = 0;
  int scale_digits = 0;
  struct Unit {
    std::string_view suffix;
    std::int64_t ns;
    int digits;
  };
  constexpr Unit units[] = {
      {"ns", 1, 0}, {"us", 1000, 3}, {"ms", 1'000'000, 6}, {"s", 1'000'000'000, 9}};
  for (const Unit& unit : units) {
    if (text.ends_with(unit.suffix)) {
      text.remove_suffix(unit.suffix.size());
      scale = unit.ns;
      scale_digits = unit.digits;
      break;
    }
  }
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (scale == 0 || text.empty()) return std::nullopt;
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  if (whole.empty() && frac.empty()) return std::nullopt;
  if (static_cast<int>(frac.size()) > scale_digits || whole.size() > 12) return std::nullopt;
  std::int64_t value = 0;
  for (const char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  std::int64_t fraction = 0;
  std::int64_t place = scale;
  for (const char c : frac) {
    if (c < '0' || c > '9') return std::nullopt;
    place /= 10;
    fraction += (c - '0') * place;
  }
  // Whole and fraction together must fit: value * scale alone may fit while
  // adding the fraction overflows (9223372036.9s).
  if (value > kMax / scale || fraction > kMax - value * scale) return std::nullopt;
  const std::int64_t ns = value * scale + fraction;
  return negative ? -ns : ns;
}

std::pair<std::string, std::int64_t> parse_clock_offset(std::string_view spec,
                                                        std::string_view label) {
  const std::size_t eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw std::invalid_argument(
        fmt::format("{} {}: expected MACHINE=OFFSET, e.g. machine1=+2.5ms", label, spec));
  }
  const auto ns = parse_duration_ns(spec.substr(eq + 1));
  if (!ns) {
    throw std::invalid_argument(
        fmt::format("{} {}: '{}' is not a duration with a unit (ns, us, ms, s)", label, spec,
                    spec.substr(eq + 1)));
  }
  return {std::string(spec.substr(0, eq)), *ns};
}

/// Whether a pair's violations are evidence of skew: more than 1% of its
/// dependencies violated by more than the noise.
bool beyond_noise(const MachinePairClock& pair) {
  return pair.machine_a != pair.machine_b && pair.beyond_noise_before * 100 > pair.dependencies;
}

PairClocks pair_clocks(const Run& run, const Dependencies& deps, std::int64_t noise_ns) {
  PairClocks pairs;
  count_violations(run, deps, pairs, /*before=*/true, noise_ns);
  std::pair<int, int> last_key{-1, -1};
  MachinePairClock* last_pair = nullptr;  // as in count_violations
  for (const Dependency& dep : deps) {
    const Device& pd = run.devices[dep.producer.device];
    const Device& cd = run.devices[dep.consumer.device];
    if (pd.machine == cd.machine) continue;
    // offset(consumer) - offset(producer) <= slack, as a bound on o_b - o_a.
    const std::int64_t slack =
        cd.jobs[dep.consumer.job].start_ns - pd.jobs[dep.producer.job].end_ns;
    const auto key = std::minmax(pd.machine, cd.machine);
    if (last_pair == nullptr || last_key.first != key.first || last_key.second != key.second) {
      last_key = {key.first, key.second};
      last_pair = &pairs[last_key];
    }
    MachinePairClock& pair = *last_pair;
    if (cd.machine == pair.machine_b) {
      pair.upper_ns = pair.upper_ns ? std::min(*pair.upper_ns, slack) : slack;
    } else {
      pair.lower_ns = pair.lower_ns ? std::max(*pair.lower_ns, -slack) : -slack;
    }
  }
  return pairs;
}

void add_pair_clocks(PairClocks& into, const PairClocks& part) {
  for (const auto& [key, from] : part) {
    MachinePairClock& pair = into[key];
    pair.machine_a = key.first;
    pair.machine_b = key.second;
    pair.dependencies += from.dependencies;
    pair.violations_before += from.violations_before;
    pair.violations_after += from.violations_after;
    pair.beyond_noise_before += from.beyond_noise_before;
    pair.beyond_noise_after += from.beyond_noise_after;
    if (from.lower_ns)
      pair.lower_ns = pair.lower_ns ? std::max(*pair.lower_ns, *from.lower_ns) : from.lower_ns;
    if (from.upper_ns)
      pair.upper_ns = pair.upper_ns ? std::min(*pair.upper_ns, *from.upper_ns) : from.upper_ns;
  }
}

void count_violations_after(const Run& run, const Dependencies& deps, std::int64_t noise_ns,
                            PairClocks& pairs) {
  count_violations(run, deps, pairs, /*before=*/false, noise_ns);
}

std::vector<std::string> machine_clock_names(const Run& run) {
  std::vector<std::string> names;
  for (int m = 0; m < machine_count(run); ++m) names.push_back(machine_name(run, m));
  return names;
}

ClockReport estimate_clock_offsets(const Run& run, const Dependencies& deps,
                                   std::int64_t noise_ns) {
  return estimate_from_pair_clocks(pair_clocks(run, deps, noise_ns), machine_clock_names(run),
                                   noise_ns);
}

ClockReport estimate_from_pair_clocks(const PairClocks& pairs,
                                      const std::vector<std::string>& machines,
                                      std::int64_t noise_ns) {
  ClockReport report;
  report.noise_ns = noise_ns;
  const int n = static_cast<int>(machines.size());
  std::vector<std::tuple<int, int, double>> edges;
  for (const auto& [key, pair] : pairs) {
    report.dependencies += pair.dependencies;
    if (pair.machine_a != pair.machine_b) {
      report.violations_before += pair.violations_before;
      report.beyond_noise_before += pair.beyond_noise_before;
    }
    if (!pair.lower_ns && !pair.upper_ns) continue;
    double estimate = 0;
    if (!beyond_noise(pair)) {
      // No evidence of skew: the pair's clocks are taken to agree (its
      // bounds' middle would move them by half the difference of its
      // directions' latencies, an offset no log shows).
      estimate = 0;
    } else if (pair.lower_ns && pair.upper_ns) {
      estimate = (static_cast<double>(*pair.lower_ns) + static_cast<double>(*pair.upper_ns)) / 2;
    } else if (pair.lower_ns) {
      estimate = std::max<double>(0, static_cast<double>(*pair.lower_ns));
    } else {
      estimate = std::min<double>(0, static_cast<double>(*pair.upper_ns));
    }
    edges.emplace_back(pair.machine_a, pair.machine_b, estimate);
  }
  const std::vector<double> offsets = solve_offsets(n, edges);
  for (int m = 0; m < n; ++m) {
    report.machines.push_back(
        {m, machines[static_cast<std::size_t>(m)], std::llround(offsets[m]), 0, {}});
  }
  for (const auto& [key, pair] : pairs) report.pairs.push_back(pair);
  report.violations_after = report.violations_before;
  report.beyond_noise_after = report.beyond_noise_before;
  for (auto& pair : report.pairs) {
    pair.violations_after = pair.violations_before;
    pair.beyond_noise_after = pair.beyond_noise_before;
  }
  report.method = n < 2 ? ClockMethod::single_machine : ClockMethod::consistent;
  return report;
}

void apply_clock_offsets(Run& run, const std::vector<std::int64_t>& offsets) {
  for (Device& device : run.devices) {
    const auto m = static_cast<std::size_t>(device.machine);
    if (m >= offsets.size() || offsets[m] == 0) continue;
    for (Job& job : device.jobs) {
      job.start_ns -= offsets[m];
      job.end_ns -= offsets[m];
    }
    // The machine's log events were stamped by the same clock.
    for (LogEvent& event : device.events) event.time_ns -= offsets[m];
  }
}

ClockReport correct_clocks(Run& run, const StageMap& stages, const ClockOptions& options) {
  const Metrics metrics = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  return correct_clocks(run, find_dependencies(run, metrics.job_step, stages, roles), options);
}

namespace {

ClockReport correct_machine_clocks(Run& run, const Dependencies& deps, const ClockOptions& options);

}  // namespace

std::vector<std::int64_t> machine_first_starts(const Run& run) {
  std::vector<std::int64_t> first(static_cast<std::size_t>(machine_count(run)),
                                  std::numeric_limits<std::int64_t>::max());
  for (const Device& d : run.devices) {
    if (d.jobs.empty()) continue;
    auto& f = first[static_cast<std::size_t>(d.machine)];
    f = std::min(f, d.jobs.front().start_ns);
  }
  return first;
}

void add_clock_pieces(const std::vector<ClockStep>& steps,
                      std::span<const std::int64_t> first_start, ClockReport& report) {
  for (MachineClock& m : report.machines) {
    const std::int64_t first = static_cast<std::size_t>(m.machine) < first_start.size()
                                   ? first_start[static_cast<std::size_t>(m.machine)]
                                   : std::numeric_limits<std::int64_t>::max();
    std::int64_t offset = m.offset_ns;
    for (const ClockStep& step : steps) {
      if (step.machine != m.machine) continue;
      if (m.pieces.empty()) m.pieces.push_back({first, offset});
      offset += step.size_ns;
      m.pieces.push_back({step.at_ns, offset});
    }
  }
}

ClockReport correct_clocks(Run& run, const Dependencies& deps, const ClockOptions& options) {
  ClockReport report = correct_machine_clocks(run, deps, options);
  add_clock_pieces(run.clock_steps, machine_first_starts(run), report);
  return report;
}

std::vector<std::int64_t> negated(std::vector<std::int64_t> offsets) {
  for (std::int64_t& o : offsets) o = -o;
  return offsets;
}

std::int64_t clock_noise_ns(const Run& run, const ClockOptions& options) {
  return std::max(options.noise_ns, run.time_resolution_ns);
}

ClockDecision decide_clock_offsets(const PairClocks& evidence,
                                   const std::vector<std::string>& machines, std::int64_t noise,
                                   const ClockOptions& options) {
  const int n = static_cast<int>(machines.size());
  // Offsets to apply, resolved before any work so a bad name fails fast.
  std::vector<std::int64_t> imposed(n, 0);
  for (const auto& [name, ns] : options.imposed) {
    int found = -1;
    for (int m = 0; m < n && found < 0; ++m) {
      if (machines[static_cast<std::size_t>(m)] == name) found = m;
    }
    if (found < 0) {
      std::string_view digits = name;
      if (digits.starts_with("machine")) digits.remove_prefix(7);
      int value = 0;
      bool ok = !digits.empty() && digits.size() < 9;
      for (const char c : digits) {
        ok &= c >= '0' && c <= '9';
        value = value * 10 + (c - '0');
      }
      if (ok && value < n) found = value;
    }
    if (found < 0) {
      throw std::invalid_argument(fmt::format(
          "{}: no machine '{}' (the run has {} machine{}: machine0..machine{})",
          options.words->name(CallerOption::clock_offset), name, n, n == 1 ? "" : "s", n - 1));
    }
    imposed[found] = ns;
  }

  ClockDecision decision;
  ClockReport& report = decision.report;
  report = estimate_from_pair_clocks(evidence, machines, noise);
  const bool evidence_beyond_noise =
      std::any_of(report.pairs.begin(), report.pairs.end(), beyond_noise);

  std::vector<std::int64_t>& offsets = decision.offsets;
  offsets.assign(static_cast<std::size_t>(n), 0);
  if (!options.fix) {
    report.method = ClockMethod::disabled;
  } else if (!options.imposed.empty()) {
    report.method = ClockMethod::imposed;
    offsets = imposed;
  } else if (n >= 2 && !options.layout_known) {
    report.method = ClockMethod::no_layout;
    // Dependencies of an unknown layout estimate nothing.
    for (MachineClock& m : report.machines) m.estimate_ns = 0;
    report.reason =
        "no layout fits the run: which jobs depend on which across machines is not known";
  } else if (n >= 2 && report.violations_before > 0 && !evidence_beyond_noise) {
    report.reason = fmt::format(
        "{} of the {} dependencies between machines start before their input ended, but no "
        "machine pair has more than 1% of its dependencies violated by more than {}: timing "
        "noise, not skew",
        report.violations_before, report.dependencies, format_duration(noise));
  } else if (n >= 2 && evidence_beyond_noise) {
    report.method = ClockMethod::estimated;
    for (const MachineClock& m : report.machines) offsets[m.machine] = m.estimate_ns;
  }
  decision.to_apply =
      std::any_of(offsets.begin(), offsets.end(), [](std::int64_t o) { return o != 0; });
  if (!decision.to_apply && report.method == ClockMethod::estimated) {
    // Violations, yet no offset (bounds that cannot all hold): nothing to apply.
    report.method = ClockMethod::rejected;
    report.violations_if_estimated = report.violations_before;
    report.reason = "the estimated offsets are 0 for every machine";
  }
  return decision;
}

PairClocks pairs_for_recount(const ClockReport& report) {
  PairClocks pairs;
  for (const MachinePairClock& pair : report.pairs) pairs[{pair.machine_a, pair.machine_b}] = pair;
  for (auto& [key, pair] : pairs) pair.violations_after = pair.beyond_noise_after = 0;
  return pairs;
}

ClockReport finish_clock_decision(ClockDecision&& decision, const PairClocks& after_pairs) {
  ClockReport report = std::move(decision.report);
  const std::vector<std::int64_t>& offsets = decision.offsets;
  std::uint64_t after = 0, beyond_after = 0;
  for (const auto& [key, pair] : after_pairs) {
    if (pair.machine_a != pair.machine_b) {
      after += pair.violations_after;
      beyond_after += pair.beyond_noise_after;
    }
  }
  if (report.method == ClockMethod::estimated &&
      (beyond_after * 10 > report.beyond_noise_before || after >= report.violations_before)) {
    // The estimate explains too little (machines in the wrong order, jobs
    // matched wrongly, clocks that drift): the caller undoes it, keeping the
    // times as read.
    report.method = ClockMethod::rejected;
    report.violations_if_estimated = after;
    // "would leave 157 of the 156" is no sentence: an estimate can add violations.
    const auto change = [](std::uint64_t from, std::uint64_t to) {
      return to <= from ? fmt::format("leave {} of the {}", to, from)
                        : fmt::format("raise from {} to {} the", from, to);
    };
    report.reason = fmt::format(
        "the estimate would {} violations beyond noise (and {} violations in all); an offset "
        "is applied only when it removes at least 90% of them",
        change(report.beyond_noise_before, beyond_after), change(report.violations_before, after));
    return report;
  }
  report.applied = true;
  for (MachineClock& m : report.machines) m.offset_ns = offsets[m.machine];
  report.pairs.clear();
  for (const auto& [key, pair] : after_pairs) report.pairs.push_back(pair);
  report.violations_after = after;
  report.beyond_noise_after = beyond_after;
  return report;
}

namespace {

ClockReport correct_machine_clocks(Run& run, const Dependencies& deps,
                                   const ClockOptions& options) {
  const std::int64_t noise = clock_noise_ns(run, options);
  ClockDecision decision =
      decide_clock_offsets(pair_clocks(run, deps, noise), machine_clock_names(run), noise, options);
  if (!decision.to_apply) return std::move(decision.report);
  const std::vector<std::int64_t> offsets = decision.offsets;
  apply_clock_offsets(run, offsets);
  PairClocks after = pairs_for_recount(decision.report);
  count_violations_after(run, deps, noise, after);
  ClockReport report = finish_clock_decision(std::move(decision), after);
  if (!report.applied) apply_clock_offsets(run, negated(offsets));
  return report;
}

}  // namespace

}  // namespace pipescope
