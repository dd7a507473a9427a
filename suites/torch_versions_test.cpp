// The libtorch this suite is linked with, against the rest of the stack: torch's CUDA against the
// driver, torch's NCCL against the libnccl this process loaded and the system's nccl.h, torch's
// arch list against every visible GPU, torch's cuDNN against the loaded one, torch and Lightning
// against the matrix row. The verdicts are the matrix rules' findings (matrix/rules.hpp), with
// the torch fields filled from the linked libtorch rather than from Python.
#include <gtest/gtest.h>

#include "fixtures/probe/probe.hpp"
#include "fixtures/torch/c10d_adapter.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts {
namespace {

namespace ca = c10d_adapter;

TEST(TorchBuild, PackedNcclVersionDecodes) {
  // The H200 machine's torch 2.11 wheel returns 8591769609 = (2 << 32) + (28 << 16) + 9.
  EXPECT_EQ(ca::decode_torch_nccl_version(8591769609ULL), "2.28.9");
  EXPECT_EQ(Version::from_code(8591769609LL, VersionKind::TorchNccl).release_str(3), "2.28.9");
}

TEST(TorchBuild, ArchFlagsParse) {
  std::string cfg =
      "  - CUDA Runtime 13.0\n  - NVCC architecture flags: -gencode;arch=compute_75,code=sm_75;"
      "-gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_120,code=[sm_120,compute_120]\n";
  EXPECT_EQ(ca::parse_nvcc_arch_flags(cfg),
            (std::vector<std::string>{"sm_75", "sm_90", "sm_120", "compute_120"}));
  EXPECT_TRUE(ca::parse_nvcc_arch_flags("  - CPU capability usage: AVX2\n").empty());
}

// This process's fingerprint, torch fields from the linked libtorch (its Python twin may differ).
// Probed once: the Python part takes about a second.
const Fingerprint& torch_fingerprint() {
  static const Fingerprint fp = [] {
    ProbeOptions o;
    o.toolkit = false;
    Fingerprint fp = probe_fingerprint(o);
    std::optional<Version> python_torch = fp.torch ? fp.torch->version : std::nullopt;
    if (python_torch) fp.extra["python_torch"] = python_torch->raw;
    ca::TorchBuild b = ca::torch_build();
    TorchInfo t;
    t.version = Version::parse(ca::torch_version());
    // Python's "2.11.0+cu130" carries the variant the matrix rows are keyed by; keep it when it
    // is the same release as the linked one.
    if (python_torch && python_torch->same_release(*t.version)) {
      t.version = python_torch;
    } else {
      // What sits beside another Python torch (Lightning, NumPy) runs with that torch, not with
      // this libtorch: judged here it would pair, say, Lightning 2.6 with libtorch 1.13.
      fp.lightning.reset();
      fp.pytorch_lightning.reset();
      fp.extra.erase("python");
    }
    if (b.cuda_runtime) t.cuda = Version::from_code(*b.cuda_runtime, VersionKind::Cuda);
    if (b.cudnn) t.cudnn = Version::from_code(*b.cudnn, VersionKind::Cudnn);
    if (b.nccl) t.nccl = Version::parse(ca::decode_torch_nccl_version(*b.nccl));
    if (b.has_cuda) t.arch_list = b.arch_list;
    t.cxx11_abi = b.cxx11_abi;
    fp.torch = t;
    return fp;
  }();
  return fp;
}

// What the linked libtorch says about its build; a CUDA build must name its CUDA, NCCL and arch
// list, or the rules below cannot judge it.
TEST(TorchBuild, CudaBuildReportsItsVersions) {
  ca::TorchBuild b = ca::torch_build();
  RecordProperty("gpucts.libtorch", ca::torch_version());
  RecordProperty("gpucts.libtorch_cxx11_abi", b.cxx11_abi ? "1" : "0");
  if (!b.has_cuda) GTEST_SKIP() << "libtorch " << ca::torch_version() << " was built without CUDA";
  ASSERT_TRUE(b.cuda_runtime) << "no CUDA runtime version from the CUDA hooks";
  RecordProperty("gpucts.libtorch_cuda", Version::from_code(*b.cuda_runtime, VersionKind::Cuda).str());
  if (b.cudnn)
    RecordProperty("gpucts.libtorch_cudnn", Version::from_code(*b.cudnn, VersionKind::Cudnn).str());
  ASSERT_TRUE(b.nccl) << "a CUDA libtorch without NCCL";
  RecordProperty("gpucts.libtorch_nccl", ca::decode_torch_nccl_version(*b.nccl));
  std::string arch;
  for (const auto& a : b.arch_list) arch += (arch.empty() ? "" : " ") + a;
  RecordProperty("gpucts.libtorch_arch_list", arch);
  // torch's CUDA hooks print the arch flags only where the driver loads.
  if (b.arch_list.empty() && visible_gpu_count() == 0)
    GTEST_SKIP() << "the arch list comes from torch's CUDA hooks, which need a driver (" << no_gpu_reason()
                 << ")";
  EXPECT_FALSE(b.arch_list.empty()) << "no \"NVCC architecture flags\" in torch's config:\n" << b.show_config;
}

TEST(TorchBuild, LinkedLibtorchIsThePythonOne) {
  const Fingerprint& fp = torch_fingerprint();
  if (!fp.extra.contains("python_torch"))
    GTEST_SKIP() << "no Python torch to compare with (GPUCTS_PYTHON, else python3 on PATH)";
  Version py = Version::parse(fp.extra["python_torch"].get<std::string>());
  RecordProperty("gpucts.python_torch", py.str());
  EXPECT_TRUE(py.same_release(Version::parse(ca::torch_version())))
      << "linked libtorch " << ca::torch_version() << ", the Python torch (GPUCTS_PYTHON, else python3) "
      << py.str();
}

TEST(TorchNccl, AgainstSystemHeader) {
  const Fingerprint& fp = torch_fingerprint();
  if (!fp.torch->nccl) GTEST_SKIP() << "libtorch " << ca::torch_version() << " has no NCCL (CPU build)";
  if (!fp.nccl_header) GTEST_SKIP() << "the suite was built without NCCL headers";
  RecordProperty("gpucts.torch_nccl", fp.torch->nccl->str());
  RecordProperty("gpucts.system_nccl_header", fp.nccl_header->str());
  // Same release line: the NCCL suites and torch then speak the same protocol (NCCL >= 2.23
  // refuses mixed versions across ranks; patch levels differ on the H200 machine: 2.28.3/2.28.9).
  EXPECT_TRUE(fp.torch->nccl->same_release(*fp.nccl_header, 2))
      << "torch's NCCL " << fp.torch->nccl->str() << " vs the system's nccl.h " << fp.nccl_header->str();
}

// One case per finding of the matrix rules that concerns torch: an error fails the case, a
// warning is recorded in the XML (it names what to do), and a rule whose inputs are absent here
// (no CUDA in the libtorch, no driver) skips with that reason.
class TorchFinding : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchFinding, NoErrorForThisStack) {
  const std::string id = GetParam();
  const Fingerprint& fp = torch_fingerprint();
  CheckResult r = check_fingerprints(builtin_matrix(), {fp});
  bool evaluated = true;
  for (const auto& n : r.not_evaluated) evaluated &= n != id;
  if (!evaluated) {
    std::string have = fp.torch->cuda ? "torch CUDA " + fp.torch->cuda->str()
                                      : "libtorch " + ca::torch_version() + " without CUDA";
    GTEST_SKIP() << id << " not evaluated: its inputs are absent here (" << have
                 << (fp.driver_cuda ? "" : ", no driver") << (fp.gpus && !fp.gpus->empty() ? "" : ", no GPU")
                 << ")";
  }
  for (const auto& f : r.findings) {
    if (f.id != id) continue;
    RecordProperty("gpucts.finding." + f.severity, f.subject + ": " + f.message + " [" + f.source + "]");
    EXPECT_NE(f.severity, "error") << f.subject << ": " << f.message << " (" << f.source
                                   << "); fix: " << f.fix;
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, TorchFinding,
                         ::testing::Values("driver-too-old-for-torch-cuda", "torch-nccl-differs-from-loaded",
                                           "nccl-below-matrix", "torch-release-unknown",
                                           "gpu-arch-not-in-torch-build", "cudnn-differs-from-torch",
                                           "lightning-torch-incompatible"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace cts
