#include "ingest/pipeline_action.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <system_error>

namespace pipescope {

namespace {

constexpr std::string_view kJobTypes[] = {
    "forward",       "backward",      "backward_b", "backward_w", "send_forward", "recv_forward",
    "send_backward", "recv_backward", "optimizer",  "unshard",    "reshard",      "reduce_grad",
};

struct OpName {
  std::string_view label;
  std::string_view type;
  bool micro_batch;
};

// Longest first, so that SEND_F is not taken for an F.
constexpr OpName kOps[] = {
    {"REDUCE_GRAD", "reduce_grad", false},
    {"UNSHARD", "unshard", false},
    {"RESHARD", "reshard", false},
    {"SEND_F", "send_forward", true},
    {"RECV_F", "recv_forward", true},
    {"SEND_B", "send_backward", true},
    {"RECV_B", "recv_backward", true},
    {"F", "forward", true},
    {"B", "backward", true},
    {"I", "backward_b", true},
    {"W", "backward_w", true},
};

std::optional<TraceAction> parse_one_action(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  TraceAction action;
  if (!parse_label_number(text.substr(0, i), action.stage)) return std::nullopt;
  const std::string_view rest = text.substr(i);
  for (const OpName& op : kOps) {
    if (!rest.starts_with(op.label)) continue;
    const std::string_view digits = rest.substr(op.label.size());
    action.type = op.type;
    if (!op.micro_batch) {
      if (!digits.empty()) return std::nullopt;
      return action;
    }
    if (!parse_label_number(digits, action.micro_batch)) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

}  // namespace

std::vector<TraceAction> parse_pipeline_action(std::string_view label) {
  std::vector<TraceAction> actions;
  if (label.starts_with("(")) {
    const std::size_t close = label.find(')');
    if (close == std::string_view::npos || label.substr(close + 1) != "OVERLAP_F_B") return {};
    std::string_view inner = label.substr(1, close - 1);
    while (!inner.empty()) {
      const std::size_t semi = std::min(inner.find(';'), inner.size());
      const auto action = parse_one_action(inner.substr(0, semi));
      if (!action) return {};
      actions.push_back(*action);
      inner.remove_prefix(std::min(semi + 1, inner.size()));
    }
    if (actions.size() != 2) return {};
    return actions;
  }
  if (const auto action = parse_one_action(label)) actions.push_back(*action);
  return actions;
}

bool parse_label_number(std::string_view text, std::int64_t& value) {
  if (text.empty() || text.size() > 9) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size();
}

std::span<const std::string_view> trace_job_types() { return kJobTypes; }

bool is_trace_job_type(std::string_view type) {
  return std::find(std::begin(kJobTypes), std::end(kJobTypes), type) != std::end(kJobTypes);
}

std::string trace_job_type_list() {
  std::string out;
  for (std::size_t i = 0; i < std::size(kJobTypes); ++i) {
    if (i > 0) out += i + 1 == std::size(kJobTypes) ? " and " : ", ";
    out += kJobTypes[i];
  }
  return out;
}

}  // namespace pipescope
