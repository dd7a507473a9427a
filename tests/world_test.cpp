// The one World and its two bootstraps, on the CPU: a fake bootstrap stands for the processes
// (what it drives, how they agree) and drives no GPU, so what World does around the bootstrap
// (agreement before any NCCL call, the failure it reports, its description, the cache of worlds
// and the order they go) is checked without a GPU. Creation on GPUs runs in the collectives suites.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fixtures/nccl/nccl_util.hpp"
#include "fixtures/nccl/world.hpp"

namespace cts {
namespace {

// What the fake processes do: this process's members (or why it cannot take part), the answers of
// the others to each agreement, and a log of what World asked.
struct Script {
  std::string cannot;              // members() throws this when not empty
  std::vector<bool> others_agree;  // per all() call, in order (missing: they agree)
  std::vector<std::string> log;
  int made = 0;
};

class Fake : public Bootstrap {
 public:
  explicit Fake(Script& s) : s_(s) { ++s_.made; }
  std::vector<LocalRank> members(int size) override {
    s_.log.push_back("members " + std::to_string(size));
    if (!s_.cannot.empty()) throw std::runtime_error(s_.cannot);
    return {};  // this process drives none of the ranks
  }
  ncclUniqueId unique_id(const std::string&) override {
    s_.log.push_back("unique_id");
    return ncclUniqueId{};
  }
  void init_blocking(std::vector<LocalRank>&, int, Clock::time_point) override {
    s_.log.push_back("init_blocking");
  }
  long long sum(long long local) override { return local * 3; }  // three processes alike
  bool all(bool local) override {
    const std::size_t k = calls_++;
    const bool others = k < s_.others_agree.size() ? s_.others_agree[k] : true;
    s_.log.push_back(std::string("all ") + (local ? "1" : "0") + (others ? "1" : "0"));
    return local && others;
  }
  World& parent(int) override { throw std::logic_error("no split here"); }
  std::string describe(const WorldConfig& cfg, int nranks,
                       const std::vector<LocalRank>& ranks) const override {
    return "fake " + std::to_string(nranks) + " rank(s), " + std::to_string(ranks.size()) + " here" +
           (cfg.init_all ? " (blocking)" : "");
  }
  void destroying() override { s_.log.push_back("destroying"); }

 private:
  Script& s_;
  std::size_t calls_ = 0;
};

TEST(World, ForwardsAgreementAndDescribesItself) {
  Script s;
  WorldConfig cfg;
  cfg.size = 4;
  cfg.env["NCCL_PROTO"] = "LL";
  World w(cfg, std::make_unique<Fake>(s));
  EXPECT_EQ(w.nranks(), 4);
  EXPECT_TRUE(w.local().empty());
  EXPECT_EQ(w.reduce_verdict(2), 6);
  EXPECT_EQ(w.describe(), "fake 4 rank(s), 0 here NCCL_PROTO=LL");
  EXPECT_EQ(w.broken(), "");
  EXPECT_FALSE(w.blocking());
  EXPECT_EQ(s.log, (std::vector<std::string>{"members 4", "all 11", "unique_id", "all 11"}));
}

TEST(World, ABlockingWorldIsCreatedByItsBootstrap) {
  Script s;
  WorldConfig cfg;
  cfg.size = 2;
  cfg.init_all = true;
  World w(cfg, std::make_unique<Fake>(s));
  EXPECT_TRUE(w.blocking());
  EXPECT_EQ(s.log, (std::vector<std::string>{"members 2", "all 11", "init_blocking", "all 11"}));
}

// Every process agrees it can take part before any NCCL call: the one that cannot says why, the
// others that another one cannot; nobody asks for a ncclUniqueId.
TEST(World, NoNcclCallUnlessEveryProcessCanTakePart) {
  Script mine;
  mine.cannot = "rank 1 on b sees no GPU";
  try {
    World w(WorldConfig{2}, std::make_unique<Fake>(mine));
    ADD_FAILURE() << "created";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1 on b sees no GPU");
  }
  Script other;
  other.others_agree = {false};
  try {
    World w(WorldConfig{2}, std::make_unique<Fake>(other));
    ADD_FAILURE() << "created";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "another rank cannot take part");
  }
  for (const auto& l : other.log) EXPECT_NE(l, "unique_id");
}

// A world that formed on this process but not on another is not used: every process throws.
TEST(World, NobodyRunsOnAWorldThatDidNotFormEverywhere) {
  Script s;
  s.others_agree = {true, false};
  try {
    World w(WorldConfig{2}, std::make_unique<Fake>(s));
    ADD_FAILURE() << "created";
  } catch (const NcclError& e) {
    EXPECT_EQ(std::string(e.what()), "another rank could not create its communicator");
  }
}

TEST(WorldCache, CachesAFailureOnlyWhenAsked) {
  Script s;
  s.cannot = "no GPU";
  WorldCache cached([&] { return std::make_unique<Fake>(s); }, true);
  EXPECT_THROW(cached.get(WorldConfig{2}), std::runtime_error);
  try {
    cached.get(WorldConfig{2});
    ADD_FAILURE() << "created";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "no GPU (cached from the first attempt)");
  }
  EXPECT_EQ(s.made, 1) << "the second request waits for nothing";
  WorldCache uncached([&] { return std::make_unique<Fake>(s); }, false);
  EXPECT_THROW(uncached.get(WorldConfig{2}), std::runtime_error);
  EXPECT_THROW(uncached.get(WorldConfig{2}), std::runtime_error);
  EXPECT_EQ(s.made, 3);
}

TEST(WorldCache, OneWorldPerConfigAndAllGoOnRelease) {
  Script s;
  WorldCache cache([&] { return std::make_unique<Fake>(s); }, true);
  WorldConfig plain{2}, proto{2};
  proto.env["NCCL_PROTO"] = "Simple";
  World& a = cache.get(plain);
  EXPECT_EQ(&cache.get(plain), &a);
  EXPECT_NE(&cache.get(proto), &a);
  EXPECT_EQ(s.made, 2);
  s.log.clear();
  cache.release();
  EXPECT_EQ(s.log, (std::vector<std::string>{"destroying", "destroying"}));
}

}  // namespace
}  // namespace cts
