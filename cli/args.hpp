// What one `gpucts` subcommand was given. main.cpp declares each subcommand's options on CLI11
// (from its CommandSpec, commands.hpp: --name VALUE, --name=VALUE, repeatable options, switches,
// "--" ends options) and hands the command the parsed result. Malformed values throw UsageError,
// which every command turns into exit status 2 with a one-line message.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace cts::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `values`: each option given with a value (name without "--") and its values in order;
  // `flags`: the switches given; `positional`: the other arguments.
  Args(std::map<std::string, std::vector<std::string>> values, std::set<std::string> flags,
       std::vector<std::string> positional);

  bool flag(const std::string& name) const { return flags_seen_.count(name) > 0; }
  std::optional<std::string> value(const std::string& name) const;  // last (one unless repeatable)
  std::vector<std::string> values(const std::string& name) const;   // every occurrence
  const std::vector<std::string>& positional() const { return positional_; }
  double number(const std::string& name, double fallback) const;  // throws UsageError

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_seen_;
  std::vector<std::string> positional_;
};

}  // namespace cts::cli
