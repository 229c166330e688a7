#include "ingest/torch_trace_reader.h"

#include <fmt/core.h>
#include <simdjson.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include "ingest/ingest.h"
#include "ingest/trace_event_tokenizer.h"
#include "model/errors.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

constexpr std::size_t kReadBytes = std::size_t{4} << 20;
constexpr std::string_view kPipelinePrefix = "PP:";
constexpr std::string_view kStepPrefix = "ProfilerStep#";

// ---------------------------------------------------------------- numbers

/// Microseconds as JSON writes them ("1712195495984501.2", "12", "-3.5") to
/// integer ns, exactly: the fraction's first three digits are ns, the rest
/// rounds half up. False for anything else (exponents, overflow).
bool parse_us(std::string_view text, std::int64_t& ns) {
  bool negative = false;
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
  }
  const std::size_t whole_begin = i;
  std::int64_t whole = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > (std::numeric_limits<std::int64_t>::max() / 1000 - 9) / 10) return false;
    whole = whole * 10 + (text[i] - '0');
    ++i;
  }
  if (i == whole_begin) return false;
  std::int64_t fraction = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t begin = i;
    int digits = 0;
    bool round_up = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (digits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
      } else if (digits == 3) {
        round_up = text[i] >= '5';
      }
      ++digits;
      ++i;
    }
    if (i == begin) return false;
    for (; digits < 3; ++digits) fraction *= 10;
    fraction += round_up ? 1 : 0;
  }
  if (i != text.size()) return false;
  ns = whole * 1000 + fraction;
  if (negative) ns = -ns;
  return true;
}

bool parse_int(std::string_view text, std::int64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

// ---------------------------------------------------------------- records

struct Annotation {
  std::string name;
  std::int64_t start = 0;  // ns after the base
  std::int64_t end = 0;
  std::int64_t external_id = -1;
  std::uint64_t ordinal = 0;  // 1-based event index
  std::uint64_t offset = 0;   // byte offset
  // The kernels launched from inside the span (CPU annotations only).
  std::int64_t kernel_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t kernel_end = std::numeric_limits<std::int64_t>::min();
};

struct KernelSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

struct StepSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t step = 0;
};

enum class EventClass { none, cpu_annotation, gpu_annotation, kernel, launch };

EventClass class_of(std::string_view cat) {
  if (cat == "user_annotation") return EventClass::cpu_annotation;
  if (cat == "gpu_user_annotation") return EventClass::gpu_annotation;
  if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") return EventClass::kernel;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return EventClass::launch;
  return EventClass::none;
}

/// The value of an event's "cat" key found without parsing the event, when
/// it is a plain string; nullopt when that is not certain (the event is then
/// parsed whole). A JSON string cannot hold an unescaped quote, so `"cat"`
/// followed by a colon is the key.
std::optional<std::string_view> quick_category(std::string_view event) {
  // By hand rather than string_view::find: "cat" is near the start of
  // nearly every event, where a library search's set-up costs more than
  // the search.
  const auto find_key = [&event](std::size_t from) {
    for (std::size_t j = from; j + 5 <= event.size(); ++j) {
      if (event[j] == '"' && event[j + 4] == '"' && event[j + 1] == 'c' && event[j + 2] == 'a' &&
          event[j + 3] == 't') {
        return j;
      }
    }
    return std::string_view::npos;
  };
  std::size_t pos = 0;
  for (;;) {
    const std::size_t at = find_key(pos);
    if (at == std::string_view::npos) return std::string_view();  // no category: none of ours
    std::size_t j = at + 5;
    while (j < event.size() &&
           (event[j] == ' ' || event[j] == '\n' || event[j] == '\t' || event[j] == '\r')) {
      ++j;
    }
    if (j >= event.size() || event[j] != ':') {
      pos = at + 5;
      continue;
    }
    ++j;
    while (j < event.size() &&
           (event[j] == ' ' || event[j] == '\n' || event[j] == '\t' || event[j] == '\r')) {
      ++j;
    }
    if (j >= event.size() || event[j] != '"') return std::nullopt;
    const std::size_t close = event.find('"', j + 1);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view value = event.substr(j + 1, close - j - 1);
    if (value.find('\\') != std::string_view::npos) return std::nullopt;
    return value;
  }
}

/// Whether a runtime or driver call starts GPU work: cudaLaunchKernel,
/// cuLaunchKernel, cudaGraphLaunch, hipLaunchKernel, cudaMemcpyAsync,
/// hipMemcpyWithStream, cudaMemsetAsync, ...
bool launches_gpu_work(std::string_view name) {
  return name.find("Launch") != std::string_view::npos ||
         name.find("Memcpy") != std::string_view::npos ||
         name.find("Memset") != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t' || s.back() == ',')) {
    s.remove_suffix(1);
  }
  return s;
}

// ---------------------------------------------------------------- actions

struct OpName {
  std::string_view label;
  std::string_view type;
  bool micro_batch;
};

// Longest first, so that SEND_F is not taken for an F.
constexpr OpName kOps[] = {
    {"REDUCE_GRAD", "reduce_grad", false},
    {"UNSHARD", "unshard", false},
    {"RESHARD", "reshard", false},
    {"SEND_F", "send_forward", true},
    {"RECV_F", "recv_forward", true},
    {"SEND_B", "send_backward", true},
    {"RECV_B", "recv_backward", true},
    {"F", "forward", true},
    {"B", "backward", true},
    {"I", "backward_b", true},
    {"W", "backward_w", true},
};

