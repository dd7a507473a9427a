// The refresh tools say how far the data reaches and warn where a source is ahead of it:
// matrix/tools/generate.py over the committed snapshots (NCCL releases on PyPI without a tag) and
// over an edited copy whose PyPI view has a newer torch, cuDNN and CUDA than the data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"

namespace cts {
namespace {

namespace fs = std::filesystem;

const fs::path kTools = fs::path(matrix_data_dir()).parent_path() / "tools";

// What generate.py --check prints (stdout and stderr), run over the snapshots in `snapshots`.
std::string reach_report(const fs::path& snapshots) {
  proc::Options o;
  o.err = proc::Output::Capture;
  o.timeout_s = 60;
  o.set_env = {"GPUCTS_MATRIX_SNAPSHOTS=" + snapshots.string()};
  return proc::run({"python3", (kTools / "generate.py").string(), "--check"}, o).output;
}

class MatrixReach : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTools / "generate.py"))
      GTEST_SKIP() << "no matrix/tools beside " << matrix_data_dir()
                   << " (an install tree ships the data only)";
    if (!proc::run({"python3", "-c", "import sys; sys.exit(sys.version_info < (3, 8))"}).ok())
      GTEST_SKIP() << "python3 (3.8 or newer) is not on PATH: the generator cannot run";
  }
};

TEST_F(MatrixReach, CommittedSnapshotsNameTheReachAndTheUntaggedNccl) {
  const std::string out = reach_report(kTools / "snapshot");
  EXPECT_NE(
      out.find(
          "data reaches: torch 2.15, NCCL 2.32.6 (variables read up to 2.32.6, algorithms up to 2.30.7), "
          "cuDNN 9.28.1, CUDA 13.5"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("warning: NCCL 2.31.2, 2.32.3, 2.32.6: not tagged in github:NVIDIA/nccl (newest "
                     "v2.30.7-1): variables read from the wheels' libnccl.so.2"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("nor read by nccl_wheels.py"), std::string::npos) << out;
  EXPECT_EQ(out.find("warning: PyPI torch"), std::string::npos)
      << "the data has PyPI's newest torch: " << out;
  EXPECT_EQ(out.find("warning: PyPI nvidia-cudnn"), std::string::npos) << out;
}

TEST_F(MatrixReach, NewerReleasesOnPyPIWarn) {
  const ScratchDir scratch("matrix_reach");
  const fs::path snaps = fs::path(scratch.path()) / "snapshot";
  fs::create_directories(snaps);
  fs::copy_file(kTools / "snapshot" / "nccl_source.json", snaps / "nccl_source.json");
  // Without the 2.32.6 wheel's names the variables reach 2.32.3, and 2.32.6 is unknown to the data.
  std::ifstream bin(kTools / "snapshot" / "nccl_wheels.json");
  nlohmann::json binaries = nlohmann::json::parse(bin);
  binaries["releases"].erase(binaries["releases"].size() - 1);
  std::ofstream(snaps / "nccl_wheels.json") << binaries.dump(1) << "\n";
  std::ifstream in(kTools / "snapshot" / "torch_wheels.json");
  nlohmann::json wheels = nlohmann::json::parse(in);
  wheels["latest"]["torch"] = {{"version", "2.16.0"}, {"uploaded", "2026-12-22"}};
  wheels["latest"]["nvidia-cudnn-cu13"] = {{"version", "9.30.0.10"}, {"uploaded", "2026-12-20"}};
  wheels["latest"]["cuda-toolkit"] = {{"version", "13.6.0"}, {"uploaded", "2026-12-20"}};
  std::ofstream(snaps / "torch_wheels.json") << wheels.dump(1) << "\n";
  const std::string out = reach_report(snaps);
  EXPECT_NE(out.find("warning: PyPI torch 2.16.0 (2026-12-22) is newer than the data's newest torch, 2.15"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("warning: PyPI nvidia-cudnn-cu13 9.30.0.10"), std::string::npos) << out;
  EXPECT_NE(out.find("warning: PyPI cuda-toolkit 13.6.0"), std::string::npos) << out;
  EXPECT_EQ(out.find("warning: PyPI nvidia-nccl-cu13"), std::string::npos) << "2.32.6 is the data's: " << out;
  EXPECT_NE(out.find("(variables read up to 2.32.3, algorithms up to 2.30.7)"), std::string::npos) << out;
  EXPECT_NE(
      out.find("warning: NCCL 2.32.6: on PyPI but neither tagged in github:NVIDIA/nccl (newest v2.30.7-1) "
               "nor read by nccl_wheels.py"),
      std::string::npos)
      << out;
}

}  // namespace
}  // namespace cts
