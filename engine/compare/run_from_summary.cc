#include "compare/run_from_summary.h"

#include "export/summary_reader.h"

namespace pipescope {

RunFigures read_summary_json(const std::string& path) {
  return {read_summary_figures(path), path, "summary"};
}

RunFigures parse_summary_json(std::string_view json, const std::string& source) {
  return {parse_summary_figures(json, source), source, "summary"};
}

}  // namespace pipescope
