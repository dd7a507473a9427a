#include "cli/check_mpi.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/paths.hpp"

namespace cts::cli {

std::optional<std::string> find_check_ranks() {
  const std::string here = self_dir();
  for (const std::string& cand : {here + "/gpucts_check_ranks", here + "/../fixtures/mpi/gpucts_check_ranks",
                                  here + "/../libexec/gpucts/gpucts_check_ranks"}) {
    struct stat st {};
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
      return cand;
  }
  return std::nullopt;
}

void exec_check_ranks_under_mpi(const std::vector<std::string>& check_args) {
  // A singleton MPI_Init is slow and fragile (as root, in containers): only under a launcher.
  if (!launched_by_mpi() || launcher_world_size() <= 1) return;
  auto prog = find_check_ranks();
  if (!prog) return;
  std::vector<std::string> args = {*prog, "--gpucts", self_exe()};
  args.insert(args.end(), check_args.begin(), check_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(prog->c_str(), argv.data());
  std::fprintf(stderr, "gpucts check: cannot run %s: %s (checking this rank alone)\n", prog->c_str(),
               std::strerror(errno));
}

}  // namespace cts::cli
