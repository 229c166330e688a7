#include "scan/job_line_parser.h"

#include <cstring>

#include "scan/decimal_time.h"

namespace pipescope {

namespace {

constexpr int kMaxIntegerDigits = 18;  // fits int64 with room for the sign

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// A forward-only reader over the text after the literal.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  bool at_end() const { return pos_ == text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  /// Skips spaces, then consumes `token` if it is next.
  bool expect(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  /// `name ws* = ` after an optional leading separator already consumed.
  bool expect_field(std::string_view name) { return expect(name) && expect("="); }

  std::optional<std::int64_t> integer() {
    skip_space();
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    std::int64_t value = 0;
    int digits = 0;
    while (!at_end() && is_digit(text_[pos_])) {
      if (++digits > kMaxIntegerDigits) return std::nullopt;
      value = value * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (digits == 0) return std::nullopt;
    return negative ? -value : value;
  }

  /// The text up to (not including) the next ',' or the end, trimmed.
  std::string_view until_comma() {
    const std::size_t begin = pos_;
    const std::size_t comma = text_.find(',', pos_);
    pos_ = comma == std::string_view::npos ? text_.size() : comma;
    std::string_view field = text_.substr(begin, pos_ - begin);
    while (!field.empty() && is_space(field.front())) field.remove_prefix(1);
    while (!field.empty() && is_space(field.back())) field.remove_suffix(1);
    return field;
  }

  /// A millisecond timestamp token: the run of digits and dots, then it must
  /// be followed by a field end (space, ',', end of line).
  std::optional<std::int64_t> millis() {
    skip_space();
    const std::size_t begin = pos_;
    while (!at_end() && text_[pos_] != ',' && !is_space(text_[pos_])) ++pos_;
    return parse_millis_to_ns(text_.substr(begin, pos_ - begin));
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string_view describe(LineError error) {
  switch (error) {
    case LineError::none:
      return "ok";
    case LineError::no_literal:
      return "not a job line";
    case LineError::bad_job_id:
      return "job id missing or not an integer in 'Job (ID)'";
    case LineError::missing_type:
      return "missing 'type = ' field";
    case LineError::empty_type:
      return "empty job type";
    case LineError::missing_micro_batch:
      return "missing 'micro_batch_id = ' field";
    case LineError::bad_micro_batch:
      return "micro_batch_id is not an integer";
    case LineError::missing_start_time:
      return "missing 'job_start_time = ' field";
    case LineError::bad_start_time:
      return "job_start_time is not a millisecond timestamp";
    case LineError::missing_end_time:
      return "missing 'job_end_time = ' field";
    case LineError::bad_end_time:
      return "job_end_time is not a millisecond timestamp";
    case LineError::end_before_start:
      return "job_end_time is before job_start_time";
    case LineError::line_too_long:
      return "line longer than the line limit; skipped";
    case LineError::empty_type_capture:
      return "the job-line regex's 'type' capture is empty";
    case LineError::bad_micro_batch_capture:
      return "the job-line regex's 'mb' capture is not an integer";
    case LineError::bad_job_id_capture:
      return "the job-line regex's 'id' capture is not an integer";
    case LineError::bad_start_capture:
      return "the job-line regex's 'start' capture is not a plain decimal number "
             "(DIGITS[.DIGITS], in range)";
    case LineError::bad_end_capture:
      return "the job-line regex's 'end' capture is not a plain decimal number "
             "(DIGITS[.DIGITS], in range)";
    case LineError::capture_end_before_start:
      return "the job-line regex's 'end' capture is before its 'start'";
  }
  return "unknown error";
}

std::string_view strip_ansi(std::string_view line, std::string& out) {
  if (line.find('\x1b') == std::string_view::npos) return line;
  out.clear();
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      std::size_t j = i + 2;
      // Parameter and intermediate bytes (0x20-0x3F), then one final byte.
      while (j < line.size() && static_cast<unsigned char>(line[j]) >= 0x20 &&
             static_cast<unsigned char>(line[j]) <= 0x3F) {
        ++j;
      }
      if (j < line.size() && static_cast<unsigned char>(line[j]) >= 0x40 &&
          static_cast<unsigned char>(line[j]) <= 0x7E) {
        i = j + 1;
        continue;
      }
    }
    out.push_back(line[i]);
    ++i;
  }
  return out;
}

LineError parse_job_line(std::string_view line, JobLine& out, std::string& scratch) {
  line = strip_ansi(line, scratch);
  // CRLF line endings, and CR CR LF (a Windows copy of a CRLF file): every trailing CR.
  while (!line.empty() && line.back() == '\r') line.remove_suffix(1);

  const std::size_t at = line.find(kJobLineLiteral);
  if (at == std::string_view::npos) return LineError::no_literal;
  // Start at "Job" so the cursor sees `Job (ID)`.
  Cursor cursor(line.substr(at + kJobLineLiteral.size() - 3));

  if (!cursor.expect("Job") || !cursor.expect("(")) return LineError::bad_job_id;
  const auto job_id = cursor.integer();
  if (!job_id || !cursor.expect(")")) return LineError::bad_job_id;

  if (!cursor.expect(",") || !cursor.expect_field("type")) return LineError::missing_type;
  const std::string_view type = cursor.until_comma();
  if (type.empty()) return LineError::empty_type;

  if (!cursor.expect(",") || !cursor.expect_field("micro_batch_id")) {
    return LineError::missing_micro_batch;
  }
  const auto micro_batch = cursor.integer();
  if (!micro_batch) return LineError::bad_micro_batch;

  if (!cursor.expect(",")) {
    // Something other than the separator right after the number: "12x".
    cursor.skip_space();
    return cursor.at_end() ? LineError::missing_start_time : LineError::bad_micro_batch;
  }
  if (!cursor.expect_field("job_start_time")) return LineError::missing_start_time;
  const auto start = cursor.millis();
  if (!start) return LineError::bad_start_time;

  if (!cursor.expect(",") || !cursor.expect_field("job_end_time")) {
    return LineError::missing_end_time;
  }
  const auto end = cursor.millis();
  if (!end) return LineError::bad_end_time;
  cursor.skip_space();
  if (!cursor.at_end() && cursor.peek() != ',') return LineError::bad_end_time;
  if (*end < *start) return LineError::end_before_start;

  out.job_id = *job_id;
  out.micro_batch = *micro_batch;
  out.start_ns = *start;
  out.end_ns = *end;
  out.type = type;
  return LineError::none;
}

namespace {

/// Consumes `token` at `p` exactly.
bool take(const char*& p, const char* end, std::string_view token) {
  if (static_cast<std::size_t>(end - p) < token.size() ||
      std::memcmp(p, token.data(), token.size()) != 0) {
    return false;
  }
  p += token.size();
  return true;
}

/// An optional '-' and 1 to 18 digits at `p`, as Cursor::integer accepts them.
bool take_integer(const char*& p, const char* end, std::int64_t& value) {
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* const digits = p;
  std::uint64_t magnitude = 0;  // unsigned: more than 18 digits wraps harmlessly before the check
  while (p < end && is_digit(*p)) {
    magnitude = magnitude * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
  }
  const std::ptrdiff_t n = p - digits;
  if (n == 0 || n > kMaxIntegerDigits) return false;
  value = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
  return true;
}

}  // namespace

bool parse_job_line_fast(std::string_view line, std::size_t literal, JobLine& out) {
  const char* p = line.data() + literal + kJobLineLiteral.size();
  const char* const end = line.data() + line.size();
  std::int64_t job_id = 0;
  if (!take(p, end, " (") || !take_integer(p, end, job_id) || !take(p, end, "), type = ")) {
    return false;
  }
  // TYPE: up to the next ',', without surrounding blanks or escape codes
  // (which the full grammar trims or strips).
  const char* const type_begin = p;
  while (p < end && *p != ',') {
    if (*p == '\x1b') return false;
    ++p;
  }
  if (p == type_begin || is_space(*type_begin) || is_space(p[-1])) return false;
  const std::string_view type(type_begin, static_cast<std::size_t>(p - type_begin));
  std::int64_t micro_batch = 0;
  if (!take(p, end, ", micro_batch_id = ") || !take_integer(p, end, micro_batch) ||
      !take(p, end, ", job_start_time = ")) {
    return false;
  }
  // START: up to the next ','. Accepted only when it is digits and a dot, so
  // the full grammar's token (which also stops at blanks) is the same text.
  // The form PaddlePaddle prints (13 digits, a dot, 6 digits, then the
  // comma) is parsed in place; when its digits check fails, the general
  // path below decides, so both give the same result.
  const char* const start_begin = p;
  std::optional<std::int64_t> start;
  if (end - p > 20 && p[13] == '.' && p[20] == ',') {
    start = parse_millis_13_6(p);
    if (start) p += 20;
  }
  if (!start) {
    while (p < end && *p != ',') ++p;
    start = parse_millis_to_ns(
        std::string_view(start_begin, static_cast<std::size_t>(p - start_begin)));
  }
  if (!start || !take(p, end, ", job_end_time = ")) return false;
  // END: the rest of the line, digits and a dot only.
  const auto finish = parse_millis_to_ns(std::string_view(p, static_cast<std::size_t>(end - p)));
  if (!finish || *finish < *start) return false;
  out.job_id = job_id;
  out.micro_batch = micro_batch;
  out.start_ns = *start;
  out.end_ns = *finish;
  out.type = type;
  return true;
}

std::optional<std::int64_t> parse_step_start_line(std::string_view line) {
  const std::size_t at = line.find(kStepStartLiteral);
  if (at == std::string_view::npos) return std::nullopt;
  Cursor cursor(line.substr(at + kStepStartLiteral.size()));
  cursor.skip_space();
  if (!is_digit(cursor.peek())) return std::nullopt;
  return cursor.integer();
}

}  // namespace pipescope
