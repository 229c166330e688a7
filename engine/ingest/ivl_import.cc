#include "ingest/ivl_import.h"

#include <fmt/core.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <utility>

#include "ingest/progress_meter.h"
#include "records/ivl_reader.h"

namespace pipescope {

namespace {

/// The one conversion of records to jobs, for a whole file and for one that
/// is still being written: state carried from block to block.
struct RecordConverter {
  const InputFile& input;
  std::size_t max_diagnostics;
  std::vector<TypeId>& type_map;  // file type id -> out.types id
  std::uint64_t& ordinal;         // records seen, accepted or not
  FileResult& out;

  void note(std::uint64_t offset, std::string message, bool whole_file) {
    if (out.diagnostics.size() >= max_diagnostics) return;
    out.diagnostics.push_back(
        {input.path, 0,
         whole_file ? std::move(message) : fmt::format("byte offset {}: {}", offset, message)});
  }

  void header(const ivl::Header& header) {
    out.first_step = header.first_step;
    // The header's step is the file's one step-start line, before any record.
    if (header.first_step) out.device.step_starts.push_back({0, *header.first_step});
  }

  void records(const ivl::RecordBlock& block) {
    const auto& names = *block.types;
    while (type_map.size() < names.size())
      type_map.push_back(out.types.intern(names[type_map.size()]));
    std::size_t kept = 0;
    for (std::uint32_t i = 0; i < block.count; ++i, ++ordinal) {
      const ivl::Record r = block.record(i);
      if (r.end_ns < r.start_ns || r.type >= type_map.size()) [[unlikely]] {
        ++out.stats.malformed;
        note(block.offset + ivl::kBlockHeaderBytes + std::uint64_t{i} * ivl::kRecordBytes,
             r.end_ns < r.start_ns
                 ? fmt::format("record {} ends before it starts; skipped", ordinal)
                 : fmt::format("record {} has undefined job type id {}; skipped", ordinal, r.type),
             false);
        continue;
      }
      Job& job = out.device.jobs.emplace_back();
      ++kept;
      job.start_ns = r.start_ns;
      job.end_ns = r.end_ns;
      job.job_id = static_cast<std::int64_t>(ordinal);
      job.micro_batch = r.micro_batch;
      job.type = type_map[r.type];
      job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(ordinal + 1, UINT32_MAX));
    }
    out.stats.matched += kept;
  }

  void problem(const ivl::Problem& p) {
    const bool whole = p.kind == ivl::ProblemKind::io || p.kind == ivl::ProblemKind::header;
    if (whole) out.stats.error = p.message;
    if (p.kind == ivl::ProblemKind::io) out.stats.unreadable = true;
    note(p.offset, p.message, whole);
  }

  ivl::ReadCallbacks callbacks() {
    ivl::ReadCallbacks cb;
    cb.on_header = [this](const ivl::Header& h) { header(h); };
    cb.on_records = [this](const ivl::RecordBlock& block) { records(block); };
    cb.on_problem = [this](const ivl::Problem& p) { problem(p); };
    return cb;
  }
};

}  // namespace

FileResult import_ivl_file(const InputFile& input, std::size_t max_diagnostics) {
  FileResult out = empty_result_for(input);
  std::vector<TypeId> type_map;
  std::uint64_t ordinal = 0;
  RecordConverter convert{input, max_diagnostics, type_map, ordinal, out};
  ivl::ReadCallbacks callbacks = convert.callbacks();
  callbacks.on_header = [&](const ivl::Header& header) {
    convert.header(header);
    // Records take 32 bytes each: the file's real size bounds the count.
    if (input.size_bytes > header.header_bytes) {
      out.device.jobs.reserve((input.size_bytes - header.header_bytes) / ivl::kRecordBytes);
    }
  };
  const ivl::ReadResult result = ivl::read_file(input.path, callbacks);
  out.stats.bytes = result.bytes;
  out.stats.lines = result.records;
  return out;
}

IvlFollowImport::IvlFollowImport(InputFile input) : input_(std::move(input)) {}

FileResult IvlFollowImport::read_more(std::uint64_t max_bytes, std::size_t max_diagnostics) {
  FileResult out = empty_result_for(input_);
  out.types = types_;
  RecordConverter convert{input_, max_diagnostics, type_map_, ordinal_, out};
  const ivl::ReadResult result =
      ivl::read_more(input_.path, position_, convert.callbacks(), max_bytes);
  out.stats.lines = result.records;
  types_ = out.types;
  return out;
}

std::vector<FileResult> read_ivl_files(const std::vector<InputFile>& files,
                                       const ReadOptions& options, ProgressMeter& progress) {
  std::vector<FileResult> results(files.size());
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    results[i] = import_ivl_file(files[i], options.diagnostics_per_file);
    progress.advance(results[i].stats.bytes, 1);
  });
  return results;
}

}  // namespace pipescope
