// The channels' rate buckets (bulkhead.rate_buckets, ClaimStore::TakeTokens) against real
// PostgreSQL: a bucket starts full with one second's worth of tokens (at least one), grants no
// more than it holds, refills at the channel's rate, reads the limit afresh each time, and is
// shared by every session that takes from it, so the limit holds across nodes. Time is
// PostgreSQL's own: tests move a bucket's arrival time rather than wait for it.
#include <gtest/gtest.h>

#include <thread>

#include "claim_store.h"
#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::QueryValue;

class RateBucketsTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = CreateTenant(db(), "acme");
  }

  int64_t LimitedChannel(const std::string& rate) {
    int64_t channel = CreateChannel(db(), tenant_);
    Exec("UPDATE bulkhead.channels SET rate_limit_per_s = " + rate +
         " WHERE id = " + std::to_string(channel));
    return channel;
  }

  // The grant for `channel` among `grants`; fails the test when there is none.
  static TokenGrant GrantOf(const std::vector<TokenGrant>& grants, int64_t channel) {
    for (const auto& g : grants) {
      if (g.channel == channel) return g;
    }
    ADD_FAILURE() << "no grant for channel " << channel;
    return {};
  }

  // Moves `channel`'s bucket's arrival time `seconds` earlier, as that much time passing would.
  void Age(int64_t channel, double seconds) {
    Exec("UPDATE bulkhead.rate_buckets SET tat = tat - " + std::to_string(seconds) +
         " * interval '1 second' WHERE channel_id = " + std::to_string(channel));
  }

  int64_t tenant_ = 0;
};

TEST_F(RateBucketsTest, AFreshBucketGrantsOneSecondsWorthAndThenNothing) {
  int64_t channel = LimitedChannel("10");
  ClaimStore store(db());
  TokenGrant first = GrantOf(store.TakeTokens({{channel, 25}}), channel);
  EXPECT_EQ(first.granted, 10);
  EXPECT_DOUBLE_EQ(first.rate, 10);
  EXPECT_NEAR(first.tat_in_ms, 1000, 50);  // ten tokens at 10/s: one second ahead
  EXPECT_EQ(GrantOf(store.TakeTokens({{channel, 5}}), channel).granted, 0);
}

TEST_F(RateBucketsTest, RefillsAtTheChannelsRateAndNeverBeyondOneSecondsWorth) {
  int64_t channel = LimitedChannel("10");
  ClaimStore store(db());
  ASSERT_EQ(GrantOf(store.TakeTokens({{channel, 10}}), channel).granted, 10);
  Age(channel, 0.35);  // 3.5 tokens' time
  EXPECT_EQ(GrantOf(store.TakeTokens({{channel, 10}}), channel).granted, 3);
  Age(channel, 3600);  // an hour idle: full again, and no fuller
  EXPECT_EQ(GrantOf(store.TakeTokens({{channel, 100}}), channel).granted, 10);
}

TEST_F(RateBucketsTest, ALimitUnderOnePerSecondStillLetsOneRequestGo) {
  int64_t channel = LimitedChannel("0.5");
  ClaimStore store(db());
  TokenGrant first = GrantOf(store.TakeTokens({{channel, 3}}), channel);
  EXPECT_EQ(first.granted, 1);
  EXPECT_NEAR(first.tat_in_ms, 2000, 50);
  EXPECT_EQ(GrantOf(store.TakeTokens({{channel, 1}}), channel).granted, 0);
  Age(channel, 2);
  EXPECT_EQ(GrantOf(store.TakeTokens({{channel, 1}}), channel).granted, 1);
}

TEST_F(RateBucketsTest, AChangedLimitTakesEffectAtTheNextTakeAndARemovedOneGrantsEverything) {
  int64_t channel = LimitedChannel("2");
  ClaimStore store(db());
  ASSERT_EQ(GrantOf(store.TakeTokens({{channel, 10}}), channel).granted, 2);
  Exec("UPDATE bulkhead.channels SET rate_limit_per_s = 1000 WHERE id = " +
       std::to_string(channel));
  // The bucket's arrival time is a second ahead (two tokens at 2/s); at 1,000/s a bucket one
  // second ahead is empty, and one a millisecond ahead holds 999.
  Age(channel, 0.999);
  EXPECT_GE(GrantOf(store.TakeTokens({{channel, 500}}), channel).granted, 499);
  Exec("UPDATE bulkhead.channels SET rate_limit_per_s = NULL WHERE id = " +
       std::to_string(channel));
  TokenGrant unlimited = GrantOf(store.TakeTokens({{channel, 5000}}), channel);
  EXPECT_EQ(unlimited.granted, 5000);
  EXPECT_EQ(unlimited.rate, 0);
}

TEST_F(RateBucketsTest, ManyChannelsInOneTakeEachFromTheirOwnBucket) {
  int64_t slow = LimitedChannel("1");
  int64_t fast = LimitedChannel("100");
  int64_t unlimited = CreateChannel(db(), tenant_);
  ClaimStore store(db());
  std::vector<TokenGrant> grants = store.TakeTokens({{slow, 5}, {fast, 50}, {unlimited, 7}});
  EXPECT_EQ(GrantOf(grants, slow).granted, 1);
  EXPECT_EQ(GrantOf(grants, fast).granted, 50);
  EXPECT_EQ(GrantOf(grants, unlimited).granted, 7);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.rate_buckets"), 2);
}

TEST_F(RateBucketsTest, SessionsTakingAtOnceShareOneBucketAndNeverGrantMoreThanItHolds) {
  // Four sessions, as four nodes, each asking for the whole burst many times at once: the
  // grants add up to the burst plus what refilled meanwhile, never to four bursts.
  int64_t channel = LimitedChannel("50");
  std::atomic<int> granted{0};
  std::vector<std::thread> nodes;
  const auto started = std::chrono::steady_clock::now();
  for (int n = 0; n < 4; ++n) {
    nodes.emplace_back([&] {
      auto conn = Connect();
      ClaimStore store(*conn);
      for (int i = 0; i < 20; ++i) {
        for (const auto& g : store.TakeTokens({{channel, 50}})) granted += g.granted;
      }
    });
  }
  for (auto& t : nodes) t.join();
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // A lower bound that load cannot break: at least the burst, and never more than the burst
  // and what 50/s refilled during the whole run (plus one for the rounding at each end).
  EXPECT_GE(granted.load(), 50);
  EXPECT_LE(granted.load(), 50 + static_cast<int>(50 * elapsed_s) + 1);
}

}  // namespace
}  // namespace bulkhead
