#include "ingest/torch_trace_event.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <system_error>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ingest/annotation_jobs.h"
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

/// Whether `text` is `literal`: a compare of a known length, inlined (a
/// string_view's == calls memcmp, which costs more than these few bytes).
template <std::size_t N>
bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}

EventClass class_of(std::string_view cat) {
  if (is(cat, "kernel") || is(cat, "gpu_memcpy") || is(cat, "gpu_memset")) {
    return EventClass::kernel;
  }
  if (is(cat, "cuda_runtime") || is(cat, "cuda_driver")) return EventClass::launch;
  if (is(cat, "cpu_op")) return EventClass::comm_call;  // those of a communication's name
  if (is(cat, "user_annotation")) return EventClass::cpu_annotation;
  if (is(cat, "gpu_user_annotation")) return EventClass::gpu_annotation;
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
  return is(name, "record_param_comms") || (name.size() >= 5 && is(name.substr(0, 5), "nccl:"));
}
static_assert(kParamCommsOp == "record_param_comms" && kNcclCallPrefix == "nccl:");

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

}  // namespace

CommOp op_of_kernel_name(std::string_view name) {
  if (name.find("SendRecv") != std::string_view::npos ||
      name.find("_Send") != std::string_view::npos ||
      name.find("_Recv") != std::string_view::npos) {
    return CommOp::point_to_point;
  }
  return CommOp::collective;
}

namespace {

/// Whether an annotation of this name is kept: a step span, or a job.
bool wanted_name(std::string_view name, const JobPattern* pattern) {
  return name.starts_with(kStepPrefix) || annotation_job_name(name, pattern);
}

/// The index of the first '"' or '\\' in p[i, n), or n. Reads up to 15
/// bytes past n (an event has TraceEventTokenizer::kPadding after it).
std::size_t quote_or_backslash(const char* p, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; i < n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const auto hits = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
    if (hits != 0) return std::min(n, i + static_cast<std::size_t>(__builtin_ctz(hits)));
  }
  return n;
#else
  while (i < n && p[i] != '"' && p[i] != '\\') ++i;
  return i;
#endif
}

/// Eight bytes at `p`, p[0] in the lowest.
std::uint64_t load8(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, sizeof x);
  if constexpr (std::endian::native == std::endian::big) x = __builtin_bswap64(x);
  return x;
}

/// The high bit of each byte of `x` equal to `c`, exact up to the first such
/// byte (those after it may be flagged falsely).
constexpr std::uint64_t bytes_equal(std::uint64_t x, char c) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  const std::uint64_t y = x ^ (kOnes * static_cast<unsigned char>(c));
  return (y - kOnes) & ~y & (kOnes << 7);
}

/// `text` (up to 8 bytes) as load8 reads it.
constexpr std::uint64_t word(std::string_view text) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    x |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[i])) << (8 * i);
  }
  return x;
}

/// A set of bytes, tested by one load.
struct ByteSet {
  bool table[256] = {};
  constexpr ByteSet(std::string_view bytes) {
    for (const char c : bytes) table[static_cast<unsigned char>(c)] = true;
  }
  bool operator[](char c) const { return table[static_cast<unsigned char>(c)]; }
};
/// The blanks of JSON, and the bytes that end a number or literal as the
/// scan reads it.
constexpr ByteSet kBlank(" \n\t\r");
constexpr ByteSet kDelimiter(",}] \n\t\r");

bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

/// The keys PlainScan keeps, by their letters.
enum class Key : std::uint8_t { other, ph, cat, name, tid, ts, dur, args };
/// A key Kineto writes in this place: `"name":` as load8 reads it.
struct Expected {
  std::uint64_t text;
  std::uint64_t mask;
  std::uint8_t size;
  Key key;
};
constexpr Expected expected(std::string_view quoted, Key key) {
  return {word(quoted), ~std::uint64_t{0} >> (64 - 8 * quoted.size()),
          static_cast<std::uint8_t>(quoted.size()), key};
}
/// Kineto's order of an event's members (PyTorch 1.x to 2.x): each member
/// is first taken for the next of these, at the cost of one compare.
constexpr Expected kKinetoOrder[] = {
    expected("\"ph\":", Key::ph),     expected("\"cat\":", Key::cat),
    expected("\"name\":", Key::name), expected("\"pid\":", Key::other),
    expected("\"tid\":", Key::tid),   expected("\"ts\":", Key::ts),
    expected("\"dur\":", Key::dur),   expected("\"args\":", Key::args)};
