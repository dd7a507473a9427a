// The shipped matrix data passes its schema (every row sourced, versions parse, keys unique,
// tables consistent with each other, UNCONFIRMED facts never give errors), the embedded copy equals
// the source tree, and the loader refuses broken CSV with `file:line: what is wrong`.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "fixtures/probe/paths.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every row of every table, as its metadata.
std::vector<const RowMeta*> all_rows(const Matrix& m) {
  std::vector<const RowMeta*> out;
  for (const auto& r : m.torch) out.push_back(&r.meta);
  for (const auto& r : m.cuda) out.push_back(&r.meta);
  for (const auto& r : m.nccl_releases) out.push_back(&r.meta);
  for (const auto& r : m.nccl_features) out.push_back(&r.meta);
  for (const auto& r : m.nccl_ops) out.push_back(&r.meta);
  for (const auto& r : m.lightning) out.push_back(&r.meta);
  for (const auto& r : m.nccl_env) out.push_back(&r.meta);
  return out;
}

// The matrix folder on disk (share/gpucts/matrix installed, else the source tree's matrix/data).
TEST(MatrixData, DataDirLoadsAndEqualsTheEmbeddedCopy) {
  Matrix disk = load_matrix_dir(matrix_data_dir());
  const Matrix& built = builtin_matrix();
  auto a = all_rows(disk), b = all_rows(built);
  ASSERT_EQ(a.size(), b.size()) << "rebuild: the embedded data is stale";
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i]->cite(), b[i]->cite());
  EXPECT_GE(built.torch.size(), 40u) << "torch 1.12 through 2.14 with their CUDA variants";
  EXPECT_GE(built.cuda.size(), 20u);
}

TEST(MatrixData, EveryRowHasASourceAndAUniqueKey) {
  std::set<std::string> keys;
  for (const RowMeta* r : all_rows(builtin_matrix())) {
    EXPECT_FALSE(r->source.empty()) << r->cite();
    EXPECT_TRUE(keys.insert(r->cite()).second) << "duplicate " << r->cite();
    EXPECT_GT(r->line, 1) << r->cite();
  }
}

TEST(MatrixData, TorchReleaseLinesCoverOneTwelveToTwoFourteen) {
  std::set<std::string> lines;
  for (const auto& r : builtin_matrix().torch) lines.insert(r.torch.release_str(2));
  for (const char* want : {"1.12", "1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
                           "2.9", "2.10", "2.11", "2.12", "2.13", "2.14"})
    EXPECT_TRUE(lines.count(want)) << "torch " << want << " has no row";
}

TEST(MatrixData, TorchRowsAgreeWithCudaAndNcclTables) {
  const Matrix& m = builtin_matrix();
  for (const auto& r : m.torch) {
    const CudaRow* c = m.find_cuda(r.cuda);
    ASSERT_NE(c, nullptr) << r.meta.cite() << ": CUDA " << r.cuda.str() << " is not in cuda.csv";
    for (const auto& arch : r.arch_list) {
      auto cc = arch_cc(arch);
      ASSERT_TRUE(cc) << r.meta.cite() << ": " << arch;
      EXPECT_TRUE(cuda_targets(*c, *cc))
          << r.meta.cite() << ": " << arch << " is not a target of CUDA " << c->meta.key;
    }
    if (r.nccl) {
      bool released = false;
      for (const auto& n : m.nccl_releases) released |= n.nccl.same_release(*r.nccl, 3);
      EXPECT_TRUE(released) << r.meta.cite() << ": NCCL " << r.nccl->str() << " is not in nccl_releases.csv";
    }
  }
}

TEST(MatrixData, NotesNameTheSeedClaimsTheyCorrect) {
  // The sourced guides say torch 2.0 pairs with NCCL 2.16.2 and 2.2 needs driver 535.
  const Matrix& m = builtin_matrix();
  const TorchRow* t20 = m.find_torch(Version::parse("2.0.1"), Version::parse("11.7"));
  const TorchRow* t22 = m.find_torch(Version::parse("2.2.2"), Version::parse("12.1"));
  ASSERT_TRUE(t20 && t22);
  EXPECT_EQ(t20->nccl->release_str(3), "2.14.3");
  EXPECT_NE(t20->meta.note.find("2.16.2"), std::string::npos) << t20->meta.note;
  EXPECT_NE(t22->meta.note.find("535"), std::string::npos) << t22->meta.note;
  const CudaRow* c121 = m.find_cuda(Version::parse("12.1"));
  ASSERT_TRUE(c121);
  EXPECT_EQ(c121->min_driver.major(), 525) << "CUDA 12.x runs on >= 525 under minor-version compatibility";
}

