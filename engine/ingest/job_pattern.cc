#include "ingest/job_pattern.h"

#include <fmt/core.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <vector>

namespace pipescope {

namespace {

/// The named groups a pattern may have, in the order the docs give them.
constexpr std::string_view kGroups[] = {"op", "mb", "stage", "chunk"};

/// Syntax RE2 does not take, with what it is: RE2 itself only says "invalid
/// perl operator", which names neither the construct nor why.
struct Unsupported {
  std::string_view opener;
  std::string_view what;
};
constexpr Unsupported kUnsupported[] = {
    {"(?=", "lookahead"},
    {"(?!", "negative lookahead"},
    {"(?<=", "lookbehind"},
    {"(?<!", "negative lookbehind"},
    {"(?P=", "a back-reference by name"},
};

[[noreturn]] void reject(std::string_view what, std::string_view text) {
  throw std::invalid_argument(
      fmt::format("{} ('{}') is not supported: job patterns are RE2 expressions, which match in "
                  "linear time and so have no lookaround or back-references",
                  what, text));
}

/// The pattern in RE2's spelling, and the names of its groups in order.
/// RE2 of Debian 12 knows `(?P<name>` only: `(?<name>` (the spelling of
/// ECMAScript, Perl and Python 3.12) is rewritten to it. Escapes and
/// character classes are copied as they are, so a `(` in them is no group.
std::string to_re2_syntax(const std::string& pattern, std::vector<std::string>& names) {
  std::string out;
  out.reserve(pattern.size() + 8);
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
      // A ']' first in the class (after a '^') is a member, not its end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c != '(') {
      out += c;
      continue;
    }
    const std::string_view rest(pattern.data() + i, pattern.size() - i);
    for (const Unsupported& u : kUnsupported) {
      if (rest.starts_with(u.opener)) reject(u.what, u.opener);
    }
    std::size_t name_at = 0;
    if (rest.starts_with("(?P<")) name_at = 4;
    if (rest.starts_with("(?<")) name_at = 3;
    if (name_at == 0) {
      out += c;
      continue;
    }
    const std::size_t close = rest.find('>', name_at);
    if (close == std::string_view::npos) {
      throw std::invalid_argument(fmt::format("unclosed group name at '{}'", rest.substr(0, 20)));
    }
    names.emplace_back(rest.substr(name_at, close - name_at));
    out += "(?P<";
    out += names.back();
    out += '>';
    i += close;
  }
  return out;
}

/// Kinds text ("F=forward,B=backward") to its map.
std::map<std::string, std::string, std::less<>> parse_kinds(std::string_view text) {
  std::map<std::string, std::string, std::less<>> kinds;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    const std::string_view item = text.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || !is_trace_job_type(item.substr(eq + 1))) {
      throw std::invalid_argument(fmt::format("job kind '{}' is not OP=TYPE with TYPE one of {}",
                                              item, trace_job_type_list()));
    }
    kinds[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  return kinds;
}

}  // namespace

struct JobPattern::Impl {
  explicit Impl(const std::string& re2_pattern) : regex(re2_pattern, options()) {}

  static RE2::Options options() {
    RE2::Options o;
    o.set_log_errors(false);  // the error is thrown, not printed
    return o;
  }

  RE2 regex;
  // Capture group numbers, 0 for a group the pattern lacks.
  int op = 0, mb = 0, stage = 0, chunk = 0;
  int submatches = 0;  // the whole match and groups up to the highest named one
  std::map<std::string, std::string, std::less<>> kinds;
};

JobPattern::JobPattern(const std::string& pattern, const std::string& kinds) {
  std::vector<std::string> names;
  const std::string re2_pattern = to_re2_syntax(pattern, names);
  // A pattern RE2 cannot take is reported first: what its groups are named
  // says nothing useful about a pattern that does not compile.
  impl_ = std::make_unique<Impl>(re2_pattern);
  const RE2& regex = impl_->regex;
  if (!regex.ok()) {
    const std::string& arg = regex.error_arg();
    if (regex.error_code() == RE2::ErrorBadEscape && arg.size() == 2 &&
        ((arg[1] >= '1' && arg[1] <= '9') || arg[1] == 'k' || arg[1] == 'g')) {
      reject("a back-reference", arg);
    }
    throw std::invalid_argument(regex.error());
  }
  std::map<std::string_view, int> seen;
  for (const std::string& name : names) {
    if (std::find(std::begin(kGroups), std::end(kGroups), name) == std::end(kGroups)) {
      throw std::invalid_argument(
          fmt::format("unknown group '{}' (the groups are op, mb, stage and chunk)", name));
    }
    if (++seen[name] == 2)
      throw std::invalid_argument(fmt::format("group '{}' is named twice", name));
  }
  if (!seen.contains("op")) {
    throw std::invalid_argument("it has no named group 'op' ((?P<op>...))");
  }
  const std::map<std::string, int>& groups = regex.NamedCapturingGroups();
  auto number = [&](std::string_view name) {
    const auto it = groups.find(std::string(name));
    return it == groups.end() ? 0 : it->second;
  };
  impl_->op = number("op");
  impl_->mb = number("mb");
  impl_->stage = number("stage");
  impl_->chunk = number("chunk");
  impl_->submatches = 1 + std::max({impl_->op, impl_->mb, impl_->stage, impl_->chunk});
  impl_->kinds = parse_kinds(kinds);
}

JobPattern::~JobPattern() = default;
JobPattern::JobPattern(JobPattern&&) noexcept = default;
JobPattern& JobPattern::operator=(JobPattern&&) noexcept = default;

bool JobPattern::has_micro_batch() const { return impl_->mb > 0; }

std::optional<TraceAction> JobPattern::match(std::string_view name) const {
  const Impl& p = *impl_;
  // Most patterns have a few groups: no allocation per name for them.
  std::array<re2::StringPiece, 8> fixed;
  std::vector<re2::StringPiece> many;
  re2::StringPiece* m = fixed.data();
  if (static_cast<std::size_t>(p.submatches) > fixed.size()) {
    many.resize(static_cast<std::size_t>(p.submatches));
    m = many.data();
  }
  if (!p.regex.Match(re2::StringPiece(name.data(), name.size()), 0, name.size(), RE2::UNANCHORED, m,
                     p.submatches)) {
    return std::nullopt;
  }
  const std::string_view op(m[p.op].data(), m[p.op].size());
  TraceAction action;
  if (const auto it = p.kinds.find(op); it != p.kinds.end()) {
    action.type = it->second;
  } else if (is_trace_job_type(op)) {
    action.type = op;
  } else {
    return std::nullopt;
  }
  // A group that took no part in the match has no data: its field stays -1.
  auto number = [&](int group, std::int64_t& out) {
    if (group == 0 || m[group].data() == nullptr) return true;
    return parse_label_number(std::string_view(m[group].data(), m[group].size()), out);
  };
  if (!number(p.mb, action.micro_batch) || !number(p.stage, action.stage) ||
      !number(p.chunk, action.chunk)) {
    return std::nullopt;
  }
  return action;
}

}  // namespace pipescope
