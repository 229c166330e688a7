#include "scan/hyperscan_form.h"

namespace pipescope {

std::optional<std::string> hyperscan_form(std::string_view re) {
  enum class Class { none, positive, negated };
  Class in = Class::none;
  bool caseless = false;
  bool beyond_ascii = false;  // a byte or an escape that may be one >= 0x80
  std::string out;
  out.reserve(re.size() + 16);
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (static_cast<unsigned char>(c) >= 0x80) beyond_ascii = true;
    if (c == '\\' && i + 1 < re.size()) {
      const char e = re[++i];
      switch (e) {
        case 'Q': {
          const std::size_t end = re.find("\\E", i + 1);
          const std::size_t stop = end == std::string_view::npos ? re.size() : end + 2;
          for (std::size_t k = i + 1; k < stop; ++k) {
            if (static_cast<unsigned char>(re[k]) >= 0x80) beyond_ascii = true;
          }
          out.append(re.substr(i - 1, stop - (i - 1)));
          i = stop - 1;
          continue;
        }
        case 'p':
        case 'P':
          return std::nullopt;
        case 'S':
          out += in == Class::none ? "[\\S\\x0b]" : in == Class::positive ? "\\S\\x0b" : "\\S";
          continue;
        case 's':
          out += in == Class::negated ? "\\t\\n\\f\\r\\x20" : "\\s";
          continue;
        case 'v':
          out += "\\x0b";
          continue;
        case 'A':
        case 'z':
          if (in == Class::none) {
            out += e == 'A' ? '^' : '$';
            continue;
          }
          break;
        case 'x':
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
          beyond_ascii = true;
          break;
        default:
          break;
      }
      out += c;
      out += e;
      continue;
    }
    if (in != Class::none) {
      if (c == '[' && i + 1 < re.size() && re[i + 1] == ':') {  // [:alpha:]
        const std::size_t end = re.find(":]", i + 2);
        if (end != std::string_view::npos) {
          out.append(re.substr(i, end + 2 - i));
          i = end + 1;
          continue;
        }
      }
      if (c == ']') in = Class::none;
      out += c;
      continue;
    }
    if (c == '[') {
      out += c;
      in = Class::positive;
      if (i + 1 < re.size() && re[i + 1] == '^') {
        in = Class::negated;
        out += re[++i];
      }
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];  // a ']' first is a member
      continue;
    }
    if (c == '(' && i + 2 < re.size() && re[i + 1] == '?') {
      // Flags: (?i), (?i:...), (?s-i); any `i` counts.
      std::size_t j = i + 2;
      bool i_flag = false;
      while (j < re.size() && (std::isalpha(static_cast<unsigned char>(re[j])) || re[j] == '-')) {
        i_flag = i_flag || re[j] == 'i';
        ++j;
      }
      if (j < re.size() && (re[j] == ')' || re[j] == ':')) caseless = caseless || i_flag;
    }
    out += c;
  }
  if (caseless && beyond_ascii) return std::nullopt;
  return out;
}

}  // namespace pipescope