std::optional<TraceAction> parse_one_action(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 9) return std::nullopt;
  TraceAction action;
  parse_int(text.substr(0, i), action.stage);
  const std::string_view rest = text.substr(i);
  for (const OpName& op : kOps) {
    if (!rest.starts_with(op.label)) continue;
    const std::string_view digits = rest.substr(op.label.size());
    action.type = op.type;
    if (!op.micro_batch) {
      if (!digits.empty()) return std::nullopt;
      return action;
    }
    if (digits.size() > 9 || !parse_int(digits, action.micro_batch)) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- patterns

/// std::regex has no named groups: `(?P<name>` and `(?<name>` become plain
/// groups and their numbers are remembered.
std::string strip_named_groups(const std::string& pattern, std::map<std::string, int>& groups) {
  std::string out;
  int group = 0;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      out += c;
      out += pattern[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      continue;
    }
    if (c == '(') {
      const std::string_view rest(pattern.data() + i + 1, pattern.size() - i - 1);
      std::size_t name_at = 0;
      if (rest.starts_with("?P<")) name_at = 3;
      if (rest.starts_with("?<") && !rest.starts_with("?<=") && !rest.starts_with("?<!")) {
        name_at = 2;
      }
      if (name_at > 0) {
        const std::size_t close = rest.find('>', name_at);
        if (close == std::string_view::npos) throw std::invalid_argument("unclosed group name");
        const std::string name(rest.substr(name_at, close - name_at));
        ++group;
        if (!groups.emplace(name, group).second) {
          throw std::invalid_argument(fmt::format("group '{}' is named twice", name));
        }
        out += '(';
        i += close + 1;
        continue;
      }
      if (!rest.starts_with("?")) ++group;
    }
    out += c;
  }
  return out;
}

constexpr std::string_view kJobTypes[] = {
    "forward",       "backward",      "backward_b", "backward_w", "send_forward", "recv_forward",
    "send_backward", "recv_backward", "optimizer",  "unshard",    "reshard",      "reduce_grad",
};

bool is_job_type(std::string_view type) {
  return std::find(std::begin(kJobTypes), std::end(kJobTypes), type) != std::end(kJobTypes);
}

}  // namespace

std::vector<TraceAction> parse_pipeline_action(std::string_view label) {
  std::vector<TraceAction> actions;
  if (label.starts_with("(")) {
    const std::size_t close = label.find(')');
    if (close == std::string_view::npos || label.substr(close + 1) != "OVERLAP_F_B") return {};
    std::string_view inner = label.substr(1, close - 1);
    while (!inner.empty()) {
      const std::size_t semi = std::min(inner.find(';'), inner.size());
      const auto action = parse_one_action(inner.substr(0, semi));
      if (!action) return {};
      actions.push_back(*action);
      inner.remove_prefix(std::min(semi + 1, inner.size()));
    }
    if (actions.size() != 2) return {};
    return actions;
  }
  if (const auto action = parse_one_action(label)) actions.push_back(*action);
  return actions;
}

struct JobPattern::Impl {
  std::regex regex;
  int op = 0, stage = 0, chunk = 0;
  std::map<std::string, std::string, std::less<>> kinds;
};

JobPattern::JobPattern(const std::string& pattern, const std::string& kinds) : impl_(new Impl) {
  try {
    std::map<std::string, int> groups;
    const std::string plain = strip_named_groups(pattern, groups);
    if (!groups.contains("op")) {
      throw std::invalid_argument("it has no named group 'op' ((?P<op>...))");
    }
    for (const auto& [name, number] : groups) {
      if (name != "op" && name != "mb" && name != "stage" && name != "chunk") {
        throw std::invalid_argument(
            fmt::format("unknown group '{}' (the groups are op, mb, stage and chunk)", name));
      }
    }
    try {
      impl_->regex = std::regex(plain, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument(e.what());
    }
    impl_->op = groups["op"];
    mb_group_ = groups.contains("mb") ? groups["mb"] : 0;
    impl_->stage = groups.contains("stage") ? groups["stage"] : 0;
    impl_->chunk = groups.contains("chunk") ? groups["chunk"] : 0;
    std::string_view text = kinds;
    while (!text.empty()) {
      const std::size_t comma = std::min(text.find(','), text.size());
      const std::string_view item = text.substr(0, comma);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0 || !is_job_type(item.substr(eq + 1))) {
        throw std::invalid_argument(fmt::format(
            "job kind '{}' is not OP=TYPE with TYPE one of forward, backward, backward_b, "
            "backward_w, send_forward, recv_forward, send_backward, recv_backward, optimizer",
            item));
      }
      impl_->kinds[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
      text.remove_prefix(std::min(comma + 1, text.size()));
    }
  } catch (...) {
    delete impl_;
    throw;
  }
}

JobPattern::~JobPattern() { delete impl_; }
JobPattern::JobPattern(JobPattern&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)), mb_group_(other.mb_group_) {}

std::optional<TraceAction> JobPattern::match(std::string_view name) const {
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(name.begin(), name.end(), m, impl_->regex)) return std::nullopt;
  const std::string op = m[impl_->op].str();
  TraceAction action;
  if (const auto it = impl_->kinds.find(op); it != impl_->kinds.end()) {
    action.type = it->second;
  } else if (is_job_type(op)) {
    action.type = op;
  } else {
    return std::nullopt;
  }
  auto number = [&](int group, std::int64_t& out) {
    if (group == 0 || !m[group].matched) return true;
    const std::string text = m[group].str();
    return text.size() <= 9 && parse_int(text, out);
  };
  if (!number(mb_group_, action.micro_batch) || !number(impl_->stage, action.stage) ||
      !number(impl_->chunk, action.chunk)) {
    return std::nullopt;
  }
  return action;
}

bool torch_trace_name(std::string_view name) {
  return name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz");
}

