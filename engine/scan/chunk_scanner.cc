#include "scan/chunk_scanner.h"

#include <algorithm>
#include <cstring>

#include "scan/cpu_features.h"

namespace pipescope {

void ChunkScan::clear() {
  lines = 0;
  jobs.clear();
  types.clear();
  malformed = 0;
  oversized = 0;
  problems.clear();
  step_starts.clear();
  first_nul.reset();
  partial_last_line = 0;
  events.clear();
  anchor.reset();
  last_anchor.reset();
  last_stamp.reset();
  last_stamp_line = 0;
}

namespace {

// One body, compiled twice: as is, and inlined into an AVX2 copy chosen at
// run time. Not target_clones: its ifunc resolver runs before the sanitizer
// runtimes start, and ThreadSanitizer builds crash at load.
[[gnu::always_inline]] inline std::uint64_t count_newlines_in(std::string_view text) {
  // Byte-wise sums in blocks the compiler vectorizes; the 8-bit accumulators
  // are flushed before they can overflow.
  std::uint64_t total = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t n = text.size();
  constexpr std::size_t kBlock = 64;
  while (n >= kBlock) {
    const std::size_t blocks = std::min<std::size_t>(n / kBlock, 255);
    unsigned char acc[kBlock] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
      for (std::size_t i = 0; i < kBlock; ++i) acc[i] += p[i] == '\n';
      p += kBlock;
    }
    for (std::size_t i = 0; i < kBlock; ++i) total += acc[i];
    n -= blocks * kBlock;
  }
  for (std::size_t i = 0; i < n; ++i) total += p[i] == '\n';
  return total;
}

#if PIPESCOPE_X86_DISPATCH
__attribute__((target("avx2"))) std::uint64_t count_newlines_avx2(std::string_view text) {
  return count_newlines_in(text);
}
#endif

}  // namespace

std::uint64_t count_newlines(std::string_view text) {
#if PIPESCOPE_X86_DISPATCH
  if (cpu_has_avx2()) return count_newlines_avx2(text);
#endif
  return count_newlines_in(text);
}

namespace {

std::uint32_t intern_local(std::vector<std::string>& types, std::string_view name) {
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] == name) return static_cast<std::uint32_t>(i);
  }
  types.emplace_back(name);
  return static_cast<std::uint32_t>(types.size() - 1);
}

/// A job line of the piece, where the event search may look for its stamp:
/// its offset, the bytes before its job (where its stamp is), its job's end.
struct JobLineAt {
  std::size_t begin = 0;
  std::size_t stamp_bytes = 0;
  std::int64_t end_ns = 0;
};

/// The nearest stamped job line before each event of a piece, asked in
/// increasing order of offset: each job line's stamp is read once at most,
/// and most lines not at all (only those between an event and the stamped
/// job line nearest before it).
class AnchorsBefore {
 public:
  /// `before`: the anchor of the lines before the piece (the chunk so far).
  AnchorsBefore(std::string_view text, const std::vector<JobLineAt>& jobs,
                std::optional<StampAnchor> before)
      : text_(text), jobs_(jobs), anchor_(before) {}

  /// The nearest stamped job line that begins before `offset`.
  const std::optional<StampAnchor>& at(std::size_t offset) {
    std::size_t end = resolved_;
    while (end < jobs_.size() && jobs_[end].begin < offset) ++end;
    for (std::size_t j = end; j > resolved_; --j) {
      const JobLineAt& job = jobs_[j - 1];
      if (const auto stamp = find_line_stamp(text_.substr(job.begin, job.stamp_bytes))) {
        anchor_ = StampAnchor{*stamp, job.end_ns};
        break;
      }
    }
    resolved_ = end;
    return anchor_;
  }

 private:
  std::string_view text_;
  const std::vector<JobLineAt>& jobs_;
  std::optional<StampAnchor> anchor_;
  std::size_t resolved_ = 0;  // jobs_[0, resolved_) are behind anchor_
};