constexpr std::size_t kKinetoMembers = std::size(kKinetoOrder);

/// A quoted key of up to 14 letters, as 16 bytes to compare with.
struct Quoted {
  std::string_view text;  // with its quotes
  std::size_t size = 0;
  unsigned mask = 0;  // the bits of movemask that must match
#if defined(__SSE2__)
  __m128i bytes{};
#endif
};
Quoted quoted_key(std::string_view text) {
  Quoted q;
  q.text = text;
  q.size = text.size();
  q.mask = (1u << text.size()) - 1;
#if defined(__SSE2__)
  char bytes[16] = {};
  std::memcpy(bytes, text.data(), text.size());
  q.bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
#endif
  return q;
}
const Quoted kCorrelationKey = quoted_key("\"correlation\"");
const Quoted kExternalIdKey = quoted_key("\"External id\"");

/// A JSON integer token as simdjson's get_int64 reads it: -1 for anything
/// else (a string, a fraction).
std::int64_t int_token(std::string_view t) {
  if (!t.empty() && t.size() <= 18) {
    std::int64_t v = 0;
    std::size_t i = 0;
    while (i < t.size() && is_digit(t[i])) v = v * 10 + (t[i++] - '0');
    if (i == t.size()) return v;  // digits only: no overflow in 18
  }
  std::int64_t s = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), s);
  return ec == std::errc{} && end == t.data() + t.size() && !t.empty() ? s : -1;
}

/// The fields of a plain GPU activity or launch, found by one pass over the
/// event's bytes instead of a JSON parser (most events of a kernel trace are
/// these; simdjson's set-up per event costs more than the scan), together
/// with the category test that drops CPU ops and flows. Raw tokens: strings
/// without their quotes, numbers as written; `ts` and `dur` are read to ns on
/// the way. Members are read in order, a repeated key's last value kept;
/// inside "args", reading stops once every field kept has been seen (Kineto
/// writes "args" last, and in it "External id", "device" and "correlation"
/// first: a kernel's registers, grid and occupancy are not read). Anything
/// not read with certainty (an escaped string, bytes that are no JSON
/// object, a category after a nested value) ends the pass with
/// PlainRead::other. Each member is first taken for the one Kineto writes in
/// its place, and each separator for the one-space kind, so that an event as
/// Kineto writes it costs a few compares a member.
class PlainScan {
 public:
  PlainScan(std::string_view event, const EventFilter& filter)
      : p_(event.data()), n_(event.size()), event_(event), filter_(filter) {}

  PlainRead read(PlainRecord& out);

 private:
  static constexpr std::size_t npos = std::string_view::npos;
  /// A time's state: absent, read (to `ns`), or not decimal microseconds.
  enum class Time : std::uint8_t { absent, read, bad };

