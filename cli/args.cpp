#include "cli/args.hpp"

#include <cmath>
#include <cstdlib>

namespace cts::cli {

Args::Args(std::map<std::string, std::vector<std::string>> values, std::set<std::string> flags,
           std::vector<std::string> positional)
    : values_(std::move(values)), flags_seen_(std::move(flags)), positional_(std::move(positional)) {}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

double Args::number(const std::string& name, double fallback) const {
  auto v = value(name);
  if (!v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  // nan and inf are numbers to strtod, but no option means them (--tolerance nan would turn a
  // gate off: every comparison with nan is false).
  if (v->empty() || *end != '\0' || !std::isfinite(d))
    throw UsageError("option --" + name + ": '" + *v + "' is not a finite number");
  return d;
}

}  // namespace cts::cli
