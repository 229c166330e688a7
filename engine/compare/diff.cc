#include "compare/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <variant>

#include "analysis/job_role.h"
#include "compare/check.h"
#include "compare/figure_format.h"
#include "export/figure_registry.h"
#include "export/json_writer.h"
#include "export/table_rows.h"

namespace pipescope {

namespace {

enum class Unit { count, ratio, ns };

struct Row {
  std::string name;
  std::optional<double> a;
  std::optional<double> b;
  Unit unit = Unit::count;
};

std::string value_text(std::optional<double> v, Unit unit) {
  if (!v) return "n/a";
  switch (unit) {
    case Unit::count:
      return fmt::format("{:.0f}", *v);
    case Unit::ratio:
      return format_percent(*v);
    case Unit::ns:
      return format_duration_ns(*v);
  }
  return "n/a";
}

std::string delta_text(const Row& r) {
  if (!r.a || !r.b) return "n/a";
  const double d = *r.b - *r.a;
  switch (r.unit) {
    case Unit::count:
      return fmt::format("{:+.0f}", d);
    case Unit::ratio:
      return format_points(d);
    case Unit::ns: {
      const std::string rel = *r.a != 0 ? fmt::format(" ({})", format_relative(d / *r.a)) : "";
      return format_signed_duration_ns(d) + rel;
    }
  }
  return "n/a";
}

double median_of(const std::vector<StepFigures>& steps, bool duration) {
  std::vector<double> v;
  for (const StepFigures& s : steps) {
    v.push_back(duration ? static_cast<double>(s.duration_ns) : s.bubble_ratio);
  }
  return spread_of(std::move(v)).median;
}

/// The kernel view's split of one run, n/a where it has none.
std::optional<double> kernel_share(const RunFigures& f, double KernelViewFigures::*share) {
  if (!f.kernel_view) return std::nullopt;
  return (*f.kernel_view).*share;
}

/// The same for a part that may be unknown (n/a then too).
std::optional<double> kernel_share(const RunFigures& f,
                                   std::optional<double> KernelViewFigures::*share) {
  if (!f.kernel_view) return std::nullopt;
  return (*f.kernel_view).*share;
}

/// The registered figures (export/figure_registry.h) either run has, by
/// key (A's order, then B's others), but those whose row says diff leaves
/// them out; n/a on a side without it.
std::vector<Row> registered_rows(const RunFigures& a, const RunFigures& b) {
  const auto value_of = [](const RunFigures& run, const std::string& key) {
    for (const NamedFigure& f : run.figures) {
      if (f.key == key) return std::optional<double>(figure_double(f.value));
    }
    return std::optional<double>();
  };
  std::vector<Row> rows;
  for (const RunFigures* side : {&a, &b}) {
    for (const NamedFigure& f : side->figures) {
      const bool listed =
          std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.name == f.key; });
      const FigureSpec* spec = find_figure(f.key);
      if (listed || (spec != nullptr && !spec->compared)) continue;
      // Unregistered here: an integer counts, a fraction is a ratio.
      const FigureUnit unit = spec != nullptr                           ? spec->unit
                              : std::holds_alternative<double>(f.value) ? FigureUnit::ratio
                                                                        : FigureUnit::count;
      rows.push_back({f.key, value_of(a, f.key), value_of(b, f.key),
                      unit == FigureUnit::ns      ? Unit::ns
                      : unit == FigureUnit::ratio ? Unit::ratio
                                                  : Unit::count});
    }
  }
  return rows;
}