  std::size_t skip(std::size_t i) const {
    while (kBlank[p_[i]]) ++i;  // stops at the closing '}' at the latest
    return i;
  }
  /// skip, for the blanks JSON writers put after ':' and ',': none or one space.
  std::size_t skip_space(std::size_t i) const {
    if (p_[i] == ' ') ++i;
    return kBlank[p_[i]] ? skip(i) : i;
  }
  /// The closing quote of the string at p_[i] == '"'; npos when escaped or open.
  std::size_t string_close(std::size_t i) const {
    const std::size_t j = quote_or_backslash(p_, i + 1, n_);
    return j < n_ && p_[j] == '"' ? j : npos;
  }
  /// The key whose opening quote is at p_[i]; `close` is set to its closing
  /// quote, npos when escaped or open.
  Key key_at(std::size_t i, std::size_t& close) const;
  /// One past the value at p_[i] (i < n_), or npos.
  std::size_t value_end(std::size_t i) const;
  /// value_end, for a value expected to be digits.
  std::size_t number_end(std::size_t i) const {
    std::size_t j = i;
    while (is_digit(p_[j])) ++j;
    return j > i && kDelimiter[p_[j]] ? j : value_end(i);
  }
  /// One past the member separator (',' and blanks) from p_[e] on, or npos
  /// at the object's end (`end` is then one past its '}') or on damage.
  std::size_t next_member(std::size_t e, std::size_t& end) const {
    end = npos;
    if (e < n_ && p_[e] == ',') return skip_space(e + 1);
    const std::size_t i = skip(e);
    if (i >= n_) return npos;
    if (p_[i] == '}') end = i + 1;
    return p_[i] == ',' ? skip(i + 1) : npos;
  }
  /// A time (`ts`, `dur`) at p_[i]: one past its token, or npos; `time` is
  /// what parse_micros_to_ns makes of the token.
  std::size_t time_at(std::size_t i, Time& time, std::int64_t& ns) const;
  std::string_view token(std::size_t at, std::size_t end) const { return {p_ + at, end - at}; }
  /// Whether every field kept has been seen.
  bool complete() const {
    return !ph_.empty() && !cat_.empty() && !name_.empty() && ts_ != Time::absent &&
           dur_ != Time::absent && !correlation_.empty() && !external_id_.empty() &&
           (quick_ == EventClass::launch ? !tid_.empty() : !device_.empty());
  }
  /// The category test at the event's first "cat" key (its opening quote at
  /// p_[key]), as parse_event's unparsed look at it decides: true when the
  /// scan goes on (a plain activity or launch), else `result` is set.
  bool decide(std::size_t key, std::size_t value, PlainRead& result);
  /// decide's test of a CPU op, by its name (parse_event's unparsed look at
  /// it): dropped unless it is a communication's host call.
  PlainRead cpu_op() const {
    const auto name = quick_string(event_, "name");
    return name && !comm_call_name(*name) ? PlainRead::dropped : PlainRead::other;
  }
  /// Whether the string at p_[i] is `key` (a quoted key of up to 14 letters).
  bool key16(std::size_t i, const Quoted& key) const {
#if defined(__SSE2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_ + i));
    const auto equal = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, key.bytes)));
    return (equal & key.mask) == key.mask && i + key.size < n_;
#else
    return i + key.size < n_ && std::memcmp(p_ + i, key.text.data(), key.size) == 0;
#endif
  }
  /// The "args" object at p_[i]: one past it, or npos; sets stop_.
  std::size_t args(std::size_t i);
  /// The members from p_[i] on as Kineto writes them (kKinetoOrder, one
  /// space after each ':' and ','), up to the first written otherwise: `i`
  /// is left at that member's key (npos: the object ended) and `next` at
  /// its place in the order. Returns the answer when they settle it.
  std::optional<PlainRead> kineto(std::size_t& i, std::size_t& next);
  PlainRead finish(PlainRecord& out) const;

  const char* p_;
  std::size_t n_;
  std::string_view event_;
  const EventFilter& filter_;
  std::string_view ph_, cat_, name_, tid_;
  std::string_view correlation_, external_id_, device_;  // in "args"
  Time ts_ = Time::absent, dur_ = Time::absent;
  std::int64_t ts_ns_ = 0, dur_ns_ = 0;
  bool strings_ = true;  // ph, cat and name were strings
  bool decided_ = false;
  const char* decided_cat_ = nullptr;  // the "cat" value decided on
  bool stop_ = false;
  EventClass quick_ = EventClass::none;
};

Key PlainScan::key_at(std::size_t i, std::size_t& close) const {
  // The keys kept have at most 4 letters: their closing quote is among the
  // 8 bytes after the opening one (the event's padding makes them readable).
  const std::uint64_t w = load8(p_ + i + 1);
  const std::uint64_t quote = bytes_equal(w, '"');
  const std::uint64_t backslash = bytes_equal(w, '\\');
  if ((quote | backslash) == 0) {
    close = string_close(i);  // a longer key: none kept
    return Key::other;
  }
  const int at = __builtin_ctzll(quote | backslash) / 8;
  close = i + 1 + static_cast<std::size_t>(at);
  if (((backslash >> (8 * at)) & 0x80) != 0 || close >= n_) {
    close = npos;
    return Key::other;
  }
  const std::uint64_t letters = at == 0 ? 0 : w & (~std::uint64_t{0} >> (64 - 8 * at));
  switch (at) {
    case 2:
      if (letters == word("ph")) return Key::ph;
      if (letters == word("ts")) return Key::ts;
      break;
    case 3:
      if (letters == word("cat")) return Key::cat;
      if (letters == word("tid")) return Key::tid;
      if (letters == word("dur")) return Key::dur;
      break;
    case 4:
      if (letters == word("name")) return Key::name;
      if (letters == word("args")) return Key::args;
      break;
    default:
      break;
  }
  return Key::other;
}

