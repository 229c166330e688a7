#include "ingest/text_log_reader.h"

#include <fmt/core.h>
#include <tbb/concurrent_queue.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "ingest/progress_meter.h"
#include "model/option_words.h"
#include "model/page_control.h"
#include "scan/chunk_scanner.h"
#include "scan/event_clock.h"
#include "scan/line_stamp.h"
#include "scan/prefilter.h"
#include "source/byte_stream.h"
#include "source/line_chunker.h"
#include "source/range_reader.h"

namespace pipescope {

namespace {

/// What the reader is told: every reader's options and the text logs' own.
struct LogOptions : ReadOptions, TextLogOptions {
  LogOptions(const ReadOptions& read, const TextLogOptions& logs)
      : ReadOptions(read), TextLogOptions(logs) {}
};

/// Events kept per library entry and file (ResultBuilder::consume).
constexpr std::uint64_t kEventsKeptPerKind = 10'000;

/// One chunk travelling through the pipeline, with its buffer and results.
/// Work items are pooled so their buffers and vectors are reused (fresh
/// allocations per chunk caused page-fault storms).
struct WorkItem {
  explicit WorkItem(const ReadLimits& limits) : buffer(limits) {}
  std::size_t file = 0;
  /// Set for a regular file: the parallel stage reads [range_begin,
  /// range_end) itself. Null when the serial stage already read `chunk`.
  std::shared_ptr<const RangeFile> range_file;
  std::uint64_t range_begin = 0;
  std::uint64_t range_end = 0;
  bool last_of_file = false;
  ChunkBuffer buffer;
  LineChunk chunk;
  /// Bytes of the lines scanned (chunk.text, or every block of a range read in blocks).
  std::uint64_t text_bytes = 0;
  std::string error;        // the file failed here (open or read, or damaged compressed data)
  bool unreadable = false;  // `error` is an I/O error (open or read), not damaged data
  ChunkScan scan;
};

class WorkItemPool {
 public:
  explicit WorkItemPool(const ReadLimits& limits) : limits_(limits) {}
  WorkItem* acquire() {
    WorkItem* item = nullptr;
    if (free_.try_pop(item)) return item;
    all_.push_back(std::make_unique<WorkItem>(limits_));  // only the serial input stage acquires
    return all_.back().get();
  }
  void release(WorkItem* item) { free_.push(item); }

 private:
  ReadLimits limits_;
  std::vector<std::unique_ptr<WorkItem>> all_;
  tbb::concurrent_queue<WorkItem*> free_;
};

/// The serial first stage: cuts the regular, uncompressed files into byte
/// ranges, in order, without reading them; the parallel stage reads each
/// range itself, so reads run on every thread and one huge file is split
/// across them.
class RangeCursor {
 public:
  RangeCursor(const std::vector<InputFile>& inputs, std::vector<std::size_t> files,
              const ReadLimits& limits)
      : inputs_(inputs), files_(std::move(files)), limits_(limits) {}

  /// Fills `item` with the next range or file error; false when done.
  bool next(WorkItem& item) {
    if (next_ == files_.size()) return false;
    item.file = files_[next_];
    item.error.clear();
    item.unreadable = false;
    item.chunk = {};
    item.text_bytes = 0;
    item.range_file.reset();
    item.last_of_file = false;
    try {
      if (!file_) {
        file_ = std::make_shared<const RangeFile>(inputs_[item.file].path);
        offset_ = 0;
      }
      const std::uint64_t chunk = std::max<std::size_t>(limits_.chunk_bytes, 1);
      item.range_file = file_;
      item.range_begin = offset_;
      item.range_end = std::min(file_->size(), offset_ + chunk);
      offset_ = item.range_end;
      item.last_of_file = offset_ >= file_->size();  // an empty file is one empty range
    } catch (const std::system_error& e) {
      item.error = e.what();
      item.unreadable = true;
      item.last_of_file = true;
    }
    if (item.last_of_file) {
      file_.reset();
      ++next_;
    }
    return true;
  }

