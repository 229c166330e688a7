#include "model/warning.h"

namespace pipescope {

std::optional<WarningCode> warning_from_name(std::string_view name) {
  for (const WarningInfo& info : kWarnings) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

std::string_view severity_name(WarningSeverity severity) {
  switch (severity) {
    case WarningSeverity::input:
      return "input";
    case WarningSeverity::data:
      return "data";
    case WarningSeverity::note:
      return "note";
  }
  return "note";
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