std::size_t PlainScan::value_end(std::size_t i) const {
  const char c = p_[i];
  if (c == '"') {
    const std::size_t e = string_close(i);
    return e == npos ? e : e + 1;
  }
  if (c == '{' || c == '[') {
    int depth = 0;
    for (std::size_t j = i; j < n_; ++j) {
      const char d = p_[j];
      if (d == '"') {
        j = string_close(j);
        if (j == npos) return j;
      } else if (d == '{' || d == '[') {
        ++depth;
      } else if (d == '}' || d == ']') {
        if (--depth == 0) return j + 1;
      }
    }
    return npos;
  }
  std::size_t j = i;
  while (!kDelimiter[p_[j]]) ++j;
  return j == i ? npos : j;
}

std::size_t PlainScan::time_at(std::size_t i, Time& time, std::int64_t& ns) const {
  // `[-]D.DDD` with at most 15 integer digits and 3 fraction digits (no
  // overflow, no rounding) read here; any other token by parse_micros_to_ns.
  const bool negative = p_[i] == '-';
  const std::size_t digits = i + (negative ? 1 : 0);
  std::size_t j = digits;
  std::uint64_t v = 0;  // wraps past 19 digits: used only up to 15
  while (is_digit(p_[j])) v = v * 10 + static_cast<unsigned>(p_[j++] - '0');
  bool read = j > digits && j - digits <= 15;
  int fraction = 3;  // the fraction's digits still to come (none written: whole microseconds)
  if (p_[j] == '.') {
    read = read && is_digit(p_[j + 1]);  // "5." is no number
    ++j;
    for (; fraction > 0 && is_digit(p_[j]); --fraction) {
      v = v * 10 + static_cast<unsigned>(p_[j++] - '0');
    }
  }
  if (read && kDelimiter[p_[j]]) {
    static constexpr std::uint64_t kScale[] = {1, 10, 100, 1000};
    const auto value = static_cast<std::int64_t>(v * kScale[fraction]);
    ns = negative ? -value : value;
    time = Time::read;
    return j;
  }
  const std::size_t e = value_end(i);
  if (e == npos) return e;
  const std::optional<std::int64_t> parsed = parse_micros_to_ns(token(i, e));
  time = parsed ? Time::read : Time::bad;
  ns = parsed.value_or(0);
  return e;
}

bool PlainScan::decide(std::size_t key, std::size_t value, PlainRead& result) {
  decided_ = true;
  result = PlainRead::other;
  // parse_event's look at "cat" is certain only for a plain string before
  // any '{' (a key inside "args" is not the event's).
  if (p_[value] != '"' || std::memchr(p_ + 1, '{', key - 1) != nullptr) return false;
  quick_ = class_of(cat_);
  decided_cat_ = cat_.data();
  if (quick_ == EventClass::none || (filter_.kernels_only && !second_pass_class(quick_))) {
    result = PlainRead::dropped;
    return false;
  }
  if (quick_ == EventClass::comm_call) {
    result = cpu_op();
    return false;
  }
  return quick_ == EventClass::kernel || quick_ == EventClass::launch;
}

std::size_t PlainScan::args(std::size_t i) {
  if (p_[i] != '{') return npos;
  i = skip(i + 1);
  if (p_[i] == '}') return i + 1;
  for (;;) {
    if (p_[i] != '"') return npos;
    // The keys kept, as Kineto writes them, at one compare each.
    std::string_view* field = nullptr;
    std::size_t key_end;
    if (key16(i, kCorrelationKey)) {
      field = &correlation_;
      key_end = i + kCorrelationKey.size - 1;
    } else if (key16(i, kExternalIdKey)) {
      field = &external_id_;
      key_end = i + kExternalIdKey.size - 1;
    } else {
      key_end = string_close(i);
      if (key_end == npos) return npos;
      if (is(token(i + 1, key_end), "device")) field = &device_;
    }
    i = key_end + 1;
    if (p_[i] != ':') {
      i = skip(i);
      if (p_[i] != ':') return npos;
    }
    i = skip_space(i + 1);
    if (i >= n_) return npos;
    const std::size_t e = number_end(i);
    if (e == npos) return npos;
    if (field != nullptr) *field = token(i, e);
    if (complete()) {
      stop_ = true;
      return e;
    }
    std::size_t end;
    i = next_member(e, end);
    if (i == npos) return end;
  }
}

