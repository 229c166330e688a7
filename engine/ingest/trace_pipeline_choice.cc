#include "ingest/trace_pipeline_choice.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "model/option_words.h"

namespace pipescope {

namespace {

std::string file_names(const std::vector<const InputFile*>& files) {
  std::string out;
  for (const InputFile* f : files) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ",
                       std::filesystem::path(f->path).filename().string());
  }
  return out;
}

}  // namespace

void choose_trace_pipeline(const std::vector<InputFile>& files,
                           const std::vector<std::optional<std::int64_t>>& lowest_stage,
                           const PipelineChoice& options, const OptionWords& words,
                           std::vector<FileResult>& results) {
  std::map<std::int64_t, std::vector<std::size_t>> by_stage;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (lowest_stage[i] && !results[i].device.jobs.empty()) by_stage[*lowest_stage[i]].push_back(i);
  }
  std::size_t pipelines = 0;
  for (const auto& [stage, traces] : by_stage) pipelines = std::max(pipelines, traces.size());
  const std::size_t chosen = static_cast<std::size_t>(std::max(options.pipeline.value_or(0), 0));
  check_pipeline_choice(options, pipelines, "the traces");
  if (pipelines <= 1) return;
  if (!options.pipeline) {
    std::string shared;
    std::uint64_t count = 0;
    for (const auto& [stage, traces] : by_stage) {
      if (traces.size() < 2) continue;
      std::vector<const InputFile*> group;
      for (const std::size_t i : traces) group.push_back(&files[i]);
      shared += fmt::format("{}stage {}: {}", shared.empty() ? "" : "; ", stage, file_names(group));
      count += traces.size();
    }
    results.front().notes.push_back(
        {WarningCode::shared_stages,
         fmt::format("several traces run the same stages ({}): they are analysed as devices of "
                     "one stage (tensor-parallel peers); if they are data-parallel replicas, "
                     "analyse one pipeline at a time (pipeline k = the k-th trace of each stage, "
                     "0-{}): {}",
                     shared, pipelines - 1, words.advice(CallerOption::pipeline)),
         -1, -1, count});
    return;
  }
  std::vector<std::vector<const InputFile*>> members(pipelines);
  std::vector<std::int64_t> missing;
  int index = 0;
  for (const auto& [stage, traces] : by_stage) {
    for (std::size_t k = 0; k < traces.size(); ++k) {
      members[k].push_back(&files[traces[k]]);
      FileResult& r = results[traces[k]];
      if (k == chosen) {
        r.device.index = index;
        r.device.rank = index;  // the rank within the pipeline; the global one is in the path
      } else {
        r.has_device = false;
      }
    }
    if (traces.size() > chosen) {
      ++index;
    } else {
      missing.push_back(stage);
    }
  }
  std::string list;
  std::uint64_t count = 0;
  for (std::size_t k = 0; k < pipelines; ++k) {
    if (k == chosen) continue;
    list += fmt::format("; pipeline {}: {}", k, file_names(members[k]));
    count += members[k].size();
  }
  FileResult& first = results.front();
  first.notes.push_back(
      {WarningCode::other_pipelines,
       fmt::format("the traces hold {} pipelines (data-parallel replicas: several ranks run one "
                   "stage); pipeline {} ({}) is analysed and the others are left out{}; {}",
                   pipelines, chosen, file_names(members[chosen]), list,
                   words.advice(CallerOption::pipeline)),
       -1, -1, count});
  if (!missing.empty()) {
    std::string stages;
    for (const std::int64_t s : missing)
      stages += fmt::format("{}{}", stages.empty() ? "" : ", ", s);
    first.notes.push_back(
        {WarningCode::missing_stage,
         fmt::format("pipeline {} has no trace of stage{} {} (the lowest stage its labels "
                     "name): {} left out of the figures",
                     chosen, missing.size() == 1 ? "" : "s", stages,
                     missing.size() == 1 ? "it is" : "they are"),
         -1, -1, static_cast<std::uint64_t>(missing.size())});
  }
}

}  // namespace pipescope