std::vector<Row> metric_rows(const RunFigures& a, const RunFigures& b) {
  const auto d = [](auto v) { return static_cast<double>(v); };
  std::vector<Row> rows = {
      {"jobs", d(a.jobs), d(b.jobs), Unit::count},
      {"devices", d(a.devices.size()), d(b.devices.size()), Unit::count},
      {"steps", d(a.steps.size()), d(b.steps.size()), Unit::count},
      {"bubble ratio (overall)", a.bubble_ratio, b.bubble_ratio, Unit::ratio},
      {"bubble ratio (median step)", median_of(a.steps, false), median_of(b.steps, false),
       Unit::ratio},
      {"step time (median)", median_of(a.steps, true), median_of(b.steps, true), Unit::ns},
      {"total step time", d(a.total_window_ns), d(b.total_window_ns), Unit::ns},
  };
  // PyTorch traces: the kernel view's split of the bubble (NCCL waiting,
  // transferring, idle), for either side that has it.
  if (a.kernel_view || b.kernel_view) {
    rows.push_back({"kernel bubble ratio", kernel_share(a, &KernelViewFigures::bubble_ratio),
                    kernel_share(b, &KernelViewFigures::bubble_ratio), Unit::ratio});
    rows.push_back({"  NCCL wait", kernel_share(a, &KernelViewFigures::wait_share),
                    kernel_share(b, &KernelViewFigures::wait_share), Unit::ratio});
    rows.push_back({"  NCCL transfer", kernel_share(a, &KernelViewFigures::transfer_share),
                    kernel_share(b, &KernelViewFigures::transfer_share), Unit::ratio});
    rows.push_back({"  idle", kernel_share(a, &KernelViewFigures::idle_share),
                    kernel_share(b, &KernelViewFigures::idle_share), Unit::ratio});
  }
  for (Row& row : registered_rows(a, b)) rows.push_back(std::move(row));
  return rows;
}

struct DevicePair {
  int device = 0;
  const DeviceFigures* a = nullptr;
  const DeviceFigures* b = nullptr;
};

std::vector<DevicePair> device_pairs(const RunFigures& a, const RunFigures& b) {
  std::map<int, DevicePair> pairs;
  for (const DeviceFigures& d : a.devices) pairs[d.device].a = &d;
  for (const DeviceFigures& d : b.devices) pairs[d.device].b = &d;
  std::vector<DevicePair> out;
  for (auto& [device, pair] : pairs) {
    pair.device = device;
    out.push_back(pair);
  }
  return out;
}

struct KindFigures {
  std::int64_t jobs = 0;
  std::optional<std::int64_t> total_ns = 0;

  std::optional<double> mean_ns() const {
    if (!total_ns || jobs == 0) return std::nullopt;
    return static_cast<double>(*total_ns) / static_cast<double>(jobs);
  }
};

// Per kind (or per type with by_type): jobs and total duration; the total is
// unknown as soon as one contributing type has none.
std::map<std::string, KindFigures> by_kind(const RunFigures& run, bool by_type) {
  std::map<std::string, KindFigures> out;
  for (const JobTypeFigures& t : run.job_types) {
    KindFigures& k = out[by_type ? t.type : t.kind];
    k.jobs += t.jobs;
    if (k.total_ns && t.total_ns) {
      *k.total_ns += *t.total_ns;
    } else {
      k.total_ns.reset();
    }
  }
  return out;
}

std::vector<Row> kind_rows(const RunFigures& a, const RunFigures& b, bool by_type) {
  const auto ka = by_kind(a, by_type);
  const auto kb = by_kind(b, by_type);
  std::map<std::string, int> names;
  for (const auto& [name, k] : ka) names[name] = 0;
  for (const auto& [name, k] : kb) names[name] = 0;
  std::vector<Row> rows;
  for (const auto& [name, unused] : names) {
    const auto ia = ka.find(name);
    const auto ib = kb.find(name);
    rows.push_back({name, ia == ka.end() ? std::nullopt : ia->second.mean_ns(),
                    ib == kb.end() ? std::nullopt : ib->second.mean_ns(), Unit::ns});
    rows.push_back(
        {name + " jobs",
         ia == ka.end() ? std::optional<double>(0) : static_cast<double>(ia->second.jobs),
         ib == kb.end() ? std::optional<double>(0) : static_cast<double>(ib->second.jobs),
         Unit::count});
  }
  return rows;
}

std::string schedule_text(const std::optional<ScheduleFigures>& s) {
  if (!s) return "not analysed";
  return fmt::format("{} P={} M={} V={} ({})", s->name, s->stages, s->micro_batches, s->chunks,
                     s->exact ? "canonical order" : "order differs from canonical");
}

