// The NCCL functions resolved at run time (fixtures/probe/nccl_api.hpp) on the library this process
// loaded, and the rule that lets one build run on every release from 2.18.1: no suite binary
// imports an NCCL function that 2.18.1 lacks.
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fixtures/nccl/nccl_util.hpp"
#include "fixtures/probe/nccl_api.hpp"
#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/matrix.hpp"
#include "matrix/nccl_support.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

// The undefined dynamic symbols of an ELF file whose name starts with "nccl".
std::set<std::string> nccl_imports(const std::string& file, std::string* error) {
  int rc = 0;
  const std::string out = proc::output_of({"nm", "-D", "--undefined-only", file}, &rc);
  std::set<std::string> s;
  if (rc != 0) {
    *error = out;
    return s;
  }
  std::size_t pos = 0;
  while ((pos = out.find("U nccl", pos)) != std::string::npos) {
    pos += 2;
    const std::size_t end = out.find_first_of("@\n \t", pos);
    s.insert(out.substr(pos, end - pos));
  }
  return s;
}

TEST(NcclApi, ResolvesFromTheLibraryThatServesGetVersion) {
  const std::string lib = nccl::loaded_library();
  ASSERT_FALSE(lib.empty()) << "no libnccl in this process";
  EXPECT_NE(lib.find("libnccl"), std::string::npos) << lib;
  EXPECT_TRUE(fs::exists(lib)) << lib;
  EXPECT_TRUE(nccl::exported("ncclGetVersion"));
  EXPECT_FALSE(nccl::exported("ncclNoSuchFunctionEver"));
  EXPECT_NE(nccl::absent_reason("ncclNoSuchFunctionEver").find(lib), std::string::npos);
}

// The table agrees with the library, and with the release the matrix says brought each function.
TEST(NcclApi, TableMatchesTheLoadedRelease) {
  const nccl::Api& a = nccl::api();
  const std::vector<std::pair<std::string, const void*>> slots = {
      {"ncclAlltoAll", reinterpret_cast<const void*>(a.AlltoAll)},
      {"ncclGather", reinterpret_cast<const void*>(a.Gather)},
      {"ncclScatter", reinterpret_cast<const void*>(a.Scatter)},
      {"ncclCommSplit", reinterpret_cast<const void*>(a.CommSplit)},
      {"ncclMemAlloc", reinterpret_cast<const void*>(a.MemAlloc)},
      {"ncclMemFree", reinterpret_cast<const void*>(a.MemFree)},
      {"ncclCommRegister", reinterpret_cast<const void*>(a.CommRegister)},
      {"ncclCommDeregister", reinterpret_cast<const void*>(a.CommDeregister)}};
  ASSERT_EQ(slots.size(), nccl::table_symbols().size());
  const Version v = nccl_runtime_version();
  const std::map<std::string, std::string> feature = {
      {"ncclAlltoAll", "AlltoAll"},   {"ncclGather", "Gather"},     {"ncclScatter", "Scatter"},
      {"ncclCommSplit", "CommSplit"}, {"ncclMemAlloc", "MemAlloc"}, {"ncclCommRegister", "CommRegister"}};
  for (const auto& [name, ptr] : slots) {
    EXPECT_EQ(ptr != nullptr, nccl::exported(name)) << name;
    auto f = feature.find(name);
    if (f == feature.end()) continue;
    const bool matrix_says = nccl_feature_supported(builtin_matrix(), f->second, v).supported;
    EXPECT_EQ(ptr != nullptr, matrix_says) << name << " on NCCL " << v.str() << " (" << nccl::loaded_library()
                                           << "): nccl_features.csv " << f->second << " says " << matrix_says;
  }
}

TEST(NcclApi, FingerprintRecordsTheLibraryAndItsFunctions) {
  ProbeOptions po;
  po.python = false;
  po.toolkit = false;
  const Fingerprint fp = probe_fingerprint(po);
  ASSERT_TRUE(fp.nccl_library.has_value());
  EXPECT_EQ(*fp.nccl_library, nccl::loaded_library());
  ASSERT_TRUE(fp.extra.contains("nccl_symbols")) << fp.extra.dump();
  const auto& s = fp.extra["nccl_symbols"];
  for (const auto& [name, have] : nccl::table_symbols()) {
    ASSERT_TRUE(s.contains(name)) << name;
    EXPECT_EQ(s[name].get<bool>(), have) << name;
  }
  // nccl_features.csv names ncclCommShrink (2.27.3) in its source column: recorded too.
  ASSERT_TRUE(s.contains("ncclCommShrink")) << s.dump();
  EXPECT_EQ(s["ncclCommShrink"].get<bool>(), nccl::exported("ncclCommShrink"));
}

bool is_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) ==
                                  "\x7f"
                                  "ELF";
}

// Every gpucts binary of this tree imports only functions that 2.18.1 exports: anything newer must
// go through nccl::api(), or the binary would not start (or not run) on an older release.
TEST(NcclApi, BinariesImportOnlyTheOldestReleasesApi) {
  const std::set<std::string> baseline(nccl::baseline_symbols().begin(), nccl::baseline_symbols().end());
  int checked = 0;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(self_dir()))
    if (e.is_regular_file() && e.path().filename().string().rfind("gpucts_", 0) == 0 &&
        e.path().extension().empty() && is_elf(e.path().string()))  // not the Python suites' launcher
      files.push_back(e.path().string());
  if (auto cli = find_beside("gpucts")) files.push_back(*cli);
  for (const auto& f : files) {
    std::string error;
    const auto imports = nccl_imports(f, &error);
    ASSERT_TRUE(error.empty()) << "nm -D " << f << ": " << error;
    if (imports.empty()) continue;
    ++checked;
    for (const auto& s : imports)
      EXPECT_TRUE(baseline.count(s))
          << fs::path(f).filename().string() << " imports " << s << ", which NCCL " << nccl::kOldestSupported
          << " does not export: call it through nccl::api() (fixtures/probe/nccl_api.hpp)";
  }
  EXPECT_GE(checked, 3) << "expected the NCCL suites (gpucts_collectives, gpucts_bandwidth, ...) beside "
                        << self_dir();
}

}  // namespace
}  // namespace cts
