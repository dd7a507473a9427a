#include "qualify_check.hpp"

namespace cts::qualify {

nlohmann::json check_json(const std::vector<Fingerprint>& fingerprints) {
  // The rules engine (matrix/rules.hpp) lands from the matrix branch; until then the bundle says so.
  return {{"available", false},
          {"reason", "check not available: this gpucts was built without the matrix rules engine"},
          {"fingerprints", fingerprints.size()}};
}

}  // namespace cts::qualify