/// State carried across the prefilter's callbacks for one piece of text.
/// The prefilter reports every occurrence of either literal in increasing
/// order of its end, so the first report on a line is where the line is
/// located, and the first report of each literal on it is that literal's
/// first occurrence: the line is never searched again.
class CandidateLines {
 public:
  /// `job_lines`: where to note each job line for the event search; null:
  /// no event is looked for.
  CandidateLines(std::string_view text, const ChunkScanOptions& options, std::uint64_t line_base,
                 ChunkScan& out, std::vector<JobLineAt>* job_lines)
      : text_(text), options_(options), line_base_(line_base), out_(out), job_lines_(job_lines) {}

  /// Handles the literal that ends at `match_end`: locates its line, unless
  /// an earlier literal on the same line already did.
  void on_match(LiteralId id, std::size_t match_end) {
    if (match_end <= done_) {
      if (line_open_) on_literal(id, match_end);
      return;
    }
    const char* data = text_.data();
    const std::size_t search_from = match_end > 0 ? match_end - 1 : 0;
    std::size_t line_begin = done_;
    if (search_from > done_) {
      const void* nl = memrchr(data + done_, '\n', search_from - done_);
      if (nl != nullptr) line_begin = static_cast<const char*>(nl) - data + 1;
    }
    const void* nl = std::memchr(data + match_end, '\n', text_.size() - match_end);
    const std::size_t line_end = nl ? static_cast<const char*>(nl) - data : text_.size();

    // On dense logs the line starts where the last one's newline was
    // counted: nothing between, no call.
    if (line_begin > counted_) {
      line_index_ += count_newlines(text_.substr(counted_, line_begin - counted_));
    }
    counted_ = line_begin;
    line_ = text_.substr(line_begin, line_end - line_begin);
    line_begin_ = line_begin;
    current_line_ = line_base_ + line_index_;
    job_seen_ = step_seen_ = false;
    done_ = nl ? line_end + 1 : text_.size();
    if (nl != nullptr) {
      // This line's newline is counted here, not searched for again.
      counted_ = done_;
      ++line_index_;
    }
    // The lines around this one are all that the event search needs to read:
    // a line holding a literal is a job or step-start line, never an event.
    if (line_begin > gap_from_) gaps_.emplace_back(gap_from_, line_begin);
    gap_from_ = done_;
    line_open_ = line_.size() <= options_.max_line_bytes;
    if (!line_open_) {
      ++out_.oversized;
      if (out_.problems.size() < options_.max_problems) {
        out_.problems.push_back({current_line_, LineError::line_too_long});
      }
      return;
    }
    on_literal(id, match_end);
  }

  /// The stretches of the piece between the located lines ([begin, end)
  /// offsets of whole lines), in order; call once the search is done.
  const std::vector<std::pair<std::size_t, std::size_t>>& gaps() {
    if (gap_from_ < text_.size()) {
      gaps_.emplace_back(gap_from_, text_.size());
      gap_from_ = text_.size();
    }
    return gaps_;
  }

  /// The last job line located (its text and its line index), if any.
  std::string_view last_job_line() const { return last_job_line_; }
  std::uint64_t last_job_index() const { return last_job_index_; }

  /// Newlines in the whole piece, counting on from the last candidate line.
  std::uint64_t total_newlines() const {
    return line_index_ + count_newlines(text_.substr(counted_));
  }

