#include "cli/check_report.hpp"

#include <algorithm>

#include "fixtures/probe/simulated_hosts.hpp"
#include "fixtures/reliability/preflight.hpp"
#include "results/terminal_text.hpp"

namespace cts::cli {
namespace {

// Host and GPU names, NCCL_* values and NCCL_HOSTIDs come from outside: each printed line is made
// terminal-safe whole (a longer bound than the default: a finding names lists of GPUs and ranks).
inline constexpr std::size_t kMaxReportLine = 16384;
std::string safe_line(const std::string& line) { return terminal_safe(line, kMaxReportLine); }

// As the tool printed it, unless that was an integer code (13000, 22809, 91900).
std::string ver(const std::optional<Version>& v) {
  if (!v) return "?";
  return v->raw.find('.') != std::string::npos ? v->raw : v->str();
}

// One line per input saying what was checked, so a passing report still shows the stack it saw.
std::string describe(const Fingerprint& fp, const Matrix& m) {
  std::string s = fp.label() + ": driver " + ver(fp.driver_version) + " (CUDA " + ver(fp.driver_cuda) +
                  "), CUDA runtime " + ver(fp.cuda_runtime) + ", NCCL loaded " + ver(fp.nccl_runtime);
  if (fp.nvml_error) s += " [NVML: " + *fp.nvml_error + "]";
  if (fp.nccl_library) s += " from " + *fp.nccl_library;
  s += " (header " + ver(fp.nccl_header) + ")";
  if (fp.extra.contains("nccl_loaded") && fp.extra["nccl_loaded"].is_array()) {
    s += ", libnccl mapped:";
    for (const auto& l : fp.extra["nccl_loaded"])
      s += " " + l.value("version", std::string("?")) + " " + l.value("path", std::string());
  }
  if (fp.torch && fp.torch->version) {
    s += ", torch " + ver(fp.torch->version) + " (CUDA " + ver(fp.torch->cuda) + ", NCCL " +
         ver(fp.torch->nccl) + " built" +
         (fp.torch->nccl_loaded
              ? std::string(", ") + ver(fp.torch->nccl_loaded) +
                    (fp.torch->nccl_static.value_or(false) ? " linked statically" : " loaded")
              : std::string()) +
         ", cuDNN " + ver(fp.torch->cudnn) + ")";
    const TorchRow* row = m.find_torch(*fp.torch->version, fp.torch->cuda);
    s += row ? ", matrix row " + row->meta.cite() : ", no matrix row";
  } else {
    s += ", torch not seen";
  }
  if (fp.gpus) {
    s += ", GPUs:";
    if (fp.gpus->empty()) s += " none";
    for (const auto& g : *fp.gpus) {
      s += " " + std::to_string(g.index) + " " + g.name.value_or("?");
      if (!g.cc) continue;
      s += " (sm_" + std::to_string(g.cc->major()) + std::to_string(g.cc->minor());
      if (fp.torch && fp.torch->arch_list)
        s += arch_list_covers(*fp.torch->arch_list, *g.cc) ? ", in torch's arch list"
                                                           : ", NOT in torch's arch list";
      s += ")";
    }
  } else {
    s += ", GPUs unknown";
  }
  return s;
}

}  // namespace

void print_check_table(const CheckResult& r, const Matrix& m, const std::vector<Fingerprint>& fps,
                       std::ostream& out) {
  const size_t inputs = fps.size();
  size_t errors = 0, warnings = 0, infos = 0;
  for (const auto& f : r.findings)
    (f.severity == "error" ? errors : f.severity == "warning" ? warnings : infos)++;
  // A pass says how much it looked at: with no driver most rules have nothing to judge.
  const size_t total = finding_ids().size(), evaluated = total - r.not_evaluated.size();
  out << "gpucts check: " << inputs << " fingerprint" << (inputs == 1 ? "" : "s") << " against the "
      << m.origin << " matrix: " << (r.failed() ? "FAIL" : "PASS") << " (" << errors << " error"
      << (errors == 1 ? "" : "s") << ", " << warnings << " warning" << (warnings == 1 ? "" : "s") << ", "
      << infos << " info; " << evaluated << " of " << total << " rules evaluated)\n";
  for (const auto& fp : fps) out << safe_line("checked " + describe(fp, m)) << "\n";
  for (const auto& f : r.findings) {
    std::string sev = f.severity;
    std::transform(sev.begin(), sev.end(), sev.begin(), ::toupper);
    out << safe_line(sev + std::string(8 - std::min<size_t>(sev.size(), 7), ' ') + f.id + "  " + f.subject +
                     ": " + f.message + "  -> " + f.fix + "  [" + f.source + "]")
        << "\n";
  }
  // Two reasons a rule could not judge: its inputs were not recorded, or they lie outside the data.
  const std::vector<std::string> absent = r.inputs_absent();
  for (const auto& [ids, why] :
       {std::pair{&absent, "inputs absent"}, {&r.outside_data, "inputs outside the data"}}) {
    if (ids->empty()) continue;
    out << "not evaluated (" << ids->size() << ", " << why << "):";
    for (const auto& id : *ids) out << " " << id;
    out << "\n";
  }
  // How far the data reaches: a stack newer than this is judged on older facts.
  const DataReach& reach = r.reach;
  out << "data reaches: torch " << reach.torch << ", NCCL " << reach.nccl << " (variables read up to "
      << reach.nccl_env << ", algorithms up to " << reach.nccl_algos << "), cuDNN " << reach.cudnn
      << ", CUDA " << reach.cuda << ", driver branch " << reach.driver_branch << ", Lightning "
      << reach.lightning << "\n";
}

int run_check(const std::vector<Fingerprint>& fps, const Matrix& m, bool json, std::ostream& out,
              const CheckOptions& opts, bool job_ranks) {
  CheckResult r = check_fingerprints(m, fps, opts);
  if (job_ranks) {
    // Problems only the ranks' view together can see, as findings beside the matrix's own.
    const PreflightResult pf = compare_fingerprints(fps);
    for (const auto& p : pf.problems) {
      if (p.id == "cross-host-mismatch" || p.id == "nccl-socket-ifname-no-match") continue;  // the matrix's
      r.findings.insert(r.findings.begin(),
                        Finding{p.id, "error", "ranks", p.message, "rule:preflight",
                                "give each rank its own GPU and the same stack and environment"});
    }
    if (pf.simulated_hosts() && !json)
      out << safe_line("gpucts check: " + simulated_hosts_note(pf.nccl_hosts) + " (" + pf.host_ids + ")")
          << "\n";
  }
  if (json)
    out << r.to_json().dump(2) << "\n";
  else
    print_check_table(r, m, fps, out);
  out.flush();
  return r.failed() ? 1 : 0;
}

}  // namespace cts::cli
