// A small command-line parser with the conventions people expect: --name VALUE, --name=VALUE,
// repeatable options, boolean flags, "--" ends options. Unknown or malformed options throw
// UsageError, which every command turns into exit status 2 with a one-line message.
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
  // `valued`: options that take a value; `flags`: options that do not.
  Args(std::vector<std::string> argv, std::set<std::string> valued, std::set<std::string> flags);

  bool flag(const std::string& name) const { return flags_seen_.count(name) > 0; }
  std::optional<std::string> value(const std::string& name) const;  // last occurrence
  std::vector<std::string> values(const std::string& name) const;    // every occurrence
  const std::vector<std::string>& positional() const { return positional_; }
  double number(const std::string& name, double fallback) const;     // throws UsageError

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_seen_;
  std::vector<std::string> positional_;
};

}  // namespace cts::cli