 private:
  /// The first occurrence of a literal on the open line.
  void on_literal(LiteralId id, std::size_t match_end) {
    if (id == LiteralId::job_line) {
      if (job_seen_) return;
      job_seen_ = true;
      const std::size_t literal = match_end - line_begin_ - kJobLineLiteral.size();
      JobLine job;
      // The common line, without escape codes before the literal, in the
      // canonical form; anything else goes through the full grammar.
      const bool fast = std::memchr(line_.data(), '\x1b', literal) == nullptr &&
                        parse_job_line_fast(line_, literal, job);
      const LineError error = fast ? LineError::none : parse_job_line(line_, job, scratch_);
      if (error == LineError::none) {
        if (!out_.anchor) {
          if (const auto stamp = find_line_stamp(line_.substr(0, literal))) {
            out_.anchor = StampAnchor{*stamp, job.end_ns};
          }
        }
        if (job_lines_ != nullptr) job_lines_->push_back({line_begin_, literal, job.end_ns});
        last_job_line_ = line_;
        last_job_index_ = current_line_;
        out_.jobs.push_back({job.start_ns, job.end_ns, job.job_id, job.micro_batch,
                             intern_local(out_.types, job.type),
                             static_cast<std::uint32_t>(current_line_)});
      } else {
        ++out_.malformed;
        if (out_.problems.size() < options_.max_problems) {
          out_.problems.push_back({current_line_, error});
        }
      }
    } else {
      if (step_seen_) return;
      step_seen_ = true;
      if (const auto step = parse_step_start_line(strip_ansi(line_, scratch_))) {
        out_.step_starts.push_back({current_line_, *step});
      }
    }
  }

  std::string_view text_;
  const ChunkScanOptions& options_;
  std::uint64_t line_base_;
  ChunkScan& out_;
  std::vector<JobLineAt>* job_lines_;
  std::size_t done_ = 0;     // bytes before this offset belong to located lines
  std::size_t counted_ = 0;  // newlines before this offset are in line_index_
  std::uint64_t line_index_ = 0;
  // The line located last.
  std::string_view line_;
  std::size_t line_begin_ = 0;
  std::uint64_t current_line_ = 0;  // its index (line_base_ + index in the piece)
  bool line_open_ = false;          // within the length limit: its literals are handled
  bool job_seen_ = false;
  bool step_seen_ = false;
  std::string_view last_job_line_;
  std::uint64_t last_job_index_ = 0;
  std::size_t gap_from_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> gaps_;
  std::string scratch_;
};

/// The job lines of `complete` (lines [line_base, ...) of the chunk) by the
/// --job-line regex; `last_line` and `last_index` receive the last one that
/// has a stamp (an undated framework line may follow dated ones).
void scan_regex_jobs(std::string_view complete, std::uint64_t line_base,
                     const ChunkScanOptions& options, ChunkScan& out, std::string_view& last_line,
                     std::uint64_t& last_index, std::vector<JobLineAt>* job_lines_at) {
  const JobLineRegex& regex = *options.job_line;
  thread_local std::vector<LineSpan> spans;
  thread_local std::vector<std::pair<std::size_t, std::uint64_t>> job_lines;  // (span, line)
  spans.clear();
  job_lines.clear();
  regex.candidates(complete, *options.job_line_scratch, spans);
  std::size_t counted = 0;  // newlines before this offset are in `index`
  std::uint64_t index = 0;
  for (const LineSpan& span : spans) {
    index += count_newlines(complete.substr(counted, span.begin - counted));
    counted = span.begin;
    const std::string_view line = complete.substr(span.begin, span.end - span.begin);
    const std::uint64_t line_index = line_base + index;
    if (line.size() > options.max_line_bytes) {
      // As for Paddle's lines: a job line over the limit is said, unread.
      if (!regex.matches(line)) continue;
      ++out.oversized;
      if (out.problems.size() < options.max_problems) {
        out.problems.push_back({line_index, LineError::line_too_long});
      }
      continue;
    }
    JobLine job;
    const LineError error = regex.parse(line, job);
    if (error == LineError::no_literal) continue;  // a candidate the regex does not match
    if (error != LineError::none) {
      ++out.malformed;
      if (out.problems.size() < options.max_problems) out.problems.push_back({line_index, error});
      continue;
    }
    if (!out.anchor) {
      // The line's own stamp, at its start (find_line_stamp looks no further).
      if (const auto stamp = find_line_stamp(line)) out.anchor = StampAnchor{*stamp, job.end_ns};
    }
    job_lines.emplace_back(static_cast<std::size_t>(&span - spans.data()), line_index);
    if (job_lines_at != nullptr) job_lines_at->push_back({span.begin, line.size(), job.end_ns});
    out.jobs.push_back({job.start_ns, job.end_ns, job.job_id, job.micro_batch,
                        intern_local(out.types, job.type), static_cast<std::uint32_t>(line_index)});
  }
  for (auto it = job_lines.rbegin(); it != job_lines.rend(); ++it) {
    const LineSpan& span = spans[it->first];
    const std::string_view line = complete.substr(span.begin, span.end - span.begin);
    if (find_line_stamp(line)) {
      last_line = line;
      last_index = it->second;
      return;
    }
  }
}

