#include "scan/job_line_regex.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>

#include "scan/hyperscan_form.h"

#if PIPESCOPE_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace pipescope {

struct JobLineRegex::Compiled {
  explicit Compiled(const std::string& regex) : re(regex, options()) {}

  static RE2::Options options() {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);  // bytes, as Hyperscan reads them
    o.set_log_errors(false);                       // the error is thrown, not printed
    return o;
  }

  ~Compiled() {
#if PIPESCOPE_HAVE_HYPERSCAN
    hs_free_database(database);
#endif
  }

  RE2 re;
#if PIPESCOPE_HAVE_HYPERSCAN
  hs_database_t* database = nullptr;
#endif
  // Capture group numbers (0: none).
  int type = 0, mb = 0, start = 0, end = 0, id = 0;
  int submatches = 0;  // the whole match and the groups up to the highest named one
};

namespace {

constexpr int kMaxJobIntegerDigits = 18;  // as Paddle's job lines: fits int64 with its sign

/// An optional '-' and 1 to 18 digits, the whole text (as Paddle's `Job
/// (ID)` and `micro_batch_id` are read).
std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  if (i == text.size() || text.size() - i > static_cast<std::size_t>(kMaxJobIntegerDigits)) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return negative ? -value : value;
}

std::string capture_list() {
  std::string list;
  for (std::string_view name : JobLineRegex::kRequired) {
    list += list.empty() ? "" : ", ";
    list += name;
  }
  list += " (required) and";
  for (std::string_view name : JobLineRegex::kOptional) {
    list += ' ';
    list += name;
  }
  return list;
}

}  // namespace

JobLineRegex::Kinds JobLineRegex::parse_kinds(std::string_view text) {
  Kinds kinds;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    const std::string_view item = text.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      throw std::invalid_argument("job kind '" + std::string(item) +
                                  "' is not OP=TYPE (e.g. fwd=forward)");
    }
    kinds[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  return kinds;
}

JobLineRegex::JobLineRegex(const std::string& regex, TimeUnit unit, Kinds kinds, Search search)
    : compiled_(std::make_unique<Compiled>(regex)),
      regex_(regex),
      unit_(unit),
      kinds_(std::move(kinds)) {
  const RE2& re = compiled_->re;
  if (!re.ok()) {
    std::string message = re.error();
    // RE2 of Debian 12 knows `(?P<name>` only, not `(?<name>`.
    for (std::size_t at = regex.find("(?<"); at != std::string::npos;
         at = regex.find("(?<", at + 1)) {
      if (at + 3 < regex.size() && std::isalpha(static_cast<unsigned char>(regex[at + 3]))) {
        message += " (write a named capture as (?P<name>...))";
        break;
      }
    }
    throw std::invalid_argument(message);
  }
  const std::map<std::string, int>& groups = re.NamedCapturingGroups();
  for (const auto& group : groups) {
    // Not the structured binding: clang 14 (the fuzz build) cannot capture one.
    const std::string& name = group.first;
    const auto known = [&](std::string_view n) { return n == name; };
    if (std::none_of(std::begin(kRequired), std::end(kRequired), known) &&
        std::none_of(std::begin(kOptional), std::end(kOptional), known)) {
      throw std::invalid_argument("unknown named capture '" + name + "' (the captures are " +
                                  capture_list() + ")");
    }
  }
  for (std::string_view name : kRequired) {
    if (!groups.contains(std::string(name))) {
      throw std::invalid_argument("it has no named capture '" + std::string(name) + "' ((?P<" +
                                  std::string(name) + ">...)); the captures are " + capture_list());
    }
  }
  auto number = [&](std::string_view name) {
    const auto it = groups.find(std::string(name));
    return it == groups.end() ? 0 : it->second;
  };
  Compiled& c = *compiled_;
  c.type = number("type");
  c.mb = number("mb");
  c.start = number("start");
  c.end = number("end");
  c.id = number("id");
  c.submatches = 1 + std::max({c.type, c.mb, c.start, c.end, c.id});
#if PIPESCOPE_HAVE_HYPERSCAN
  if (search == Search::hyperscan) {
    // Per line, as RE2 reads it: ^ and $ at line edges. Prefilter mode: a
    // construct Hyperscan lacks is widened, never narrowed, and RE2 decides.
    const std::optional<std::string> form = hyperscan_form(regex);
    hs_compile_error_t* error = nullptr;
    if (form && hs_compile(form->c_str(), HS_FLAG_MULTILINE | HS_FLAG_PREFILTER, HS_MODE_BLOCK,
                           nullptr, &c.database, &error) != HS_SUCCESS) {
      // E.g. an expression that matches the empty string: RE2 reads every line.
      hs_free_compile_error(error);
      c.database = nullptr;
    }
  }
#else
  (void)search;
#endif
}

JobLineRegex::~JobLineRegex() = default;

JobLineRegex::Search JobLineRegex::search() const {
#if PIPESCOPE_HAVE_HYPERSCAN
  if (compiled_->database != nullptr) return Search::hyperscan;
#endif
  return Search::every_line;
}

