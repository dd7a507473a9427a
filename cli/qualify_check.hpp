// The `gpucts check` step of a qualification: the fingerprints in, the contract's --json object
// out, or {"available": false, "reason": ...} where this gpucts has no rules engine built in.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "fingerprint.hpp"

namespace cts::qualify {

nlohmann::json check_json(const std::vector<Fingerprint>& fingerprints);

}  // namespace cts::qualify
