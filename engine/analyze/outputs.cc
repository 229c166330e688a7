#include "analyze/outputs.h"

namespace pipescope {

const OutputSpec& output_spec(Output output) { return kOutputs[static_cast<std::size_t>(output)]; }

std::filesystem::path OutputRequest::file_of(Output o) const {
  if (o == Output::html) return html_file;
  const OutputSpec& spec = output_spec(o);
  return spec.file.empty() ? std::filesystem::path() : dir / std::string(spec.file);
}

std::vector<std::filesystem::path> OutputRequest::files() const {
  std::vector<std::filesystem::path> out;
  for (const OutputSpec& spec : kOutputs) {
    if (!wants(spec.id)) continue;
    std::filesystem::path file = file_of(spec.id);
    if (!file.empty()) out.push_back(std::move(file));
  }
  return out;
}

bool OutputRequest::draws_dependencies() const {
  for (const OutputSpec& spec : kOutputs) {
    if (wants(spec.id) && spec.draws_dependencies) return true;
  }
  return false;
}

bool OutputRequest::needs_whole_run() const {
  for (const OutputSpec& spec : kOutputs) {
    if (wants(spec.id) && !spec.partitioned) return true;
  }
  return false;
}

}  // namespace pipescope
