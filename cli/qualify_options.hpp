// The options of `gpucts qualify` that name outside things, checked before anything is written: a
// bad value is refused with one line and exit 2 while no bundle folder, subfolder or fingerprint
// exists yet.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/qualify_run.hpp"
#include "matrix/fingerprint.hpp"

namespace cts::qualify {

// The options as given (every value of a repeatable one).
struct OptionValues {
  std::optional<std::string> output, build_dir, tests_json;
  std::optional<std::string> status_file, prom;  // written only once every suite has run
  std::vector<std::string> mpi_ranks, levels, fingerprints;
};

struct CheckedOptions {
  Level level = Level::standard;
  std::optional<int> mpi_ranks;
  std::vector<std::pair<std::string, Fingerprint>> fingerprints;  // path, loaded
};

inline constexpr int kMaxMpiRanks = 4096;

// Throws std::invalid_argument naming the option: --output '' (names no folder); --build-dir
// with --tests-json (two suite lists); --level given twice or not quick/standard/full;
// --mpi-ranks given twice or not 1..kMaxMpiRanks; a --fingerprint that cannot be read; a
// --status-file or --prom that could not be written (no folder, a directory, a link).
CheckedOptions check_options(const OptionValues& v);

// "level standard, --label cpu, --exclude-tests x": what a selection asked, for "no suite selected".
std::string describe(const Selection& s);

}  // namespace cts::qualify
