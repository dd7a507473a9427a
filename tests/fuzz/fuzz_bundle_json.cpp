// libFuzzer target: the JSON files of a bundle that `gpucts report` reads. The first byte picks
// manifest.json, bandwidth/<test>.json or check.json; the rest is the file. What reads must also
// render: the summary is built over it (with the other parts empty) and written as HTML.
#include <cstddef>
#include <cstdint>
#include <string>

#include "matrix/input.hpp"
#include "report/bundle.hpp"
#include "report/doc.hpp"
#include "report/summary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  nlohmann::json j;
  try {
    j = cts::parse_json(text, "fuzz.json");
  } catch (const cts::InputError&) {
    return 0;
  }
  cts::bundle::Bundle b;
  b.dir = "/nonexistent";
  b.manifest.gpucts_version = "0";
  b.manifest.verdict = "pass";
  b.check = nlohmann::json{{"available", false}, {"reason", "fuzz"}};
  try {
    switch (data[0] % 3) {
      case 0:
        b.manifest = cts::bundle::manifest_from_json(j, "manifest.json");
        if (cts::bundle::manifest_from_json(cts::bundle::to_json(b.manifest), "again").suites.size() !=
            b.manifest.suites.size())
          __builtin_trap();
        break;
      case 1:
        b.bandwidth.emplace_back("gpucts_fuzz", cts::bw::run_from_json(j, "bandwidth.json"));
        (void)cts::bw::to_csv(b.bandwidth.back().second);
        break;
      default:
        b.check = cts::bundle::check_from_json(j, "check.json");
        break;
    }
  } catch (const cts::bundle::BundleError&) {
    return 0;
  } catch (const cts::bw::BandwidthError&) {
    return 0;
  }
  (void)cts::doc::to_html(cts::summary::build(b));
  return 0;
}
