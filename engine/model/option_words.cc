#include "model/option_words.h"

#include <utility>

namespace pipescope {

OptionWords::OptionWords()
    : rows_{{
#define PIPESCOPE_CALLER_OPTION_ROW(option, name, advice) Row{name, advice},
          PIPESCOPE_CALLER_OPTIONS(PIPESCOPE_CALLER_OPTION_ROW)
#undef PIPESCOPE_CALLER_OPTION_ROW
      }} {
}

const std::shared_ptr<const OptionWords>& OptionWords::engine() {
  static const std::shared_ptr<const OptionWords> words = std::make_shared<const OptionWords>();
  return words;
}

void OptionWords::set(CallerOption option, std::string name, std::string advice) {
  Row& r = rows_[static_cast<std::size_t>(option)];
  r.name = std::move(name);
  r.advice = std::move(advice);
}

void OptionWords::set_advice(CallerOption option, std::string advice) {
  rows_[static_cast<std::size_t>(option)].advice = std::move(advice);
}

}  // namespace pipescope
