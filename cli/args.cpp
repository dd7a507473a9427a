#include "cli/args.hpp"

#include <cmath>
#include <cstdlib>

namespace cts::cli {

Args::Args(std::vector<std::string> argv, std::set<std::string> valued, std::set<std::string> flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i] == "-h" && flags.count("help") ? std::string("--help") : argv[i];
    if (a == "--") {
      positional_.insert(positional_.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), val;
    bool has_val = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      val = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_val = true;
    }
    if (valued.count(name)) {
      if (!has_val) {
        if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
        val = argv[++i];
      }
      values_[name].push_back(val);
    } else if (flags.count(name)) {
      if (has_val) throw UsageError("option --" + name + " takes no value");
      flags_seen_.insert(name);
    } else {
      std::string known;
      for (const auto& v : valued) known += " --" + v;
      for (const auto& f : flags) known += " --" + f;
      throw UsageError("unknown option --" + name + " (known:" + known + ")");
    }
  }
}

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