/// The stamp of the closest line before `line_begin` in `text` that has one,
/// looking back at most kLookBack lines (an event printed without a
/// timestamp, as NCCL's are, takes the time of the log line before it).
std::optional<LineStamp> stamp_before(std::string_view text, std::size_t line_begin) {
  constexpr int kLookBack = 64;
  std::size_t end = line_begin;  // one past the previous line's '\n'
  for (int i = 0; i < kLookBack && end > 0; ++i) {
    const std::size_t line_end = end - 1;  // its '\n'
    const void* nl = line_end > 0 ? memrchr(text.data(), '\n', line_end) : nullptr;
    const std::size_t begin = nl ? static_cast<const char*>(nl) - text.data() + 1 : 0;
    if (auto stamp = find_line_stamp(text.substr(begin, line_end - begin))) return stamp;
    end = begin;
  }
  return std::nullopt;
}

/// Finds the event lines of `complete` (lines [line_base, ...) of the chunk)
/// and their stamps and captures.
void scan_events(std::string_view complete, std::uint64_t line_base,
                 const std::vector<std::pair<std::size_t, std::size_t>>& gaps,
                 const ChunkScanOptions& options, AnchorsBefore& anchors, ChunkScan& out) {
  thread_local std::vector<EventMatch> matches;
  matches.clear();
  // Only the stretches between job lines are searched (dense logs: none).
  // Stretches that only a few job lines part are searched as one, which
  // saves starting a search per stretch, and the events found on the job
  // lines between them are dropped (a job line is no event).
  const std::size_t joined = options.events->joined_bytes();
  std::size_t g = 0;
  while (g < gaps.size()) {
    std::size_t last = g;
    while (last + 1 < gaps.size() && gaps[last + 1].first - gaps[last].second <= joined) {
      ++last;
    }
    const std::size_t begin = gaps[g].first;
    const std::size_t first = matches.size();
    options.events->scan(complete.substr(begin, gaps[last].second - begin), *options.event_scratch,
                         matches);
    // Matches come in line order: keep those whose line is in a stretch.
    std::size_t kept = first;
    for (std::size_t i = first; i < matches.size(); ++i) {
      EventMatch m = matches[i];
      m.line_begin += begin;
      m.line_end += begin;
      while (g <= last && gaps[g].second <= m.line_begin) ++g;
      if (g <= last && m.line_begin >= gaps[g].first) matches[kept++] = m;
    }
    matches.resize(kept);
    g = last + 1;
  }
  std::size_t counted = 0;  // newlines before this offset are in `index`
  std::uint64_t index = 0;
  for (const EventMatch& m : matches) {
    if (m.line_end - m.line_begin > options.max_line_bytes) continue;  // as for job lines
    index += count_newlines(complete.substr(counted, m.line_begin - counted));
    counted = m.line_begin;
    const std::string_view line = complete.substr(m.line_begin, m.line_end - m.line_begin);
    EventSeen seen;
    seen.line = line_base + index;
    seen.pattern = m.pattern;
    seen.stamp = find_line_stamp(line);
    if (!seen.stamp) {
      seen.approximate = true;
      seen.stamp = stamp_before(complete, m.line_begin);
    }
    seen.captures = options.events->captures(m.pattern, line);
    seen.anchor = anchors.at(m.line_begin);
    out.events.push_back(std::move(seen));
  }
}

}  // namespace

