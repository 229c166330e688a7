#include "compare/summary_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "ingest/discovery.h"

namespace pipescope {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Field access that turns every schema problem into one readable error.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("{}: {}", source_, what));
  }

  element field(object o, std::string_view name, std::string_view where) const {
    element e;
    if (o[name].get(e) != simdjson::SUCCESS) fail(fmt::format("{} has no \"{}\"", where, name));
    return e;
  }
  std::int64_t int64(object o, std::string_view name, std::string_view where) const {
    const element e = field(o, name, where);
    std::int64_t v = 0;
    if (e.get(v) == simdjson::SUCCESS) return v;
    std::uint64_t u = 0;
    if (e.get(u) == simdjson::SUCCESS && u <= INT64_MAX) return static_cast<std::int64_t>(u);
    fail(fmt::format("\"{}\" of {} is not an integer", name, where));
  }
  double number(object o, std::string_view name, std::string_view where) const {
    const element e = field(o, name, where);
    double v = 0;
    if (e.get(v) == simdjson::SUCCESS) return v;
    std::int64_t i = 0;
    if (e.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    fail(fmt::format("\"{}\" of {} is not a number", name, where));
  }
  std::string string(object o, std::string_view name, std::string_view where) const {
    std::string_view v;
    if (field(o, name, where).get(v) != simdjson::SUCCESS) {
      fail(fmt::format("\"{}\" of {} is not a string", name, where));
    }
    return std::string(v);
  }
  array list(object o, std::string_view name, std::string_view where) const {
    array a;
    if (field(o, name, where).get(a) != simdjson::SUCCESS) {
      fail(fmt::format("\"{}\" of {} is not an array", name, where));
    }
    return a;
  }
  object obj(element e, std::string_view where) const {
    object o;
    if (e.get(o) != simdjson::SUCCESS) fail(fmt::format("{} is not an object", where));
    return o;
  }

 private:
  const std::string& source_;
};

std::optional<std::int64_t> optional_int(object o, std::string_view name) {
  std::int64_t v = 0;
  if (o[name].get(v) == simdjson::SUCCESS) return v;
  return std::nullopt;
}

// "schedule" is written by newer analysers; accept the detection's field names
// and the short P/M/V letters.
std::optional<ScheduleFigures> read_schedule(object root) {
  object s;
  if (root["schedule"].get(s) != simdjson::SUCCESS) return std::nullopt;
  ScheduleFigures f;
  std::string_view name;
  if (s["name"].get(name) == simdjson::SUCCESS || s["schedule"].get(name) == simdjson::SUCCESS ||
      s["kind"].get(name) == simdjson::SUCCESS) {
    f.name = std::string(name);
  } else {
    f.name = "unknown";
  }
  f.stages = optional_int(s, "stages");
  if (!f.stages) f.stages = optional_int(s, "P");
  f.micro_batches = optional_int(s, "micro_batches");
  if (!f.micro_batches) f.micro_batches = optional_int(s, "M");
  f.chunks = optional_int(s, "chunks");
  if (!f.chunks) f.chunks = optional_int(s, "V");
  bool exact = false;
  if (s["exact"].get(exact) == simdjson::SUCCESS) f.exact = exact;
  return f;
}

}  // namespace

