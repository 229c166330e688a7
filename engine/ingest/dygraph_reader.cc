#include "ingest/dygraph_reader.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "ingest/line_cutter.h"
#include "model/option_words.h"

namespace pipescope {

namespace {

namespace od = simdjson::ondemand;

constexpr std::int64_t kMaxCounter = 1'000'000'000;
// Whole ms that still fit in int64 ns.
constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / kDygraphResolutionNs;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// A record's job name: `F3`, `B0`, `F3_VP1`.
struct JobName {
  bool forward = true;
  std::int64_t counter = 0;
  int chunk = -1;  ///< -1: no `_VP` suffix
};

bool parse_digits(std::string_view s, std::int64_t& value) {
  if (s.empty() || s.size() > 10) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc{} && end == s.data() + s.size() && value <= kMaxCounter;
}

bool parse_job_name(std::string_view name, JobName& out) {
  if (name.size() < 2 || (name[0] != 'F' && name[0] != 'B')) return false;
  out.forward = name[0] == 'F';
  name.remove_prefix(1);
  const std::size_t vp = name.find("_VP");
  std::int64_t chunk = -1;
  if (vp != std::string_view::npos) {
    if (!parse_digits(name.substr(vp + 3), chunk) || chunk > (1 << 20)) return false;
    name = name.substr(0, vp);
  }
  out.chunk = static_cast<int>(chunk);
  return parse_digits(name, out.counter);
}

std::string type_name(const JobName& name) {
  const std::string_view base = name.forward ? "forward" : "backward";
  if (name.chunk < 0) return std::string(base);
  return fmt::format("{}(chunk{})", base, name.chunk);
}

}  // namespace

/// Turns lines into ranks and jobs; fed chunks of complete lines.
class DygraphRecordParser {
 public:
  DygraphRecordParser(const InputFile& input, std::size_t max_diagnostics)
      : input_(input),
        max_diagnostics_(max_diagnostics),
        concatenation_(
            is_dygraph_concatenation(std::filesystem::path(input.path).filename().string())) {
    out_.result = empty_result_for(input);
    out_.result.time_resolution_ns = kDygraphResolutionNs;
  }

