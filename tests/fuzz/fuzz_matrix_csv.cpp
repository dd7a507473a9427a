// libFuzzer target: every matrix CSV loader. The first byte picks the file (one of
// matrix_files(), or bandwidth_thresholds.csv); the rest replaces it, the other files stay the
// built-in ones, and the whole matrix is loaded. Any input must end in a matrix or a
// MatrixError/BandwidthError naming "file:line", never a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "matrix/matrix.hpp"
#include "results/bandwidth.hpp"

namespace cts {
extern const std::map<std::string, std::string>& builtin_matrix_files();  // matrix/embed_data.cmake
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& names = cts::matrix_files();
  const std::size_t pick = data[0] % (names.size() + 1);
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (pick == names.size()) {
    try {
      auto t = cts::bw::parse_thresholds(text, "bandwidth_thresholds.csv");
      if (t.empty()) __builtin_trap();  // a table without rows must have been refused
    } catch (const cts::bw::BandwidthError& e) {
      if (std::string(e.what()).rfind("bandwidth_thresholds.csv:", 0) != 0)
        __builtin_trap();  // names file:line
    }
    return 0;
  }
  std::map<std::string, std::string> files = cts::builtin_matrix_files();
  files[names[pick]] = text;
  try {
    cts::Matrix m = cts::parse_matrix(files, "fuzz");
    (void)m;
  } catch (const cts::MatrixError&) {
  }
  return 0;
}
