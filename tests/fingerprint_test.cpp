// Fingerprint JSON: round trip, schema, bad input, and the live probe on this machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "matrix/fingerprint.hpp"

namespace cts {
namespace {

const char* kContractExample = R"({
  "schema": "gpucts.fingerprint/1",
  "host": "node-a",
  "rank": 0,
  "driver": { "version": "580.159.04", "cuda": "13.0" },
  "cuda_runtime": "13.0",
  "cuda_toolkit": "13.0.88",
  "nccl": { "header": "2.28.3", "runtime": "2.28.9", "library": "/opt/venv/lib/libnccl.so.2" },
  "cudnn": "9.19.0",
  "torch": { "version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9", "cudnn": "9.19.0",
             "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "cxx11_abi": true },
  "lightning": { "lightning": "2.6.6", "pytorch_lightning": "2.6.6" },
  "compiler": { "gcc": "13.3.0" },
  "gpus": [ { "index": 0, "name": "NVIDIA H200", "cc": "9.0", "memory_mib": 143771, "pci": "0000:00:06.0" } ],
  "interfaces": [ { "name": "eth0", "up": true, "addresses": ["10.0.0.2"] } ],
  "shm_bytes": 137438953472,
  "env": { "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": "/logs/n.%h.log" },
  "nccl_debug_file": { "folder": "/logs", "exists": true, "writable": false },
  "vendor_extra": {"kept": [1, 2]}
})";

TEST(FingerprintJson, ContractExampleParses) {
  Fingerprint fp = parse_fingerprint(kContractExample, "example");
  ASSERT_TRUE(fp.driver_version && fp.nccl_runtime && fp.torch && fp.gpus);
  EXPECT_EQ(fp.driver_version->str(), "580.159.4");
  EXPECT_EQ(fp.driver_cuda->release_str(), "13.0");
  EXPECT_EQ(fp.nccl_header->str(), "2.28.3");
  EXPECT_EQ(fp.nccl_runtime->str(), "2.28.9");
  EXPECT_EQ(fp.torch->version->local, "cu130");
  EXPECT_EQ(fp.torch->arch_list->size(), 6u);
  EXPECT_EQ(fp.gpus->at(0).cc->str(), "9.0");
  EXPECT_EQ(fp.shm_bytes.value_or(0), 137438953472LL);
  EXPECT_EQ(fp.env->at("NCCL_SOCKET_IFNAME"), "eth0");
  EXPECT_TRUE(fp.extra.contains("vendor_extra"));
}

TEST(FingerprintJson, RoundTripKeepsEveryFieldAndExtras) {
  Fingerprint a = parse_fingerprint(kContractExample, "example");
  nlohmann::json j = to_json(a);
  Fingerprint b = fingerprint_from_json(j, "round trip");
  EXPECT_EQ(to_json(b), j);
  EXPECT_EQ(j["driver"]["version"], "580.159.04");  // raw strings kept as the tools print them
  EXPECT_EQ(j["vendor_extra"]["kept"][1], 2);
  EXPECT_EQ(j, nlohmann::json::parse(kContractExample));
}

TEST(FingerprintJson, IntegerCodesAreAccepted) {
  auto fp = parse_fingerprint(R"({"schema":"gpucts.fingerprint/1","cuda_runtime":13000,
    "nccl":{"runtime":22809},"torch":{"nccl":8591769609},"cudnn":91900})",
                              "codes");
  EXPECT_EQ(fp.cuda_runtime->release_str(), "13.0");
  EXPECT_EQ(fp.nccl_runtime->str(), "2.28.9");
  EXPECT_EQ(fp.torch->nccl->str(), "2.28.9");
  EXPECT_EQ(fp.cudnn->str(), "9.19.0");
}

TEST(FingerprintJson, AbsentFieldsStayUnknown) {
  auto fp = parse_fingerprint(R"({"schema":"gpucts.fingerprint/1"})", "empty");
  EXPECT_FALSE(fp.driver_version || fp.cuda_runtime || fp.nccl_runtime || fp.torch || fp.gpus ||
               fp.shm_bytes);
}

struct BadInput {
  const char* name;
  const char* text;
  const char* expect;  // substring of the message
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }
class FingerprintBad : public ::testing::TestWithParam<BadInput> {};

TEST_P(FingerprintBad, ClearError) {
  try {
    parse_fingerprint(GetParam().text, "f.json");
    FAIL() << "accepted: " << GetParam().text;
  } catch (const FingerprintError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("f.json:", 0), 0u) << m;  // "f.json: field ..." or "f.json:2:10: malformed JSON: ..."
    EXPECT_NE(m.find(GetParam().expect), std::string::npos) << m;
  }
}

const BadInput kBad[] = {
    {"truncated", "{\"schema\": \"gpucts.fingerprint/1\",\n \"host\": ", "f.json:2:10: malformed JSON"},
    {"not_json", "hello", "malformed JSON"},
    {"no_schema", "{}", "missing 'schema'"},
    {"wrong_schema", R"({"schema":"gpucts.fingerprint/9"})", "unknown schema"},
    {"array", "[]", "JSON object"},
    {"bad_version", R"({"schema":"gpucts.fingerprint/1","cuda_runtime":"latest"})", "cuda_runtime"},
    {"bad_nccl", R"({"schema":"gpucts.fingerprint/1","nccl":{"runtime":"2.x"}})", "nccl.runtime"},
    {"bad_type", R"({"schema":"gpucts.fingerprint/1","gpus":{}})", "gpus"},
    {"bad_rank", R"({"schema":"gpucts.fingerprint/1","rank":-1})", "rank"},
    {"bad_env", R"({"schema":"gpucts.fingerprint/1","env":{"NCCL_DEBUG":3}})", "env.NCCL_DEBUG"},
};
INSTANTIATE_TEST_SUITE_P(Inputs, FingerprintBad, ::testing::ValuesIn(kBad),
                         [](const ::testing::TestParamInfo<BadInput>& i) {
                           return std::string(i.param.name);
                         });

