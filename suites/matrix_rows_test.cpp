// One GoogleTest case per row of the compatibility matrix (torch.csv, cuda.csv, lightning.csv),
// loaded from the data itself. A row that does not describe this machine's stack skips with the
// reason; the row that does is checked constraint by constraint against the live fingerprint
// (probed with python3 so that torch is seen; GPUCTS_PYTHON picks another interpreter). Each
// constraint is its own assertion whose message carries the sourced expectation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/matrix.hpp"

namespace cts {
namespace {

// What the fingerprint does not carry: the interpreter's version and torch's C++ standard.
struct PythonFacts {
  std::optional<Version> python;
  std::optional<int> torch_cxx;  // 201703 -> 17
};

std::string python_exe() {
  const char* p = std::getenv("GPUCTS_PYTHON");
  return p && *p ? p : "python3";
}

PythonFacts probe_python_facts() {
  static const char* script =
      "import json,re,sys\n"
      "r={'python':'%d.%d.%d'%sys.version_info[:3]}\n"
      "try:\n"
      " import torch\n"
      " m=re.search(r'C\\+\\+ Version: (\\d+)',torch.__config__.show())\n"
      " if m: r['cxx']=int(m.group(1))\n"
      "except Exception: pass\n"
      "print(json.dumps(r))\n";
  proc::Options o;  // no shell: GPUCTS_PYTHON is one program, whatever its path holds
  o.timeout_s = 60;
  std::string out = proc::run({python_exe(), "-c", script}, o).output;
  PythonFacts f;
  auto nl = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  auto j = nlohmann::json::parse(nl == std::string::npos ? out : out.substr(nl + 1), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return f;
  if (j.contains("python")) f.python = Version::try_parse(j["python"].get<std::string>());
  if (j.contains("cxx")) {
    long code = j["cxx"].get<long>();
    f.torch_cxx = code >= 202002 ? 20 : code >= 201703 ? 17 : code >= 201402 ? 14 : 11;
  }
  return f;
}

struct Live {
  Fingerprint fp;
  PythonFacts py;
};

// GPUCTS_LIVE_FINGERPRINT=FILE (a relative FILE not found from here is taken under the test data,
// fixtures/probe/paths.hpp) replays a recorded machine instead of probing this one (CI runs the
// suite on the GPU machine's fixture so the matching-row path is exercised everywhere). Its
// extension field "python": {"version": ..., "torch_cxx": 201703} stands for the python probe.
const Live& live() {
  static const Live l = [] {
    if (const char* file = std::getenv("GPUCTS_LIVE_FINGERPRINT"); file && *file) {
      Live r{load_fingerprint_file(test_data_file(file)), {}};  // relative: under the test data
      const auto& py = r.fp.extra.value("python", nlohmann::json::object());
      if (py.contains("version")) r.py.python = Version::try_parse(py["version"].get<std::string>());
      if (py.contains("torch_cxx")) {
        long code = py["torch_cxx"].get<long>();
        r.py.torch_cxx = code >= 202002 ? 20 : code >= 201703 ? 17 : 14;
      }
      return r;
    }
    ProbeOptions o;
    o.python_exe = python_exe();
    return Live{probe_fingerprint(o), probe_python_facts()};
  }();
  return l;
}

std::string name_of(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string cc_str(const Version& cc) {
  return "sm_" + std::to_string(cc.major()) + std::to_string(cc.minor());
}

// Constraints whose live input is absent are collected; a row with such gaps and no failure skips
// (never passes) with the list.
class Gaps {
 public:
  void add(const std::string& what) { gaps_ += (gaps_.empty() ? "" : "; ") + what; }
  bool empty() const { return gaps_.empty(); }
  const std::string& str() const { return gaps_; }

 private:
  std::string gaps_;
};

std::optional<Version> live_torch_cuda() {
  const auto& fp = live().fp;
  if (!fp.torch || !fp.torch->version) return std::nullopt;
  return fp.torch->cuda ? fp.torch->cuda : fp.torch->version->torch_cuda_tag();
}

bool row_describes_torch(const TorchRow& r) {
  const auto& fp = live().fp;
  auto cuda = live_torch_cuda();
  return fp.torch && fp.torch->version && r.torch.same_release(*fp.torch->version, 2) && cuda &&
         r.cuda.same_release(*cuda, 2);
}

}  // namespace

// Rows print as the row they are (file:key), not as a byte dump with heap addresses. (In namespace
// cts, where argument-dependent lookup finds them for cts::TorchRow.)
void PrintTo(const TorchRow& r, std::ostream* os) { *os << r.meta.cite(); }
void PrintTo(const CudaRow& r, std::ostream* os) { *os << r.meta.cite(); }
void PrintTo(const LightningRow& r, std::ostream* os) { *os << r.meta.cite(); }

namespace {

class TorchRowTest : public ::testing::TestWithParam<TorchRow> {};

TEST_P(TorchRowTest, DescribesThisMachine) {
  const TorchRow& row = GetParam();
  const Matrix& m = builtin_matrix();
  const Fingerprint& fp = live().fp;
  const std::string cite = row.meta.cite() + " (" + row.meta.source + ")";
  if (!fp.torch || !fp.torch->version)
    GTEST_SKIP() << python_exe() << " cannot import torch: no torch row describes this machine";
  if (!row_describes_torch(row)) {
    auto cuda = live_torch_cuda();
    GTEST_SKIP() << "this machine has torch " << fp.torch->version->raw << " (CUDA "
                 << (cuda ? cuda->release_str(2) : std::string("none")) << "); the row is torch "
                 << row.torch.release_str(2) << " " << row.variant;
  }
  Gaps gaps;
  auto soft = [&](const std::string& field) { return row.meta.is_unconfirmed(field); };
  // A constraint on an UNCONFIRMED field reports, it does not fail.
  auto check = [&](bool ok, const std::string& field, const std::string& what) {
    if (ok) return;
    if (soft(field))
      std::printf("WARNING %s: %s [UNCONFIRMED in %s]\n", field.c_str(), what.c_str(), cite.c_str());
    else
      ADD_FAILURE() << what << "\n  expected by " << cite;
  };

  if (fp.torch->cuda)
    check(fp.torch->cuda->same_release(row.cuda, 2), "cuda",
          "torch.version.cuda is " + fp.torch->cuda->release_str(2) + ", the row says " +
              row.cuda.release_str(2));
  else
    gaps.add("torch.version.cuda");

  if (row.nccl && fp.torch->nccl)
    check(fp.torch->nccl->same_release(*row.nccl, 3), "nccl",
          "torch.cuda.nccl.version() is " + fp.torch->nccl->release_str(3) + ", the wheel ships NCCL " +
              row.nccl->release_str(3));
  else
    gaps.add(row.nccl ? "torch.cuda.nccl.version()" : "the row's NCCL (UNCONFIRMED, empty)");

  if (row.cudnn && fp.torch->cudnn)
    check(fp.torch->cudnn->same_release(*row.cudnn, 3), "cudnn",
          "torch.backends.cudnn.version() is " + fp.torch->cudnn->release_str(3) +
              ", the wheel needs cuDNN " + row.cudnn->str());
  else
    gaps.add("cuDNN");

  if (fp.torch->arch_list) {
    std::set<std::string> got(fp.torch->arch_list->begin(), fp.torch->arch_list->end());
    std::set<std::string> want(row.arch_list.begin(), row.arch_list.end());
    std::string g, w;
    for (const auto& a : got) g += a + " ";
    for (const auto& a : want) w += a + " ";
    check(got == want, "arch_list", "torch.cuda.get_arch_list() is [" + g + "], the row says [" + w + "]");
  } else {
    gaps.add("torch.cuda.get_arch_list()");
  }

  if (live().py.torch_cxx)
    check(*live().py.torch_cxx == row.cxx_std, "cxx_std",
          "torch was built as C++" + std::to_string(*live().py.torch_cxx) + ", the row says C++" +
              std::to_string(row.cxx_std));
  else
    gaps.add("torch's C++ standard");

  if (live().py.python)
    check(live().py.python->compare_release(row.python_min, 2) >= 0 &&
              live().py.python->compare_release(row.python_max, 2) <= 0,
          "python",
          "python " + live().py.python->release_str(3) + " is outside " + row.python_min.str() + ".." +
              row.python_max.str());
  else
    gaps.add("python version");

  const CudaRow* cuda = m.find_cuda(row.cuda);
  ASSERT_NE(cuda, nullptr) << row.cuda.str() << " is not in cuda.csv";
  if (fp.driver_version)
    check(fp.driver_version->compare_release(cuda->min_driver) >= 0, "min_driver",
          "driver " + fp.driver_version->raw + " is below " + cuda->min_driver.str() +
              ", the minimum for CUDA " + row.cuda.release_str(2) + " (" + cuda->meta.cite() + ")");
  else
    gaps.add("driver version (NVML)");

  if (fp.gpus && !fp.gpus->empty()) {
    for (const auto& g : *fp.gpus) {
      if (!g.cc) continue;
      check(
          arch_list_covers(fp.torch->arch_list ? *fp.torch->arch_list : row.arch_list, *g.cc), "arch_list",
          "GPU " + std::to_string(g.index) + " (" + cc_str(*g.cc) + ") is not covered by torch's arch list");
      check(cuda_targets(*cuda, *g.cc), "sms",
            "GPU " + std::to_string(g.index) + " (" + cc_str(*g.cc) + ") is not a target of CUDA " +
                row.cuda.release_str(2) + " (" + cuda->meta.cite() + ")");
    }
  } else {
    gaps.add("GPUs (" + no_gpu_reason() + ")");
  }
  if (!gaps.empty() && !HasFailure())
    GTEST_SKIP() << "constraints not evaluated (inputs absent): " << gaps.str();
}

INSTANTIATE_TEST_SUITE_P(Torch, TorchRowTest, ::testing::ValuesIn(builtin_matrix().torch),
                         [](const auto& info) {
                           return name_of(info.param.torch.release_str(2) + "_" + info.param.variant);
                         });

TEST(TorchRows, ExactlyOneRowDescribesThisMachine) {
  const Fingerprint& fp = live().fp;
  if (!fp.torch || !fp.torch->version) GTEST_SKIP() << python_exe() << " cannot import torch";
  if (!live_torch_cuda())
    GTEST_SKIP() << "torch " << fp.torch->version->raw << " is a CPU build: the matrix has CUDA wheels only";
  std::string hits;
  int n = 0;
  for (const auto& r : builtin_matrix().torch)
    if (row_describes_torch(r)) ++n, hits += " " + r.meta.cite();
  EXPECT_EQ(n, 1) << "torch " << fp.torch->version->raw << " matches" << (hits.empty() ? " no row" : hits);
}

class CudaRowTest : public ::testing::TestWithParam<CudaRow> {};

TEST_P(CudaRowTest, DescribesThisMachine) {
  const CudaRow& row = GetParam();
  const Fingerprint& fp = live().fp;
  if (!fp.cuda_runtime) GTEST_SKIP() << "no CUDA runtime in this build: " << no_gpu_reason();
  if (!fp.cuda_runtime->same_release(row.cuda, 2))
    GTEST_SKIP() << "this binary uses CUDA runtime " << fp.cuda_runtime->release_str(2)
                 << "; the row is CUDA " << row.meta.key;
  const std::string cite = row.meta.cite() + " (" + row.meta.source + ")";
  Gaps gaps;
  if (fp.driver_version)
    EXPECT_GE(fp.driver_version->compare_release(row.min_driver), 0)
        << "driver " << fp.driver_version->raw << " is below " << row.min_driver.str() << ", expected by "
        << cite;
  else
    gaps.add("driver version (NVML)");
  if (fp.driver_cuda)
    EXPECT_GE(fp.driver_cuda->major(), row.cuda.major())
        << "the driver supports CUDA " << fp.driver_cuda->release_str(2) << ", an older major; expected by "
        << cite;
  else
    gaps.add("driver CUDA version");
  if (fp.gpus && !fp.gpus->empty()) {
    for (const auto& g : *fp.gpus) {
      if (!g.cc) continue;
      bool targetable = cuda_targets(row, *g.cc);
      if (row.meta.is_unconfirmed("sms") && !targetable)
        std::printf("WARNING GPU %d (%s) not in the UNCONFIRMED sms of %s\n", g.index, cc_str(*g.cc).c_str(),
                    cite.c_str());
      else
        EXPECT_TRUE(targetable) << "GPU " << g.index << " (" << cc_str(*g.cc) << ") is not a target of CUDA "
                                << row.meta.key << ", expected by " << cite;
    }
  } else {
    gaps.add("GPUs (" + no_gpu_reason() + ")");
  }
  if (!gaps.empty() && !HasFailure())
    GTEST_SKIP() << "constraints not evaluated (inputs absent): " << gaps.str();
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaRowTest, ::testing::ValuesIn(builtin_matrix().cuda),
                         [](const auto& info) { return name_of(info.param.meta.key); });

class LightningRowTest : public ::testing::TestWithParam<LightningRow> {};

TEST_P(LightningRowTest, DescribesThisMachine) {
  const LightningRow& row = GetParam();
  const Fingerprint& fp = live().fp;
  std::optional<Version> installed = fp.lightning ? fp.lightning : fp.pytorch_lightning;
  if (!installed) GTEST_SKIP() << python_exe() << " has neither lightning nor pytorch_lightning installed";
  if (installed->compare_release(row.first, 3) < 0 || installed->compare_release(row.last, 3) > 0)
    GTEST_SKIP() << "this machine has Lightning " << installed->raw << "; the row is " << row.first.str()
                 << "-" << row.last.str();
  if (!fp.torch || !fp.torch->version) GTEST_SKIP() << "constraints not evaluated (inputs absent): torch";
  const std::string cite = row.meta.cite() + " (" + row.meta.source + ")";
  EXPECT_GE(fp.torch->version->compare_release(row.torch_min), 0)
      << "Lightning " << installed->raw << " needs torch >= " << row.torch_min.str()
      << "; installed torch is " << fp.torch->version->raw << ", expected by " << cite;
  if (live().py.python) {
    EXPECT_GE(live().py.python->compare_release(row.python_min, 2), 0)
        << "Lightning " << installed->raw << " needs python >= " << row.python_min.str() << ", expected by "
        << cite;
  }
  if (row.torch_tested_below && fp.torch->version->compare_release(*row.torch_tested_below) >= 0)
    std::printf("NOTE torch %s is above Lightning %s's CI cap (< %s): untested, not refused (%s)\n",
                fp.torch->version->raw.c_str(), installed->raw.c_str(), row.torch_tested_below->str().c_str(),
                cite.c_str());
}

INSTANTIATE_TEST_SUITE_P(Lightning, LightningRowTest, ::testing::ValuesIn(builtin_matrix().lightning),
                         [](const auto& info) { return name_of(info.param.first.str()); });

}  // namespace
}  // namespace cts