  /// `text`: complete lines at byte offset `offset`; at least
  /// SIMDJSON_PADDING readable bytes follow text.data() + capacity... the
  /// caller guarantees `padded_end - text.data() >= text.size() + padding`.
  void lines(std::string_view text, std::uint64_t offset, const char* padded_end,
             bool end_of_file) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t newline = text.find('\n', pos);
      const bool complete = newline != std::string_view::npos;
      const std::size_t end = complete ? newline : text.size();
      ++line_;
      const std::string_view line = text.substr(pos, end - pos);
      if (!complete && end_of_file) last_line_without_newline_ = true;
      record(line, offset + pos, padded_end);
      out_.result.stats.bytes += end - pos + (complete ? 1 : 0);
      pos = end + 1;
    }
    out_.result.stats.lines = line_;
  }

  /// A line the reader dropped as over-long.
  void skipped(const SkippedLine& s, std::size_t limit) {
    ++line_;
    ++out_.result.stats.oversized;
    out_.result.stats.lines = line_;
    out_.result.stats.bytes += s.length + (s.has_newline ? 1 : 0);
    note(line_, fmt::format("byte offset {}: line of {} bytes is longer than the {}-byte limit; "
                            "skipped",
                            s.offset, s.length, limit));
  }

  void fail(std::string error, bool unreadable) {
    out_.result.stats.error = error;
    out_.result.stats.unreadable = out_.result.stats.unreadable || unreadable;
    note(0, std::move(error));
  }

  DygraphFile finish() {
    close_rank();
    if (truncated_) {
      out_.result.stats.error = fmt::format(
          "the file ends inside a record at byte offset {} (cut off?): every complete record "
          "before it is kept",
          truncated_offset_);
    }
    return std::move(out_);
  }

 private:
  struct Open {
    std::int64_t start_ns = 0;
    std::uint64_t offset = 0;
    std::uint64_t line = 0;
    JobName name;
  };

  void note(std::uint64_t line, std::string message) {
    auto& diagnostics = out_.result.diagnostics;
    if (diagnostics.size() < max_diagnostics_) {
      diagnostics.push_back({input_.path, line, std::move(message)});
    }
  }

  void malformed(std::uint64_t line, std::uint64_t offset, std::string_view what) {
    ++out_.result.stats.malformed;
    note(line, fmt::format("byte offset {}: {}; skipped", offset, what));
  }

  /// The record of `line`, less what a concatenation wraps it in (`[ `
  /// before the first, `,` after each, ` ]` after the last); empty: none.
  std::string_view record_body(std::string_view line) const {
    std::string_view body = line;
    std::size_t lead = 0;
    while (lead < body.size() && is_space(body[lead])) ++lead;
    if (concatenation_ && lead < body.size() && body[lead] == '[') ++lead;
    body.remove_prefix(lead);
    body = trim(body);
    if (concatenation_ && !body.empty() && body.back() == ']')
      body = trim(body.substr(0, body.size() - 1));
    if (concatenation_ && !body.empty() && body.back() == ',') body.remove_suffix(1);
    return body;
  }

  /// The fields of one record (its name and phase in name_ and phase_).
  struct RecordFields {
    std::int64_t tid = 0;
    std::int64_t ts = 0;
    /// Bits of the fields read: 1 name, 2 ph, 4 tid, 8 ts.
    int seen = 0;
  };

  /// Reads `body` (padded up to `padded_end`) into `f`, name_ and phase_:
  /// what is wrong with it, or null.
  const char* read_fields(std::string_view body, const char* padded_end, RecordFields& f) {
    std::string_view name_text;
    std::string_view phase;
    const char* problem = nullptr;
    od::document doc;
    const std::size_t capacity = static_cast<std::size_t>(padded_end - body.data());
    if (parser_.iterate(body.data(), body.size(), capacity).get(doc) != simdjson::SUCCESS) {
      problem = "not a JSON record";
    }
    od::object object;
    if (!problem && doc.get_object().get(object) != simdjson::SUCCESS) {
      problem = "not a JSON object";
    }
    if (!problem) {
      for (auto item : object) {
        od::field field;
        std::string_view key;
        if (std::move(item).get(field) != simdjson::SUCCESS ||
            field.unescaped_key().get(key) != simdjson::SUCCESS) {
          problem = "not a JSON record";
          break;
        }
        od::value& value = field.value();
        simdjson::error_code e = simdjson::SUCCESS;
        if (key == "name") {
          e = value.get_string().get(name_text);
          f.seen |= 1;
        } else if (key == "ph") {
          e = value.get_string().get(phase);
          f.seen |= 2;
        } else if (key == "tid") {
          e = value.get_int64().get(f.tid);
          f.seen |= 4;
        } else if (key == "ts") {
          e = value.get_int64().get(f.ts);
          if (e != simdjson::SUCCESS) {
            problem = "\"ts\" is not a whole number of milliseconds";
            break;
          }
          f.seen |= 8;
        }  // other fields ("cat", "pid", "cname") are skipped by the iteration
        if (e != simdjson::SUCCESS) {
          problem = "a field of the wrong type or a damaged record";
          break;
        }
      }
      if (!problem && body.back() != '}') problem = "bytes after the record";
    }
    // name_text/phase point into the parser's string buffer: copy what is kept.
    if (!problem) {
      name_.assign(name_text);
      phase_.assign(phase);
    }
    return problem;
  }

  void record(std::string_view line, std::uint64_t offset, const char* padded_end) {
    const std::string_view body = record_body(line);
    if (body.empty()) return;  // blank line, or the bracket alone
    const std::uint64_t at = offset + static_cast<std::uint64_t>(body.data() - line.data());
    RecordFields f;
    const char* problem = read_fields(body, padded_end, f);
    if (problem && last_line_without_newline_) {
      truncated_ = true;
      truncated_offset_ = at;
      ++out_.result.stats.malformed;
      out_.result.stats.partial_last_line_bytes = line.size();
      note(line_, fmt::format("byte offset {}: the file ends inside a record (cut off?); the "
                              "records before it are kept",
                              at));
      return;
    }
    if (problem) return malformed(line_, at, problem);
    if (f.seen != 15) {
      return malformed(line_, at, "a record without \"name\", \"ph\", \"tid\" and \"ts\"");
    }
    JobName job;
    if (!parse_job_name(name_, job)) {
      return malformed(line_, at,
                       fmt::format("job name '{}' is not F<n> or B<n> (optionally _VP<k>)",
                                   name_.substr(0, 40)));
    }
    if (phase_ != "B" && phase_ != "E") {
      return malformed(line_, at,
                       fmt::format("phase '{}' is neither B nor E", phase_.substr(0, 8)));
    }
    if (f.tid < 1 || f.tid > (1 << 20)) {
      return malformed(line_, at, fmt::format("tid {} is not a stage + 1", f.tid));
    }
    if (f.ts < 0 || f.ts > kMaxMs) {
      return malformed(line_, at, fmt::format("ts {} out of range", f.ts));
    }
    const int stage = static_cast<int>(f.tid - 1);
    const std::int64_t ns = f.ts * kDygraphResolutionNs;
    if (!enter_rank(stage, ns, at)) return;
    last_ns_ = std::max(last_ns_, ns);
    pair(job, ns, at);
  }

  /// The rank a record of `stage` at `ns` belongs to, opened when it begins
  /// one: a concatenation holds one rank after another, a new rank beginning
  /// where the stage changes or the time goes back; a per-rank file is one
  /// rank. False (the record malformed) for a per-rank file's record of
  /// another stage.
  bool enter_rank(int stage, std::int64_t ns, std::uint64_t at) {
    if (ranks_open_ == 0 || (concatenation_ && (stage != current().stage || ns < last_ns_))) {
      if (ranks_open_ > 0) close_rank();
      DygraphRank& rank = out_.ranks.emplace_back();
      rank.stage = stage;
      rank.rank = concatenation_ ? static_cast<int>(out_.ranks.size() - 1) : input_.rank;
      rank.offset = at;
      rank.device = out_.result.device;
      ++ranks_open_;
    } else if (stage != current().stage) {
      malformed(line_, at,
                fmt::format("tid {} differs from the file's tid {} (one rank, one stage)",
                            stage + 1, current().stage + 1));
      return false;
    }
    return true;
  }

  /// A B record opens the job named name_, an E record closes it into a job
  /// of the current rank.
  void pair(const JobName& job, std::int64_t ns, std::uint64_t at) {
    const bool begin = phase_ == "B";
    auto it = open_.find(name_);
    if (begin) {
      if (it != open_.end()) {
        malformed(it->second.line, it->second.offset,
                  fmt::format("B record of '{}' has no E record (another B of it follows)", name_));
        it->second = {ns, at, line_, job};
      } else {
        open_.emplace(name_, Open{ns, at, line_, job});
      }
      return;
    }
    if (it == open_.end()) {
      return malformed(line_, at, fmt::format("E record of '{}' has no B record before it", name_));
    }
    const Open opened = it->second;
    open_.erase(it);
    if (ns < opened.start_ns) {
      ++out_.result.stats.malformed;  // the B half, the E half below
      return malformed(line_, at,
                       fmt::format("E record of '{}' is earlier than its B record (byte offset "
                                   "{}): both halves",
                                   name_, opened.offset));
    }
    Job& out = current().device.jobs.emplace_back();
    out.start_ns = opened.start_ns;
    out.end_ns = ns;
    out.job_id = job.counter;
    out.micro_batch = job.counter;
    out.type = out_.result.types.intern(type_name(job));
    out.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(opened.line, UINT32_MAX));
    ++out_.result.stats.matched;
    ++current().jobs_read;
  }

  DygraphRank& current() { return out_.ranks.back(); }

 public:
  /// For a file followed while written: the jobs completed so far (moved
  /// out), the types, the problems found (moved out), and the stage.
  DygraphFile& progress() { return out_; }

 private:
  /// B records left open when a rank ends, in file order.
  void close_rank() {
    if (ranks_open_ == 0) return;
    std::vector<std::pair<std::string, Open>> left(open_.begin(), open_.end());
    std::sort(left.begin(), left.end(),
              [](const auto& a, const auto& b) { return a.second.offset < b.second.offset; });
    for (const auto& [name, open] : left) {
      malformed(open.line, open.offset, fmt::format("B record of '{}' has no E record", name));
    }
    open_.clear();
    last_ns_ = std::numeric_limits<std::int64_t>::min();
  }

  const InputFile& input_;
  std::size_t max_diagnostics_;
  bool concatenation_;
  DygraphFile out_;
  od::parser parser_;
  std::string name_;
  std::string phase_;
  std::unordered_map<std::string, Open> open_;
  std::size_t ranks_open_ = 0;
  std::int64_t last_ns_ = std::numeric_limits<std::int64_t>::min();
  std::uint64_t line_ = 0;
  bool last_line_without_newline_ = false;
  bool truncated_ = false;
  std::uint64_t truncated_offset_ = 0;
};

