#include "ingest/input_follower.h"

#include <fmt/format.h>

#include <utility>

#include "source/file_follower.h"

namespace pipescope {

namespace {

/// Whole lines appended to one file, as every line format follows it.
class LineFollower : public InputFollower {
 public:
  LineFollower(const InputFile& input, const FollowOptions& options)
      : InputFollower(input), look_bytes_(options.look_bytes), file_(input.path, look_bytes_) {}

  FollowedData look() override {
    FollowedData out;
    FollowedBytes got = file_.poll();
    if (got.corrupt) {
      stop(out, fmt::format("{}: {}; not read further until it is truncated or replaced",
                            input().path, got.error));
    }
    if (got.lines.empty() && !got.restarted) return out;
    stopped_.clear();
    out.kind = FollowedData::Kind::lines;
    out.restarted = got.restarted;
    out.more = got.lines.size() >= look_bytes_ / 2;
    out.lines = std::move(got.lines);
    take(out);
    return out;
  }

 protected:
  /// What a format makes of the lines just read (`out.lines`).
  virtual void take(FollowedData&) {}

 private:
  /// Says why the file is not read on, once.
  void stop(FollowedData& out, std::string why) {
    if (stopped_ == why) return;
    stopped_ = why;
    out.notes.push_back(std::move(why));
  }

  std::uint64_t look_bytes_;
  FileFollower file_;
  std::string stopped_;
};

class LineRecordFollower final : public LineFollower {
 public:
  using MakeParser =
      std::function<std::unique_ptr<LineRecordParser>(const InputFile&, std::size_t)>;

  LineRecordFollower(const InputFile& input, const FollowOptions& options, MakeParser make,
                     bool places_itself)
      : LineFollower(input, options),
        make_(std::move(make)),
        max_diagnostics_(options.ingest.diagnostics_per_file),
        parser_(make_(input, max_diagnostics_)),
        places_itself_(places_itself) {}

  bool places_itself() const override { return places_itself_; }
  int stage() const override { return parser_->stage(); }

 private:
  void take(FollowedData& out) override {
    if (out.restarted) parser_ = make_(input(), max_diagnostics_);
    out.records = parser_->lines(out.lines);
    out.lines.clear();
    out.kind = FollowedData::Kind::records;
    for (const Diagnostic& d : out.records.diagnostics) {
      out.notes.push_back(fmt::format("{} line {}: {}", input().path, d.line, d.message));
    }
  }

  MakeParser make_;
  std::size_t max_diagnostics_;
  std::unique_ptr<LineRecordParser> parser_;
  bool places_itself_;
};

}  // namespace

std::unique_ptr<InputFollower> follow_text_lines(const InputFile& input,
                                                 const FollowOptions& options) {
  return std::make_unique<LineFollower>(input, options);
}

std::unique_ptr<InputFollower> follow_line_records(
    const InputFile& input, const FollowOptions& options,
    std::function<std::unique_ptr<LineRecordParser>(const InputFile&, std::size_t max_diagnostics)>
        make_parser,
    bool places_itself) {
  return std::make_unique<LineRecordFollower>(input, options, std::move(make_parser),
                                              places_itself);
}

}  // namespace pipescope