bool trace_json_content(std::string_view bytes) {
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < bytes.size() &&
           (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t')) {
      ++i;
    }
  };
  skip_space();
  if (i >= bytes.size() || bytes[i] != '{') return false;
  ++i;
  skip_space();
  const std::string_view rest = bytes.substr(i);
  for (const std::string_view key :
       {"\"schemaVersion\"", "\"traceEvents\"", "\"deviceProperties\"", "\"distributedInfo\""}) {
    if (rest.starts_with(key)) return true;
  }
  return false;
}

namespace {

/// Feeds the head of `path` to the tokenizer until `stop` says so (or the
/// file ends, or cannot be read: the head is then simply not found).
void read_head(const std::string& path, TraceEventTokenizer& tokenizer,
               const std::function<bool()>& stop) {
  try {
    const std::unique_ptr<ByteStream> stream = open_byte_stream(path);
    // Only the head before the events is wanted: a small buffer, zeroed fast.
    constexpr std::size_t kHeadReadBytes = std::size_t{256} << 10;
    std::vector<char> buffer(kHeadReadBytes + TraceEventTokenizer::kPadding);
    for (;;) {
      const std::size_t n = stream->read(buffer.data(), kHeadReadBytes);
      if (n == 0) return;
      std::fill_n(buffer.data() + n, TraceEventTokenizer::kPadding, ' ');
      tokenizer.feed(buffer.data(), n);
      if (!tokenizer.error().empty() || stop()) return;
    }
  } catch (const std::system_error&) {
    // Unreadable: the reader reports it when it reads the file.
  }
}

}  // namespace

std::optional<int> torch_trace_rank(const std::string& path) {
  std::optional<int> rank;
  TraceEventTokenizer tokenizer(
      {"distributedInfo"}, [](std::string_view, std::uint64_t) {},
      [&](std::string_view, std::string_view value) {
        simdjson::padded_string json(value);
        simdjson::dom::parser parser;
        simdjson::dom::element root;
        std::int64_t r = 0;
        if (parser.parse(json).get(root) == simdjson::SUCCESS &&
            root["rank"].get_int64().get(r) == simdjson::SUCCESS && r >= 0 && r < (1 << 30)) {
          rank = static_cast<int>(r);
        }
      });
  read_head(path, tokenizer, [&] { return rank.has_value() || tokenizer.in_events(); });
  return rank;
}

namespace {

// ---------------------------------------------------------------- events

/// What one event holds for the reader: found by parse_event on any thread,
/// applied by the reader in file order.
struct ParsedEvent {
  EventClass kind = EventClass::none;
  std::int64_t start = 0;  // ns after the base
  std::int64_t end = 0;
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  std::optional<std::int64_t> step;  // a ProfilerStep#N span
  std::uint64_t offset = 0;          // byte offset
  std::uint64_t ordinal = 0;         // 1-based event index
  std::size_t index = 0;             // place among its batch's events
  std::string name;                  // annotations only
  std::string malformed;             // non-empty: counted malformed, with this message
};

/// Which events a pass keeps.
struct EventFilter {
  bool kernels_only = false;  // the second pass: kernels and the calls that launched them
  const JobPattern* pattern = nullptr;
};

bool wanted_name(std::string_view name, const JobPattern* pattern) {
  if (name.starts_with(kStepPrefix)) return true;
  if (pattern) return pattern->match(name).has_value();
  return name.starts_with(kPipelinePrefix);
}

/// Parses one event alone (simdjson On-Demand, in place: the view has
/// TraceEventTokenizer::kPadding readable bytes after it). Nothing for the
/// events no pass keeps: CPU ops, flows, annotations that name no job.
std::optional<ParsedEvent> parse_event(std::string_view event, std::uint64_t offset,
                                       std::uint64_t ordinal, simdjson::ondemand::parser& parser,
                                       const EventFilter& filter) {
  // Most events are CPU ops and flows: their category says so unparsed.
  if (const auto cat = quick_category(event); cat) {
    const EventClass quick = class_of(*cat);
    if (quick == EventClass::none) return std::nullopt;
    if (filter.kernels_only && quick != EventClass::kernel && quick != EventClass::launch) {
      return std::nullopt;
    }
  }
  ParsedEvent out;
  out.offset = offset;
  out.ordinal = ordinal;
  auto malformed = [&](std::string message) {
    out.kind = EventClass::none;
    out.malformed = std::move(message);
    return std::optional<ParsedEvent>(std::move(out));
  };
  simdjson::ondemand::document doc;
  if (parser.iterate(event.data(), event.size(), event.size() + TraceEventTokenizer::kPadding)
          .get(doc) != simdjson::SUCCESS) {
    return malformed("an event that is not JSON; skipped");
  }
  simdjson::ondemand::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return malformed("an event that is not a JSON object; skipped");
  }
  std::string_view ph, cat, ts, dur;
  bool has_name = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return malformed("an event that is not valid JSON; skipped");
    }
    simdjson::ondemand::value value;
    if (field.value().get(value) != simdjson::SUCCESS) {
      return malformed("an event that is not valid JSON; skipped");
    }
    if (key == "ph") {
      if (value.get_string().get(ph) != simdjson::SUCCESS) ph = {};
    } else if (key == "cat") {
      if (value.get_string().get(cat) != simdjson::SUCCESS) cat = {};
    } else if (key == "name") {
      std::string_view n;
      if (value.get_string().get(n) == simdjson::SUCCESS) {
        out.name.assign(n);
        has_name = true;
      }
    } else if (key == "ts") {
      ts = trim(value.raw_json_token());
    } else if (key == "dur") {
      dur = trim(value.raw_json_token());
    } else if (key == "args") {
      simdjson::ondemand::object args;
      if (value.get_object().get(args) != simdjson::SUCCESS) continue;
      for (auto arg : args) {
        std::string_view arg_key;
        if (arg.unescaped_key().get(arg_key) != simdjson::SUCCESS) {
          return malformed("an event that is not valid JSON; skipped");
        }
        if (arg_key == "correlation") {
          if (arg.value().get_int64().get(out.correlation) != simdjson::SUCCESS) {
            out.correlation = -1;
          }
        } else if (arg_key == "External id") {
          if (arg.value().get_int64().get(out.external_id) != simdjson::SUCCESS) {
            out.external_id = -1;
          }
        }
      }
    }
  }
  if (!has_name) out.name.clear();
  const std::string_view name = out.name;
  const EventClass kind = class_of(cat);
  if (kind == EventClass::none || ph != "X") return std::nullopt;
  if (filter.kernels_only && kind != EventClass::kernel && kind != EventClass::launch) {
    return std::nullopt;
  }
  std::int64_t start = 0, length = 0;
  if (!parse_us(ts, start) || (!dur.empty() && !parse_us(dur, length)) || length < 0) {
    return malformed(fmt::format("event '{}' has a time that is not decimal microseconds "
                                 "(ts {}, dur {}); skipped",
                                 name.substr(0, 60), ts.substr(0, 30), dur.substr(0, 30)));
  }
  out.kind = kind;
  out.start = start;
  out.end = start + length;
  switch (kind) {
    case EventClass::cpu_annotation:
    case EventClass::gpu_annotation:
      if (!has_name || !wanted_name(name, filter.pattern)) return std::nullopt;
      if (name.starts_with(kStepPrefix)) {
        if (kind == EventClass::gpu_annotation) return std::nullopt;
        std::int64_t step = 0;
        if (!parse_int(name.substr(kStepPrefix.size()), step)) return std::nullopt;
        out.step = step;
      }
      return out;
    case EventClass::kernel:
      if (out.correlation < 0) return std::nullopt;
      out.name.clear();
      return out;
    case EventClass::launch:
      // Only calls that start GPU work (kernel launches, graph launches,
      // copies, sets): a synchronize or an event record never gets a
      // kernel, and would wait for one for ever.
      if (out.correlation < 0 || !launches_gpu_work(name)) return std::nullopt;
      out.name.clear();
      return out;
    case EventClass::none:
      break;
  }
  return std::nullopt;
}

