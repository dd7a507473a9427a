// CUDA_VISIBLE_DEVICES resolution (fixtures/probe/visible_devices.hpp) over a fake host of two GPUs whose
// UUIDs share a prefix and one MIG-enabled GPU; then the record through the rule
// cuda-visible-devices-odd, the expected count, and the live probe (which needs NVML, so a GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fixtures/gtest/require.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/scoped_env.hpp"
#include "fixtures/probe/visible_devices.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts {
namespace {

GpuInfo gpu(int index, const char* uuid, const char* pci) {
  GpuInfo g;
  g.index = index;
  g.uuid = uuid;
  g.pci = pci;
  return g;
}

// What NVML would list: two GPUs (prefix "GPU-d76" is ambiguous, "GPU-d76a" is not) and two MIG
// instances on GPU 1.
const std::vector<GpuInfo>& fake_host() {
  static const std::vector<GpuInfo> h = {
      gpu(0, "GPU-d76a1b2c-0000-1111-2222-333344445555", "0000:00:06.0"),
      gpu(1, "GPU-d76b9e00-6666-7777-8888-9999aaaabbbb", "0000:00:07.0"),
      gpu(1, "MIG-5f3e0c11-aaaa-bbbb-cccc-ddddeeeeffff", "0000:00:07.0"),
      gpu(1, "MIG-77aa0c11-aaaa-bbbb-cccc-ddddeeeeffff", "0000:00:07.0"),
  };
  return h;
}

struct CvdCase {
  const char* name;
  std::optional<std::string> spec;
  std::vector<int> indices;         // physical indices CUDA enumerates, in its order
  std::vector<std::string> kinds;   // problem kinds, in order
  std::vector<int> positions = {};  // their 1-based entries (checked when given)
  const char* message_has = "";
};

const CvdCase kCvd[] = {
    {"unset_all_gpus", std::nullopt, {0, 1}, {}},
    {"seven_zero_nothing",
     "7,0",
     {},
     {"invalid-entry"},
     {1},
     "no GPU 7 on this host (2 GPU(s)): CUDA stops the list there; entry 2 after it is ignored too"},
    {"zero_seven_one", "0,7", {0}, {"invalid-entry"}, {2}, "no GPU 7"},
    {"reordered", "1,0", {1, 0}, {}},
    {"duplicate_nothing", "0,0", {}, {"duplicate"}, {2}, "CUDA shows NO device"},
    {"duplicate_later", "0,1,0", {}, {"duplicate"}, {3}},
    {"uuid_prefix", "GPU-d76a", {0}, {}},
    {"uuid_prefix_ambiguous", "GPU-d76", {}, {"ambiguous-uuid"}, {1}, "prefix of 2 UUIDs"},
    {"uuid_bare_prefix", "GPU-", {}, {"ambiguous-uuid"}, {1}},
    {"uuid_unknown", "GPU-ffff", {}, {"unknown-uuid"}, {1}},
    {"uuid_then_index", "GPU-d76a,1", {0}, {"invalid-entry"}, {2}, "not a GPU-<uuid> like the first entry"},
    {"empty", "", {}, {"empty-list"}, {0}, "CUDA sees no device"},
    {"leading_space", " 0", {0}, {"spaces"}, {1}},
    {"space_after_comma", "0, 1", {0, 1}, {"spaces"}, {2}},
    {"index_then_uuid", "0,GPU-xyz", {0}, {"invalid-entry"}, {2}, "not a device index"},
    {"trailing_text", "1gpu", {1}, {"trailing-text"}, {1}, "read as 1"},
    {"negative_first", "-1,0", {}, {"invalid-entry"}, {1}, "entry 2 after it is ignored too"},
    {"empty_entry", "0,,1", {0}, {"invalid-entry"}, {2}, "entry 3 after it"},
    {"mig_uuid", "MIG-5f3e", {1}, {}},
    {"mig_two_instances", "MIG-5f3e,MIG-77aa", {1}, {"mig-multiple"}, {2}, "one MIG instance per process"},
    {"mig_legacy_form", "MIG-GPU-d76b9e00/1/0", {1}, {}},
    {"mig_unknown", "MIG-0000", {}, {"unknown-uuid"}, {1}, "no MIG instance"},
};

void PrintTo(const CvdCase& c, std::ostream* os) { *os << c.name; }

class CudaVisibleDevices : public ::testing::TestWithParam<CvdCase> {};

TEST_P(CudaVisibleDevices, ResolvesAsCuda) {
  const CvdCase& c = GetParam();
  const VisibleDevices vd = resolve_visible_devices(c.spec, fake_host());
  std::vector<int> got;
  for (const auto& d : vd.resolved) got.push_back(d.index);
  EXPECT_EQ(got, c.indices) << "CUDA_VISIBLE_DEVICES=" << c.spec.value_or("<unset>");
  std::vector<std::string> kinds;
  std::vector<int> positions;
  std::string all;
  for (const auto& p : vd.problems) {
    kinds.push_back(p.kind);
    positions.push_back(p.position);
    all += "\n  " + p.kind + " @" + std::to_string(p.position) + ": " + p.message;
  }
  EXPECT_EQ(kinds, c.kinds) << all;
  if (!c.positions.empty()) {
    EXPECT_EQ(positions, c.positions) << all;
  }
  if (*c.message_has) {
    EXPECT_NE(all.find(c.message_has), std::string::npos) << all;
  }
  EXPECT_EQ(vd.physical, 2) << "MIG instances are not GPUs of their own";
  for (const auto& d : vd.resolved) {
    EXPECT_FALSE(d.uuid.empty());
    EXPECT_FALSE(d.pci.empty()) << "each resolved device carries its PCI id";
  }
}

INSTANTIATE_TEST_SUITE_P(Spec, CudaVisibleDevices, ::testing::ValuesIn(kCvd),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CudaVisibleDevicesRecord, JsonCarriesIndexUuidPciAndProblems) {
  const VisibleDevices vd = resolve_visible_devices(std::string("1,7"), fake_host());
  const nlohmann::json j = vd.to_json();
  EXPECT_EQ(j["spec"], "1,7");
  ASSERT_EQ(j["resolved"].size(), 1u);
  EXPECT_EQ(j["resolved"][0]["index"], 1);
  EXPECT_EQ(j["resolved"][0]["uuid"], "GPU-d76b9e00-6666-7777-8888-9999aaaabbbb");
  EXPECT_EQ(j["resolved"][0]["pci"], "0000:00:07.0");
  ASSERT_EQ(j["problems"].size(), 1u);
  EXPECT_EQ(j["problems"][0]["kind"], "invalid-entry");
  EXPECT_EQ(j["problems"][0]["position"], 2);
  EXPECT_TRUE(resolve_visible_devices(std::nullopt, fake_host()).to_json()["spec"].is_null());
}

// The record, stored in a fingerprint, raises the finding through `gpucts check`'s rules.
Fingerprint with_record(const VisibleDevices& vd) {
  Fingerprint fp;
  fp.host = "node-a";
  fp.extra["visible_devices"] = vd.to_json();
  return fingerprint_from_json(to_json(fp), "synthetic");  // as a file would bring it back
}

const Finding* finding(const CheckResult& r) {
  for (const auto& f : r.findings)
    if (f.id == "cuda-visible-devices-odd") return &f;
  return nullptr;
}

TEST(CudaVisibleDevicesRule, FewerThanExpectedIsAnError) {
  VisibleDevices vd = resolve_visible_devices(std::string("0,7"), fake_host());
  vd.expected = 2;
  vd.expected_from = "GPUCTS_EXPECT_GPUS";
  const CheckResult r = check_fingerprints(builtin_matrix(), {with_record(vd)});
  const Finding* f = finding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->message.find("CUDA_VISIBLE_DEVICES='0,7' resolves to 1 GPU(s), fewer than the 2 expected"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("0000:00:06.0"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("no GPU 7"), std::string::npos) << f->message;
  EXPECT_TRUE(r.failed());
}

TEST(CudaVisibleDevicesRule, OddButEnoughIsAWarning) {
  VisibleDevices vd = resolve_visible_devices(std::string(" 1"), fake_host());
  vd.expected = 1;
  vd.expected_from = "GPUCTS_EXPECT_GPUS";
  const CheckResult r = check_fingerprints(builtin_matrix(), {with_record(vd)});  // f points into r
  const Finding* f = finding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->message.find("blanks"), std::string::npos) << f->message;
}

TEST(CudaVisibleDevicesRule, PlainListRaisesNothing) {
  VisibleDevices vd = resolve_visible_devices(std::string("1,0"), fake_host());
  vd.expected = 2;
  const CheckResult r = check_fingerprints(builtin_matrix(), {with_record(vd)});
  EXPECT_EQ(finding(r), nullptr) << finding(r)->message;
}

TEST(CudaVisibleDevicesExpected, ExplicitCountWins) {
  ScopedEnv a("GPUCTS_EXPECT_GPUS", "4"), b("LOCAL_WORLD_SIZE", "2");
  VisibleDevices vd;
  apply_expected_gpus(vd);
  ASSERT_TRUE(vd.expected.has_value());
  EXPECT_EQ(*vd.expected, 4);
  EXPECT_EQ(vd.expected_from, "GPUCTS_EXPECT_GPUS");
  EXPECT_FALSE(vd.one_per_rank_ok);
}

TEST(CudaVisibleDevicesExpected, LauncherLocalSize) {
  ScopedEnv a("GPUCTS_EXPECT_GPUS", nullptr), o("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr),
      m("MPI_LOCALNRANKS", nullptr), b("LOCAL_WORLD_SIZE", "8");
  VisibleDevices vd;
  apply_expected_gpus(vd);
  ASSERT_TRUE(vd.expected.has_value());
  EXPECT_EQ(*vd.expected, 8);
  EXPECT_TRUE(vd.one_per_rank_ok);
  EXPECT_NE(vd.expected_from.find("LOCAL_WORLD_SIZE"), std::string::npos);
}

TEST(CudaVisibleDevicesExpected, GarbageCountIsAProblemNotAGuess) {
  ScopedEnv a("GPUCTS_EXPECT_GPUS", "2x");
  VisibleDevices vd;
  apply_expected_gpus(vd);
  EXPECT_FALSE(vd.expected.has_value());
  EXPECT_TRUE(vd.has("expect-invalid"));
}

// NVML ignores CUDA_VISIBLE_DEVICES: on a GPU host the probe's record resolves this process's list
// to what CUDA enumerated (CTest's entry runs with CUDA_VISIBLE_DEVICES from its resource group).
TEST(CudaVisibleDevicesLive, ProbeRecordAgreesWithCuda) {
  CTS_REQUIRE_GPUS(1);
  ASSERT_TRUE(nvml_physical_gpus().has_value())
      << "a GPU is visible but NVML (libnvidia-ml.so.1) did not answer";
  ProbeOptions o;
  o.python = false;
  o.toolkit = false;
  const Fingerprint fp = probe_fingerprint(o);
  ASSERT_TRUE(fp.extra.contains("visible_devices")) << to_json(fp).dump();
  const auto& vd = fp.extra["visible_devices"];
  EXPECT_EQ(vd["cuda_count"], visible_gpu_count()) << vd.dump();
  for (const auto& p : vd["problems"]) EXPECT_NE(p["kind"], "cuda-disagrees") << vd.dump();
  ASSERT_EQ(vd["resolved"].size(), static_cast<size_t>(visible_gpu_count())) << vd.dump();
  for (size_t i = 0; i < vd["resolved"].size(); ++i)
    EXPECT_EQ(vd["resolved"][i]["uuid"], fp.gpus->at(i).uuid.value_or("")) << vd.dump();
}

TEST(CudaVisibleDevicesLive, WithoutNvmlTheFieldIsUnknown) {
  if (nvml_physical_gpus()) GTEST_SKIP() << "NVML is present on this host (the GPU case above covers it)";
  ProbeOptions o;
  o.python = false;
  o.toolkit = false;
  const Fingerprint fp = probe_fingerprint(o);
  EXPECT_FALSE(fp.extra.contains("visible_devices")) << "no NVML: unknown, never an empty resolution";
}

}  // namespace
}  // namespace cts