// What changed between two analysed schedules, one phrase per difference.
std::vector<std::string> schedule_changes(const ScheduleFigures& a, const ScheduleFigures& b) {
  std::vector<std::string> out;
  if (a.name != b.name) out.push_back(fmt::format("schedule {} -> {}", a.name, b.name));
  const auto num = [&](const char* what, int x, int y) {
    if (x != y) out.push_back(fmt::format("{} {} -> {}", what, x, y));
  };
  num("P (stages)", a.stages, b.stages);
  num("M (micro-batches)", a.micro_batches, b.micro_batches);
  num("V (chunks)", a.chunks, b.chunks);
  if (a.exact != b.exact) {
    out.push_back(b.exact ? "order now matches the canonical one"
                          : "order no longer matches the canonical one");
  }
  return out;
}

void table(std::back_insert_iterator<std::string> it, const std::vector<Row>& rows,
           std::string_view first) {
  std::size_t w = first.size();
  for (const Row& r : rows) w = std::max(w, r.name.size());
  fmt::format_to(it, "  {:<{}}  {:>14}  {:>14}  {}\n", first, w, "A", "B", "delta");
  for (const Row& r : rows) {
    fmt::format_to(it, "  {:<{}}  {:>14}  {:>14}  {}\n", r.name, w, value_text(r.a, r.unit),
                   value_text(r.b, r.unit), delta_text(r));
  }
}

// A table of a row per device, folded (export/table_rows.h) unless `listing.all`.
void folded_table(std::back_insert_iterator<std::string> it, const std::vector<Row>& rows,
                  std::string_view first, const RowListing& listing) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> columns(3);
  for (const Row& r : rows) {
    columns[0].push_back(r.a.value_or(kNone));
    columns[1].push_back(r.b.value_or(kNone));
    columns[2].push_back(r.a && r.b ? *r.b - *r.a : kNone);
  }
  const RowSelection shown = select_table_rows(rows.size(), columns, listing.all);
  std::vector<Row> kept;
  for (const std::size_t r : shown.rows) kept.push_back(rows[r]);
  std::size_t w = first.size();
  for (const Row& r : kept) w = std::max(w, r.name.size());
  fmt::format_to(it, "  {:<{}}  {:>14}  {:>14}  {}\n", first, w, "A", "B", "delta");
  bool noted = false;
  for (std::size_t i = 0; i < shown.rows.size(); ++i) {
    if (i > 0 && shown.rows[i] != shown.rows[i - 1] + 1) {
      fmt::format_to(
          it, "  {}\n",
          noted ? std::string("...") : folded_rows_note(shown, "devices", *listing.words));
      noted = true;
    }
    const Row& r = rows[shown.rows[i]];
    fmt::format_to(it, "  {:<{}}  {:>14}  {:>14}  {}\n", r.name, w, value_text(r.a, r.unit),
                   value_text(r.b, r.unit), delta_text(r));
  }
}

void json_value(JsonWriter& w, std::optional<double> v, Unit unit) {
  if (!v) {
    w.null();
  } else if (unit == Unit::ratio) {
    w.value(*v);
  } else if (*v == static_cast<double>(static_cast<std::int64_t>(*v))) {
    w.value(static_cast<std::int64_t>(*v));
  } else {
    w.value(*v);
  }
}