std::optional<PlainRead> PlainScan::kineto(std::size_t& i, std::size_t& next) {
  // A member as Kineto writes it: its key, ": ", and a value ending before
  // ", " and the next key's quote (then `i` moves there), or before "}".
  const auto member = [&](const Expected& key) __attribute__((always_inline)) {
    return (load8(p_ + i) & key.mask) == key.text && i + key.size + 1 < n_;
  };
  const auto string_value = [&](std::size_t at, std::string_view & value)
      __attribute__((always_inline)) {
    if (p_[at] != '"') return npos;
    const std::size_t close = string_close(at);
    if (close != npos) value = token(at + 1, close);
    return close == npos ? npos : close + 1;
  };
  // Past a value ending at p_[e]: true, `i` at the next key, when ", \"" follows.
  const auto separator = [&](std::size_t e) __attribute__((always_inline)) {
    if (e + 2 >= n_ || p_[e] != ',' || p_[e + 1] != ' ' || p_[e + 2] != '"') return false;
    i = e + 2;
    ++next;
    return true;
  };
  std::size_t e;
  // "ph": "X"
  if (next != 0 || !member(kKinetoOrder[0]) || p_[i + 5] != ' ') return std::nullopt;
  e = string_value(i + 6, ph_);
  if (e == npos || !separator(e)) return std::nullopt;
  // "cat": "kernel": the category test
  if (!member(kKinetoOrder[1]) || p_[i + 6] != ' ') return std::nullopt;
  const std::size_t cat_key = i;
  e = string_value(i + 7, cat_);
  if (e == npos) return std::nullopt;
  if (is(cat_, "cpu_op")) {
    // Most events of a trace: a CPU op, dropped by its name, which is the
    // next member and so the first "name" key (nothing before it but "ph"
    // and "cat", and no '{').
    const std::size_t key = e + 2;
    std::string_view name;
    if (separator(e) && member(kKinetoOrder[2]) && p_[i + 7] == ' ' &&
        string_value(i + 8, name) != npos && std::memchr(p_ + 1, '{', key - 1) == nullptr) {
      next = kKinetoMembers;  // settled
      return comm_call_name(name) ? PlainRead::other : PlainRead::dropped;
    }
  }
  {
    PlainRead result;
    if (!decide(cat_key, cat_key + 7, result)) {
      next = kKinetoMembers;  // settled
      return result;
    }
  }
  if (!separator(e)) return std::nullopt;
  // "name": "cudaLaunchKernel"
  if (!member(kKinetoOrder[2]) || p_[i + 7] != ' ') return std::nullopt;
  e = string_value(i + 8, name_);
  if (e == npos || !separator(e)) return std::nullopt;
  // "pid": 1, "tid": 7
  if (!member(kKinetoOrder[3]) || p_[i + 6] != ' ') return std::nullopt;
  e = number_end(i + 7);
  if (e == npos || !separator(e)) return std::nullopt;
  if (!member(kKinetoOrder[4]) || p_[i + 6] != ' ' || p_[i + 7] == '"') return std::nullopt;
  e = number_end(i + 7);
  if (e == npos) return std::nullopt;
  tid_ = token(i + 7, e);
  if (!separator(e)) return std::nullopt;
  // "ts": 1000.100, "dur": 0.150
  if (!member(kKinetoOrder[5]) || p_[i + 5] != ' ') return std::nullopt;
  e = time_at(i + 6, ts_, ts_ns_);
  if (e == npos || !separator(e)) return std::nullopt;
  if (!member(kKinetoOrder[6]) || p_[i + 6] != ' ') return std::nullopt;
  e = time_at(i + 7, dur_, dur_ns_);
  if (e == npos || !separator(e)) return std::nullopt;
  // "args": {...}
  if (!member(kKinetoOrder[7]) || p_[i + 7] != ' ' || p_[i + 8] != '{') return std::nullopt;
  e = args(i + 8);
  if (e == npos) return PlainRead::other;
  ++next;
  if (stop_) {
    i = npos;
    return std::nullopt;
  }
  std::size_t end;
  i = next_member(e, end);
  if (i == npos && end == npos) return PlainRead::other;
  return std::nullopt;
}

