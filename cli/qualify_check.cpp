#include "cli/qualify_check.hpp"

#include <sstream>

#include "cli/check_report.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts::qualify {

nlohmann::json check_json(const std::vector<Fingerprint>& fingerprints, std::string* text,
                          const CheckOptions& opts) {
  try {
    const Matrix& m = builtin_matrix();
    CheckResult r = check_fingerprints(m, fingerprints, opts);
    std::ostringstream t;
    cli::print_check_table(r, m, fingerprints, t);
    *text = t.str();
    nlohmann::json j = r.to_json();
    j["available"] = true;
    return j;
  } catch (const std::exception& e) {
    // A broken built-in matrix must not cost the rest of the bundle; the summary says why.
    *text = std::string("check not available: ") + e.what() + "\n";
    return {{"available", false}, {"reason", std::string("check not available: ") + e.what()}};
  }
}

}  // namespace cts::qualify
