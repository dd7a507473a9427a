#include "cli/check_mpi.hpp"

#include <cstdlib>
#include <iostream>

#if GPUCTS_HAVE_MPI
#include "cli/check_report.hpp"
#include "fixtures/mpi/mpi_world.hpp"
#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "fixtures/reliability/watchdog.hpp"
#endif

namespace cts::cli {

#if GPUCTS_HAVE_MPI
namespace {

// Problems only the gathered view can see, as findings beside the matrix's own.
PreflightResult add_preflight_findings(const std::vector<Fingerprint>& fps, CheckResult& r) {
  PreflightResult pf = compare_fingerprints(fps);
  for (const auto& p : pf.problems) {
    if (p.id == "cross-host-mismatch" || p.id == "nccl-socket-ifname-no-match")
      continue;  // the matrix reports them
    r.findings.insert(r.findings.begin(),
                      Finding{p.id, "error", "ranks", p.message, "rule:preflight",
                              "give each rank its own GPU and the same stack and environment"});
  }
  return pf;
}

}  // namespace

std::optional<int> check_over_mpi(const Matrix& m, bool json, const CheckOptions& opts, bool python) {
  // A singleton MPI_Init is slow and fragile (as root, in containers): only under a launcher.
  if (!mpi::launched_by_mpi() || launcher_world_size() <= 1) return std::nullopt;
  Deadlines d = Deadlines::from_env();
  Watchdog::instance().start(d, "", launcher_rank());
  const auto& ctx = mpi::init(nullptr, nullptr);
  apply_simulated_host_env(ctx.rank);
  ProbeOptions probe;
  probe.python = python;
  Fingerprint fp = probe_fingerprint(probe);
  apply_preflight_test_overrides(fp);
  RankPlacement p{ctx.rank, ctx.local_rank, ctx.size, -1};
  p.gpu_index = select_device(ctx.local_rank, fp.gpus ? static_cast<int>(fp.gpus->size()) : 0);
  annotate_for_preflight(fp, p);
  auto all = mpi::allgather(to_json(fp).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                            "gpucts check");
  int rc = 0;
  if (ctx.rank == 0) {
    std::vector<Fingerprint> fps;
    for (size_t r = 0; r < all.size(); ++r)
      fps.push_back(parse_fingerprint(all[r], "rank " + std::to_string(r)));
    CheckResult r = check_fingerprints(m, fps, opts);
    const PreflightResult pf = add_preflight_findings(fps, r);
    if (pf.simulated_hosts() && !json)
      std::cout << "gpucts check: " << simulated_hosts_note(pf.nccl_hosts) << " (" << pf.host_ids << ")\n";
    if (json)
      std::cout << r.to_json().dump(2) << "\n";
    else
      print_check_table(r, m, fps, std::cout);
    std::cout.flush();
    rc = r.failed() ? 1 : 0;
  }
  // Rank 0's verdict is everyone's exit status.
  rc = std::atoi(mpi::allgather(std::to_string(rc), "the check verdict")[0].c_str());
  Watchdog::instance().program_finished(rc);
  mpi::finalize();
  return rc;
}
#else
std::optional<int> check_over_mpi(const Matrix&, bool, const CheckOptions&, bool) { return std::nullopt; }
#endif

}  // namespace cts::cli