 private:
  const std::vector<InputFile>& inputs_;
  std::vector<std::size_t> files_;
  ReadLimits limits_;
  std::size_t next_ = 0;
  std::shared_ptr<const RangeFile> file_;
  std::uint64_t offset_ = 0;
};

/// One worker thread's search state: the literal search's, the event
/// matcher's when events are on, and the --job-line regex's when given.
struct ThreadScratch {
  ThreadScratch(const Prefilter& prefilter, const EventMatcher* events,
                const JobLineRegex* job_line)
      : prefilter(prefilter) {
    if (events != nullptr) this->events.emplace(*events);
    if (job_line != nullptr) this->job_line.emplace(*job_line);
  }
  Prefilter::Scratch prefilter;
  std::optional<EventMatcher::Scratch> events;
  std::optional<JobLineRegex::Scratch> job_line;
};

ChunkScanOptions scan_options_for(const LineChunk& chunk, bool look_for_binary,
                                  const LogOptions& options, ThreadScratch& scratch) {
  ChunkScanOptions scan_options;
  if (scratch.events) {
    scan_options.events = options.events;
    scan_options.event_scratch = &*scratch.events;
  }
  if (scratch.job_line) {
    scan_options.job_line = options.job_line;
    scan_options.job_line_scratch = &*scratch.job_line;
  }
  scan_options.end_of_file = chunk.end_of_file;
  scan_options.max_problems = options.diagnostics_per_file;
  scan_options.look_for_binary = look_for_binary;
  scan_options.max_line_bytes = options.limits.max_line_bytes;
  return scan_options;
}

/// Scans one chunk already read into `item` (no-op for an item with an error).
void scan_item(WorkItem& item, const Prefilter& prefilter, ThreadScratch& scratch,
               const LogOptions& options) {
  item.scan.clear();
  item.text_bytes = item.chunk.text.size();
  if (!item.error.empty()) return;
  const bool look_for_binary = item.chunk.file_offset == 0 && item.chunk.skipped_before.empty();
  scan_chunk(item.chunk.text, prefilter, scratch.prefilter,
             scan_options_for(item.chunk, look_for_binary, options, scratch), item.scan);
}

/// Reads and scans the range of `item` block by block (ReadLimits::block_bytes):
/// each block is a sub-range read into the start of the item's buffer, so the
/// bytes are scanned while still in the cache, and the buffer's pages are
/// the same for every block. The blocks' lines are exactly the range's lines;
/// only a line over the limit that crosses a block boundary inside the range
/// (which reading the range whole keeps as text) sends the range back to be
/// read whole. Throws std::system_error on a read error.
void read_and_scan_range(WorkItem& item, const Prefilter& prefilter, ThreadScratch& scratch,
                         const LogOptions& options) {
  const RangeFile& file = *item.range_file;
  const ReadLimits& limits = options.limits;
  const std::uint64_t block = limits.block_bytes;
  if (block == 0 || block >= std::max<std::size_t>(limits.chunk_bytes, 1)) {
    file.read_lines(item.range_begin, item.range_end, limits, item.buffer, item.chunk);
    scan_item(item, prefilter, scratch, options);
    return;
  }
  item.scan.clear();
  // As when the range is read whole: the first range of a file is looked at
  // for binary data (its text starts at byte 0).
  const bool look_for_binary = item.range_begin == 0;
  std::uint64_t text_offset = 0;
  std::optional<std::uint64_t> file_offset;
  for (std::uint64_t begin = item.range_begin; begin < item.range_end; begin += block) {
    const std::uint64_t end = std::min(item.range_end, begin + block);
    file.read_lines(begin, end, limits, item.buffer, item.chunk);
    if (item.chunk.skipped_after && end < item.range_end) {
      file.read_lines(item.range_begin, item.range_end, limits, item.buffer, item.chunk);
      scan_item(item, prefilter, scratch, options);
      return;
    }
    if (!file_offset && !item.chunk.text.empty()) file_offset = item.chunk.file_offset;
    scan_chunk_more(item.chunk.text, text_offset, prefilter, scratch.prefilter,
                    scan_options_for(item.chunk, look_for_binary, options, scratch), item.scan);
    text_offset += item.chunk.text.size();
  }
  // The range as a whole: its bytes, where its text starts, and the last
  // block's skipped line and end of file.
  item.text_bytes = text_offset;
  item.chunk.text = {};
  item.chunk.file_offset = file_offset.value_or(item.range_begin);
}

/// Builds each file's result from its chunks. One file's chunks always
/// arrive in order and from one thread at a time (the ordered stage, or the
/// file's stream task), so files need no lock of their own.
class ResultBuilder {
 public:
  ResultBuilder(const std::vector<InputFile>& inputs, const LogOptions& options,
                ProgressMeter& progress)
      : inputs_(inputs), options_(options), progress_(progress), files_(inputs.size()) {
    for (std::size_t i = 0; i < inputs.size(); ++i) files_[i].result = empty_result_for(inputs[i]);
  }

