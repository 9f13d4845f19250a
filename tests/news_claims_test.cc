// NewsClaims: whether a wake-up's claim lends nothing (pure logic, time passed in; the runner's
// side of it is QueueRunnerTest.AWakeUpsClaimLendsNothingAndTheClaimRightAfterItLends and
// AfterThreeWakeUpClaimsThatTookNothingAWakeUpLendsAtOnce).
#include "news_claims.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using Clock = NewsClaims::Clock;

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1);

TEST(NewsClaimsTest, AWakeUpsClaimLendsNothingWhileSuchClaimsTakeSomething) {
  NewsClaims news(milliseconds(1000));
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(news.WithoutLending(kStart + milliseconds(i)));
    news.Took(1, kStart + milliseconds(i));
  }
}

TEST(NewsClaimsTest, AfterThreeThatTookNothingWakeUpsLendUntilAQuietIntervalHasPassed) {
  NewsClaims news(milliseconds(1000));
  for (int i = 0; i < NewsClaims::kMisses; ++i) {
    ASSERT_TRUE(news.WithoutLending(kStart + milliseconds(i))) << i;
    news.Took(0, kStart + milliseconds(i));
  }
  const auto last_miss = kStart + milliseconds(NewsClaims::kMisses - 1);
  EXPECT_FALSE(news.WithoutLending(last_miss + milliseconds(1)));
  EXPECT_FALSE(news.WithoutLending(last_miss + milliseconds(999)));
  EXPECT_TRUE(news.WithoutLending(last_miss + milliseconds(1000)));  // tried again
  news.Took(0, last_miss + milliseconds(1000));
  // The misses started over: two more before it stops again.
  EXPECT_TRUE(news.WithoutLending(last_miss + milliseconds(1001)));
}

TEST(NewsClaimsTest, AClaimThatTakesSomethingClearsTheMisses) {
  NewsClaims news(milliseconds(1000));
  news.Took(0, kStart);
  news.Took(0, kStart);
  news.Took(1, kStart);  // a neighbour's job
  news.Took(0, kStart);
  news.Took(0, kStart);
  EXPECT_TRUE(news.WithoutLending(kStart));
  news.Took(0, kStart);
  EXPECT_FALSE(news.WithoutLending(kStart));
}

}  // namespace
}  // namespace bulkhead
