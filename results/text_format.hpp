// Small text helpers every report and log reader shares: a list joined with a separator, a number
// in a printf format.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cts {

// The items with `sep` between them ("" for none; an empty first item adds no separator).
inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string s;
  for (const auto& x : items) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

// `v` in a printf format that takes one double ("%.1f", "%g").
inline std::string format_number(double v, const char* printf_format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace cts