  void consume(WorkItem& item) {
    const std::size_t f = item.file;
    File& file = files_[f];
    InputStats& stats = file.result.stats;
    if (!item.error.empty()) {
      stats.error = item.error;
      stats.unreadable = stats.unreadable || item.unreadable;
      note(f, 0, item.error);
      if (item.last_of_file) progress_.advance(0, 1);
      return;
    }
    std::uint64_t bytes = item.text_bytes;
    for (const SkippedLine& skipped : item.chunk.skipped_before) bytes += skip_line(f, skipped);
    ChunkScan& scan = item.scan;
    const std::uint64_t base = file.lines;
    stats.bytes += item.text_bytes;
    stats.lines = file.lines = base + scan.lines;
    stats.malformed += scan.malformed;
    stats.oversized += scan.oversized;
    stats.matched += scan.jobs.size();
    if (scan.first_nul) {
      note(f, 0,
           fmt::format("binary data (NUL byte at byte offset {}); scanning it as text",
                       item.chunk.file_offset + *scan.first_nul));
    }
    for (const LineProblem& problem : scan.problems) {
      // Only candidate lines (holding the job literal) are examined: an
      // over-long one is a job line lost, said with how to keep it.
      note(f, base + problem.line + 1,
           problem.error == LineError::line_too_long
               ? fmt::format("holds a job line ({}) but is longer than the {}-byte line limit "
                             "(a progress bar's \\r updates without a newline?); skipped, and its "
                             "job is lost: {}",
                             job_line_kind(), options_.limits.max_line_bytes,
                             options_.words->advice(CallerOption::max_line))
               : std::string(describe(problem.error)));
    }
    for (const StepStartSeen& seen : scan.step_starts) {
      file.result.device.step_starts.push_back({base + seen.line + 1, seen.step});
      if (!file.result.first_step) file.result.first_step = seen.step;
    }
    if (scan.partial_last_line > 0) {
      stats.partial_last_line_bytes = scan.partial_last_line;
      note(f, stats.lines,
           fmt::format("last line has no newline ({} bytes): the file is still being written or "
                       "was cut off; the line is not read",
                       scan.partial_last_line));
    }

    for (EventSeen& seen : scan.events) {
      // A pattern matching most lines of a log is noise, not an event:
      // memory stays bounded by the limit, whatever the file's size.
      if (file.per_kind.size() <= seen.pattern) file.per_kind.resize(seen.pattern + 1, 0);
      if (++file.per_kind[seen.pattern] > kEventsKeptPerKind) continue;
      LogEvent event;
      event.kind = seen.pattern;
      event.line = base + seen.line + 1;
      event.time_kind = seen.approximate ? EventTime::approximate : EventTime::stamped;
      event.captures = std::move(seen.captures);
      // An undated line with no dated line before it in its chunk: the
      // previous chunk's last dated line. Its offset: the nearest stamped
      // job line before it, in this chunk or an earlier one.
      file.stamps.push_back(
          {seen.stamp ? seen.stamp : file.last_stamp, file.clock.anchor_of(seen)});
      file.result.device.events.push_back(std::move(event));
    }
    file.clock.advance(scan);
    if (scan.last_stamp) file.last_stamp = scan.last_stamp;

    auto& jobs = file.result.device.jobs;
    if (jobs.capacity() == 0 && !scan.jobs.empty()) {
      // Reserve once for the whole file from the first chunk's job density,
      // instead of doubling (each doubling copies every job and faults in
      // fresh pages: a quarter of the time on dense logs). Pages of an
      // over-estimate are never touched, so they cost no memory.
      const double per_byte = static_cast<double>(scan.jobs.size()) /
                              static_cast<double>(std::max<std::uint64_t>(item.text_bytes, 1));
      jobs.reserve(
          static_cast<std::size_t>(per_byte * 1.1 * static_cast<double>(inputs_[f].size_bytes)) +
          scan.jobs.size());
    }
    file.type_map.clear();
    for (const std::string& name : scan.types)
      file.type_map.push_back(file.result.types.intern(name));
    // A --job-line regex without an `id` capture: a job's id is its index
    // among the file's jobs.
    const bool number_jobs = options_.job_line != nullptr && !options_.job_line->has_id();
    // Copied and relabelled in one pass (file type ids, file lines), so each
    // job of this serial stage is read and written once.
    for (const Job& scanned : scan.jobs) {
      Job job = scanned;
      if (number_jobs) job.job_id = static_cast<std::int64_t>(jobs.size());
      job.type = file.type_map[job.type];
      job.line =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(base + job.line + 1, UINT32_MAX));
      jobs.push_back(job);
    }
    publish_jobs(file);
    if (item.chunk.skipped_after) bytes += skip_line(f, *item.chunk.skipped_after);
    progress_.advance(bytes, item.last_of_file ? 1 : 0);
  }