void scan_chunk(std::string_view text, const Prefilter& prefilter, Prefilter::Scratch& scratch,
                const ChunkScanOptions& options, ChunkScan& out) {
  out.clear();
  scan_chunk_more(text, 0, prefilter, scratch, options, out);
}

void scan_chunk_more(std::string_view text, std::uint64_t text_offset, const Prefilter& prefilter,
                     Prefilter::Scratch& scratch, const ChunkScanOptions& options, ChunkScan& out) {
  // The file's unterminated last line is left out of the search (see
  // ChunkScan::partial_last_line).
  std::string_view complete = text;
  if (options.end_of_file && !text.empty() && text.back() != '\n') {
    const std::size_t last_newline = text.rfind('\n');
    complete = text.substr(0, last_newline == std::string_view::npos ? 0 : last_newline + 1);
    out.partial_last_line = text.size() - complete.size();
  }
  const bool events = options.events != nullptr && options.event_scratch != nullptr;
  thread_local std::vector<JobLineAt> job_lines;
  job_lines.clear();
  CandidateLines candidates(complete, options, out.lines, out, events ? &job_lines : nullptr);
  const bool paddle_jobs = options.job_line == nullptr;
  const std::size_t first_problem = out.problems.size();
  prefilter.scan(complete, scratch, [&](LiteralId id, std::size_t end) {
    // With --job-line, Paddle's job lines are not read: their literal is
    // passed over (the step-start lines still count).
    if (paddle_jobs || id != LiteralId::job_line) candidates.on_match(id, end);
    return true;
  });
  const std::uint64_t line_base = out.lines;
  std::string_view last_job_line = candidates.last_job_line();
  std::uint64_t last_job_index = candidates.last_job_index();
  if (!paddle_jobs && options.job_line_scratch != nullptr) {
    scan_regex_jobs(complete, line_base, options, out, last_job_line, last_job_index,
                    events ? &job_lines : nullptr);
    // Two searches gave problems (an over-long step-start line, the job
    // lines'): in line order, as one search gives them.
    std::stable_sort(out.problems.begin() + static_cast<std::ptrdiff_t>(first_problem),
                     out.problems.end(),
                     [](const LineProblem& a, const LineProblem& b) { return a.line < b.line; });
  }
  if (events) {
    const std::size_t first_event = out.events.size();
    AnchorsBefore anchors(complete, job_lines, out.last_anchor);
    scan_events(complete, line_base, candidates.gaps(), options, anchors, out);
    out.last_anchor = anchors.at(complete.size());
    // The chunk's last dated line among its job and event lines.
    for (std::size_t e = out.events.size(); e > first_event; --e) {
      const EventSeen& seen = out.events[e - 1];
      if (seen.stamp && !seen.approximate) {
        out.last_stamp = seen.stamp;
        out.last_stamp_line = seen.line;
        break;
      }
    }
  }
  if (!last_job_line.empty() && (!out.last_stamp || last_job_index > out.last_stamp_line)) {
    if (const auto stamp = find_line_stamp(last_job_line)) {
      out.last_stamp = stamp;
      out.last_stamp_line = last_job_index;
    }
  }
  out.lines += candidates.total_newlines() + (complete.size() < text.size() ? 1 : 0);
  // memchr on an empty chunk's null data() is undefined (UBSan: nonnull).
  if (options.look_for_binary && !out.first_nul && !text.empty()) {
    if (const void* nul = std::memchr(text.data(), '\0', text.size())) {
      out.first_nul = text_offset + (static_cast<const char*>(nul) - text.data());
    }
  }
}

}  // namespace pipescope