namespace {

std::string rank_list(const std::vector<const DygraphRank*>& ranks) {
  std::string text;
  for (const DygraphRank* r : ranks) {
    text += fmt::format("{}{} (stage {})", text.empty() ? "" : ", ", r->rank, r->stage);
  }
  return text;
}

}  // namespace

namespace {

constexpr std::size_t kRecordChunkBytes = std::size_t{256} << 10;

}  // namespace

bool looks_like_dygraph_records(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size() && is_space(bytes[i])) ++i;
  if (i < bytes.size() && bytes[i] == '[') ++i;
  while (i < bytes.size() && is_space(bytes[i])) ++i;
  if (i >= bytes.size() || bytes[i] != '{') return false;
  return bytes.find("pipeline timeline\"") != std::string_view::npos;
}

namespace {

/// One file's records pushed by the reading loop: its chunks cut into lines
/// (LineCutter), the lines parsed in order.
class DygraphFileReader final : public ChunkedFileReader, LineCutter::Sink {
 public:
  DygraphFileReader(const InputFile& input, const ReadLimits& limits, std::size_t max_diagnostics,
                    DygraphFile& out)
      : parser_(input, max_diagnostics),
        cutter_(limits.max_line_bytes),
        limit_(limits.max_line_bytes),
        // Record files are read whole, one task each, so the chunk only
        // needs to hold a few lines.
        chunk_(std::max<std::size_t>(std::min(limits.chunk_bytes, kRecordChunkBytes), 1)),
        out_(out) {}