PlainRead PlainScan::read(PlainRecord& out) {
  // An object as the tokenizer cuts it ends with its '}': no loop below
  // that stops at a '}' (blanks, digits, a number) runs past it.
  if (n_ < 2 || p_[n_ - 1] != '}') return PlainRead::other;
  std::size_t i = skip(0);
  if (i >= n_ || p_[i] != '{') return PlainRead::other;
  i = skip(i + 1);
  if (i < n_ && p_[i] == '}') i = npos;  // no member: the end, below
  std::size_t next = 0;                  // in kKinetoOrder
  if (i != npos) {
    if (const std::optional<PlainRead> settled = kineto(i, next)) return *settled;
  }
  while (i != npos) {
    if (i >= n_ || p_[i] != '"') return PlainRead::other;
    const std::size_t key_quote = i;
    Key key;
    if (next < kKinetoMembers &&
        (load8(p_ + i) & kKinetoOrder[next].mask) == kKinetoOrder[next].text &&
        i + kKinetoOrder[next].size < n_) {
      key = kKinetoOrder[next].key;
      i += kKinetoOrder[next++].size;
    } else {
      std::size_t key_end;
      key = key_at(i, key_end);
      if (key_end == npos) return PlainRead::other;
      i = skip(key_end + 1);
      if (i >= n_ || p_[i] != ':') return PlainRead::other;
      ++i;
      next = kKinetoMembers;  // out of Kineto's order: no more guesses
    }
    i = skip_space(i);
    if (i >= n_) return PlainRead::other;
    std::size_t e;
    switch (key) {
      case Key::args:
        if (!decided_) return PlainRead::other;  // a '{' before "cat"
        e = args(i);
        break;
      case Key::ts:
        e = time_at(i, ts_, ts_ns_);
        break;
      case Key::dur:
        e = time_at(i, dur_, dur_ns_);
        break;
      case Key::other:
        e = number_end(i);
        break;
      case Key::tid:
        e = number_end(i);
        if (e != npos) tid_ = p_[i] == '"' ? token(i + 1, e - 1) : token(i, e);
        break;
      default: {
        e = value_end(i);
        if (e == npos) return PlainRead::other;
        const bool text = p_[i] == '"';
        strings_ &= text;
        const std::string_view value = text ? token(i + 1, e - 1) : token(i, e);
        if (key == Key::ph) {
          ph_ = value;
        } else if (key == Key::name) {
          name_ = value;
        } else {
          cat_ = value;
          PlainRead result;
          if (!decided_ && !decide(key_quote, i, result)) return result;
        }
        break;
      }
    }
    if (e == npos) return PlainRead::other;
    if (stop_) break;
    std::size_t end;
    i = next_member(e, end);
    if (i == npos && end == npos) return PlainRead::other;
  }
  if (!decided_) {
    // No "cat" among the members: dropped when none is anywhere (parse_event's look).
    const auto cat = quick_string(event_, "cat");
    return cat && cat->empty() ? PlainRead::dropped : PlainRead::other;
  }
  return finish(out);
}

