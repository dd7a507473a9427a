// The cuDNN table (matrix/data/cudnn.csv) and how far the data reaches: the loader refuses a bad
// row naming file:line, every cuDNN 9 the torch wheels pin is covered for their GPUs, and the
// reach `gpucts check` prints is computed from the rows (a newer row moves it).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fixtures/probe/paths.hpp"
#include "matrix/matrix.hpp"

namespace cts {
namespace {

std::map<std::string, std::string> real_files() {
  std::map<std::string, std::string> files;
  for (const auto& name : matrix_files()) {
    std::ifstream in(matrix_data_dir() + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    files[name] = ss.str();
  }
  return files;
}

const char* kHeader = "first,last,cuda_major,cuda,min_driver,ccs,deprecated_ccs,unconfirmed,source,note\n";

std::string load_error(const std::string& row) {
  auto files = real_files();
  files["cudnn.csv"] = std::string(kHeader) + row;
  try {
    parse_matrix(files, "fixture");
  } catch (const MatrixError& e) {
    return e.what();
  }
  return "";
}

TEST(CudnnTable, BadRowsNameFileAndLine) {
  EXPECT_EQ(load_error("9.5.0,9.1.0,12,12.0,525.60.13,9.0,,,src,\n"), "cudnn.csv:2: last is below first");
  EXPECT_EQ(load_error("9.1.0,9.5.0,12,13.0,525.60.13,9.0,,,src,\n"),
            "cudnn.csv:2: cuda lists 13.0, not of CUDA major 12");
  EXPECT_EQ(load_error("9.1.0,9.5.0,12,12.0,525.60.13,9.0,7.0,,src,\n"),
            "cudnn.csv:2: deprecated_ccs lists 7.0, which ccs does not");
  EXPECT_EQ(load_error("9.1.0,9.5.0,12,12.0,525.60.13,,,,src,\n"), "cudnn.csv:2: column 'ccs' is empty");
  EXPECT_EQ(
      load_error("9.1.0,9.5.0,12,12.0,525.60.13,9.0,,,src,\n9.1.0,9.5.0,12,12.0,525.60.13,8.0,,,src,\n"),
      "cudnn.csv:3: duplicate key '9.1.0/cu12.0-12.0' (first at line 2)");
  EXPECT_EQ(load_error("9.1.0,9.5.0,12,12.0,525.60.13,9.0,,,src,\n"), "") << "a good row loads";
}

// Every cuDNN 9 an x86_64 torch wheel pins (CUDA 12 and 13) is covered by a row of its CUDA major,
// and the rows support every SM the wheel is built for: the rules then judge what users install.
// (The aarch64 wheels add sm_110, Thor, which the Support Matrix does not list.)
TEST(CudnnTable, CoversEveryWheelPinAndItsArchList) {
  const Matrix& m = builtin_matrix();
  int judged = 0;
  for (const auto& t : m.torch) {
    if (!t.cudnn || t.cudnn->major() != 9 || t.cuda.major() < 12) continue;
    std::vector<const CudnnRow*> rows;
    for (const auto& r : m.cudnn)
      if (r.cuda_major == t.cuda.major() && r.covers(*t.cudnn)) rows.push_back(&r);
    ASSERT_FALSE(rows.empty()) << t.meta.cite() << ": no cudnn.csv row covers cuDNN " << t.cudnn->str();
    for (const auto& arch : t.arch_list) {
      auto cc = arch_cc(arch);
      if (!cc) continue;  // compute_XY: PTX
      EXPECT_TRUE(
          std::any_of(rows.begin(), rows.end(), [&](const CudnnRow* r) { return r->supports_cc(*cc); }))
          << t.meta.cite() << ": cuDNN " << t.cudnn->str() << " rows do not list " << arch;
    }
    ++judged;
  }
  EXPECT_GT(judged, 20);
}

TEST(CudnnTable, VoltaLeavesWith9_17) {
  const Matrix& m = builtin_matrix();
  const Version v100 = Version::parse("7.0");
  const CudnnRow* old_row = m.find_cudnn(Version::parse("9.10.2.21"), 12);
  const CudnnRow* new_row = m.find_cudnn(Version::parse("9.17.0"), 12);
  ASSERT_NE(old_row, nullptr);
  ASSERT_NE(new_row, nullptr);
  EXPECT_TRUE(old_row->supports_cc(v100));
  EXPECT_FALSE(new_row->supports_cc(v100));
  EXPECT_EQ(m.find_cudnn(Version::parse("8.9.7"), 12), nullptr) << "cuDNN 8 is not modelled";
}

TEST(DataReach, ComesFromTheRows) {
  const DataReach r = data_reach(builtin_matrix());
  EXPECT_EQ(r.torch, "2.15");
  EXPECT_EQ(r.nccl, "2.32.6");
  EXPECT_EQ(r.nccl_env, "2.32.6") << "the newest release whose variable names were read (its wheel)";
  EXPECT_EQ(r.nccl_algos, "2.30.7") << "the newest release tag whose source was read";
  EXPECT_EQ(r.cudnn, "9.28.1");
  EXPECT_EQ(r.cuda, "13.5");
  EXPECT_EQ(r.driver_branch, "R620");
  // A newer row moves the reach; nothing is hard-wired.
  auto files = real_files();
  files["driver_branches.csv"] += "625,NFB,supported,,,https://example.invalid/driver-table,\n";
  files["cudnn.csv"] += "9.29.0,9.29.0,13,13.0,580.65.06,9.0,,,https://example.invalid/cudnn,\n";
  const DataReach moved = data_reach(parse_matrix(files, "fixture"));
  EXPECT_EQ(moved.driver_branch, "R625");
  EXPECT_EQ(moved.cudnn, "9.29.0");
}

}  // namespace
}  // namespace cts
