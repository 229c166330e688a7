#include "ingest/torch_trace_event.h"

#include <fmt/core.h>

#include <charconv>
#include <system_error>

#include "ingest/job_pattern.h"
#include "ingest/trace_event_tokenizer.h"
#include "scan/decimal_time.h"

namespace pipescope {

bool parse_json_int(std::string_view text, std::int64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

std::string_view trim_json_token(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t' || s.back() == ',')) {
    s.remove_suffix(1);
  }
  return s;
}

namespace {

EventClass class_of(std::string_view cat) {
  if (cat == "user_annotation") return EventClass::cpu_annotation;
  if (cat == "gpu_user_annotation") return EventClass::gpu_annotation;
  if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") return EventClass::kernel;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return EventClass::launch;
  if (cat == "cpu_op") return EventClass::comm_call;  // those of a communication's name
  return EventClass::none;
}

/// Whether the second pass (EventFilter::kernels_only) reads events of this
/// class: kernels, their launches and the host calls of communications
/// (some of which are CPU annotations).
bool second_pass_class(EventClass c) {
  return c == EventClass::kernel || c == EventClass::launch || c == EventClass::comm_call ||
         c == EventClass::cpu_annotation;
}

/// Whether a CPU op or annotation of this name is a communication's host
/// call (record_param_comms, nccl:send, ...).
bool comm_call_name(std::string_view name) {
  return name == kParamCommsOp || name.starts_with(kNcclCallPrefix);
}

/// The value of an event's top-level string field `key` (3 or 4 letters:
/// "cat", "name") found without parsing the event, when it is a plain string
/// before any nested object; an empty view when the key is absent, nullopt
/// when that is not certain (the event is then parsed whole). A JSON string
/// cannot hold an unescaped quote, so `"key"` followed by a colon is a key.
std::optional<std::string_view> quick_string(std::string_view event, std::string_view key) {
  // By hand rather than string_view::find: "cat" and "name" are near the
  // start of nearly every event, where a library search's set-up costs more
  // than the search.
  const std::size_t n = key.size();
  const auto find_key = [&](std::size_t from) {
    for (std::size_t j = from; j + n + 2 <= event.size(); ++j) {
      if (event[j] == '"' && event[j + n + 1] == '"' && event.compare(j + 1, n, key) == 0) {
        return j;
      }
    }
    return std::string_view::npos;
  };
  std::size_t pos = 0;
  for (;;) {
    const std::size_t at = find_key(pos);
    if (at == std::string_view::npos) return std::string_view();  // no such key
    std::size_t j = at + n + 2;
    while (j < event.size() &&
           (event[j] == ' ' || event[j] == '\n' || event[j] == '\t' || event[j] == '\r')) {
      ++j;
    }
    if (j >= event.size() || event[j] != ':') {
      pos = at + n + 2;
      continue;
    }
    // A key inside "args" (after a '{' past the event's own) is not the
    // event's: leave it to the full parse.
    if (event.substr(1, at - 1).find('{') != std::string_view::npos) return std::nullopt;
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

/// An integer arg written as a JSON number or as a string of one (PyTorch
/// writes both, by version); false for anything else.
template <typename Int>
bool int_arg(simdjson::ondemand::value value, Int& out) {
  std::string_view text;
  simdjson::ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return false;
  if (type == simdjson::ondemand::json_type::string) {
    if (value.get_string().get(text) != simdjson::SUCCESS) return false;
  } else {
    text = trim_json_token(value.raw_json_token());
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

/// `Process Group Ranks`: "[0, 2, 4]" (a string, as PyTorch writes it, or
/// an array); empty when it is anything else, truncated ("...") included.
std::vector<int> rank_list(simdjson::ondemand::value value) {
  std::vector<int> ranks;
  std::string_view text;
  simdjson::ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return {};
  if (type == simdjson::ondemand::json_type::string) {
    if (value.get_string().get(text) != simdjson::SUCCESS) return {};
  } else {
    text = trim_json_token(value.raw_json_token());
  }
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return {};
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    while (!text.empty() && (text.front() == ' ' || text.front() == ',')) text.remove_prefix(1);
    if (text.empty()) break;
    int r = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), r);
    if (ec != std::errc{} || r < 0) return {};
    ranks.push_back(r);
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  }
  return ranks;
}

/// Reads one of a NCCL kernel's communication args into `comm` (made on the
/// first); false when `key` is none of them.
bool comm_arg(std::string_view key, simdjson::ondemand::value value,
              std::unique_ptr<CommKernel>& comm, int (&rank_range)[3], int& peer, int& group_rank) {
  if (key.empty() || key[0] < 'A' || key[0] > 'Z') return false;
  auto made = [&comm]() -> CommKernel& {
    if (!comm) comm = std::make_unique<CommKernel>();
    return *comm;
  };
  std::string_view text;
  if (key == "Collective name") {
    if (value.get_string().get(text) == simdjson::SUCCESS) made().collective.assign(text);
  } else if (key == "Process Group Name") {
    if (value.get_string().get(text) == simdjson::SUCCESS) made().group_name.assign(text);
  } else if (key == "Process Group Description") {
    if (value.get_string().get(text) == simdjson::SUCCESS) made().group_description.assign(text);
  } else if (key == "Process Group Ranks") {
    made().group_ranks = rank_list(value);
  } else if (key == "Src Rank" || key == "Dst Rank") {
    int r = -1;
    if (int_arg(value, r) && r >= 0) {
      made();
      peer = r;
    }
  } else if (key == "Rank") {
    int r = -1;
    if (int_arg(value, r) && r >= 0) {
      made();
      group_rank = r;
    }
  } else if (key == "Comms Id") {
    std::uint64_t id = 0;
    if (int_arg(value, id)) made().comms_id = id;
  } else if (key == "Global rank start") {
    int_arg(value, rank_range[0]);
  } else if (key == "Global rank stride") {
    int_arg(value, rank_range[1]);
  } else if (key == "Group size") {
    if (int_arg(value, rank_range[2]) && rank_range[2] > 0) made().group_size = rank_range[2];
  } else {
    return false;
  }
  return true;
}

/// The args read into `comm` made whole: the group's ranks from `Global
/// rank start`/`stride`/`Group size` when no whole list was given, and the
/// peer as the kernel's one operation when `Collective name` says send or
/// recv: `Dst Rank`/`Src Rank` (a global rank, PyTorch 2.4 and later), else
/// the group's `Rank`-th member (PyTorch 2.3 writes the peer's place in the
/// group there, beside the group's global ranks), else none (peer -1).
void finish_comm_args(CommKernel* comm, const int (&rank_range)[3], int peer, int group_rank) {
  if (comm == nullptr) return;
  if (comm->group_ranks.empty() && rank_range[2] > 0 && rank_range[0] >= 0 && rank_range[1] > 0) {
    for (int i = 0; i < rank_range[2]; ++i) {
      comm->group_ranks.push_back(rank_range[0] + i * rank_range[1]);
    }
  }
  if (comm->collective == "send" || comm->collective == "recv") {
    comm->op = CommOp::point_to_point;
    comm->source = CommSource::kernel;
    if (peer < 0 && group_rank >= 0 &&
        static_cast<std::size_t>(group_rank) < comm->group_ranks.size()) {
      peer = comm->group_ranks[static_cast<std::size_t>(group_rank)];
    }
    // An operation whose peer is not named (PyTorch 2.2) is kept with its
    // direction, and its group where that has two members: the order rules
    // of the kernel view may still fix its peer.
    PeerOp op{.op = comm->collective == "send" ? CommOp::send : CommOp::recv, .peer = peer};
    if (peer < 0 && comm->group_ranks.size() == 2) {
      op.pair = {comm->group_ranks[0], comm->group_ranks[1]};
    }
    comm->p2p.push_back(op);
  } else if (!comm->collective.empty() && comm->collective != "coalesced") {
    // "coalesced": several operations run by one launch, none named here.
    comm->op = CommOp::collective;
    comm->source = CommSource::kernel;
    comm->group_rank = group_rank;
  }
}

/// What a NCCL kernel's name says it does where no arg does: a `SendRecv`
/// kernel runs point-to-point operations (with whom, only its host calls
/// say); the others (`AllReduce`, `Broadcast`, ...) a collective.
CommOp op_of_kernel_name(std::string_view name) {
  if (name.find("SendRecv") != std::string_view::npos ||
      name.find("_Send") != std::string_view::npos ||
      name.find("_Recv") != std::string_view::npos) {
    return CommOp::point_to_point;
  }
  return CommOp::collective;
}

/// Whether an annotation of this name is kept: a step span, or a job.
bool wanted_name(std::string_view name, const JobPattern* pattern) {
  if (name.starts_with(kStepPrefix)) return true;
  if (pattern) return pattern->match(name).has_value();
  return name.starts_with(kPipelinePrefix);
}

/// The fields of a plain GPU activity or launch, found by one pass over the
/// event's bytes instead of a JSON parser (most events of a kernel trace are
/// these; simdjson's set-up per event cost more than the scan). Raw tokens:
/// strings without their quotes, numbers as written. `scan` returns false
/// for anything it does not read with certainty (an escaped string, bytes
/// that are no JSON object), and the event is then parsed whole.
struct PlainEvent {
  std::string_view ph, cat, name, tid, ts, dur;
  std::string_view correlation, external_id, device;  // in "args"
  bool string_tid = false;

  /// Reads the fields; with `launch`, no "device" is waited for.
  bool scan(std::string_view ev, bool launch);

 private:
  /// Whether every field kept has been seen: the rest of the event (a
  /// kernel's registers, grid, occupancy, ...) is then not read. Kineto
  /// writes "args" last, and in it "External id", "device" and
  /// "correlation" first; an event missing one is read to its end.
  bool complete(bool launch) const {
    return !ph.empty() && !cat.empty() && !name.empty() && !ts.empty() && !dur.empty() &&
           !correlation.empty() && !external_id.empty() &&
           (launch ? !tid.empty() : !device.empty());
  }
  bool stop_ = false;
  static bool blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
  std::size_t skip_blanks(std::string_view ev, std::size_t i) const {
    while (i < ev.size() && blank(ev[i])) ++i;
    return i;
  }
  /// A string at ev[i] == '"': its contents; npos end when escaped or open.
  static std::size_t string_end(std::string_view ev, std::size_t i) {
    // Two memchr calls (SIMD in libc) beat a byte loop on kernel names of
    // hundreds of bytes (C++ template signatures).
    const std::size_t close = ev.find('"', i + 1);
    if (close == std::string_view::npos) return close;
    if (ev.substr(i + 1, close - i - 1).find('\\') != std::string_view::npos) {
      return std::string_view::npos;
    }
    return close;
  }
  /// The end of the value at ev[i] (one past it), or npos.
  static std::size_t value_end(std::string_view ev, std::size_t i) {
    if (i >= ev.size()) return std::string_view::npos;
    if (ev[i] == '"') {
      const std::size_t e = string_end(ev, i);
      return e == std::string_view::npos ? e : e + 1;
    }
    if (ev[i] == '{' || ev[i] == '[') {
      int depth = 0;
      for (std::size_t j = i; j < ev.size(); ++j) {
        const char c = ev[j];
        if (c == '"') {
          j = string_end(ev, j);
          if (j == std::string_view::npos) return j;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return j + 1;
        }
      }
      return std::string_view::npos;
    }
    std::size_t j = i;
    while (j < ev.size() && ev[j] != ',' && ev[j] != '}' && ev[j] != ']' && !blank(ev[j])) ++j;
    return j == i ? std::string_view::npos : j;
  }
  /// Reads the object at ev[i] == '{', calling on(key, value token, value
  /// start) for each member; returns one past its '}', or npos.
  template <typename On>
  std::size_t object(std::string_view ev, std::size_t i, On&& on) const {
    if (i >= ev.size() || ev[i] != '{') return std::string_view::npos;
    i = skip_blanks(ev, i + 1);
    if (i < ev.size() && ev[i] == '}') return i + 1;
    for (;;) {
      if (i >= ev.size() || ev[i] != '"') return std::string_view::npos;
      const std::size_t key_end = string_end(ev, i);
      if (key_end == std::string_view::npos) return key_end;
      const std::string_view key = ev.substr(i + 1, key_end - i - 1);
      i = skip_blanks(ev, key_end + 1);
      if (i >= ev.size() || ev[i] != ':') return std::string_view::npos;
      i = skip_blanks(ev, i + 1);
      const std::size_t end = on(key, i);
      if (end == std::string_view::npos || stop_) return end;
      i = skip_blanks(ev, end);
      if (i >= ev.size()) return std::string_view::npos;
      if (ev[i] == '}') return i + 1;
      if (ev[i] != ',') return std::string_view::npos;
      i = skip_blanks(ev, i + 1);
    }
  }
};

bool PlainEvent::scan(std::string_view ev, bool launch) {
  const auto token = [&](std::size_t at, std::size_t end) { return ev.substr(at, end - at); };
  const auto unquoted = [](std::string_view t) { return t.substr(1, t.size() - 2); };
  bool ok = true;
  const std::size_t end = object(ev, skip_blanks(ev, 0), [&](std::string_view key, std::size_t at) {
    if (key == "args") {
      return object(ev, at, [&](std::string_view arg, std::size_t v) {
        const std::size_t e = value_end(ev, v);
        if (e == std::string_view::npos) return e;
        if (arg == "correlation") {
          correlation = token(v, e);
        } else if (arg == "External id") {
          external_id = token(v, e);
        } else if (arg == "device") {
          device = token(v, e);
        }
        stop_ = complete(launch);
        return e;
      });
    }
    const std::size_t e = value_end(ev, at);
    if (e == std::string_view::npos) return e;
    const std::string_view t = token(at, e);
    const bool text = t.front() == '"';
    if (key == "ph" || key == "cat" || key == "name") {
      if (!text) ok = false;  // not what the slow path reads either: let it decide
      (key == "ph" ? ph : key == "cat" ? cat : name) = text ? unquoted(t) : t;
    } else if (key == "tid") {
      string_tid = text;
      tid = text ? unquoted(t) : t;
    } else if (key == "ts") {
      ts = t;
    } else if (key == "dur") {
      dur = t;
    }
    return e;
  });
  return ok && end != std::string_view::npos;
}

/// A JSON integer token as simdjson's get_int64 reads it: -1 for anything
/// else (a string, a fraction).
std::int64_t int_token(std::string_view t) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc{} && end == t.data() + t.size() && !t.empty() ? v : -1;
}

/// A plain activity (not NCCL's) or launch read by PlainEvent, as parse_event
/// would give it; nullopt when the slow path must decide (the event is then
/// parsed whole: anything odd, a malformed time included).
std::optional<std::optional<ParsedEvent>> parse_plain(std::string_view event, std::uint64_t offset,
                                                      std::uint64_t ordinal, EventClass quick) {
  PlainEvent f;
  if (!f.scan(event, quick == EventClass::launch) || f.cat.empty()) return std::nullopt;
  if (class_of(f.cat) != quick) return std::nullopt;
  if (quick == EventClass::kernel && f.cat == "kernel" && f.name.starts_with("nccl")) {
    return std::nullopt;  // its communication args: the whole parse
  }
  if (f.ph != "X") return std::optional<ParsedEvent>();
  const std::optional<std::int64_t> start = parse_micros_to_ns(f.ts);
  const std::optional<std::int64_t> length =
      f.dur.empty() ? std::optional<std::int64_t>(0) : parse_micros_to_ns(f.dur);
  if (!start || !length || *length < 0) return std::nullopt;
  ParsedEvent out;
  out.offset = offset;
  out.ordinal = ordinal;
  out.kind = quick;
  out.start = *start;
  out.end = *start + *length;
  out.correlation = f.correlation.empty() ? -1 : int_token(f.correlation);
  out.external_id = f.external_id.empty() ? -1 : int_token(f.external_id);
  if (!f.tid.empty()) {
    std::int64_t tid = -1;
    const auto [e, ec] = std::from_chars(f.tid.data(), f.tid.data() + f.tid.size(), tid);
    out.thread = ec == std::errc{} && e == f.tid.data() + f.tid.size() ? tid : -1;
  }
  if (!f.device.empty()) {
    std::string_view d = f.device;
    if (d.size() >= 2 && d.front() == '"') d = d.substr(1, d.size() - 2);
    int gpu = -1;
    const auto [e, ec] = std::from_chars(d.data(), d.data() + d.size(), gpu);
    out.gpu = ec == std::errc{} && e == d.data() + d.size() && !d.empty() ? gpu : -1;
  }
  if (quick == EventClass::launch) {
    if (out.correlation < 0 || !launches_gpu_work(f.name)) return std::optional<ParsedEvent>();
    out.graph = f.name.find("GraphLaunch") != std::string_view::npos;
  }
  return std::optional<ParsedEvent>(std::move(out));
}

}  // namespace

std::optional<ParsedEvent> parse_event(std::string_view event, std::uint64_t offset,
                                       std::uint64_t ordinal, simdjson::ondemand::parser& parser,
                                       const EventFilter& filter) {
  // Most events are CPU ops and flows: their category (and a CPU op's
  // name) says so unparsed.
  if (const auto cat = quick_string(event, "cat"); cat) {
    const EventClass quick = class_of(*cat);
    if (quick == EventClass::none) return std::nullopt;
    if (filter.kernels_only && !second_pass_class(quick)) return std::nullopt;
    if (quick == EventClass::comm_call) {
      const auto name = quick_string(event, "name");
      if (name && !comm_call_name(*name)) return std::nullopt;
    }
    if (quick == EventClass::kernel || quick == EventClass::launch) {
      if (auto plain = parse_plain(event, offset, ordinal, quick)) return std::move(*plain);
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
  int rank_range[3] = {-1, -1, -1};  // Global rank start, stride, Group size
  int peer = -1;                     // Src Rank or Dst Rank
  int group_rank = -1;               // Rank (a send's or recv's: the peer's, in the group)
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
      ts = trim_json_token(value.raw_json_token());
    } else if (key == "dur") {
      dur = trim_json_token(value.raw_json_token());
    } else if (key == "tid") {
      if (!int_arg(value, out.thread)) out.thread = -1;
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
        } else if (arg_key == "device") {
          simdjson::ondemand::value arg_value;
          if (arg.value().get(arg_value) != simdjson::SUCCESS || !int_arg(arg_value, out.gpu)) {
            out.gpu = -1;
          }
        } else if (arg_key == "External id") {
          if (arg.value().get_int64().get(out.external_id) != simdjson::SUCCESS) {
            out.external_id = -1;
          }
        } else {
          simdjson::ondemand::value arg_value;
          if (arg.value().get(arg_value) == simdjson::SUCCESS) {
            comm_arg(arg_key, arg_value, out.comm, rank_range, peer, group_rank);
          }
        }
      }
    }
  }
  if (!has_name) out.name.clear();
  const std::string_view name = out.name;
  const EventClass kind = class_of(cat);
  if (kind == EventClass::none || ph != "X") return std::nullopt;
  if (filter.kernels_only && !second_pass_class(kind)) return std::nullopt;
  const std::optional<std::int64_t> start = parse_micros_to_ns(ts);
  const std::optional<std::int64_t> length =
      dur.empty() ? std::optional<std::int64_t>(0) : parse_micros_to_ns(dur);
  if (!start || !length || *length < 0) {
    return malformed(
        fmt::format("event '{}' has a time that is not decimal microseconds "
                    "(ts {}, dur {}); skipped",
                    name.substr(0, 60), ts.substr(0, 30), dur.substr(0, 30)));
  }
  out.kind = kind;
  out.start = *start;
  out.end = *start + *length;
  switch (kind) {
    case EventClass::cpu_annotation:
      // ProcessGroupNCCL's `nccl:<op>` spans are user annotations in some
      // versions: the host calls of communications.
      if (has_name && name.starts_with(kNcclCallPrefix)) {
        out.kind = EventClass::comm_call;
        finish_comm_args(out.comm.get(), rank_range, peer, group_rank);
        return out;
      }
      [[fallthrough]];
    case EventClass::gpu_annotation:
      if (filter.kernels_only) return std::nullopt;
      if (!has_name || !wanted_name(name, filter.pattern)) return std::nullopt;
      if (name.starts_with(kStepPrefix)) {
        if (kind == EventClass::gpu_annotation) return std::nullopt;
        std::int64_t step = 0;
        if (!parse_json_int(name.substr(kStepPrefix.size()), step)) return std::nullopt;
        out.step = step;
      }
      return out;
    case EventClass::kernel:
      // Every activity counts in the kernel view, with or without its launch.
      out.communication = cat == "kernel" && name.starts_with("nccl");
      if (!out.communication) {
        out.comm.reset();
      } else {
        finish_comm_args(out.comm.get(), rank_range, peer, group_rank);
        if (!out.comm) out.comm = std::make_unique<CommKernel>();
        if (out.comm->op == CommOp::unknown) out.comm->op = op_of_kernel_name(name);
      }
      out.name.clear();
      return out;
    case EventClass::comm_call:
      if (!has_name || !comm_call_name(name)) return std::nullopt;
      finish_comm_args(out.comm.get(), rank_range, peer, group_rank);
      return out;
    case EventClass::launch:
      // Only calls that start GPU work (kernel launches, graph launches,
      // copies, sets): a synchronize or an event record never gets a
      // kernel, and would wait for one for ever.
      if (out.correlation < 0 || !launches_gpu_work(name)) return std::nullopt;
      out.graph = name.find("GraphLaunch") != std::string_view::npos;
      out.name.clear();
      return out;
    case EventClass::none:
      break;
  }
  return std::nullopt;
}

}  // namespace pipescope