void json_rows(JsonWriter& w, const std::vector<Row>& rows, std::string_view key) {
  w.begin_array();
  for (const Row& r : rows) {
    w.begin_object(true);
    w.field(key, r.name);
    w.key("a");
    json_value(w, r.a, r.unit);
    w.key("b");
    json_value(w, r.b, r.unit);
    w.key("delta");
    if (r.a && r.b) {
      json_value(w, *r.b - *r.a, r.unit);
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
}

void json_schedule(JsonWriter& w, const std::optional<ScheduleFigures>& s) {
  if (!s) {
    w.null();
    return;
  }
  w.begin_object(true);
  w.field("name", s->name);
  w.field("stages", s->stages);
  w.field("micro_batches", s->micro_batches);
  w.field("chunks", s->chunks);
  w.field("exact", s->exact);
  w.end_object();
}

// --- stage by stage, and the largest changes first -----------------------------

/// One stage's compute figures of one run (absent: the run has no such stage
/// or its summary no stage load).
struct StageLoad {
  std::optional<double> forward_ns, backward_ns, weight_ns, compute_per_step_ns;
};

std::map<std::int64_t, StageLoad> stage_loads(const RunFigures& run) {
  std::map<std::int64_t, StageLoad> out;
  if (!run.stages) return out;
  for (const StageFigures& stage : run.stages->list) {
    StageLoad& load = out[stage.stage];
    if (!stage.load) continue;
    load.compute_per_step_ns = static_cast<double>(stage.load->compute_per_step_ns);
    for (const RoleDurationFigures& role : stage.load->jobs) {
      const auto mean = static_cast<double>(role.mean_ns);
      if (role.role == pipeline_role_name(PipelineRole::forward)) load.forward_ns = mean;
      if (role.role == pipeline_role_name(PipelineRole::backward)) load.backward_ns = mean;
      if (role.role == pipeline_role_name(PipelineRole::weight)) load.weight_ns = mean;
    }
  }
  return out;
}

/// Per stage (matched by stage index): the mean forward, backward and weight
/// job and the compute per step.
std::vector<Row> stage_rows(const RunFigures& a, const RunFigures& b) {
  const auto la = stage_loads(a);
  const auto lb = stage_loads(b);
  std::map<std::int64_t, int> stages;
  for (const auto& [s, unused] : la) stages[s] = 0;
  for (const auto& [s, unused] : lb) stages[s] = 0;
  std::vector<Row> rows;
  for (const auto& [s, unused] : stages) {
    const auto ia = la.find(s);
    const auto ib = lb.find(s);
    const auto field = [](const std::map<std::int64_t, StageLoad>& loads,
                          std::map<std::int64_t, StageLoad>::const_iterator it,
                          std::optional<double> StageLoad::*member) {
      return it == loads.end() ? std::nullopt : it->second.*member;
    };
    const std::pair<const char*, std::optional<double> StageLoad::*> members[] = {
        {"forward mean", &StageLoad::forward_ns},
        {"backward mean", &StageLoad::backward_ns},
        {"weight mean", &StageLoad::weight_ns},
        {"compute per step", &StageLoad::compute_per_step_ns}};
    for (const auto& [what, member] : members) {
      const std::optional<double> x = field(la, ia, member);
      const std::optional<double> y = field(lb, ib, member);
      if (!x && !y) continue;
      rows.push_back({fmt::format("stage {} {}", s, what), x, y, Unit::ns});
    }
  }
  return rows;
}

/// Every stage and device figure both runs have, ranked by the size of its
/// change relative to A (utilization: its change in points over A's value),
/// largest first; at most `limit`.
std::vector<Row> largest_changes(const RunFigures& a, const RunFigures& b, std::size_t limit) {
  std::vector<std::pair<double, Row>> ranked;
  const auto consider = [&](const Row& row) {
    if (!row.a || !row.b || *row.a == 0 || *row.a == *row.b) return;
    ranked.emplace_back(std::abs((*row.b - *row.a) / *row.a), row);
  };
  for (const Row& row : stage_rows(a, b)) consider(row);
  for (const DevicePair& p : device_pairs(a, b)) {
    if (p.a == nullptr || p.b == nullptr) continue;
    consider({fmt::format("device {} busy", p.device), static_cast<double>(p.a->busy_ns),
              static_cast<double>(p.b->busy_ns), Unit::ns});
    consider({fmt::format("device {} utilization", p.device), p.a->utilization, p.b->utilization,
              Unit::ratio});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<Row> out;
  for (std::size_t i = 0; i < ranked.size() && i < limit; ++i) out.push_back(ranked[i].second);
  return out;
}

constexpr std::size_t kLargestChanges = 8;

constexpr std::size_t kStepsInFull = 20;
constexpr std::size_t kStepsHead = 10;
constexpr std::size_t kStepsTail = 5;

}  // namespace

std::string format_diff_text(const RunFigures& a, const RunFigures& b, const RowListing& listing) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "pipescope diff\n  A  {} ({})\n  B  {} ({})\n\nMetrics\n", a.source, a.origin,
                 b.source, b.origin);
  table(it, metric_rows(a, b), "metric");

  const std::vector<Row> largest = largest_changes(a, b, kLargestChanges);
  fmt::format_to(it, "\nLargest changes (stages and devices, by relative size)\n");
  if (largest.empty()) {
    fmt::format_to(it, "  none: no stage or device figure of both runs changed\n");
  } else {
    table(it, largest, "figure");
  }
  if (const std::vector<Row> stages = stage_rows(a, b); !stages.empty()) {
    fmt::format_to(it, "\nStages (mean job duration by role, compute per device and step)\n");
    table(it, stages, "stage");
  }

  fmt::format_to(it, "\nDevices (utilization; busy and idle per device below)\n");
  std::vector<Row> util, busy;
  for (const DevicePair& p : device_pairs(a, b)) {
    const auto u = [](const DeviceFigures* d) {
      return d ? std::optional<double>(d->utilization) : std::nullopt;
    };
    const auto bz = [](const DeviceFigures* d) {
      return d ? std::optional<double>(static_cast<double>(d->busy_ns)) : std::nullopt;
    };
    util.push_back({fmt::format("device {}", p.device), u(p.a), u(p.b), Unit::ratio});
    busy.push_back({fmt::format("device {} busy", p.device), bz(p.a), bz(p.b), Unit::ns});
  }
  folded_table(it, util, "device", listing);
  folded_table(it, busy, "device", listing);

  fmt::format_to(it, "\nSteps (matched by position; * = incomplete, not in the totals)\n");
  const std::size_t n = std::max(a.steps.size(), b.steps.size());
  fmt::format_to(it, "  {:>5}  {:>7}  {:>7}  {:>12}  {:>12}  {:>24}  {:>8}  {:>8}  {}\n", "#",
                 "step A", "step B", "duration A", "duration B", "delta", "bubble A", "bubble B",
                 "delta");
  const auto step_row = [&](std::size_t k) {
    const StepFigures* sa = k < a.steps.size() ? &a.steps[k] : nullptr;
    const StepFigures* sb = k < b.steps.size() ? &b.steps[k] : nullptr;
    const auto dur = [](const StepFigures* s) {
      return s ? std::optional<double>(static_cast<double>(s->duration_ns)) : std::nullopt;
    };
    const auto bub = [](const StepFigures* s) {
      return s ? std::optional<double>(s->bubble_ratio) : std::nullopt;
    };
    const Row d{"", dur(sa), dur(sb), Unit::ns};
    const Row r{"", bub(sa), bub(sb), Unit::ratio};
    // An incomplete step (left out of every total) is marked with '*'.
    const auto label = [](const StepFigures* step) {
      return step ? std::to_string(step->step) + (step->complete ? "" : "*") : std::string("-");
    };
    fmt::format_to(it, "  {:>5}  {:>7}  {:>7}  {:>12}  {:>12}  {:>24}  {:>8}  {:>8}  {}\n", k,
                   label(sa), label(sb), value_text(d.a, d.unit), value_text(d.b, d.unit),
                   delta_text(d), value_text(r.a, r.unit), value_text(r.b, r.unit), delta_text(r));
  };
  if (listing.all || n <= kStepsInFull) {
    for (std::size_t k = 0; k < n; ++k) step_row(k);
  } else {
    for (std::size_t k = 0; k < kStepsHead; ++k) step_row(k);
    fmt::format_to(it, "  ... {} steps not shown ({}) ...\n", n - kStepsHead - kStepsTail,
                   listing.words->advice(CallerOption::all_rows));
    for (std::size_t k = n - kStepsTail; k < n; ++k) step_row(k);
  }

  fmt::format_to(it, "\nJob kinds (mean job duration, job count)\n");
  table(it, kind_rows(a, b, false), "kind");
  fmt::format_to(it, "\nJob types (mean job duration, job count)\n");
  table(it, kind_rows(a, b, true), "type");

  fmt::format_to(it, "\nSchedule\n  A  {}\n  B  {}\n", schedule_text(a.schedule),
                 schedule_text(b.schedule));
  if (!a.schedule || !b.schedule) {
    fmt::format_to(it, "  schedule not analysed in {}; no schedule comparison\n",
                   !a.schedule && !b.schedule ? "either run" : (!a.schedule ? "A" : "B"));
  } else {
    const auto changes = schedule_changes(*a.schedule, *b.schedule);
    if (changes.empty()) fmt::format_to(it, "  unchanged\n");
    for (const std::string& c : changes) fmt::format_to(it, "  changed: {}\n", c);
  }
  return out;
}