  /// Faults in the pages of file f's job array just past what consume() has
  /// written, from the parallel stage (any thread, any time): the fresh
  /// pages' faults and zeroing (18-500 ms of the 1 GB dense read on a
  /// virtual machine, where a first touch costs the host's backing too) are
  /// then taken beside the scan instead of in the ordered stage, the one
  /// every chunk waits for. Never changes a byte of the array.
  void prefault_jobs(std::size_t f) {
    File& file = files_[f];
    const char* base = file.jobs_base.load(std::memory_order_acquire);
    if (base == nullptr) return;
    const std::size_t want =
        std::min(file.jobs_capacity.load(std::memory_order_acquire),
                 file.jobs_written.load(std::memory_order_acquire) + kPrefaultAheadBytes);
    std::size_t from = file.jobs_populated.load(std::memory_order_acquire);
    do {
      if (from >= want) return;
    } while (!file.jobs_populated.compare_exchange_weak(from, want, std::memory_order_acq_rel));
    populate_for_writing(base + from, want - from);
  }

  std::vector<FileResult> finish() {
    std::vector<FileResult> results;
    results.reserve(files_.size());
    for (std::size_t f = 0; f < inputs_.size(); ++f) {
      const InputStats& stats = files_[f].result.stats;
      if (stats.error.empty() && stats.bytes == 0) note(f, 0, "file is empty");
      // A log truncated (or replaced by a shorter one) while it was read:
      // ranges past the new end read nothing, so say so instead of silently
      // reporting fewer lines.
      std::error_code ec;
      const std::uint64_t now = std::filesystem::file_size(inputs_[f].path, ec);
      if (!ec && stats.error.empty() && now < inputs_[f].size_bytes) {
        note(f, 0,
             fmt::format("file shrank from {} to {} bytes while it was read (truncated or "
                         "replaced); lines past byte {} are missing",
                         inputs_[f].size_bytes, now, now));
      }
      place_events(f);
      // The array's end faulted in ahead but never written goes back.
      const JobVector& jobs = files_[f].result.device.jobs;
      release_unused_pages(jobs.data(), jobs.size() * sizeof(Job), jobs.capacity() * sizeof(Job));
      results.push_back(std::move(files_[f].result));
    }
    return results;
  }

 private:
  struct File {
    FileResult result;
    std::uint64_t lines = 0;
    std::vector<TypeId> type_map;  // chunk type id -> file type id
    /// The stamp of each of result.device.events, as printed, and the job
    /// line that gives its offset (unset: the file's first, when known).
    struct EventStamp {
      std::optional<LineStamp> stamp;
      std::optional<StampAnchor> anchor;
    };
    std::vector<EventStamp> stamps;
    EventClock clock;
    std::optional<LineStamp> last_stamp;
    std::vector<std::uint64_t> per_kind;  // events seen per library entry
    /// Where result.device.jobs is, its capacity and how far it is written,
    /// in bytes, as consume() last left it; and how far prefault_jobs() has
    /// faulted it in.
    std::atomic<const char*> jobs_base{nullptr};
    std::atomic<std::size_t> jobs_capacity{0};
    std::atomic<std::size_t> jobs_written{0};
    std::atomic<std::size_t> jobs_populated{0};
  };