/// Chunks the tokenizer cuts at once, at most: bounds memory at this many
/// chunks however large the file.
constexpr std::size_t kBatchesInFlight = 4;

/// One chunk of the file and the events that end in it: events wholly in
/// the chunk are views into `buffer`; one that began in an earlier chunk is
/// copied (with its padding) into `carried`.
struct EventBatch {
  struct Event {
    bool carried = false;
    std::size_t begin = 0;
    std::size_t size = 0;
    std::uint64_t offset = 0;
    std::uint64_t ordinal = 0;
  };
  /// A top-level value found before event `before` of the batch.
  struct Value {
    std::size_t before = 0;
    std::string text;
  };

  std::vector<char> buffer;  // chunk bytes + kPadding, sized by BatchPool::take
  std::size_t size = 0;
  std::string carried;
  std::vector<Event> events;
  std::vector<Value> values;
  std::vector<ParsedEvent> parsed;  // the kept events, in order

  void add(std::string_view event, std::uint64_t offset, std::uint64_t ordinal) {
    const char* data = buffer.data();
    if (event.data() >= data && event.data() + event.size() <= data + size) {
      events.push_back({false, static_cast<std::size_t>(event.data() - data), event.size(), offset,
                        ordinal});
      return;
    }
    events.push_back({true, carried.size(), event.size(), offset, ordinal});
    carried.append(event);
    carried.append(TraceEventTokenizer::kPadding, ' ');
  }

  std::string_view view(std::size_t i) const {
    const Event& e = events[i];
    return {(e.carried ? carried.data() : buffer.data()) + e.begin, e.size};
  }

  void clear() {
    size = 0;
    carried.clear();
    events.clear();
    values.clear();
    parsed.clear();
  }
};

/// Batches kept for reuse, so that a file's chunks reuse the same few
/// buffers instead of faulting in fresh pages for every chunk.
class BatchPool {
 public:
  /// A batch whose buffer holds `chunk` bytes (and the padding).
  EventBatch* take(std::size_t chunk) {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      all_.push_back(std::make_unique<EventBatch>());
      all_.back()->buffer.resize(chunk + TraceEventTokenizer::kPadding);
      return all_.back().get();
    }
    EventBatch* batch = free_.back();
    free_.pop_back();
    return batch;
  }
  void give_back(EventBatch* batch) {
    batch->clear();
    std::lock_guard lock(mutex_);
    free_.push_back(batch);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<EventBatch>> all_;
  std::vector<EventBatch*> free_;
};

class TraceReader {
 public:
  TraceReader(const InputFile& input, const IngestOptions& options)
      : input_(input), options_(options), out_(empty_result_for(input)) {
    if (!options.job_pattern.empty()) pattern_.emplace(options.job_pattern, options.job_kinds);
  }

  FileResult read() {
    TraceEventTokenizer tokenizer({"baseTimeNanoseconds"}, {});
    bool unreadable = false;
    const std::string stream_error = read_events(tokenizer, unreadable);
    if (unreadable) {
      out_.stats.unreadable = true;
      out_.stats.error = stream_error;
      note(0, stream_error);
    } else if (!stream_error.empty()) {
      out_.stats.error = stream_error;
      note(0, fmt::format("{}; every complete event before it was read", stream_error));
    } else {
      tokenizer.finish();
      if (!tokenizer.error().empty()) {
        out_.stats.error =
            fmt::format("byte offset {}: {}", tokenizer.error_offset(), tokenizer.error());
        note(0, out_.stats.error);
      }
    }
    out_.stats.bytes = tokenizer.bytes();
    out_.stats.lines = tokenizer.events();
    out_.stats.oversized = tokenizer.oversized();
    if (late_annotation_ && !unreadable) second_pass();
    assemble();
    return std::move(out_);
  }