std::string format_diff_json(const RunFigures& a, const RunFigures& b) {
  fmt::memory_buffer buffer;
  JsonWriter w(buffer, JsonStyle::pretty());
  w.begin_object();
  w.field("schema", "pipescope.diff/1");
  w.key("a");
  w.begin_object(true);
  w.field("source", a.source);
  w.field("origin", a.origin);
  w.end_object();
  w.key("b");
  w.begin_object(true);
  w.field("source", b.source);
  w.field("origin", b.origin);
  w.end_object();
  w.key("metrics");
  json_rows(w, metric_rows(a, b), "metric");
  w.key("largest_changes");
  json_rows(w, largest_changes(a, b, kLargestChanges), "figure");
  w.key("stages");
  json_rows(w, stage_rows(a, b), "figure");

  w.key("devices");
  w.begin_array();
  for (const DevicePair& p : device_pairs(a, b)) {
    w.begin_object(true);
    w.field("device", p.device);
    for (const auto& [key, d] : {std::pair{"a", p.a}, std::pair{"b", p.b}}) {
      w.key(key);
      if (d == nullptr) {
        w.null();
        continue;
      }
      w.begin_object(true);
      w.field("busy_ns", d->busy_ns);
      w.field("idle_ns", d->idle_ns);
      w.field("utilization", d->utilization);
      w.end_object();
    }
    w.key("utilization_delta");
    if (p.a && p.b) {
      w.value(p.b->utilization - p.a->utilization);
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();

  w.key("steps");
  w.begin_array();
  for (std::size_t k = 0; k < std::max(a.steps.size(), b.steps.size()); ++k) {
    w.begin_object(true);
    w.field("index", static_cast<std::uint64_t>(k));
    for (const auto& [key, run] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
      w.key(key);
      if (k >= run->steps.size()) {
        w.null();
        continue;
      }
      const StepFigures& s = run->steps[k];
      w.begin_object(true);
      w.field("step", s.step);
      w.field("segment", s.segment);
      w.field("complete", s.complete);
      w.field("duration_ns", s.duration_ns);
      w.field("bubble_ratio", s.bubble_ratio);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();

  for (const bool by_type : {false, true}) {
    w.key(by_type ? "job_types" : "job_kinds");
    w.begin_array();
    const std::vector<Row> rows = kind_rows(a, b, by_type);
    for (std::size_t i = 0; i + 1 < rows.size(); i += 2) {
      w.begin_object(true);
      w.field(by_type ? "type" : "kind", rows[i].name);
      w.key("jobs_a");
      json_value(w, rows[i + 1].a, Unit::count);
      w.key("jobs_b");
      json_value(w, rows[i + 1].b, Unit::count);
      w.key("mean_ns_a");
      json_value(w, rows[i].a, Unit::ns);
      w.key("mean_ns_b");
      json_value(w, rows[i].b, Unit::ns);
      w.end_object();
    }
    w.end_array();
  }

  w.key("schedule");
  w.begin_object();
  w.key("a");
  json_schedule(w, a.schedule);
  w.key("b");
  json_schedule(w, b.schedule);
  w.key("changes");
  if (a.schedule && b.schedule) {
    w.begin_array(true);
    for (const std::string& c : schedule_changes(*a.schedule, *b.schedule)) w.value(c);
    w.end_array();
  } else {
    w.null();
  }
  w.field("note", a.schedule && b.schedule ? "" : "schedule not analysed");
  w.end_object();
  w.end_object();
  buffer.push_back('\n');
  return std::string(buffer.data(), buffer.size());
}

}  // namespace pipescope