  std::size_t chunk_bytes(std::uint64_t) const override { return chunk_; }
  bool tokenize(ReadChunk& chunk) override {
    cutter_.cut(chunk, *this);
    return true;
  }
  bool end_pass(const PassEnd& end) override {
    if (end.unreadable) {
      parser_.fail(end.error, true);
      return false;
    }
    cutter_.finish(*this);
    if (!end.error.empty()) parser_.fail(end.error, false);
    return false;
  }
  /// The file's ranks go to `out`; the result is theirs to make.
  FileResult result() override {
    out_ = parser_.finish();
    return {};
  }

  void lines(std::string_view text, std::uint64_t offset, const char* padded_end,
             bool end_of_file) override {
    parser_.lines(text, offset, padded_end, end_of_file);
  }
  void skipped(const SkippedLine& line) override { parser_.skipped(line, limit_); }

 private:
  DygraphRecordParser parser_;
  LineCutter cutter_;
  std::size_t limit_;
  std::size_t chunk_;
  DygraphFile& out_;
};

}  // namespace

DygraphFile parse_dygraph_file(const InputFile& input, const ReadLimits& limits,
                               std::size_t max_diagnostics) {
  DygraphFile out;
  DygraphFileReader reader(input, limits, max_diagnostics, out);
  read_in_chunks(input, reader, nullptr);
  return out;
}

