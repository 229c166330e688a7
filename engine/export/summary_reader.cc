#include "export/summary_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "export/figure_registry.h"
#include "export/summary_fields.h"
#include "model/errors.h"

namespace pipescope {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;
using summary_fields::Key;
using summary_fields::kIsOptional;
using summary_fields::kIsScalar;
using summary_fields::kIsVector;
using summary_fields::Rule;

// Required fields: every schema problem becomes one readable error.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("{}: {}", source_, what));
  }

  /// `name`, failing when `o` has no such field.
  std::string_view key(object o, std::string_view name, std::string_view where) const {
    field(o, name, where);
    return name;
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

// Optional fields: absent or of another type, they are left as they are.

// Each returns whether it found the field as its type.
bool opt(object o, std::string_view name, std::int64_t& out) {
  const auto e = o[name];
  std::int64_t v = 0;
  std::uint64_t u = 0;
  if (e.get(v) == simdjson::SUCCESS) {
    out = v;
  } else if (e.get(u) == simdjson::SUCCESS && u <= INT64_MAX) {
    out = static_cast<std::int64_t>(u);
  } else {
    return false;
  }
  return true;
}
bool opt(object o, std::string_view name, int& out) {
  std::int64_t v = out;
  const bool found = opt(o, name, v);
  out = static_cast<int>(v);
  return found;
}
bool opt(object o, std::string_view name, std::uint64_t& out) {
  std::uint64_t v = 0;
  if (o[name].get(v) != simdjson::SUCCESS) return false;
  out = v;
  return true;
}
bool opt(object o, std::string_view name, double& out) {
  const auto e = o[name];
  double v = 0;
  std::int64_t i = 0;
  if (e.get(v) == simdjson::SUCCESS) {
    out = v;
  } else if (e.get(i) == simdjson::SUCCESS) {
    out = static_cast<double>(i);
  } else {
    return false;
  }
  return true;
}
bool opt(object o, std::string_view name, bool& out) {
  bool v = false;
  if (o[name].get(v) != simdjson::SUCCESS) return false;
  out = v;
  return true;
}
bool opt(object o, std::string_view name, std::string& out) {
  std::string_view v;
  if (o[name].get(v) != simdjson::SUCCESS) return false;
  out = std::string(v);
  return true;
}
// A nullable number: null, absent or of another type read as unset.
template <typename T>
void opt(object o, std::string_view name, std::optional<T>& out) {
  T v{};
  bool present = false;
  const auto e = o[name];
  if constexpr (std::is_same_v<T, double>) {
    std::int64_t i = 0;
    if (e.get(v) == simdjson::SUCCESS) {
      present = true;
    } else if (e.get(i) == simdjson::SUCCESS) {
      v = static_cast<double>(i);
      present = true;
    }
  } else {
    present = e.get(v) == simdjson::SUCCESS;
  }
  if (present) {
    out = v;
  } else {
    out.reset();
  }
}

std::optional<object> opt_object(object o, std::string_view name) {
  object v;
  if (o[name].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}
std::optional<array> opt_array(object o, std::string_view name) {
  array v;
  if (o[name].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

// Reads the keys of summary_fields.h into a struct, each as its Rule says.
// It keeps the path of the object it is in, which names the object in an
// error ("a steps[].devices[] entry", "the summary").
class FieldReader {
 public:
  FieldReader(const Reader& r, object o, std::string path) : r_(r), o_(o), path_(std::move(path)) {}

  template <typename T>
  void operator()(Key key, T& member) {
    if constexpr (kIsOptional<T>) {
      using V = typename T::value_type;
      if constexpr (kIsScalar<V>) {
        opt(o_, key.name, member);
      } else {
        // A section or a nullable object: set when it is there as its type.
        member.reset();
        if constexpr (kIsVector<V>) {
          if (opt_array(o_, key.name)) {
            member.emplace();
            read_list(key.name, *member, /*required=*/false);
          }
        } else if (const std::optional<object> inner = opt_object(o_, key.name)) {
          member.emplace();
          read_object(*inner, member_path(key.name), *member);
        }
      }
    } else if constexpr (kIsVector<T>) {
      read_list(key.name, member, key.rule == Rule::required);
    } else if constexpr (kIsScalar<T>) {
      if (key.rule == Rule::required) {
        required(key.name, member);
      } else {
        opt(o_, key.name, member);
      }
    } else if (const std::optional<object> inner = opt_object(o_, key.name)) {
      read_object(*inner, member_path(key.name), member);
    }
  }

  template <typename T>
  void inline_fields(T& member) {
    summary_fields::fields(*this, member);
  }
  template <typename T>
  void inline_optional(std::optional<T>& member, std::string_view present_when) {
    member.reset();
    if (!opt_object(o_, present_when)) return;
    member.emplace();
    summary_fields::fields(*this, *member);
  }
  template <typename T>
  void keyed(Key key, std::vector<T>& list, std::string T::*name) {
    list.clear();
    const std::optional<object> map = opt_object(o_, key.name);
    if (!map) return;
    const std::string path = member_path(key.name);
    for (const auto field : *map) {
      T item;
      item.*name = std::string(field.key);
      read_object(r_.obj(field.value, where(path)), path, item);
      list.push_back(std::move(item));
    }
  }
  /// Each number of the object, an integer as such; a ratio that reads
  /// as one (0, 1) as the double its registered figure holds.
  void named_values(Key key, std::vector<NamedFigure>& list) {
    list.clear();
    const std::optional<object> map = opt_object(o_, key.name);
    if (!map) return;
    for (const auto field : *map) {
      NamedFigure figure{std::string(field.key), std::int64_t{0}};
      std::int64_t integer = 0;
      double number = 0;
      const FigureSpec* spec = find_figure(figure.key);
      const bool ratio = spec != nullptr && spec->unit == FigureUnit::ratio;
      if (field.value.get(integer) == simdjson::SUCCESS && !ratio) {
        figure.value = integer;
      } else if (field.value.get(number) == simdjson::SUCCESS) {
        figure.value = number;
      } else if (field.value.get(integer) == simdjson::SUCCESS) {
        figure.value = static_cast<double>(integer);
      } else {
        continue;  // not a number: not a figure this reader knows
      }
      list.push_back(std::move(figure));
    }
  }
  void pair(Key key, int& a, int& b) {
    const std::optional<array> list = opt_array(o_, key.name);
    if (!list) return;
    std::int64_t v = 0;
    if (list->at(0).get(v) == simdjson::SUCCESS) a = static_cast<int>(v);
    if (list->at(1).get(v) == simdjson::SUCCESS) b = static_cast<int>(v);
  }
  template <typename T, typename Make>
  void derived(Key key, T& member, Make&& make) {
    if (!opt(o_, key.name, member)) member = make();
  }
  template <typename T>
  void step_list(Key key, std::vector<T>& list, StepList /*which*/) {
    (*this)(key, list);
  }

  /// "the summary" at the root; "a devices[] entry", "an inputs[] entry".
  static std::string where(const std::string& path) {
    if (path.empty()) return "the summary";
    const bool vowel = std::string_view("aeiou").find(path.front()) != std::string_view::npos;
    return fmt::format("{} {} entry", vowel ? "an" : "a", path);
  }

 private:
  std::string member_path(std::string_view name) const {
    return path_.empty() ? std::string(name) : fmt::format("{}.{}", path_, name);
  }

  template <typename T>
  void read_object(object o, std::string path, T& out) const {
    FieldReader inner(r_, o, std::move(path));
    summary_fields::fields(inner, out);
  }

  // Each element of the array `name`: objects (anything else is an error),
  // or numbers or strings (anything else is skipped).
  template <typename E>
  void read_list(std::string_view name, std::vector<E>& out, bool is_required) const {
    out.clear();
    std::optional<array> list;
    if (is_required) {
      list = r_.list(o_, name, where(path_));
    } else {
      list = opt_array(o_, name);
    }
    if (!list) return;
    const std::string path = fmt::format("{}[]", member_path(name));
    for (element e : *list) {
      if constexpr (std::is_same_v<E, std::string>) {
        std::string_view text;
        if (e.get(text) == simdjson::SUCCESS) out.emplace_back(text);
      } else if constexpr (std::is_arithmetic_v<E>) {
        std::int64_t v = 0;
        if (e.get(v) == simdjson::SUCCESS) out.push_back(static_cast<E>(v));
      } else {
        E item;
        read_object(r_.obj(e, where(path)), path, item);
        out.push_back(std::move(item));
      }
    }
  }

  void required(std::string_view name, std::string& out) const {
    out = r_.string(o_, name, where(path_));
  }
  void required(std::string_view name, double& out) const {
    out = r_.number(o_, name, where(path_));
  }
  void required(std::string_view name, std::int64_t& out) const {
    out = r_.int64(o_, name, where(path_));
  }
  void required(std::string_view name, int& out) const {
    out = static_cast<int>(r_.int64(o_, name, where(path_)));
  }
  // No summary key of these types is required yet; were one, it reads so.
  void required(std::string_view name, bool& out) const {
    if (!opt(o_, r_.key(o_, name, where(path_)), out)) {
      r_.fail(fmt::format("\"{}\" of {} is not true or false", name, where(path_)));
    }
  }
  void required(std::string_view name, std::uint64_t& out) const {
    if (!opt(o_, r_.key(o_, name, where(path_)), out)) {
      r_.fail(fmt::format("\"{}\" of {} is not a count", name, where(path_)));
    }
  }

  const Reader& r_;
  object o_;
  std::string path_;
};

}  // namespace

SummaryFigures parse_summary_figures(std::string_view json, const std::string& source) {
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

  SummaryFigures f;
  FieldReader fields(r, root, "");
  summary_fields::fields(fields, f);
  return f;
}

SummaryFigures read_summary_figures(const std::string& path) {
  simdjson::padded_string text;
  if (auto error = simdjson::padded_string::load(path).get(text)) {
    throw InputError(
        fmt::format("{}: cannot read summary ({})", path, simdjson::error_message(error)));
  }
  return parse_summary_figures(std::string_view(text), path);
}

}  // namespace pipescope
