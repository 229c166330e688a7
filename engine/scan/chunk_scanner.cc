#include "scan/chunk_scanner.h"

#include <cstring>

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
}

std::uint64_t count_newlines(std::string_view text) {
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

namespace {

std::uint32_t intern_local(std::vector<std::string>& types, std::string_view name) {
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] == name) return static_cast<std::uint32_t>(i);
  }
  types.emplace_back(name);
  return static_cast<std::uint32_t>(types.size() - 1);
}

/// State carried across the prefilter's callbacks for one chunk.
class CandidateLines {
 public:
  CandidateLines(std::string_view text, const ChunkScanOptions& options, ChunkScan& out)
      : text_(text), options_(options), out_(out) {}

  /// Handles the line holding the match that ends at `match_end`, unless an
  /// earlier match on the same line already did.
  void on_match(std::size_t match_end) {
    if (match_end <= done_) return;
    const char* data = text_.data();
    const std::size_t search_from = match_end > 0 ? match_end - 1 : 0;
    std::size_t line_begin = done_;
    if (search_from > done_) {
      const void* nl = memrchr(data + done_, '\n', search_from - done_);
      if (nl != nullptr) line_begin = static_cast<const char*>(nl) - data + 1;
    }
    const void* nl = std::memchr(data + match_end, '\n', text_.size() - match_end);
    const std::size_t line_end = nl ? static_cast<const char*>(nl) - data : text_.size();

    line_index_ += count_newlines(text_.substr(counted_, line_begin - counted_));
    counted_ = line_begin;
    handle_line(text_.substr(line_begin, line_end - line_begin));
    done_ = nl ? line_end + 1 : text_.size();
  }

  /// Newlines in the whole chunk, counting on from the last candidate line.
  std::uint64_t total_newlines() const {
    return line_index_ + count_newlines(text_.substr(counted_));
  }

 private:
  void handle_line(std::string_view line) {
    if (line.size() > options_.max_line_bytes) {
      ++out_.oversized;
      if (out_.problems.size() < options_.max_problems) {
        out_.problems.push_back({line_index_, LineError::line_too_long});
      }
      return;
    }
    if (line.find(kJobLineLiteral) != std::string_view::npos) {
      JobLine job;
      const LineError error = parse_job_line(line, job, scratch_);
      if (error == LineError::none) {
        out_.jobs.push_back({job.start_ns, job.end_ns, job.job_id, job.micro_batch,
                             intern_local(out_.types, job.type),
                             static_cast<std::uint32_t>(line_index_)});
      } else {
        ++out_.malformed;
        if (out_.problems.size() < options_.max_problems) {
          out_.problems.push_back({line_index_, error});
        }
      }
    }
    if (line.find(kStepStartLiteral) != std::string_view::npos) {
      if (const auto step = parse_step_start_line(strip_ansi(line, scratch_))) {
        out_.step_starts.push_back({line_index_, *step});
      }
    }
  }

  std::string_view text_;
  const ChunkScanOptions& options_;
  ChunkScan& out_;
  std::size_t done_ = 0;     // bytes before this offset belong to handled lines
  std::size_t counted_ = 0;  // newlines before this offset are in line_index_
  std::uint64_t line_index_ = 0;
  std::string scratch_;
};

}  // namespace

void scan_chunk(std::string_view text, const Prefilter& prefilter, Prefilter::Scratch& scratch,
                const ChunkScanOptions& options, ChunkScan& out) {
  out.clear();
  // The file's unterminated last line is left out of the search (see
  // ChunkScan::partial_last_line).
  std::string_view complete = text;
  if (options.end_of_file && !text.empty() && text.back() != '\n') {
    const std::size_t last_newline = text.rfind('\n');
    complete = text.substr(0, last_newline == std::string_view::npos ? 0 : last_newline + 1);
    out.partial_last_line = text.size() - complete.size();
  }
  CandidateLines candidates(complete, options, out);
  prefilter.scan(complete, scratch, [&](LiteralId, std::size_t end) {
    candidates.on_match(end);
    return true;
  });
  out.lines = candidates.total_newlines() + (out.partial_last_line > 0 ? 1 : 0);
  // memchr on an empty chunk's null data() is undefined (UBSan: nonnull).
  if (options.look_for_binary && !text.empty()) {
    if (const void* nul = std::memchr(text.data(), '\0', text.size())) {
      out.first_nul = static_cast<const char*>(nul) - text.data();
    }
  }
}

}  // namespace pipescope