TEST(FingerprintFile, MissingFileNamesThePath) {
  try {
    load_fingerprint_file("/nonexistent/fp.json");
    FAIL();
  } catch (const FingerprintError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/fp.json"), std::string::npos);
  }
}

// The live probe: on a machine without a GPU the GPU facts are absent, never zeros.
TEST(FingerprintProbe, LiveProbeIsValidAndHonestAboutGpus) {
  ProbeOptions o;
  o.python = false;
  Fingerprint fp = probe_fingerprint(o);
  nlohmann::json j = to_json(fp);
  EXPECT_EQ(j["schema"], kFingerprintSchema);
  EXPECT_NO_THROW(fingerprint_from_json(j, "probe"));
  ASSERT_TRUE(fp.host.has_value());
  EXPECT_TRUE(fp.env.has_value());
  if (visible_gpu_count() == 0) {
    EXPECT_FALSE(j.contains("gpus") && !j["gpus"].empty()) << j.dump();
    if (!fp.driver_cuda) {
      EXPECT_FALSE(j.contains("driver") && j["driver"].contains("cuda"));
    }
    RecordProperty("probe_gpus", "absent: " + no_gpu_reason());
  } else {
    ASSERT_TRUE(fp.gpus.has_value());
    for (const auto& g : *fp.gpus) {
      EXPECT_TRUE(g.cc && g.cc->major() > 0) << "GPU " << g.index;
      EXPECT_GT(g.memory_mib.value_or(0), 0);
    }
    EXPECT_TRUE(fp.driver_cuda.has_value());
  }
#if GPUCTS_HAVE_CUDA
  ASSERT_TRUE(fp.nccl_header && fp.nccl_runtime);  // libnccl loads without a driver
  EXPECT_GT(fp.nccl_runtime->major(), 1);
  ASSERT_TRUE(fp.nccl_library.has_value());
  EXPECT_NE(fp.nccl_library->find("libnccl"), std::string::npos) << *fp.nccl_library;
#endif
}

// The probe records what the lint judges: a lower-case nccl_* name (NCCL ignores it) and the
// folder of NCCL_DEBUG_FILE as found on this host, after NCCL's %h and %p.
TEST(FingerprintProbe, RecordsWrongCaseNamesAndTheDebugFileFolder) {
  const std::string dir = ::testing::TempDir() + "fp_debug_file_dir";
  std::filesystem::create_directories(dir);
  ::setenv("nccl_debug", "INFO", 1);
  ::setenv("NCCL_DEBUG_FILE", (dir + "/missing.%h/nccl.%p.log").c_str(), 1);
  ProbeOptions o;
  o.python = false;
  Fingerprint missing = probe_fingerprint(o);
  ::setenv("NCCL_DEBUG_FILE", (dir + "/nccl.%h.%p.log").c_str(), 1);
  Fingerprint present = probe_fingerprint(o);
  ::unsetenv("nccl_debug");
  ::unsetenv("NCCL_DEBUG_FILE");
  ASSERT_TRUE(missing.env && missing.env->count("nccl_debug"));
  ASSERT_TRUE(missing.nccl_debug_file && present.nccl_debug_file);
  EXPECT_FALSE(missing.nccl_debug_file->exists);
  EXPECT_EQ(missing.nccl_debug_file->folder.find("%"), std::string::npos) << missing.nccl_debug_file->folder;
  EXPECT_EQ(present.nccl_debug_file->folder, dir);
  EXPECT_TRUE(present.nccl_debug_file->exists && present.nccl_debug_file->writable);
  EXPECT_NO_THROW(fingerprint_from_json(to_json(missing), "probe"));
}

// Which mapped file is NCCL itself: the one table both Python packages are tested against too.
TEST(NcclLibraryName, TableOfFileNames) {
  const std::string table = test_data_file("nccl_library_names.csv");
  std::ifstream in(table);
  ASSERT_TRUE(in) << "cannot read " << table;
  std::string line;
  int rows = 0, nccl = 0;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      EXPECT_EQ(line, "path,is_nccl") << table;
      header = false;
      continue;
    }
    const auto comma = line.rfind(',');
    ASSERT_NE(comma, std::string::npos) << table << ": " << line;
    const std::string path = line.substr(0, comma), want = line.substr(comma + 1);
    ASSERT_TRUE(want == "yes" || want == "no") << table << ": " << line;
    EXPECT_EQ(is_nccl_library(path), want == "yes") << path;
    ++rows;
    nccl += want == "yes";
  }
  EXPECT_GT(nccl, 0) << table;
  EXPECT_GT(rows - nccl, 0) << table;
}

// The library the probe records is one the rule calls NCCL; every other mapped one too.
TEST(NcclLibraryName, MappedLibrariesFollowTheRule) {
  const std::vector<LoadedNccl> mapped = loaded_nccl_libraries();
  if (mapped.empty()) GTEST_SKIP() << "no libnccl is mapped into this process (built without CUDA)";
  for (const LoadedNccl& l : mapped) EXPECT_TRUE(is_nccl_library(l.path)) << l.path;
  ProbeOptions o;
  o.python = false;
  const Fingerprint fp = probe_fingerprint(o);
  ASSERT_TRUE(fp.nccl_library.has_value());
  EXPECT_TRUE(is_nccl_library(*fp.nccl_library)) << *fp.nccl_library;
}

}  // namespace
}  // namespace cts