 private:
  void note(std::uint64_t offset, std::string message) {
    if (out_.diagnostics.size() >= options_.diagnostics_per_file) return;
    out_.diagnostics.push_back(
        {input_.path, 0,
         offset == 0 ? std::move(message) : fmt::format("byte offset {}: {}", offset, message)});
  }

  void malformed(std::uint64_t offset, std::string message) {
    if (second_pass_) return;  // counted in the first
    ++out_.stats.malformed;
    note(offset, std::move(message));
  }

  void on_base_time(std::string_view value) {
    std::int64_t base = 0;
    // Up to year 2096: a base and a time after it never overflow.
    if (parse_int(trim(value), base) && base >= 0 && base <= 4'000'000'000'000'000'000) {
      base_ns_ = base;
    } else {
      note(0, fmt::format("baseTimeNanoseconds '{}' is not an integer in 0..4e18; times "
                          "are taken as absolute microseconds",
                          value.substr(0, 40)));
    }
  }

  /// Reads the file through `tokenizer` in a oneTBB pipeline: the tokenizer
  /// cuts chunks into events on one thread (it must see the bytes in order),
  /// the events of several chunks are parsed side by side (parse_event), and
  /// what they hold is applied to the reader in file order (apply), so the
  /// result is the one a single thread would get. Returns the stream's error
  /// (compressed data, I/O), if any; `unreadable` when the file could not be
  /// opened or read.
  std::string read_events(TraceEventTokenizer& tokenizer, bool& unreadable) {
    std::unique_ptr<ByteStream> stream;
    try {
      stream = open_byte_stream(input_.path);
    } catch (const std::system_error& e) {
      unreadable = true;
      return e.what();
    }
    std::string read_error;
    EventBatch* filling = nullptr;  // the batch the tokenizer's callbacks write to
    tokenizer.set_on_event([&](std::string_view event, std::uint64_t offset) {
      filling->add(event, offset, tokenizer.events());
    });
    tokenizer.set_on_value([&](std::string_view, std::string_view value) {
      filling->values.push_back({filling->events.size(), std::string(value)});
    });
    const EventFilter filter{second_pass_, pattern_ ? &*pattern_ : nullptr};
    // Chunks no larger than the file (most traces of a small run are far
    // below 4 MiB): the buffers are zeroed when made, page by page.
    const std::size_t chunk = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::min<std::uint64_t>(input_.size_bytes, kReadBytes)) + 1,
        std::size_t{64} << 10, kReadBytes);
    tbb::enumerable_thread_specific<simdjson::ondemand::parser> parsers;
    bool stop = false;
    tbb::parallel_pipeline(
        kBatchesInFlight,
        tbb::make_filter<void, EventBatch*>(
            tbb::filter_mode::serial_in_order,
            [&](tbb::flow_control& fc) -> EventBatch* {
              if (stop) {
                fc.stop();
                return nullptr;
              }
              EventBatch* batch = batches_.take(chunk);
              try {
                const std::size_t n = stream->read(batch->buffer.data(), chunk);
                if (n == 0) {
                  batches_.give_back(batch);
                  fc.stop();
                  return nullptr;
                }
                std::fill_n(batch->buffer.data() + n, TraceEventTokenizer::kPadding, ' ');
                batch->size = n;
                filling = batch;
                tokenizer.feed(batch->buffer.data(), n);
                filling = nullptr;
                stop = !tokenizer.error().empty();
              } catch (const std::system_error& e) {
                unreadable = true;
                read_error = e.what();
                stop = true;
              }
              return batch;
            }) &
            tbb::make_filter<EventBatch*, EventBatch*>(
                tbb::filter_mode::parallel,
                [&](EventBatch* batch) {
                  simdjson::ondemand::parser& parser = parsers.local();
                  for (std::size_t i = 0; i < batch->events.size(); ++i) {
                    auto parsed = parse_event(batch->view(i), batch->events[i].offset,
                                              batch->events[i].ordinal, parser, filter);
                    if (!parsed) continue;
                    parsed->index = i;
                    batch->parsed.push_back(std::move(*parsed));
                  }
                  return batch;
                }) &
            tbb::make_filter<EventBatch*, void>(tbb::filter_mode::serial_in_order,
                                                [&](EventBatch* batch) {
                                                  apply(*batch);
                                                  batches_.give_back(batch);
                                                }));
    tokenizer.set_on_event({});
    tokenizer.set_on_value({});
    if (unreadable) return read_error;
    return stream->error();
  }

  /// Applies one batch's parsed events (and the top-level values found
  /// among them) in file order.
  void apply(EventBatch& batch) {
    std::size_t value = 0;
    for (ParsedEvent& e : batch.parsed) {
      for (; value < batch.values.size() && batch.values[value].before <= e.index; ++value) {
        on_base_time(batch.values[value].text);
      }
      apply(e);
    }
    for (; value < batch.values.size(); ++value) on_base_time(batch.values[value].text);
  }

  void apply(ParsedEvent& e) {
    if (!e.malformed.empty()) {
      malformed(e.offset, std::move(e.malformed));
      return;
    }
    switch (e.kind) {
      case EventClass::cpu_annotation:
      case EventClass::gpu_annotation: {
        if (e.step) {
          steps_.push_back({e.start, e.end, *e.step});
          return;
        }
        auto& list = e.kind == EventClass::cpu_annotation ? cpu_ : gpu_;
        list.push_back({std::move(e.name), e.start, e.end, e.external_id, e.ordinal, e.offset});
        if (e.kind == EventClass::cpu_annotation && launches_started_) late_annotation_ = true;
        return;
      }
      case EventClass::kernel:
        on_kernel(e.correlation, e.start, e.end);
        return;
      case EventClass::launch:
        on_launch(e.correlation, e.start);
        return;
      case EventClass::none:
        return;
    }
  }

  // Kernels are joined to the CPU span that launched them as they come, so
  // that only launches still waiting for their kernel are held: Kineto
  // writes the CPU events (the annotations among them) first, then the
  // runtime calls and kernels in time order. A CPU annotation after the
  // first runtime call breaks that order: the file is then read a second
  // time for the kernels, every span known (second_pass).

  /// The CPU span holding host time `ts`, or npos.
  std::size_t span_at(std::int64_t ts) {
    if (span_index_.size() != cpu_.size()) {
      span_index_.clear();
      for (std::size_t i = 0; i < cpu_.size(); ++i) span_index_.push_back({cpu_[i].start, i});
      std::sort(span_index_.begin(), span_index_.end());
    }
    auto it = std::upper_bound(span_index_.begin(), span_index_.end(),
                               std::pair{ts, std::numeric_limits<std::size_t>::max()});
    // Spans may nest or overlap (an OVERLAP pair, a pattern's ranges): the
    // latest-starting span that holds ts, looking back a few.
    for (int back = 0; back < 4 && it != span_index_.begin(); ++back) {
      --it;
      if (cpu_[it->second].end >= ts) return it->second;
    }
    return std::string::npos;
  }

  void add_kernel(std::size_t span, std::int64_t start, std::int64_t end) {
    cpu_[span].kernel_start = std::min(cpu_[span].kernel_start, start);
    cpu_[span].kernel_end = std::max(cpu_[span].kernel_end, end);
  }

  void on_launch(std::int64_t correlation, std::int64_t ts) {
    launches_started_ = true;
    if (late_annotation_ && !second_pass_) return;  // joined in the second pass
    max_launch_correlation_ = std::max(max_launch_correlation_, correlation);
    const std::size_t span = span_at(ts);
    if (span == std::string::npos) return;
    if (const auto k = early_kernels_.find(correlation); k != early_kernels_.end()) {
      add_kernel(span, k->second.start, k->second.end);
      early_kernels_.erase(k);
      return;
    }
    waiting_launches_[correlation] = span;
  }

  void on_kernel(std::int64_t correlation, std::int64_t start, std::int64_t end) {
    if (late_annotation_ && !second_pass_) return;
    if (const auto l = waiting_launches_.find(correlation); l != waiting_launches_.end()) {
      add_kernel(l->second, start, end);
      waiting_launches_.erase(l);
    } else if (correlation > max_launch_correlation_) {
      early_kernels_[correlation] = {start, end};  // its launch may still come
    }
  }

  void second_pass() {
    second_pass_ = true;
    for (Annotation& a : cpu_) {
      a.kernel_start = std::numeric_limits<std::int64_t>::max();
      a.kernel_end = std::numeric_limits<std::int64_t>::min();
    }
    waiting_launches_.clear();
    early_kernels_.clear();
    max_launch_correlation_ = -1;
    TraceEventTokenizer tokenizer({}, {});
    bool unreadable = false;
    read_events(tokenizer, unreadable);
    second_pass_ = false;
  }

  /// The action(s) a CPU annotation's name stands for; empty when none.
  std::vector<TraceAction> actions_of(const Annotation& a) {
    if (pattern_) {
      if (auto action = pattern_->match(a.name)) return {*action};
      return {};
    }
    auto actions = parse_pipeline_action(std::string_view(a.name).substr(kPipelinePrefix.size()));
    if (actions.empty()) {
      malformed(a.offset, fmt::format("'{}' is no pipeline action; skipped", a.name.substr(0, 80)));
    }
    return actions;
  }

  void assemble() {
    // GPU spans by (name, External id), and by name in order without one.
    std::map<std::pair<std::string_view, std::int64_t>, const Annotation*> gpu_by_id;
    std::map<std::string_view, std::vector<const Annotation*>> gpu_by_name;
    for (const Annotation& g : gpu_) {
      if (g.external_id >= 0)
        gpu_by_id.emplace(std::pair{std::string_view(g.name), g.external_id}, &g);
      gpu_by_name[g.name].push_back(&g);
    }
    std::map<std::string_view, std::size_t> next_of_name;
    std::sort(steps_.begin(), steps_.end(),
              [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
    if (pattern_ && !pattern_->has_micro_batch() && steps_.empty() && !cpu_.empty()) {
      throw InputError(fmt::format(
          "{}: the job pattern has no 'mb' group, so steps must come from ProfilerStep#N spans, "
          "and this trace has none",
          input_.path));
    }

    struct Pending {
      TraceAction action;
      std::int64_t start, end, host_start;
      std::uint64_t ordinal;
    };
    std::vector<Pending> pending;
    std::uint64_t host_timed = 0;
    for (const Annotation& cpu : cpu_) {
      std::vector<TraceAction> actions = actions_of(cpu);
      if (actions.empty()) continue;
      const Annotation* gpu = nullptr;
      if (cpu.external_id >= 0) {
        if (const auto it = gpu_by_id.find({cpu.name, cpu.external_id}); it != gpu_by_id.end()) {
          gpu = it->second;
        }
      }
      if (gpu == nullptr) {
        const auto it = gpu_by_name.find(cpu.name);
        std::size_t& next = next_of_name[cpu.name];
        if (it != gpu_by_name.end() && next < it->second.size() &&
            it->second[next]->external_id < 0) {
          gpu = it->second[next];
        }
      }
      ++next_of_name[cpu.name];
      // Kernels launched from inside the CPU span.
      const std::int64_t kernel_start = cpu.kernel_start, kernel_end = cpu.kernel_end;
      const bool kernels = kernel_start <= kernel_end;
      std::int64_t start = cpu.start, end = cpu.end;
      if (gpu != nullptr && (!kernels || (gpu->start <= kernel_start && gpu->end >= kernel_end))) {
        start = gpu->start;
        end = gpu->end;
      } else if (kernels) {
        start = kernel_start;
        end = kernel_end;
      } else {
        host_timed += actions.size();
      }
      for (TraceAction& action : actions) {
        pending.push_back({std::move(action), start, end, cpu.start, cpu.ordinal});
      }
    }
    if (host_timed > 0) {
      note(0, fmt::format("{} of {} jobs are host-timed: no GPU span or kernel was found for "
                          "them, so their times are the CPU's launch spans, not the GPU's",
                          host_timed, pending.size()));
      // Counted per file here; read_torch_traces makes one warning of them.
      out_.notes.push_back({WarningCode::host_timed_jobs, input_.path, -1, -1, host_timed});
    }

    // Chunks: a stage's place among the stages this rank ran.
    std::set<std::int64_t> stages;
    for (const Pending& p : pending) {
      if (p.action.stage >= 0 && p.action.chunk < 0) stages.insert(p.action.stage);
    }
    const std::vector<std::int64_t> stage_list(stages.begin(), stages.end());
    if (!stage_list.empty()) lowest_stage_ = stage_list.front();
    const bool chunked =
        stage_list.size() > 1 || std::any_of(pending.begin(), pending.end(),
                                             [](const Pending& p) { return p.action.chunk >= 0; });

    // Micro-batches numbered per step span when the names carry none.
    auto step_of = [&](std::int64_t t) -> const StepSpan* {
      auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                                 [](std::int64_t v, const StepSpan& s) { return v < s.start; });
      if (it == steps_.begin()) return nullptr;
      --it;
      return t <= it->end ? &*it : nullptr;
    };
    std::sort(pending.begin(), pending.end(),
              [](const Pending& a, const Pending& b) { return a.host_start < b.host_start; });
    std::map<std::tuple<const StepSpan*, std::string, std::int64_t>, std::int64_t> counters;
    std::uint64_t outside = 0;
    const bool count_mb = pattern_ && !pattern_->has_micro_batch();
    for (Pending& p : pending) {
      std::int64_t chunk = p.action.chunk;
      if (chunk < 0 && p.action.stage >= 0) {
        chunk = std::lower_bound(stage_list.begin(), stage_list.end(), p.action.stage) -
                stage_list.begin();
      }
      if (chunk < 0) chunk = 0;
      const StepSpan* step = step_of(p.host_start);
      if (!out_.first_step && step != nullptr) out_.first_step = step->step;
      if (count_mb) {
        if (step == nullptr) {
          ++outside;
          continue;
        }
        p.action.micro_batch = counters[{step, p.action.type, chunk}]++;
      }
      const bool compute = p.action.type == "forward" || p.action.type.starts_with("backward");
      const std::string type =
          chunked && compute ? fmt::format("{}{}", p.action.type, chunk) : p.action.type;
      Job& job = out_.device.jobs.emplace_back();
      job.start_ns = base_ns_ + p.start;
      job.end_ns = base_ns_ + p.end;
      job.micro_batch = std::max<std::int64_t>(p.action.micro_batch, 0);
      job.job_id = static_cast<std::int64_t>(out_.device.jobs.size() - 1);
      job.type = out_.types.intern(type);
      job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.ordinal, UINT32_MAX));
    }
    if (outside > 0) {
      out_.stats.malformed += outside;
      note(0, fmt::format("{} jobs lie outside every ProfilerStep#N span, which number the "
                          "micro-batches of a pattern without 'mb'; skipped",
                          outside));
    }
    if (!out_.first_step && !steps_.empty()) out_.first_step = steps_.front().step;
    if (out_.first_step) out_.device.step_starts.push_back({0, *out_.first_step});
    out_.stats.matched = out_.device.jobs.size();
  }

  const InputFile& input_;
  const IngestOptions& options_;

 public:
  /// The lowest pipeline stage the labels name (after read()), if any.
  std::optional<std::int64_t> lowest_stage() const { return lowest_stage_; }

 private:
  std::optional<std::int64_t> lowest_stage_;
  FileResult out_;
  std::optional<JobPattern> pattern_;
  BatchPool batches_;
  std::int64_t base_ns_ = 0;
  std::vector<Annotation> cpu_, gpu_;
  std::vector<std::pair<std::int64_t, std::size_t>> span_index_;    // (start, cpu_ index)
  std::unordered_map<std::int64_t, std::size_t> waiting_launches_;  // correlation -> span
  std::unordered_map<std::int64_t, KernelSpan> early_kernels_;      // kernel before its launch
  std::int64_t max_launch_correlation_ = -1;
  bool launches_started_ = false;
  bool late_annotation_ = false;
  bool second_pass_ = false;
  std::vector<StepSpan> steps_;
};

}  // namespace