PlainRead PlainScan::finish(PlainRecord& out) const {
  // The category decided on, unless a later "cat" member said otherwise.
  if (!strings_ || cat_.empty() || (cat_.data() != decided_cat_ && class_of(cat_) != quick_)) {
    return PlainRead::other;
  }
  if (quick_ == EventClass::kernel && is(cat_, "kernel") && name_.size() >= 4 &&
      is(name_.substr(0, 4), "nccl")) {
    return PlainRead::other;  // its communication args: the whole parse
  }
  if (!is(ph_, "X")) return PlainRead::dropped;
  // A time that is not decimal microseconds (or a negative duration) is
  // malformed: parse_event says so.
  if (ts_ != Time::read || dur_ == Time::bad || (dur_ == Time::read && dur_ns_ < 0)) {
    return PlainRead::other;
  }
  const std::int64_t length = dur_ == Time::read ? dur_ns_ : 0;
  out = PlainRecord{};
  out.kind = quick_;
  out.start = ts_ns_;
  out.end = ts_ns_ + length;
  out.correlation = correlation_.empty() ? -1 : int_token(correlation_);
  if (!tid_.empty()) out.thread = int_token(tid_);  // given as text too
  if (!device_.empty()) {
    std::string_view d = device_;
    if (d.size() >= 2 && d.front() == '"') d = d.substr(1, d.size() - 2);
    int gpu = -1;
    const auto [e, ec] = std::from_chars(d.data(), d.data() + d.size(), gpu);
    out.gpu = ec == std::errc{} && e == d.data() + d.size() && !d.empty() ? gpu : -1;
  }
  if (quick_ == EventClass::launch) {
    if (out.correlation < 0) return PlainRead::dropped;
    if (!is(name_, "cudaLaunchKernel")) {  // the launch of nearly every kernel
      if (!launches_gpu_work(name_)) return PlainRead::dropped;
      out.graph = name_.find("GraphLaunch") != std::string_view::npos;
    }
  }
  return PlainRead::plain;
}

}  // namespace

PlainRead read_plain_event(std::string_view event, const EventFilter& filter, PlainRecord& record) {
  return PlainScan(event, filter).read(record);
}

namespace {

/// The event read_plain_event read whole.
ParsedEvent from_plain(const PlainRecord& plain, std::uint64_t offset, std::uint64_t ordinal) {
  ParsedEvent out;
  out.offset = offset;
  out.ordinal = ordinal;
  out.kind = plain.kind;
  out.start = plain.start;
  out.end = plain.end;
  out.correlation = plain.correlation;
  out.thread = plain.thread;
  out.gpu = plain.gpu;
  out.graph = plain.graph;
  return out;
}

/// What read_plain_event did not settle: the unparsed look at the category
/// (and a CPU op's name) where it is certain. True: the event is not kept.
bool dropped_unparsed(std::string_view event, const EventFilter& filter) {
  const auto cat = quick_string(event, "cat");
  if (!cat) return false;
  const EventClass quick = class_of(*cat);
  if (quick == EventClass::none) return true;
  if (filter.kernels_only && !second_pass_class(quick)) return true;
  if (quick == EventClass::comm_call) {
    const auto name = quick_string(event, "name");
    if (name && !comm_call_name(*name)) return true;
  }
  return false;
}

/// The fields simdjson read that decide what an event is (the others go
/// straight into the ParsedEvent). The views point into the event or the
/// parser's buffer: alive while the document is.
struct EventFields {
  std::string_view ph, cat, ts, dur;
  bool has_name = false;
  int rank_range[3] = {-1, -1, -1};  // Global rank start, stride, Group size
  int peer = -1;                     // Src Rank or Dst Rank
  int group_rank = -1;               // Rank (a send's or recv's: the peer's, in the group)
};

constexpr const char* kNotValidJson = "an event that is not valid JSON; skipped";

/// Reads an event's `args` into `out` and `f`: the malformed message, or
/// null.
const char* read_args(simdjson::ondemand::object& args, ParsedEvent& out, EventFields& f) {
  for (auto arg : args) {
    std::string_view arg_key;
    if (arg.unescaped_key().get(arg_key) != simdjson::SUCCESS) return kNotValidJson;
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
        comm_arg(arg_key, arg_value, out.comm, f.rank_range, f.peer, f.group_rank);
      }
    }
  }
  return nullptr;
}

