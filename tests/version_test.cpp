// Version parsing and ordering over real strings the stack prints, and garbage that must fail.
#include <gtest/gtest.h>

#include "matrix/version.hpp"

namespace cts {
namespace {

struct ParseCase {
  const char* text;
  VersionKind kind;
  const char* release;  // expected release_str()
  const char* local;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.text; }

class VersionParse : public ::testing::TestWithParam<ParseCase> {};

TEST_P(VersionParse, ReleaseAndLocal) {
  const auto& c = GetParam();
  Version v = Version::parse(c.text, c.kind);
  EXPECT_EQ(v.release_str(), c.release) << c.text;
  EXPECT_EQ(v.local, c.local) << c.text;
  EXPECT_EQ(v.raw, c.text);
}

const ParseCase kParseCases[] = {
    {"2.1.0a0+git4c55dc5", VersionKind::Generic, "2.1.0", "git4c55dc5"},
    {"2.11.0+cu130", VersionKind::Generic, "2.11.0", "cu130"},
    {"12.4.1", VersionKind::Generic, "12.4.1", ""},
    {"2.19.3-1+cuda12.2", VersionKind::Generic, "2.19.3", "cuda12.2"},
    {"535.104.05", VersionKind::Generic, "535.104.5", ""},
    {"580.159.04", VersionKind::Generic, "580.159.4", ""},
    {"9.1.0.70", VersionKind::Generic, "9.1.0.70", ""},
    {"13000", VersionKind::Cuda, "13.0", ""},
    {"12040", VersionKind::Cuda, "12.4", ""},
    {"22809", VersionKind::Nccl, "2.28.9", ""},
    {"2804", VersionKind::Nccl, "2.8.4", ""},
    {"91900", VersionKind::Cudnn, "9.19.0", ""},
    {"8906", VersionKind::Cudnn, "8.9.6", ""},
    {"8591769609", VersionKind::TorchNccl, "2.28.9", ""},
    {"2.4.0a0+07cecf4168.nv24.5", VersionKind::Generic, "2.4.0", "07cecf4168.nv24.5"},
    {"2.13.0a0+9186a08", VersionKind::Generic, "2.13.0", "9186a08"},
    {"2.26.2.post1", VersionKind::Generic, "2.26.2", ""},
    {"2.6.0.dev20241112+cu126", VersionKind::Generic, "2.6.0", "cu126"},
    {"13.0.88", VersionKind::Generic, "13.0.88", ""},
    {"2.1.0rc3", VersionKind::Generic, "2.1.0", ""},
    {"9.0", VersionKind::Generic, "9.0", ""},
};

INSTANTIATE_TEST_SUITE_P(RealStrings, VersionParse, ::testing::ValuesIn(kParseCases),
                         [](const ::testing::TestParamInfo<ParseCase>& i) {
                           return "case" + std::to_string(i.index);
                         });

class VersionGarbage : public ::testing::TestWithParam<const char*> {};

TEST_P(VersionGarbage, Rejected) {
  std::string err;
  EXPECT_FALSE(Version::try_parse(GetParam(), VersionKind::Generic, &err).has_value())
      << "'" << GetParam() << "'";
  EXPECT_NE(err.find("invalid version"), std::string::npos) << err;
  EXPECT_THROW(Version::parse(GetParam()), VersionError);
}

const char* kGarbage[] = {"",       "latest", "v2",  "2.x",    "2.11.0 ", " 2.11",   "2..1",   "2.1.",
                          "+cu130", "2.1.0+", "abc", "1.2.3-", "2.1.0-x", "12.4 .1", "2.1.0#1"};
INSTANTIATE_TEST_SUITE_P(Strings, VersionGarbage, ::testing::ValuesIn(kGarbage),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return "case" + std::to_string(i.index);
                         });

TEST(VersionCodes, GarbageCodesAreErrorsNotZero) {
  EXPECT_THROW(Version::parse("12", VersionKind::Cuda), VersionError);
  EXPECT_THROW(Version::parse("7", VersionKind::Nccl), VersionError);
  EXPECT_THROW(Version::parse("5", VersionKind::TorchNccl), VersionError);
  EXPECT_THROW(Version::parse("99999999999999999999"), VersionError);
}

struct OrderCase {
  const char* lower;
  const char* higher;
};
void PrintTo(const OrderCase& c, std::ostream* os) { *os << c.lower << " < " << c.higher; }
class VersionOrder : public ::testing::TestWithParam<OrderCase> {};

TEST_P(VersionOrder, StrictlyLess) {
  Version a = Version::parse(GetParam().lower), b = Version::parse(GetParam().higher);
  EXPECT_LT(a, b) << a.str() << " < " << b.str();
  EXPECT_GT(b, a);
  EXPECT_NE(a, b);
}

const OrderCase kOrder[] = {
    {"12.4", "12.10"},                                             // numeric, never lexical
    {"2.9.0", "2.10.0"},         {"2.1.0a0+git4c55dc5", "2.1.0"},  // pre-release below its final
    {"2.1.0rc3", "2.1.0"},       {"2.1.0a0", "2.1.0b1"},
    {"2.1.0", "2.1.0+cu121"},  // a local version sorts above its base
    {"2.26.2", "2.26.2.post1"},  {"2.6.0.dev20241112", "2.6.0a0"},
    {"535.104.05", "580.65.06"}, {"2.19.3-1", "2.19.3-2"},
    {"9.1.0.70", "9.10.2.21"},
};
INSTANTIATE_TEST_SUITE_P(Pairs, VersionOrder, ::testing::ValuesIn(kOrder),
                         [](const ::testing::TestParamInfo<OrderCase>& i) {
                           return "case" + std::to_string(i.index);
                         });

TEST(VersionCompare, ReleasePrecisionAndCodesAgree) {
  EXPECT_TRUE(Version::parse("12.4.1").same_release(Version::parse("12040", VersionKind::Cuda), 2));
  EXPECT_FALSE(Version::parse("12.4.1").same_release(Version::parse("12040", VersionKind::Cuda)));
  EXPECT_EQ(Version::parse("2.28.9").nccl_code(), 22809);
  EXPECT_EQ(Version::parse("2.8.4").nccl_code(), 2804);
  EXPECT_EQ(Version::parse("2.11.0+cu130").compare_release(Version::parse("2.11")), 0);
  EXPECT_EQ(Version::parse("13.0").release_str(), "13.0");
  EXPECT_EQ(Version::parse("2.19.3-1+cuda12.2").build_cuda()->release_str(), "12.2");
  EXPECT_EQ(Version::parse("2.19.3-1+cuda12.2").package_revision.value_or(-1), 1);
  EXPECT_EQ(Version::parse("2.11.0+cu130").torch_cuda_tag()->release_str(), "13.0");
  EXPECT_EQ(Version::parse("2.0.1+cu118").torch_cuda_tag()->release_str(), "11.8");
  EXPECT_FALSE(Version::parse("2.1.0a0+git4c55dc5").torch_cuda_tag().has_value());
  EXPECT_TRUE(Version::parse("2.1.0a0+git4c55dc5").is_prerelease());
}

}  // namespace
}  // namespace cts
