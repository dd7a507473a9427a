#include "cli/qualify_options.hpp"

#include <filesystem>

#include "matrix/input.hpp"

#include "results/output_file.hpp"

namespace cts::qualify {

CheckedOptions check_options(const OptionValues& v) {
  CheckedOptions c;
  if (v.output && v.output->empty()) throw std::invalid_argument("--output '': names no folder");
  if (v.build_dir && v.tests_json)
    throw std::invalid_argument("--build-dir and --tests-json both name the suite list: give one");
  if (v.levels.size() > 1)
    throw std::invalid_argument("--level given " + std::to_string(v.levels.size()) + " times: give it once");
  if (!v.levels.empty()) {
    try {
      c.level = parse_level(v.levels.front());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--") + e.what());
    }
  }
  if (v.mpi_ranks.size() > 1) throw std::invalid_argument("--mpi-ranks given twice: give it once");
  if (!v.mpi_ranks.empty()) {
    const std::string& n = v.mpi_ranks.front();
    const bool digits = !n.empty() && n.size() <= 5 && n.find_first_not_of("0123456789") == std::string::npos;
    const long ranks = digits ? std::stol(n) : 0;
    if (ranks < 1 || ranks > kMaxMpiRanks)
      throw std::invalid_argument("--mpi-ranks '" + excerpt(n, 40) + "': expected a number from 1 to " +
                                  std::to_string(kMaxMpiRanks));
    c.mpi_ranks = static_cast<int>(ranks);
  }
  // Found out now, not after hours of suites with the verdict in hand. A file inside the bundle
  // folder is checked when that folder exists (it is made after these checks).
  auto inside_output = [&](const std::string& path) {
    namespace fs = std::filesystem;
    if (!v.output) return false;
    std::error_code e1, e2;
    const fs::path file = fs::weakly_canonical(fs::path(path), e1);
    const fs::path out = fs::weakly_canonical(fs::path(*v.output) / "x", e2).parent_path();
    return !e1 && !e2 && file.parent_path() == out;
  };
  for (const auto& [opt, path] : {std::pair{"--status-file", v.status_file}, std::pair{"--prom", v.prom}}) {
    try {
      if (path && !inside_output(*path)) check_output_path(*path);
    } catch (const OutputError& e) {
      throw std::invalid_argument(std::string(opt) + ": " + e.what());
    }
  }
  for (const auto& f : v.fingerprints) {
    try {
      c.fingerprints.emplace_back(f, load_fingerprint_file(f));
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--fingerprint: ") + e.what());
    }
  }
  return c;
}

std::string describe(const Selection& s) {
  std::string out = std::string("level ") + level_name(s.level);
  for (const auto& l : s.labels) out += ", --label " + excerpt(l, 80);
  if (s.exclude_label) out += ", --exclude-label " + excerpt(*s.exclude_label, 80);
  if (s.tests) out += ", --tests " + excerpt(*s.tests, 80);
  if (s.exclude_tests) out += ", --exclude-tests " + excerpt(*s.exclude_tests, 80);
  return out;
}

}  // namespace cts::qualify
