// ci/nccl_prune, which keeps one GPU architecture's code of a libnccl.so.2 so that releases fit
// into a device call, on a shared library built here for sm_80 + sm_90 with zstd-compressed
// entries: the pruned file keeps its size and every byte outside the fatbin sections, lists only
// the architecture asked for, and its code for it is byte for byte the original's.
#include <elf.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

std::vector<char> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// [offset, offset + size) of the fatbin sections of an ELF image.
std::vector<std::pair<std::size_t, std::size_t>> fatbin_ranges(const std::vector<char>& f) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(f.data());
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(f.data() + eh->e_shoff);
  const char* names = f.data() + sh[eh->e_shstrndx].sh_offset;
  for (int i = 0; i < eh->e_shnum; ++i) {
    const std::string n = names + sh[i].sh_name;
    if (n == ".nv_fatbin" || n == "__nv_relfatbin")
      out.emplace_back(sh[i].sh_offset, sh[i].sh_offset + sh[i].sh_size);
  }
  return out;
}

class NcclPrune : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(GPUCTS_NCCL_PRUNE))
      GTEST_SKIP() << GPUCTS_NCCL_PRUNE << " not there (not a source checkout)";
    if (!fs::exists(GPUCTS_PRUNE_FIXTURE))
      GTEST_SKIP() << GPUCTS_PRUNE_FIXTURE << " not there (not this build tree)";
    int rc = 0;
    proc::output_of({"python3", "--version"}, &rc);
    if (rc != 0) GTEST_SKIP() << "no python3";
    lib_ = GPUCTS_PRUNE_FIXTURE;
  }
  std::string tool(std::vector<std::string> args, int* rc) {
    args.insert(args.begin(), {"python3", GPUCTS_NCCL_PRUNE});
    return proc::output_of(args, rc);
  }
  // The sm_90 code entries of the original library and every entry of `pruned`, each extracted by
  // the tool and sorted, so that a test compares what was kept with what it came from.
  void extracted_code(const std::string& pruned, std::vector<std::vector<char>>& orig90,
                      std::vector<std::vector<char>>& kept) {
    int rc = 0;
    const std::string x1 = tmp_.path() + "/x-orig",
                      x2 = tmp_.path() + "/x-" + fs::path(pruned).stem().string();
    ASSERT_EQ((tool({"extract", lib_, x1}, &rc), rc), 0);
    ASSERT_EQ((tool({"extract", pruned, x2}, &rc), rc), 0);
    for (const auto& e : fs::directory_iterator(x1))
      if (e.path().string().find("elf.sm_90") != std::string::npos) orig90.push_back(read(e.path().string()));
    for (const auto& e : fs::directory_iterator(x2)) kept.push_back(read(e.path().string()));
    std::sort(orig90.begin(), orig90.end());
    std::sort(kept.begin(), kept.end());
  }
  std::string lib_;
  ScratchDir tmp_{"nccl-prune"};
};

TEST_F(NcclPrune, KeepsOneArchitectureInPlace) {
  int rc = 0;
  std::string before = tool({"list", lib_}, &rc);
  ASSERT_EQ(rc, 0) << before;
  ASSERT_NE(before.find("elf sm_80"), std::string::npos) << before;
  ASSERT_NE(before.find("elf sm_90"), std::string::npos) << before;
  const std::string out = tmp_.path() + "/pruned.so";
  std::string msg = tool({"prune", "--arch", "90", lib_, out}, &rc);
  ASSERT_EQ(rc, 0) << msg;
  const std::string after = tool({"list", out}, &rc);
  EXPECT_EQ(rc, 0) << after;
  EXPECT_NE(after.find("elf sm_90"), std::string::npos) << after;
  EXPECT_EQ(after.find("sm_80"), std::string::npos) << after;
  EXPECT_EQ(after.find("ptx"), std::string::npos)
      << "PTX is dropped where the cubin for the architecture is there:\n"
      << after;

  const auto a = read(lib_), b = read(out);
  ASSERT_EQ(a.size(), b.size()) << "the file keeps its size and layout";
  const auto ranges = fatbin_ranges(a);
  ASSERT_FALSE(ranges.empty());
  std::size_t outside = 0, inside = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    bool in = false;
    for (const auto& [lo, hi] : ranges) in |= i >= lo && i < hi;
    (in ? inside : outside)++;
  }
  EXPECT_EQ(outside, 0u) << "bytes changed outside the fatbin sections";
  EXPECT_GT(inside, 0u);

  // The sm_90 code is the original's, byte for byte.
  std::vector<std::vector<char>> orig90, kept;
  ASSERT_NO_FATAL_FAILURE(extracted_code(out, orig90, kept));
  EXPECT_EQ(kept, orig90);
}

TEST_F(NcclPrune, FallsBackToPtxForAnArchitectureWithoutCode) {
  int rc = 0;
  const std::string out = tmp_.path() + "/p100.so";
  ASSERT_EQ((tool({"prune", "--arch", "100", lib_, out}, &rc), rc), 0);
  const std::string after = tool({"list", out}, &rc);
  EXPECT_NE(after.find("ptx sm_90"), std::string::npos) << after;
  EXPECT_EQ(after.find("elf"), std::string::npos) << after;
}

TEST_F(NcclPrune, RecompressedCodeDecompressesToTheOriginal) {
  int rc = 0;
  proc::output_of({"python3", "-c", "import zstandard"}, &rc);
  if (rc != 0) GTEST_SKIP() << "the zstandard module is not installed (pip install zstandard)";
  const std::string out = tmp_.path() + "/rc.so";
  const std::string msg = tool({"prune", "--arch", "90", "--recompress", "19", lib_, out}, &rc);
  ASSERT_EQ(rc, 0) << msg;
  std::vector<std::vector<char>> orig90, kept;
  ASSERT_NO_FATAL_FAILURE(extracted_code(out, orig90, kept));
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept, orig90) << "recompressed entries must decompress to the original code";
  EXPECT_EQ(std::string(kept[0].data(), 4),
            "\x7f"
            "ELF");
}

}  // namespace
}  // namespace cts