DygraphFile parse_dygraph_bytes(std::string_view bytes, const InputFile& input,
                                std::size_t max_diagnostics) {
  DygraphRecordParser parser(input, max_diagnostics);
  const simdjson::padded_string padded(bytes);
  parser.lines(std::string_view(padded.data(), padded.size()), 0,
               padded.data() + padded.size() + simdjson::SIMDJSON_PADDING, true);
  return parser.finish();
}

DygraphFollowReader::DygraphFollowReader(InputFile input, std::size_t max_diagnostics)
    : input_(std::move(input)),
      parser_(std::make_unique<DygraphRecordParser>(input_, max_diagnostics)) {}

DygraphFollowReader::~DygraphFollowReader() = default;

FileResult DygraphFollowReader::lines(std::string_view text) {
  const simdjson::padded_string padded(text);
  parser_->lines(std::string_view(padded.data(), padded.size()), offset_,
                 padded.data() + padded.size() + simdjson::SIMDJSON_PADDING, false);
  offset_ += text.size();
  DygraphFile& progress = parser_->progress();
  FileResult out = empty_result_for(input_);
  out.types = progress.result.types;
  out.time_resolution_ns = kDygraphResolutionNs;
  out.diagnostics = std::move(progress.result.diagnostics);
  progress.result.diagnostics.clear();
  if (!progress.ranks.empty()) {
    stage_ = progress.ranks.back().stage;
    out.device.jobs = std::move(progress.ranks.back().device.jobs);
    progress.ranks.back().device.jobs.clear();
  }
  return out;
}

