#include "ingest/line_records.h"

#include <fmt/core.h>

#include <utility>

#include "ingest/line_cutter.h"

namespace pipescope {

namespace {

/// One file: its lines to the parser, the parser's results gathered.
class LineRecordReader final : public ChunkedFileReader, LineCutter::Sink {
 public:
  LineRecordReader(const InputFile& input, const ReadOptions& options,
                   std::unique_ptr<LineRecordParser> parser)
      : input_(input),
        options_(options),
        parser_(std::move(parser)),
        cutter_(options.limits.max_line_bytes),
        out_(empty_result_for(input)) {}

  bool tokenize(ReadChunk& chunk) override {
    cutter_.cut(chunk, *this);
    return true;
  }

  bool end_pass(const PassEnd& end) override {
    if (!end.unreadable) cutter_.finish(*this);
    out_.stats.bytes = end.bytes;
    if (!end.error.empty()) {
      out_.stats.error = end.error;
      out_.stats.unreadable = end.unreadable;
      note(0, end.error);
    }
    return false;
  }

  FileResult result() override { return std::move(out_); }

  void lines(std::string_view text, std::uint64_t, const char*, bool) override {
    add(parser_->lines(text));
  }

  void skipped(const SkippedLine& line) override {
    ++out_.stats.lines;
    ++out_.stats.oversized;
    note(0, fmt::format("byte offset {}: line of {} bytes is longer than the {}-byte limit; "
                        "skipped",
                        line.offset, line.length, options_.limits.max_line_bytes));
  }

 private:
  void note(std::uint64_t line, std::string message) {
    if (out_.diagnostics.size() < options_.diagnostics_per_file) {
      out_.diagnostics.push_back({input_.path, line, std::move(message)});
    }
  }

  /// One call's result added to the file's.
  void add(FileResult&& part) {
    std::vector<TypeId> map(part.types.size());
    for (TypeId t = 0; t < part.types.size(); ++t) map[t] = out_.types.intern(part.types.name(t));
    for (Job& job : part.device.jobs) {
      job.type = map[job.type];
      out_.device.jobs.push_back(job);
    }
    for (const StepStartLine& s : part.device.step_starts) out_.device.step_starts.push_back(s);
    out_.stats.lines += part.stats.lines;
    out_.stats.matched += part.stats.matched;
    out_.stats.malformed += part.stats.malformed;
    out_.stats.oversized += part.stats.oversized;
    for (Diagnostic& d : part.diagnostics) note(d.line, std::move(d.message));
    for (Warning& w : part.notes) out_.notes.push_back(std::move(w));
    if (!out_.first_step) out_.first_step = part.first_step;
    out_.time_resolution_ns = std::max(out_.time_resolution_ns, part.time_resolution_ns);
  }

  const InputFile& input_;
  const ReadOptions& options_;
  std::unique_ptr<LineRecordParser> parser_;
  LineCutter cutter_;
  FileResult out_;
};

class LineRecordFormat final : public ChunkedFormat {
 public:
  LineRecordFormat(const std::vector<InputFile>& files, const ReadOptions& options,
                   LineParserFactory make)
      : files_(files), options_(options), make_(std::move(make)) {}

  std::unique_ptr<ChunkedFileReader> open(std::size_t i) override {
    return std::make_unique<LineRecordReader>(files_[i], options_,
                                              make_(files_[i], options_.diagnostics_per_file));
  }

 private:
  const std::vector<InputFile>& files_;
  const ReadOptions& options_;
  LineParserFactory make_;
};

}  // namespace

std::unique_ptr<ChunkedFormat> read_line_records(const std::vector<InputFile>& files,
                                                 const ReadOptions& options,
                                                 LineParserFactory make_parser) {
  return std::make_unique<LineRecordFormat>(files, options, std::move(make_parser));
}

}  // namespace pipescope
