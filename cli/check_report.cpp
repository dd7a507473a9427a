#include "check_report.hpp"

#include <algorithm>

namespace cts::cli {

void print_check_table(const CheckResult& r, const Matrix& m, size_t inputs, std::ostream& out) {
  size_t errors = 0, warnings = 0, infos = 0;
  for (const auto& f : r.findings) (f.severity == "error" ? errors : f.severity == "warning" ? warnings : infos)++;
  out << "gpucts check: " << inputs << " fingerprint" << (inputs == 1 ? "" : "s") << " against the " << m.origin
      << " matrix: " << (r.failed() ? "FAIL" : "PASS") << " (" << errors << " error" << (errors == 1 ? "" : "s")
      << ", " << warnings << " warning" << (warnings == 1 ? "" : "s") << ", " << infos << " info)\n";
  for (const auto& f : r.findings) {
    std::string sev = f.severity;
    std::transform(sev.begin(), sev.end(), sev.begin(), ::toupper);
    out << sev << std::string(8 - std::min<size_t>(sev.size(), 7), ' ') << f.id << "  " << f.subject << ": "
        << f.message << "  -> " << f.fix << "  [" << f.source << "]\n";
  }
  if (!r.not_evaluated.empty()) {
    out << "not evaluated (inputs absent):";
    for (const auto& id : r.not_evaluated) out << " " << id;
    out << "\n";
  }
}

int run_check(const std::vector<Fingerprint>& fps, const Matrix& m, bool json, std::ostream& out) {
  CheckResult r = check_fingerprints(m, fps);
  if (json)
    out << r.to_json().dump(2) << "\n";
  else
    print_check_table(r, m, fps.size(), out);
  out.flush();
  return r.failed() ? 1 : 0;
}

}  // namespace cts::cli
