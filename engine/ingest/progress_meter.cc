#include "ingest/progress_meter.h"

namespace pipescope {

ProgressMeter::ProgressMeter(const std::vector<InputFile>& inputs, const ProgressCallback& callback)
    : callback_(callback) {
  progress_.files_total = inputs.size();
  for (const InputFile& input : inputs) progress_.bytes_total += input.size_bytes;
}

void ProgressMeter::advance(std::uint64_t bytes, std::size_t files) {
  std::lock_guard lock(mutex_);
  progress_.bytes_done += bytes;
  progress_.files_done += files;
  if (callback_) callback_(progress_);
}

}  // namespace pipescope
