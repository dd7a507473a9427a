// The `gpucts check` step of a qualification: the fingerprints of every host and rank against the
// built-in compatibility matrix. JSON: the contract's --json object plus "available": true, or
// {"available": false, "reason": ...} when the check could not run. `text`: the table people read.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "matrix/fingerprint.hpp"
#include "matrix/rules.hpp"

namespace cts::qualify {

nlohmann::json check_json(const std::vector<Fingerprint>& fingerprints, std::string* text,
                          const CheckOptions& opts = {});

}  // namespace cts::qualify