  /// How far past the written end of a job array prefault_jobs() goes: about
  /// two chunks' jobs of dense logs (the chunks in flight behind the ordered
  /// stage), so that the pages are there when consume() reaches them.
  static constexpr std::size_t kPrefaultAheadBytes = std::size_t{4} << 20;

  /// Tells prefault_jobs() where file's job array now is (the ordered stage,
  /// after each chunk's jobs): a new allocation is faulted in as far as it
  /// is written (its jobs were moved there).
  static void publish_jobs(File& file) {
    const JobVector& jobs = file.result.device.jobs;
    const auto* base = reinterpret_cast<const char*>(jobs.data());
    const std::size_t written = jobs.size() * sizeof(Job);
    if (file.jobs_base.load(std::memory_order_relaxed) != base) {
      file.jobs_populated.store(written, std::memory_order_release);
      file.jobs_capacity.store(jobs.capacity() * sizeof(Job), std::memory_order_release);
      file.jobs_base.store(base, std::memory_order_release);
    }
    file.jobs_written.store(written, std::memory_order_release);
  }

  /// Places file f's events on the epoch: each by its written offset or by
  /// the nearest stamped job line before it (docs/guide.md, "Log events").
  void place_events(std::size_t f) {
    File& file = files_[f];
    for (std::size_t k = 0; k < file.per_kind.size(); ++k) {
      if (file.per_kind[k] <= kEventsKeptPerKind) continue;
      note(f, 0,
           fmt::format("{} lines match log event [{}]: only the first {} are kept (a pattern that "
                       "matches so many lines is noise rather than an event)",
                       file.per_kind[k], options_.events->kinds()[k].id, kEventsKeptPerKind));
    }
    auto& events = file.result.device.events;
    if (events.empty()) return;
    std::size_t unplaced = 0;
    for (std::size_t e = 0; e < events.size(); ++e) {
      if (const auto t = file.clock.place(file.stamps[e].stamp, file.stamps[e].anchor)) {
        events[e].time_ns = *t;
      } else {
        events[e].time_kind = EventTime::unplaced;
        ++unplaced;
      }
    }
    const bool anchored = file.clock.first() && placement_from(*file.clock.first());
    if (!anchored && unplaced > 0) {
      note(f, 0,
           fmt::format("{} log event{} found, but no job line with a timestamp (GLOG or dated) to "
                       "place the file's local times on the epoch: {} in no step",
                       unplaced, unplaced == 1 ? "" : "s",
                       unplaced == 1 ? "it is listed" : "they are listed"));
    }
  }

  /// What a job line is, for the note on one lost in an over-long line.
  std::string job_line_kind() const {
    return options_.job_line != nullptr
               ? "one of the " + job_lines_looked_for(options_, *options_.words)
               : fmt::format("'{}'", kJobLineLiteral);
  }

  /// Accounts for a line the reader dropped as over-long; returns its bytes.
  std::uint64_t skip_line(std::size_t f, const SkippedLine& skipped) {
    File& file = files_[f];
    InputStats& stats = file.result.stats;
    stats.lines = ++file.lines;
    ++stats.oversized;
    const std::uint64_t bytes = skipped.length + (skipped.has_newline ? 1 : 0);
    stats.bytes += bytes;
    if (skipped.held_watched) {
      // A job line behind a progress bar's carriage returns (one line of
      // `\r` updates that never ends) is lost unless the limit is raised.
      note(f, file.lines,
           fmt::format("line of {} bytes at byte offset {} holds a job line ('{}') but is longer "
                       "than the {}-byte line limit (a progress bar's \\r updates without a "
                       "newline?); skipped, and its job is lost: {}",
                       skipped.length, skipped.offset, kJobLineLiteral,
                       options_.limits.max_line_bytes,
                       options_.words->advice(CallerOption::max_line)));
    } else {
      note(f, file.lines,
           fmt::format("line of {} bytes at byte offset {} is longer than the {}-byte limit; "
                       "skipped",
                       skipped.length, skipped.offset, options_.limits.max_line_bytes));
    }
    return bytes;
  }

