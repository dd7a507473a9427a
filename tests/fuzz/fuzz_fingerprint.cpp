// libFuzzer target: the fingerprint JSON reader (matrix/input.hpp parse_json, then the contract's
// field checks), and what check does with a fingerprint that reads: the rules against the
// built-in matrix, the JSON written back. Any input must end in a fingerprint or a
// FingerprintError, never a crash, a sanitizer report or another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "matrix/fingerprint.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cts::Fingerprint fp;
  try {
    fp = cts::parse_fingerprint(text, "fuzz.json");
  } catch (const cts::FingerprintError&) {
    return 0;
  }
  // What was read writes back and reads again as the same document.
  const std::string back = cts::to_json(fp).dump();
  cts::Fingerprint again = cts::parse_fingerprint(back, "fuzz-back.json");
  if (cts::to_json(again).dump() != back) __builtin_trap();
  cts::CheckResult r = cts::check_fingerprints(cts::builtin_matrix(), {fp, again});
  (void)r.to_json().dump();
  return 0;
}