// UNCONFIRMED facts only ever give warnings: every row whose arch list, SM list or NCCL is
// unconfirmed is driven into the rule built on it, and no finding citing it may be an error.
TEST(MatrixData, UnconfirmedFactsNeverGiveErrors) {
  const Matrix& m = builtin_matrix();
  size_t driven = 0;
  // The matrix field each row-citing rule is built on.
  const std::map<std::string, std::string> field_of = {{"gpu-arch-not-in-torch-build", "arch_list"},
                                                       {"gpu-arch-unsupported-by-cuda", "sms"},
                                                       {"nccl-below-matrix", "nccl"},
                                                       {"driver-too-old-for-cuda-runtime", "min_driver"},
                                                       {"driver-too-old-for-torch-cuda", "min_driver"},
                                                       {"lightning-torch-incompatible", "torch_min"},
                                                       {"driver-too-old-for-gpu", "min_driver"}};
  auto no_error_citing = [&](const Fingerprint& fp, const RowMeta& row) {
    CheckResult r = check_fingerprints(m, {fp});
    for (const auto& f : r.findings) {
      auto field = field_of.find(f.id);
      if (f.source != row.evidence() || field == field_of.end() || !row.is_unconfirmed(field->second))
        continue;
      ++driven;
      EXPECT_NE(f.severity, "error") << row.cite() << " (" << f.id << "): " << f.message;
    }
  };
  for (const auto& row : m.torch) {
    if (row.meta.unconfirmed.empty()) continue;
    Fingerprint fp;
    fp.torch = TorchInfo{};
    fp.torch->version = Version::parse(row.torch.release_str(2) + ".0+" + row.variant);
    fp.torch->cuda = row.cuda;
    fp.torch->nccl = Version::parse("2.0.0");  // below any row
    fp.gpus = std::vector<GpuInfo>{
        GpuInfo{0, std::nullopt, Version::parse("12.1"), std::nullopt, std::nullopt, std::nullopt}};
    fp.gpus->push_back(
        GpuInfo{1, std::nullopt, Version::parse("3.0"), std::nullopt, std::nullopt, std::nullopt});
    no_error_citing(fp, row.meta);
  }
  for (const auto& row : m.cuda) {
    if (!row.meta.is_unconfirmed("sms")) continue;
    Fingerprint fp;
    fp.cuda_runtime = row.cuda;
    fp.gpus = std::vector<GpuInfo>{
        GpuInfo{0, std::nullopt, Version::parse("3.0"), std::nullopt, std::nullopt, std::nullopt},
        GpuInfo{1, std::nullopt, Version::parse("15.0"), std::nullopt, std::nullopt, std::nullopt}};
    no_error_citing(fp, row.meta);
  }
  for (const auto& row : m.gpu_families) {
    if (!row.meta.is_unconfirmed("min_driver")) continue;
    Fingerprint fp;
    fp.driver_version = Version::parse("410.48");
    fp.gpus =
        std::vector<GpuInfo>{GpuInfo{0, std::nullopt, row.cc_min, std::nullopt, std::nullopt, std::nullopt}};
    no_error_citing(fp, row.meta);
  }
  EXPECT_GT(driven, 15u) << "the unconfirmed rows must actually be exercised";
}

// Loader errors on broken fixture CSVs: each replaces one file of the real data.
struct BrokenCase {
  const char* fixture;   // suites/data/csv/<fixture>
  const char* replaces;  // which matrix file
  const char* error;     // regex the message must match; "" = must load
  int line = 0;          // when it loads: the line of its one row
};