/// Reads an event's object into `out` and `f`: the malformed message, or
/// null.
const char* read_fields(simdjson::ondemand::object& object, ParsedEvent& out, EventFields& f) {
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return kNotValidJson;
    simdjson::ondemand::value value;
    if (field.value().get(value) != simdjson::SUCCESS) return kNotValidJson;
    if (key == "ph") {
      if (value.get_string().get(f.ph) != simdjson::SUCCESS) f.ph = {};
    } else if (key == "cat") {
      if (value.get_string().get(f.cat) != simdjson::SUCCESS) f.cat = {};
    } else if (key == "name") {
      std::string_view n;
      if (value.get_string().get(n) == simdjson::SUCCESS) {
        out.name.assign(n);
        f.has_name = true;
      }
    } else if (key == "ts") {
      f.ts = trim_json_token(value.raw_json_token());
    } else if (key == "dur") {
      f.dur = trim_json_token(value.raw_json_token());
    } else if (key == "tid") {
      if (!int_arg(value, out.thread)) out.thread = -1;
    } else if (key == "args") {
      simdjson::ondemand::object args;
      if (value.get_object().get(args) != simdjson::SUCCESS) continue;
      if (const char* problem = read_args(args, out, f)) return problem;
    }
  }
  return nullptr;
}

/// `out`, read whole and timed (kind, start and end set), as its class
/// keeps it: nullopt for an event the reader does not use.
std::optional<ParsedEvent> kept_event(ParsedEvent out, const EventFields& f,
                                      const EventFilter& filter) {
  const std::string_view name = out.name;
  const EventClass kind = out.kind;
  switch (kind) {
    case EventClass::cpu_annotation:
      // ProcessGroupNCCL's `nccl:<op>` spans are user annotations in some
      // versions: the host calls of communications.
      if (f.has_name && name.starts_with(kNcclCallPrefix)) {
        out.kind = EventClass::comm_call;
        finish_comm_args(out.comm.get(), f.rank_range, f.peer, f.group_rank);
        return out;
      }
      [[fallthrough]];
    case EventClass::gpu_annotation:
      if (filter.kernels_only) return std::nullopt;
      if (!f.has_name || !wanted_name(name, filter.pattern)) return std::nullopt;
      if (name.starts_with(kStepPrefix)) {
        if (kind == EventClass::gpu_annotation) return std::nullopt;
        std::int64_t step = 0;
        if (!parse_json_int(name.substr(kStepPrefix.size()), step)) return std::nullopt;
        out.step = step;
      }
      return out;
    case EventClass::kernel:
      // Every activity counts in the kernel view, with or without its launch.
      out.communication = f.cat == "kernel" && name.starts_with("nccl");
      if (!out.communication) {
        out.comm.reset();
      } else {
        finish_comm_args(out.comm.get(), f.rank_range, f.peer, f.group_rank);
        if (!out.comm) out.comm = std::make_unique<CommKernel>();
        if (out.comm->op == CommOp::unknown) out.comm->op = op_of_kernel_name(name);
      }
      out.name.clear();
      return out;
    case EventClass::comm_call:
      if (!f.has_name || !comm_call_name(name)) return std::nullopt;
      finish_comm_args(out.comm.get(), f.rank_range, f.peer, f.group_rank);
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

}  // namespace

std::optional<ParsedEvent> parse_event(std::string_view event, std::uint64_t offset,
                                       std::uint64_t ordinal, simdjson::ondemand::parser& parser,
                                       const EventFilter& filter) {
  PlainRecord plain;
  switch (read_plain_event(event, filter, plain)) {
    case PlainRead::dropped:
      return std::nullopt;
    case PlainRead::plain:
      return from_plain(plain, offset, ordinal);
    case PlainRead::other:
      break;
  }
  if (dropped_unparsed(event, filter)) return std::nullopt;
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
  EventFields f;
  if (const char* problem = read_fields(object, out, f)) return malformed(problem);
  if (!f.has_name) out.name.clear();
  const EventClass kind = class_of(f.cat);
  if (kind == EventClass::none || f.ph != "X") return std::nullopt;
  if (filter.kernels_only && !second_pass_class(kind)) return std::nullopt;
  const std::optional<std::int64_t> start = parse_micros_to_ns(f.ts);
  const std::optional<std::int64_t> length =
      f.dur.empty() ? std::optional<std::int64_t>(0) : parse_micros_to_ns(f.dur);
  if (!start || !length || *length < 0) {
    return malformed(fmt::format(
        "event '{}' has a time that is not decimal microseconds "
        "(ts {}, dur {}); skipped",
        std::string_view(out.name).substr(0, 60), f.ts.substr(0, 30), f.dur.substr(0, 30)));
  }
  out.kind = kind;
  out.start = *start;
  out.end = *start + *length;
  return kept_event(std::move(out), f, filter);
}

}  // namespace pipescope