namespace {

std::string file_names(const std::vector<const InputFile*>& files) {
  std::string out;
  for (const InputFile* f : files) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ",
                       std::filesystem::path(f->path).filename().string());
  }
  return out;
}

/// Ranks whose labels name the same stages are tensor-parallel peers of one
/// stage or data-parallel replicas of the pipeline, which the labels cannot
/// tell apart. By default they are analysed as peers (the stage map groups
/// them), with a warning that says so; with IngestOptions::pipeline the k-th
/// trace of each stage, in discovery order (machine, then rank), is
/// pipeline k, pipeline K alone is analysed, its devices numbered by stage,
/// and a warning lists the others.
void keep_one_pipeline(const std::vector<InputFile>& files,
                       const std::vector<std::optional<std::int64_t>>& lowest_stage,
                       const IngestOptions& options, std::vector<FileResult>& results) {
  std::map<std::int64_t, std::vector<std::size_t>> by_stage;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (lowest_stage[i] && !results[i].device.jobs.empty()) by_stage[*lowest_stage[i]].push_back(i);
  }
  std::size_t pipelines = 0;
  for (const auto& [stage, traces] : by_stage) pipelines = std::max(pipelines, traces.size());
  const std::size_t chosen = static_cast<std::size_t>(std::max(options.pipeline.value_or(0), 0));
  check_pipeline_choice(options, pipelines, "the traces");
  if (pipelines <= 1) return;
  if (!options.pipeline) {
    std::string shared;
    std::uint64_t count = 0;
    for (const auto& [stage, traces] : by_stage) {
      if (traces.size() < 2) continue;
      std::vector<const InputFile*> group;
      for (const std::size_t i : traces) group.push_back(&files[i]);
      shared += fmt::format("{}stage {}: {}", shared.empty() ? "" : "; ", stage, file_names(group));
      count += traces.size();
    }
    results.front().notes.push_back(
        {WarningCode::shared_stages,
         fmt::format("several traces run the same stages ({}): they are analysed as devices of "
                     "one stage (tensor-parallel peers); if they are data-parallel replicas, "
                     "analyse one pipeline at a time (pipeline k = the k-th trace of each stage, "
                     "0-{}): {}",
                     shared, pipelines - 1, options.pipeline_label),
         -1, -1, count});
    return;
  }
  std::vector<std::vector<const InputFile*>> members(pipelines);
  std::vector<std::int64_t> missing;
  int index = 0;
  for (const auto& [stage, traces] : by_stage) {
    for (std::size_t k = 0; k < traces.size(); ++k) {
      members[k].push_back(&files[traces[k]]);
      FileResult& r = results[traces[k]];
      if (k == chosen) {
        r.device.index = index;
        r.device.rank = index;  // the rank within the pipeline; the global one is in the path
      } else {
        r.has_device = false;
      }
    }
    if (traces.size() > chosen) {
      ++index;
    } else {
      missing.push_back(stage);
    }
  }
  std::string list;
  std::uint64_t count = 0;
  for (std::size_t k = 0; k < pipelines; ++k) {
    if (k == chosen) continue;
    list += fmt::format("; pipeline {}: {}", k, file_names(members[k]));
    count += members[k].size();
  }
  FileResult& first = results.front();
  first.notes.push_back(
      {WarningCode::other_pipelines,
       fmt::format("the traces hold {} pipelines (data-parallel replicas: several ranks run one "
                   "stage); pipeline {} ({}) is analysed and the others are left out{}; {}",
                   pipelines, chosen, file_names(members[chosen]), list, options.pipeline_label),
       -1, -1, count});
  if (!missing.empty()) {
    std::string stages;
    for (const std::int64_t s : missing) stages += fmt::format("{}{}", stages.empty() ? "" : ", ", s);
    first.notes.push_back(
        {WarningCode::missing_stage,
         fmt::format("pipeline {} has no trace of stage{} {} (the lowest stage its labels "
                     "name): {} left out of the figures",
                     chosen, missing.size() == 1 ? "" : "s", stages,
                     missing.size() == 1 ? "it is" : "they are"),
         -1, -1, static_cast<std::uint64_t>(missing.size())});
  }
}

}  // namespace