const BrokenCase kBroken[] = {
    {"torch_malformed_quote.csv", "torch.csv", "^torch\\.csv:2: unterminated quoted field$"},
    {"torch_quote_in_field.csv", "torch.csv", "^torch\\.csv:2: quote inside an unquoted field"},
    {"torch_text_after_quote.csv", "torch.csv", "^torch\\.csv:2: unexpected 't' after closing quote$"},
    {"torch_duplicate_key.csv", "torch.csv",
     "^torch\\.csv:5: duplicate key '2\\.11/cu130' \\(first at line 3\\)$"},
    {"torch_unknown_column.csv", "torch.csv", "^torch\\.csv:1: unknown column 'colour' \\(known: "},
    {"torch_bad_version.csv", "torch.csv", "^torch\\.csv:2: column 'torch': version '2\\.x' does not parse"},
    {"torch_field_count.csv", "torch.csv", "^torch\\.csv:2: expected 13 fields, found 12$"},
    {"torch_missing_column.csv", "torch.csv", "^torch\\.csv:1: missing required column 'source'$"},
    {"torch_unconfirmed_not_column.csv", "torch.csv",
     "^torch\\.csv:2: unconfirmed names 'arch', which is not a column$"},
    {"torch_bad_arch.csv", "torch.csv",
     "^torch\\.csv:2: arch_list entry 'gfx90a' is not sm_XY or compute_XY$"},
    {"torch_variant_mismatch.csv", "torch.csv", "^torch\\.csv:2: variant 'cu128' does not match cuda 13\\.0"},
    {"torch_empty_not_unconfirmed.csv", "torch.csv",
     "^torch\\.csv:2: nccl is empty but not marked unconfirmed$"},
    {"torch_no_source.csv", "torch.csv", "^torch\\.csv:2: column 'source' is empty$"},
    {"torch_bom_crlf.csv", "torch.csv", "", 3},
    {"torch_multiline.csv", "torch.csv", "", 2},
    {"torch_multiline_then_duplicate.csv", "torch.csv",
     "^torch\\.csv:4: duplicate key '2\\.11/cu130' \\(first at line 2\\)$"},
    {"cuda_bad_driver.csv", "cuda.csv", "^cuda\\.csv:2: column 'min_driver': version 'R580' does not parse"},
    {"nccl_env_bad_type.csv", "nccl_env.csv", "^nccl_env\\.csv:2: type 'float' is unknown$"},
    {"nccl_env_bad_int.csv", "nccl_env.csv", "^nccl_env\\.csv:2: column 'min': '1k' is not an integer$"},
    {"lightning_overlap.csv", "lightning.csv",
     "^lightning\\.csv:3: range 2\\.5\\.2-2\\.5\\.6 overlaps line 2$"},
    {"nccl_ops_bad_supported.csv", "nccl_ops.csv", "^nccl_ops\\.csv:2: supported must be yes or no$"},
    {"nccl_ops_bad_nranks.csv", "nccl_ops.csv", "^nccl_ops\\.csv:2: nranks must be empty \\(any\\) or 1$"},
    {"nccl_features_until_before_since.csv", "nccl_features.csv",
     "^nccl_features\\.csv:2: until is not after since$"},
    {"nccl_defects_bad_severity.csv", "nccl_defects.csv", "^nccl_defects\\.csv:2: severity 'wrong' is not "},
    {"nccl_defects_fixed_before_first.csv", "nccl_defects.csv",
     "^nccl_defects\\.csv:2: fixed is not after first$"},
    {"nccl_defects_repeat_differs.csv", "nccl_defects.csv",
     "^nccl_defects\\.csv:3: id 'nccl-1' repeats line 2 with another"},
    {"nccl_defects_bad_nranks.csv", "nccl_defects.csv", "^nccl_defects\\.csv:2: nranks 'two' is not"},
    {"nccl_defects_bad_placement.csv", "nccl_defects.csv",
     "^nccl_defects\\.csv:2: placement 'sideways' is not"},
    {"nccl_defects_not_https.csv", "nccl_defects.csv",
     "^nccl_defects\\.csv:2: link 'http://x' is not an https URL$"},
};

void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.fixture; }

class MatrixLoader : public ::testing::TestWithParam<BrokenCase> {};

std::map<std::string, std::string> real_files() {
  std::map<std::string, std::string> files;
  for (const auto& name : matrix_files()) files[name] = read_file(matrix_data_dir() + "/" + name);
  return files;
}

TEST_P(MatrixLoader, NamesFileLineAndWhat) {
  const auto& c = GetParam();
  auto files = real_files();
  std::string text = read_file(test_data_dir() + "/csv/" + c.fixture);
  ASSERT_FALSE(text.empty()) << c.fixture;
  files[c.replaces] = text;
  if (!*c.error) {
    Matrix m = parse_matrix(files, "fixture");
    ASSERT_EQ(m.torch.size(), 1u);
    EXPECT_EQ(m.torch[0].meta.key, "2.11/cu130");
    EXPECT_EQ(m.torch[0].meta.line, c.line) << "comments, BOM and quoted newlines keep line numbers right";
    EXPECT_EQ(m.torch[0].meta.note.find('\r'), std::string::npos);
    EXPECT_NE(m.torch[0].meta.note.find(std::string(c.fixture).find("multi") != std::string::npos
                                            ? "\"quoted\""
                                            : "a note, with a comma"),
              std::string::npos)
        << m.torch[0].meta.note;
    return;
  }
  try {
    parse_matrix(files, "fixture");
    FAIL() << c.fixture << " loaded; expected an error matching " << c.error;
  } catch (const MatrixError& e) {
    EXPECT_TRUE(std::regex_search(e.what(), std::regex(c.error)))
        << "message: " << e.what() << "\nwanted: " << c.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Broken, MatrixLoader, ::testing::ValuesIn(kBroken), [](const auto& info) {
  std::string n = info.param.fixture;
  return n.substr(0, n.size() - 4);
});

TEST(MatrixLoaderDir, MissingDirectoryNamesTheFile) {
  try {
    load_matrix_dir("/nonexistent/matrix");
    FAIL();
  } catch (const MatrixError& e) {
    EXPECT_STREQ(e.what(),
                 "/nonexistent/matrix/torch.csv: cannot open for reading: No such file or directory");
  }
}

TEST(MatrixLoaderDir, UnknownFileIsRefused) {
  auto files = real_files();
  files["torch2.csv"] = files["torch.csv"];
  EXPECT_THROW(parse_matrix(files, "x"), MatrixError);
}

}  // namespace
}  // namespace cts
