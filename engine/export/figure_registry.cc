#include "export/figure_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <variant>

#include "numeric/units.h"

namespace pipescope {

namespace {

// ---- the built-in rows ---------------------------------------------------------

/// `jobs`: every job of the run, counted where it is owned.
FigureSpec jobs_row() {
  return figure_row<std::int64_t>(
      {.key = "jobs", .label = "jobs", .unit = FigureUnit::count, .compared = false},
      {.compute =
           [](const FigureInput& in) {
             std::int64_t jobs = 0;
             for (std::size_t d = 0; d < in.run.devices.size(); ++d) {
               const std::size_t n = in.run.devices[d].jobs.size();
               if (in.whole_run) {
                 jobs += static_cast<std::int64_t>(n);
                 continue;
               }
               for (std::size_t i = 0; i < n; ++i) jobs += in.owns(d, i) ? 1 : 0;
             }
             return jobs;
           },
       .combine = [](std::int64_t& earlier, const std::int64_t& later) { earlier += later; },
       .place = [](const std::int64_t& jobs, const Run&,
                   SummaryFigures& into) { into.jobs = jobs; }});
}

/// `job_types`: each type's jobs and their total duration (integer sums, by
/// TypeId: every rank interns the types alike).
FigureSpec job_types_row() {
  return figure_row<std::vector<TypeJobSums>>(
      {.key = "job_types", .label = "jobs by type", .unit = FigureUnit::count, .compared = false},
      {.compute =
           [](const FigureInput& in) {
             std::vector<TypeJobSums> sums(in.run.types.size());
             for (std::size_t d = 0; d < in.run.devices.size(); ++d) {
               const JobVector& jobs = in.run.devices[d].jobs;
               for (std::size_t i = 0; i < jobs.size(); ++i) {
                 if (jobs[i].type >= sums.size() || !in.owns(d, i)) continue;
                 ++sums[jobs[i].type].jobs;
                 sums[jobs[i].type].total_ns += jobs[i].duration_ns();
               }
             }
             return sums;
           },
       .combine =
           [](std::vector<TypeJobSums>& earlier, const std::vector<TypeJobSums>& later) {
             if (earlier.size() != later.size()) throw WireError("job sums of another type table");
             for (std::size_t t = 0; t < later.size(); ++t) {
               earlier[t].jobs += later[t].jobs;
               earlier[t].total_ns += later[t].total_ns;
             }
           },
       .place = [](const std::vector<TypeJobSums>& sums, const Run& run,
                   SummaryFigures& into) { into.job_types = job_type_figures(run.types, sums); }});
}

std::vector<FigureSpec>& table() {
  static std::vector<FigureSpec> rows = {jobs_row(), job_types_row()};
  return rows;
}

}  // namespace

FigureRegistration::FigureRegistration(FigureSpec spec) : key_(spec.key) {
  if (find_figure(key_) != nullptr) {
    throw std::invalid_argument("figure " + key_ + " is registered already");
  }
  table().push_back(std::move(spec));
}

FigureRegistration::~FigureRegistration() {
  auto& rows = table();
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [this](const FigureSpec& f) { return f.key == key_; }),
             rows.end());
}

std::span<const FigureSpec> figure_specs() { return table(); }

const FigureSpec* find_figure(std::string_view key) {
  for (const FigureSpec& spec : table()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

std::vector<FigurePart> figure_parts(const FigureInput& input) {
  std::vector<FigurePart> parts;
  for (const FigureSpec& spec : table()) parts.push_back({spec.key, spec.part(input)});
  return parts;
}

void combine_figure_parts(std::vector<FigurePart>& earlier, const std::vector<FigurePart>& later) {
  if (earlier.empty()) {
    earlier = later;
    return;
  }
  if (earlier.size() != later.size()) throw WireError("parts of other figures");
  for (std::size_t i = 0; i < later.size(); ++i) {
    const FigureSpec* spec = find_figure(later[i].key);
    if (earlier[i].key != later[i].key || spec == nullptr) {
      throw WireError("parts of other figures");
    }
    earlier[i].bytes = spec->combine(earlier[i].bytes, later[i].bytes);
  }
}

std::string encode_figure_parts(const std::vector<FigurePart>& parts) {
  ByteWriter w;
  w.put(static_cast<std::uint64_t>(parts.size()));
  for (const FigurePart& part : parts) {
    w.str(part.key);
    w.str(part.bytes);
  }
  return w.take();
}

std::vector<FigurePart> decode_figure_parts(std::string_view bytes) {
  ByteReader r(bytes);
  std::vector<FigurePart> parts;
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    FigurePart part;
    part.key = r.str();
    part.bytes = r.str();
    parts.push_back(std::move(part));
  }
  if (!r.done()) throw WireError("figure parts longer than expected");
  return parts;
}

void place_figures(const std::vector<FigurePart>& whole, const Run& run, SummaryFigures& into) {
  for (const FigurePart& part : whole) {
    if (const FigureSpec* spec = find_figure(part.key)) spec->place(part.bytes, run, into);
  }
}

std::string figure_text(const FigureNumber& value, FigureUnit unit) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return unit == FigureUnit::ns ? format_duration(*integer) : std::to_string(*integer);
  }
  const double v = std::get<double>(value);
  if (unit == FigureUnit::ns) return format_duration(static_cast<std::int64_t>(std::llround(v)));
  return unit == FigureUnit::ratio ? percent(v) : fmt::format("{}", v);
}

double figure_double(const FigureNumber& value) {
  return std::visit([](auto v) { return static_cast<double>(v); }, value);
}

}  // namespace pipescope
