// The suite binaries' one flag parser (fixtures/gtest/flags.hpp): both spellings, switches, the
// environment default, removal from argv, and bad values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/gtest/flags.hpp"
#include "fixtures/probe/scoped_env.hpp"

namespace cts {
namespace {

// A mutable argv over strings.
struct Argv {
  explicit Argv(std::vector<std::string> a) : args(std::move(a)) {
    for (auto& s : args) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(args.size());
  }
  std::vector<std::string> left() const { return std::vector<std::string>(ptrs.begin(), ptrs.begin() + argc); }
  std::vector<std::string> args;
  std::vector<char*> ptrs;
  int argc = 0;
};

TEST(Flags, BothSpellingsAreTakenOutOfArgv) {
  Argv a({"bin", "--iters=7", "--gtest_brief=1", "--reps", "3", "--graph", "rest"});
  EXPECT_EQ(take_flag(a.argc, a.ptrs.data(), "--iters"), "7");
  EXPECT_EQ(take_flag(a.argc, a.ptrs.data(), "--reps"), "3");
  EXPECT_TRUE(take_switch(a.argc, a.ptrs.data(), "--graph"));
  EXPECT_FALSE(take_switch(a.argc, a.ptrs.data(), "--graph"));
  EXPECT_EQ(take_flag(a.argc, a.ptrs.data(), "--sweep"), std::nullopt);
  EXPECT_EQ(a.left(), (std::vector<std::string>{"bin", "--gtest_brief=1", "rest"}));
  EXPECT_EQ(a.ptrs[a.argc], nullptr) << "argv stays null-terminated";
}

TEST(Flags, TheLastOneWinsAndAPrefixIsNotTheFlag) {
  Argv a({"bin", "--iters=1", "--iterations=9", "--iters", "2"});
  EXPECT_EQ(flag_value(a.argc, a.ptrs.data(), "--iters"), "2");
  EXPECT_EQ(a.argc, 5) << "flag_value leaves argv";
  EXPECT_EQ(take_flag(a.argc, a.ptrs.data(), "--iters"), "2");
  EXPECT_EQ(a.left(), (std::vector<std::string>{"bin", "--iterations=9"}));
}

TEST(Flags, SettingsFallBackToTheEnvironmentThenTheDefault) {
  ScopedEnv e("GPUCTS_FLAGS_TEST", "env");
  Argv a({"bin"});
  EXPECT_EQ(take_setting(a.argc, a.ptrs.data(), "--x", "GPUCTS_FLAGS_TEST", "dflt"), "env");
  Argv b({"bin", "--x=flag"});
  EXPECT_EQ(take_setting(b.argc, b.ptrs.data(), "--x", "GPUCTS_FLAGS_TEST", "dflt"), "flag");
  ScopedEnv empty("GPUCTS_FLAGS_TEST", "");
  EXPECT_EQ(take_setting(a.argc, a.ptrs.data(), "--x", "GPUCTS_FLAGS_TEST", "dflt"), "dflt");
}

TEST(Flags, BadValuesAreUsageErrors) {
  EXPECT_EQ(parse_int("--iters", "12", 1, 100), 12);
  for (const char* bad : {"0", "101", "", "1x", "x", "99999999999999999999"})
    EXPECT_THROW(parse_int("--iters", bad, 1, 100), FlagError) << bad;
  Argv a({"bin", "--iters"});
  EXPECT_THROW(take_flag(a.argc, a.ptrs.data(), "--iters"), FlagError) << "a value flag without its value";
}

TEST(Flags, WorldSize) {
  ScopedEnv unset("GPUCTS_WORLD_SIZE", nullptr);
  Argv none({"bin"});
  EXPECT_EQ(take_world_size(none.argc, none.ptrs.data()), 1);
  Argv all({"bin", "--world-size=all"});
  EXPECT_EQ(take_world_size(all.argc, all.ptrs.data()), 0);
  Argv four({"bin", "--world-size", "4"});
  EXPECT_EQ(take_world_size(four.argc, four.ptrs.data()), 4);
  EXPECT_EQ(four.argc, 1);
  ScopedEnv env("GPUCTS_WORLD_SIZE", "8");
  EXPECT_EQ(take_world_size(none.argc, none.ptrs.data()), 8);
  Argv bad({"bin", "--world-size=0"});
  EXPECT_THROW(take_world_size(bad.argc, bad.ptrs.data()), FlagError);
}

}  // namespace
}  // namespace cts
