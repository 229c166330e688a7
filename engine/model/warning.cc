#include "model/warning.h"

#include <array>

namespace pipescope {

std::optional<WarningCode> warning_from_name(std::string_view name) {
  for (const WarningInfo& info : kWarnings) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

std::string_view severity_name(WarningSeverity severity) {
  // Indexed by WarningSeverity, in its order.
  constexpr std::array<std::string_view, 3> kNames = {"input", "data", "note"};
  return kNames[static_cast<std::size_t>(severity)];
}

std::string warning_table_markdown() {
  std::string out = "| code | severity | meaning |\n| --- | --- | --- |\n";
  for (const WarningInfo& info : kWarnings) {
    out += "| `";
    out += info.name;
    out += "` | ";
    out += severity_name(info.severity);
    out += " | ";
    out += info.meaning;
    out += " |\n";
  }
  return out;
}

}  // namespace pipescope