bool JobLineRegex::has_id() const { return compiled_->id > 0; }

JobLineRegex::Scratch::Scratch(const JobLineRegex& regex)
#if PIPESCOPE_HAVE_HYPERSCAN
    : hyperscan_(regex.compiled_->database){}
#else
    : hyperscan_(nullptr) {
  (void)regex;
}
#endif

      void JobLineRegex::every_line(std::string_view block, std::vector<LineSpan> & out) {
  std::size_t begin = 0;
  while (begin < block.size()) {
    const void* nl = std::memchr(block.data() + begin, '\n', block.size() - begin);
    const std::size_t end = nl ? static_cast<const char*>(nl) - block.data() : block.size();
    out.push_back({begin, end});
    begin = end + 1;
  }
}

#if PIPESCOPE_HAVE_HYPERSCAN
namespace {

/// The lines of one Hyperscan scan's matches, each recorded once.
struct HitLines {
  std::string_view block;
  std::size_t base = 0;  // the piece's offset in the block
  std::vector<LineSpan>* out = nullptr;
  std::size_t first = 0;  // out's first span of this scan
  bool ordered = true;    // every new line after the last one
};

int on_hit(unsigned /*id*/, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
           void* context) {
  HitLines& h = *static_cast<HitLines*>(context);
  const std::size_t end_offset = h.base + static_cast<std::size_t>(to);
  // The match's last byte; a match ending on a '\n' belongs to the line
  // that '\n' ends.
  const std::size_t last = end_offset > 0 ? end_offset - 1 : 0;
  std::vector<LineSpan>& out = *h.out;
  if (out.size() > h.first) {
    const LineSpan& previous = out.back();
    // Matches arrive in order of their end: most land on the line just found.
    if (last >= previous.begin && last <= previous.end) return 0;
    if (last < previous.begin) h.ordered = false;
  }
  const char* data = h.block.data();
  const void* nl_before = last > 0 ? memrchr(data, '\n', last) : nullptr;
  const std::size_t begin = nl_before ? static_cast<const char*>(nl_before) - data + 1 : 0;
  const void* nl_after = std::memchr(data + last, '\n', h.block.size() - last);
  const std::size_t end = nl_after ? static_cast<const char*>(nl_after) - data : h.block.size();
  out.push_back({begin, end});
  return 0;
}

}  // namespace
#endif

void JobLineRegex::candidates(std::string_view block, Scratch& scratch,
                              std::vector<LineSpan>& out) const {
  if (block.empty()) return;
#if PIPESCOPE_HAVE_HYPERSCAN
  if (compiled_->database != nullptr) {
    HitLines hits{block, 0, &out, out.size(), true};
    scan_block(compiled_->database, block, scratch.hyperscan_, on_hit, &hits, &hits.base);
    if (!hits.ordered) {
      const auto first = out.begin() + static_cast<std::ptrdiff_t>(hits.first);
      std::sort(first, out.end(),
                [](const LineSpan& a, const LineSpan& b) { return a.begin < b.begin; });
      out.erase(std::unique(first, out.end()), out.end());
    }
    return;
  }
#endif
  (void)scratch;
  every_line(block, out);
}

bool JobLineRegex::matches(std::string_view line) const {
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), compiled_->re);
}

LineError JobLineRegex::parse(std::string_view line, JobLine& out) const {
  const Compiled& c = *compiled_;
  // Most expressions have a few groups: no allocation per line for them.
  std::array<re2::StringPiece, 12> fixed;
  std::vector<re2::StringPiece> many;
  re2::StringPiece* m = fixed.data();
  if (static_cast<std::size_t>(c.submatches) > fixed.size()) {
    many.resize(static_cast<std::size_t>(c.submatches));
    m = many.data();
  }
  if (!c.re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED, m,
                  c.submatches)) {
    return LineError::no_literal;
  }
  // A group that took no part has no data: empty text, rejected below.
  const auto text = [&](int group) { return std::string_view(m[group].data(), m[group].size()); };
  std::string_view type = text(c.type);
  if (type.empty()) return LineError::empty_type_capture;
  if (!kinds_.empty()) {
    if (const auto it = kinds_.find(type); it != kinds_.end()) type = it->second;
  }
  const auto micro_batch = parse_integer(text(c.mb));
  if (!micro_batch) return LineError::bad_micro_batch_capture;
  std::optional<std::int64_t> job_id = 0;
  if (c.id > 0) {
    job_id = parse_integer(text(c.id));
    if (!job_id) return LineError::bad_job_id_capture;
  }
  const auto start = parse_decimal_to_ns(text(c.start), unit_);
  if (!start) return LineError::bad_start_capture;
  const auto end = parse_decimal_to_ns(text(c.end), unit_);
  if (!end) return LineError::bad_end_capture;
  if (*end < *start) return LineError::capture_end_before_start;
  out.job_id = *job_id;
  out.micro_batch = *micro_batch;
  out.start_ns = *start;
  out.end_ns = *end;
  out.type = type;
  return LineError::none;
}

}  // namespace pipescope
