#include "records/record_import.h"

#include <fmt/core.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "records/ivl_reader.h"

namespace pipescope {

ImportedRecords import_ivl_file(const InputFile& input, std::size_t max_diagnostics) {
  ImportedRecords out;
  Device& device = out.device;
  device.index = input.device;
  device.machine = input.machine;
  device.machine_name = input.machine_name;
  device.rank = input.rank;
  device.path = input.path;
  out.stats.path = input.path;

  auto note = [&](std::uint64_t offset, std::string message, bool whole_file) {
    if (out.diagnostics.size() >= max_diagnostics) return;
    out.diagnostics.push_back(
        {input.path, 0,
         whole_file ? std::move(message) : fmt::format("byte offset {}: {}", offset, message)});
  };

  std::vector<TypeId> type_map;  // file type id -> out.types id
  std::uint64_t ordinal = 0;     // records seen, accepted or not
  ivl::ReadCallbacks callbacks;
  callbacks.on_header = [&](const ivl::Header& header) {
    out.first_step = header.first_step;
    // Records take 32 bytes each: the file's real size bounds the count.
    if (input.size_bytes > header.header_bytes) {
      device.jobs.reserve((input.size_bytes - header.header_bytes) / ivl::kRecordBytes);
    }
  };
  callbacks.on_records = [&](const ivl::RecordBlock& block) {
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
      Job& job = device.jobs.emplace_back();
      ++kept;
      job.start_ns = r.start_ns;
      job.end_ns = r.end_ns;
      job.job_id = static_cast<std::int64_t>(ordinal);
      job.micro_batch = r.micro_batch;
      job.type = type_map[r.type];
      job.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(ordinal + 1, UINT32_MAX));
    }
    out.stats.matched += kept;
  };
  callbacks.on_problem = [&](const ivl::Problem& p) {
    const bool whole = p.kind == ivl::ProblemKind::io || p.kind == ivl::ProblemKind::header;
    if (whole) out.stats.error = p.message;
    note(p.offset, p.message, whole);
  };
  const ivl::ReadResult result = ivl::read_file(input.path, callbacks);
  out.stats.bytes = result.bytes;
  out.stats.lines = result.records;
  return out;
}

bool has_ivl_inputs(const std::vector<InputFile>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const InputFile& f) { return f.format == InputFormat::ivl; });
}

namespace {

/// Moves `device` into `run`, re-interning its job types from `from`.
void adopt(Device&& device, const TypeTable& from, Run& run) {
  std::vector<TypeId> map(from.size());
  bool identity = true;
  for (TypeId t = 0; t < from.size(); ++t) {
    map[t] = run.types.intern(from.name(t));
    identity = identity && map[t] == t;
  }
  if (!identity) {
    for (Job& job : device.jobs) job.type = map[job.type];
  }
  run.devices.push_back(std::move(device));
}

}  // namespace

Run scan_mixed_inputs(const std::vector<InputFile>& inputs, const ScanOptions& options) {
  std::vector<InputFile> text;
  std::vector<const InputFile*> records;
  for (const InputFile& input : inputs) {
    if (input.format == InputFormat::ivl) {
      records.push_back(&input);
    } else {
      text.push_back(input);
    }
  }
  Run text_run;
  if (!text.empty()) text_run = scan_worker_logs(text, options);  // has no .ivl: no recursion

  std::vector<ImportedRecords> imported(records.size());
  {
    const unsigned threads = options.threads > 0
                                 ? options.threads
                                 : static_cast<unsigned>(tbb::info::default_concurrency());
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
    tbb::parallel_for(std::size_t{0}, records.size(), [&](std::size_t i) {
      imported[i] = import_ivl_file(*records[i], options.diagnostics_per_file);
    });
  }

  Run run;
  run.first_step = text_run.first_step;
  std::size_t next_text = 0;
  std::size_t next_record = 0;
  std::size_t next_diagnostic = 0;
  for (const InputFile& input : inputs) {
    if (input.format == InputFormat::ivl) {
      ImportedRecords& r = imported[next_record++];
      adopt(std::move(r.device), r.types, run);
      run.inputs.push_back(std::move(r.stats));
      for (auto& d : r.diagnostics) run.diagnostics.push_back(std::move(d));
      if (r.first_step && (!run.first_step || *r.first_step < *run.first_step)) {
        run.first_step = r.first_step;
      }
    } else {
      const std::size_t k = next_text++;
      adopt(std::move(text_run.devices[k]), text_run.types, run);
      run.inputs.push_back(std::move(text_run.inputs[k]));
      // The text run's diagnostics are grouped by file, in input order.
      while (next_diagnostic < text_run.diagnostics.size() &&
             text_run.diagnostics[next_diagnostic].path == input.path) {
        run.diagnostics.push_back(std::move(text_run.diagnostics[next_diagnostic++]));
      }
    }
  }
  run.finalize();
  return run;
}

}  // namespace pipescope