namespace {

/// The files' ranks placed: the pipeline chosen, each of its ranks the
/// device of its stage, the notes on the others (their advice `words`'
/// CallerOption::pipeline) and on files without jobs.
std::vector<FileResult> place_dygraph_ranks(const std::vector<InputFile>& files,
                                            const PipelineChoice& options, const OptionWords& words,
                                            std::vector<DygraphFile>& parsed) {
  // Ranks by stage, lowest rank first (file order for the concatenation).
  struct Place {
    std::size_t file;
    std::size_t rank;
  };
  std::map<int, std::vector<Place>> by_stage;
  for (std::size_t f = 0; f < parsed.size(); ++f) {
    for (std::size_t r = 0; r < parsed[f].ranks.size(); ++r) {
      if (parsed[f].ranks[r].device.jobs.empty()) continue;
      by_stage[parsed[f].ranks[r].stage].push_back({f, r});
    }
  }
  std::size_t pipelines = 0;
  for (auto& [stage, places] : by_stage) {
    std::stable_sort(places.begin(), places.end(), [&](const Place& a, const Place& b) {
      return parsed[a.file].ranks[a.rank].rank < parsed[b.file].ranks[b.rank].rank;
    });
    pipelines = std::max(pipelines, places.size());
  }
  const std::size_t chosen = static_cast<std::size_t>(std::max(options.pipeline.value_or(0), 0));
  check_pipeline_choice(options, pipelines, "the dygraph records");

  std::vector<FileResult> results(files.size());
  std::vector<bool> placed(files.size(), false);
  for (std::size_t f = 0; f < files.size(); ++f) {
    results[f] = std::move(parsed[f].result);
    results[f].has_device = false;
  }
  std::vector<std::vector<const DygraphRank*>> others(pipelines);
  std::vector<const DygraphRank*> analysed;
  std::vector<int> missing_stages;
  for (auto& [stage, places] : by_stage) {
    for (std::size_t k = 0; k < places.size(); ++k) {
      DygraphRank& rank = parsed[places[k].file].ranks[places[k].rank];
      if (k != chosen) {
        others[k].push_back(&rank);
        continue;
      }
      analysed.push_back(&rank);
      Device device = std::move(rank.device);
      device.index = stage;
      device.rank = stage;  // the global rank is in the path and the notes
      FileResult& result = results[places[k].file];
      if (!placed[places[k].file]) {
        result.device = std::move(device);
        result.has_device = true;
        placed[places[k].file] = true;
      } else {
        result.more_devices.push_back(std::move(device));
      }
    }
    if (places.size() <= chosen) missing_stages.push_back(stage);
  }

  FileResult* first = results.empty() ? nullptr : &results.front();
  if (first && pipelines > 1) {
    std::string list;
    std::uint64_t count = 0;
    for (std::size_t k = 0; k < pipelines; ++k) {
      if (k == chosen) continue;
      list += fmt::format("; pipeline {}: ranks {}", k, rank_list(others[k]));
      count += others[k].size();
    }
    first->notes.push_back(
        {WarningCode::other_pipelines,
         fmt::format("the dygraph records hold {} pipelines (data-parallel replicas: several "
                     "ranks record one stage); pipeline {} (ranks {}) is analysed and the others "
                     "are left out{}; {}",
                     pipelines, chosen, rank_list(analysed), list,
                     words.advice(CallerOption::pipeline)),
         -1, -1, count});
  }
  if (first && !missing_stages.empty() && pipelines > 0) {
    std::string stages;
    for (const int s : missing_stages) stages += fmt::format("{}{}", stages.empty() ? "" : ", ", s);
    first->notes.push_back(
        {WarningCode::missing_stage,
         fmt::format("pipeline {} has no records of stage{} {}: its devices are indexed by stage, "
                     "and the missing ones are not in the figures",
                     chosen, missing_stages.size() == 1 ? "" : "s", stages),
         -1, -1, static_cast<std::uint64_t>(missing_stages.size())});
  }
  for (std::size_t f = 0; f < files.size(); ++f) {
    if (results[f].stats.unreadable) continue;
    bool any_job = false;
    for (const DygraphRank& rank : parsed[f].ranks) any_job = any_job || rank.jobs_read > 0;
    if (any_job) continue;
    results[f].notes.push_back(
        {WarningCode::empty_input,
         fmt::format("{} holds no complete dygraph job{}: it is left out of the figures",
                     files[f].path,
                     results[f].stats.malformed > 0
                         ? fmt::format(" ({} malformed records)", results[f].stats.malformed)
                         : ""),
         -1, -1, 1});
  }
  return results;
}

/// A run's record files: one reader each, then their ranks placed.
class DygraphFormat final : public ChunkedFormat {
 public:
  DygraphFormat(const std::vector<InputFile>& files, const ReadOptions& read,
                const PipelineChoice& choice)
      : files_(files), read_(read), choice_(choice), parsed_(files.size()) {}

  std::unique_ptr<ChunkedFileReader> open(std::size_t i) override {
    return std::make_unique<DygraphFileReader>(files_[i], read_.limits, read_.diagnostics_per_file,
                                               parsed_[i]);
  }
  void gather(std::vector<FileResult>& results) override {
    results = place_dygraph_ranks(files_, choice_, *read_.words, parsed_);
  }

 private:
  const std::vector<InputFile>& files_;
  const ReadOptions& read_;
  const PipelineChoice& choice_;
  std::vector<DygraphFile> parsed_;
};

}  // namespace

std::unique_ptr<ChunkedFormat> dygraph_format(const std::vector<InputFile>& files,
                                              const ReadOptions& read,
                                              const PipelineChoice& choice) {
  return std::make_unique<DygraphFormat>(files, read, choice);
}

}  // namespace pipescope