FileResult read_torch_trace(const InputFile& input, const IngestOptions& options) {
  TraceReader reader(input, options);
  return reader.read();
}

std::vector<FileResult> read_torch_traces(const std::vector<InputFile>& files,
                                          const IngestOptions& options, ProgressMeter& progress) {
  std::vector<FileResult> results(files.size());
  std::vector<std::optional<std::int64_t>> lowest_stage(files.size());
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    TraceReader reader(files[i], options);
    results[i] = reader.read();
    lowest_stage[i] = reader.lowest_stage();
    progress.advance(results[i].stats.bytes, 1);
  });
  keep_one_pipeline(files, lowest_stage, options, results);
  // One warning for the run: host-timed jobs put the host's launch times in
  // place of the GPU's, so the busy time and bubbles they give are not the
  // GPU's, however exact the arithmetic.
  std::uint64_t host_timed = 0, jobs = 0, traces = 0;
  std::string example;
  std::size_t analysed = 0;
  for (FileResult& r : results) {
    if (r.has_device) {
      ++analysed;
      jobs += r.stats.matched;
    }
    for (auto it = r.notes.begin(); it != r.notes.end();) {
      if (it->code != WarningCode::host_timed_jobs) {
        ++it;
        continue;
      }
      if (r.has_device) {
        host_timed += it->count;
        ++traces;
        if (example.empty()) example = it->message;
      }
      it = r.notes.erase(it);
    }
  }
  if (host_timed > 0) {
    results.front().notes.push_back(
        {WarningCode::host_timed_jobs,
         fmt::format("{} of {} jobs, in {} of {} traces (first: {}), are host-timed: no GPU span "
                     "or kernel was found for them, so their intervals are the CPU's launch "
                     "spans and their busy and idle time is the host's view, not the GPU's "
                     "(profile with CUDA activities on, or label GPU ranges)",
                     host_timed, jobs, traces, analysed, example),
         -1, -1, host_timed});
  }
  return results;
}

}  // namespace pipescope
