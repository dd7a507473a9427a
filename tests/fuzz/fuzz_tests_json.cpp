// libFuzzer target: the suite list reader of gpucts qualify (tests.json, CTest's
// --show-only=json-v1): any input ends in a list of entries whose names are safe file names and
// whose fields have their types, or in one BundleError naming the file, never another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/qualify_run.hpp"
#include "results/file_names.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<cts::qualify::TestEntry> tests;
  try {
    tests = cts::qualify::parse_ctest_json(text, "tests.json");
  } catch (const cts::bundle::BundleError& e) {
    if (std::string(e.what()).rfind("tests.json", 0) != 0) __builtin_trap();  // names the file
    return 0;
  }
  for (const auto& t : tests) {
    if (t.name.empty() || t.command.empty() || !(t.timeout_s > 0)) __builtin_trap();
    std::string f = cts::file_name_for(t.name);
    if (f.find('/') != std::string::npos || f == "." || f == ".." || f.size() > cts::kMaxFileNameStem)
      __builtin_trap();
  }
  return 0;
}