  void note(std::size_t f, std::uint64_t line, std::string message) {
    auto& diagnostics = files_[f].result.diagnostics;
    if (diagnostics.size() < options_.diagnostics_per_file) {
      diagnostics.push_back({inputs_[f].path, line, std::move(message)});
    }
  }

  const std::vector<InputFile>& inputs_;
  const LogOptions& options_;
  ProgressMeter& progress_;
  std::vector<File> files_;
};

/// Reads one stream file (compressed, or not a regular file) in order on
/// one thread: decompression cannot be split, so such files run in parallel
/// with each other and with the range pipeline instead.
void scan_stream(std::size_t file, const InputFile& input, const Prefilter& prefilter,
                 tbb::enumerable_thread_specific<ThreadScratch>& scratches,
                 const LogOptions& options, ResultBuilder& builder) {
  auto item = std::make_unique<WorkItem>(options.limits);
  item->file = file;
  try {
    LineChunker chunker(input.path, options.limits);
    while (chunker.next(item->buffer, item->chunk)) {
      scan_item(*item, prefilter, scratches.local(), options);
      builder.consume(*item);
    }
    item->chunk = {};
    item->text_bytes = 0;
    item->scan.clear();
    item->error = chunker.stream_error();
  } catch (const std::system_error& e) {
    item->error = e.what();
    item->unreadable = true;
  }
  item->last_of_file = true;
  builder.consume(*item);
}

}  // namespace

std::vector<FileResult> read_text_logs(const std::vector<InputFile>& inputs,
                                       const ReadOptions& read, const TextLogOptions& logs,
                                       ProgressMeter& progress) {
  // An over-long line that held a job line is said so (SkippedLine::held_watched);
  // a --job-line regex is no literal to look for in pieces: such a line is
  // only said to be over-long.
  LogOptions options(read, logs);
  options.limits.watched = options.job_line != nullptr ? std::string_view() : kJobLineLiteral;
  const unsigned threads = options.threads > 0
                               ? options.threads
                               : static_cast<unsigned>(tbb::info::default_concurrency());
  const Prefilter prefilter;
  tbb::enumerable_thread_specific<ThreadScratch> scratches(
      [&] { return ThreadScratch(prefilter, options.events, options.job_line); });
  ResultBuilder builder(inputs, options, progress);
  std::vector<std::size_t> range_files;
  tbb::task_group streams;
  for (std::size_t f = 0; f < inputs.size(); ++f) {
    if (compression_of(inputs[f].path) == Compression::none && readable_in_ranges(inputs[f].path)) {
      range_files.push_back(f);
    } else {
      streams.run([&, f] { scan_stream(f, inputs[f], prefilter, scratches, options, builder); });
    }
  }

  WorkItemPool pool(options.limits);
  RangeCursor cursor(inputs, std::move(range_files), options.limits);
  // Enough ranges in flight to keep every thread busy while one is merged;
  // each costs one chunk buffer.
  const std::size_t max_in_flight = 2 * static_cast<std::size_t>(threads) + 2;

  tbb::parallel_pipeline(
      max_in_flight,
      tbb::make_filter<void, WorkItem*>(tbb::filter_mode::serial_in_order,
                                        [&](tbb::flow_control& flow) -> WorkItem* {
                                          WorkItem* item = pool.acquire();
                                          if (!cursor.next(*item)) {
                                            pool.release(item);
                                            flow.stop();
                                            return nullptr;
                                          }
                                          return item;
                                        }) &
          tbb::make_filter<WorkItem*, WorkItem*>(
              tbb::filter_mode::parallel,
              [&](WorkItem* item) {
                if (item->range_file) {
                  try {
                    read_and_scan_range(*item, prefilter, scratches.local(), options);
                  } catch (const std::system_error& e) {
                    item->error = e.what();
                    item->unreadable = true;
                    item->scan.clear();
                  }
                  item->range_file.reset();  // the last range closes the file
                } else {
                  scan_item(*item, prefilter, scratches.local(), options);
                }
                if (!item->scan.jobs.empty()) builder.prefault_jobs(item->file);
                return item;
              }) &
          tbb::make_filter<WorkItem*, void>(tbb::filter_mode::serial_in_order, [&](WorkItem* item) {
            builder.consume(*item);
            pool.release(item);
          }));
  streams.wait();
  return builder.finish();
}

}  // namespace pipescope