RunFigures parse_summary_json(std::string_view json, const std::string& source) {
  Reader r(source);
  simdjson::dom::parser parser;
  element root_element;
  const simdjson::padded_string padded(json);
  if (auto error = parser.parse(padded).get(root_element)) {
    r.fail(fmt::format("not valid JSON ({})", simdjson::error_message(error)));
  }
  object root;
  if (root_element.get(root) != simdjson::SUCCESS)
    r.fail("not a pipescope summary (not a JSON object)");
  std::string_view schema;
  if (root["schema"].get(schema) != simdjson::SUCCESS) {
    r.fail("not a pipescope summary (no \"schema\" field)");
  }
  // Same major version: "pipescope.summary/1" or "pipescope.summary/1.N".
  const bool same_major =
      schema == kSummarySchema || (schema.size() > kSummarySchema.size() &&
                                   schema.substr(0, kSummarySchema.size()) == kSummarySchema &&
                                   schema[kSummarySchema.size()] == '.');
  if (!same_major) {
    r.fail(fmt::format("summary schema '{}' is not supported (this pipescope reads {})", schema,
                       kSummarySchema));
  }

  RunFigures f;
  f.source = source;
  f.origin = "summary";
  f.jobs = r.int64(root, "jobs", "the summary");
  f.first_step = r.int64(root, "first_step", "the summary");
  f.bubble_ratio = r.number(root, "bubble_ratio", "the summary");
  f.total_window_ns = r.int64(root, "total_window_ns", "the summary");

  for (element e : r.list(root, "devices", "the summary")) {
    const object d = r.obj(e, "a devices[] entry");
    DeviceFigures df;
    df.device = static_cast<int>(r.int64(d, "device", "a devices[] entry"));
    df.machine = static_cast<int>(r.int64(d, "machine", "a devices[] entry"));
    std::string_view name;
    if (d["machine_name"].get(name) == simdjson::SUCCESS) df.machine_name = std::string(name);
    df.rank = static_cast<int>(r.int64(d, "rank", "a devices[] entry"));
    df.jobs = r.int64(d, "jobs", "a devices[] entry");
    df.busy_ns = r.int64(d, "busy_ns", "a devices[] entry");
    df.idle_ns = r.int64(d, "idle_ns", "a devices[] entry");
    df.utilization = r.number(d, "utilization", "a devices[] entry");
    f.devices.push_back(std::move(df));
  }

  for (element e : r.list(root, "steps", "the summary")) {
    const object s = r.obj(e, "a steps[] entry");
    StepFigures sf;
    sf.step = r.int64(s, "step", "a steps[] entry");
    sf.start_ns = r.int64(s, "start_ns", "a steps[] entry");
    sf.end_ns = r.int64(s, "end_ns", "a steps[] entry");
    sf.duration_ns = r.int64(s, "duration_ns", "a steps[] entry");
    sf.bubble_ratio = r.number(s, "bubble_ratio", "a steps[] entry");
    for (element de : r.list(s, "devices", "a steps[] entry")) {
      const object d = r.obj(de, "a steps[].devices[] entry");
      sf.devices.push_back({static_cast<int>(r.int64(d, "device", "a steps[].devices[] entry")),
                            r.int64(d, "busy_ns", "a steps[].devices[] entry"),
                            r.int64(d, "idle_ns", "a steps[].devices[] entry")});
    }
    f.steps.push_back(std::move(sf));
  }

  array types;
  if (root["job_types"].get(types) == simdjson::SUCCESS) {
    for (element e : types) {
      const object t = r.obj(e, "a job_types[] entry");
      JobTypeFigures tf;
      tf.type = r.string(t, "type", "a job_types[] entry");
      tf.kind = r.string(t, "kind", "a job_types[] entry");
      tf.jobs = r.int64(t, "jobs", "a job_types[] entry");
      tf.total_ns = optional_int(t, "total_ns");
      if (!tf.total_ns) {
        if (auto mean = optional_int(t, "mean_ns")) tf.total_ns = *mean * tf.jobs;
      }
      f.job_types.push_back(std::move(tf));
    }
  }
  f.schedule = read_schedule(root);
  return f;
}

RunFigures read_summary_json(const std::string& path) {
  simdjson::padded_string text;
  if (auto error = simdjson::padded_string::load(path).get(text)) {
    throw InputError(
        fmt::format("{}: cannot read summary ({})", path, simdjson::error_message(error)));
  }
  return parse_summary_json(std::string_view(text), path);
}

}  // namespace pipescope
