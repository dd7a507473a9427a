// One build, every NCCL release: each release in the NCCL cache (ci/fetch_nccl_wheels; PyPI's
// nvidia-nccl-cu13 and -cu12 wheels) is put first on LD_LIBRARY_PATH, with LD_BIND_NOW=1 so that
// a missing function fails at load time, and
//   - `gpucts fingerprint` must report that release as the NCCL runtime, that file as the library,
//     and exactly the table functions the release exports;
//   - every NCCL suite binary must start and list its cases (GPUCTS_REGISTER_ALL=1: every case).
//   - gpucts_nccl_api's table cases must pass on it (each function there exactly from the release
//     nccl_features.csv names).
// One case per release. Without a cache every case skips with the reason; nothing is downloaded.
// Cache: $GPUCTS_NCCL_CACHE, else ~/.cache/gpucts/nccl.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures/gtest/gtest_main.hpp"
#include "fixtures/probe/nccl_api.hpp"
#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/version.hpp"

namespace fs = std::filesystem;

namespace {

std::string cache_dir() {
  if (const char* e = std::getenv("GPUCTS_NCCL_CACHE"); e && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.cache/gpucts/nccl";
}

std::vector<std::string> cached_versions() {
  std::vector<cts::Version> vs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_dir(), ec))
    if (fs::exists(e.path() / "lib" / "libnccl.so.2"))
      if (auto v = cts::Version::try_parse(e.path().filename().string(), cts::VersionKind::Nccl))
        vs.push_back(*v);
  std::sort(vs.begin(), vs.end());
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.release_str());
  return out;
}

// The suite binaries beside this one that link libnccl (DT_NEEDED), MPI ones left out (listing
// them would start an MPI singleton).
std::vector<std::string> nccl_binaries() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(cts::self_dir())) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.rfind("gpucts_", 0) != 0 || !e.path().extension().empty()) continue;
    if (name == "gpucts_nccl_wheels") continue;
    int rc = 0;
    const std::string dyn = cts::proc::output_of({"readelf", "-d", e.path().string()}, &rc);
    if (dyn.find("libnccl") == std::string::npos || dyn.find("libmpi") != std::string::npos) continue;
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class WheelLoad : public ::testing::Test {
 public:
  explicit WheelLoad(std::string v) : v_(std::move(v)) {}
  void TestBody() override {
    const fs::path lib = fs::path(cache_dir()) / v_ / "lib";
    const std::vector<std::string> env = {"LD_BIND_NOW=1", "GPUCTS_REGISTER_ALL=1",
                                          "LD_LIBRARY_PATH=" + lib.string()};
    auto cli = cts::find_beside("gpucts");
    ASSERT_TRUE(cli) << "gpucts not found beside " << cts::self_dir();
    int rc = 0;
    const std::string out = cts::proc::output_of({*cli, "fingerprint", "--no-python"}, &rc, env);
    ASSERT_EQ(rc, 0) << out;
    const auto j = nlohmann::json::parse(out.substr(out.find('{')), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_TRUE(j.contains("nccl")) << out;
    EXPECT_EQ(j["nccl"].value("runtime", ""), v_)
        << "asked for the cache's " << v_ << ", gpucts loaded another";
    EXPECT_EQ(fs::path(j["nccl"].value("library", "")).parent_path(), fs::canonical(lib))
        << "the fingerprint must name the library file that was loaded";
    ASSERT_TRUE(j.contains("nccl_symbols")) << out;
    const cts::Version v = cts::Version::parse(v_, cts::VersionKind::Nccl);
    EXPECT_EQ(j["nccl_symbols"].value("ncclAlltoAll", false), v >= cts::Version::parse("2.28.3"))
        << "ncclAlltoAll is native from 2.28.3";
    EXPECT_EQ(j["nccl_symbols"].value("ncclMemAlloc", false), v >= cts::Version::parse("2.19.1"));

    const auto bins = nccl_binaries();
    ASSERT_GE(bins.size(), 3u) << "expected the NCCL suites beside " << cts::self_dir();
    for (const auto& b : bins) {
      const std::string list = cts::proc::output_of({b, "--gtest_list_tests"}, &rc, env);
      const std::string name = fs::path(b).filename().string();
      EXPECT_EQ(rc, 0) << name << " did not start on NCCL " << v_ << ":\n" << list.substr(0, 2000);
      EXPECT_NE(list.find("\n  "), std::string::npos) << name << " listed no case on NCCL " << v_;
      if (name == "gpucts_collectives") {
        EXPECT_NE(list.find("AlltoAll."), std::string::npos)
            << "the native AlltoAll row must be listed on every release";
      }
    }
    // The run-time table on this release: each function there exactly where nccl_features.csv says.
    const std::string api = (fs::path(cts::self_dir()) / "gpucts_nccl_api").string();
    if (fs::exists(api)) {
      const std::string o = cts::proc::output_of(
          {api, "--gtest_filter=NcclApi.ResolvesFrom*:NcclApi.TableMatches*:NcclApi.Fingerprint*"}, &rc, env);
      EXPECT_EQ(rc, 0) << "gpucts_nccl_api on NCCL " << v_ << ":\n"
                       << o.substr(o.size() > 3000 ? o.size() - 3000 : 0);
    }
  }

 private:
  std::string v_;
};

}  // namespace

int main(int argc, char** argv) {
  const auto versions = cached_versions();
  if (versions.empty()) {
    ::testing::RegisterTest("WheelLoad", "NoCache", nullptr, nullptr, __FILE__, __LINE__,
                            []() -> ::testing::Test* {
                              struct Skip : ::testing::Test {
                                void TestBody() override {
                                  GTEST_SKIP() << "no NCCL release in " << cache_dir()
                                               << " (fill it with ci/fetch_nccl_wheels --default; set "
                                                  "GPUCTS_NCCL_CACHE to use another folder)";
                                }
                              };
                              return new Skip;
                            });
  }
  for (const auto& v : versions) {
    std::string name = v;
    for (auto& c : name)
      if (c == '.') c = '_';
    ::testing::RegisterTest("WheelLoad", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [v]() -> ::testing::Test* { return new WheelLoad(v); });
  }
  return cts::run_gtest_main(argc, argv);
}
