// SleepHorizon: which transactions a sleeping runner watches, when it claims because one ended,
// and when it looks (migration 0027, ADR 0030). Pure arithmetic over snapshots, with a fake
// clock; what bulkhead.fell_asleep() and ClaimStore::RunningTransactions return is
// tests/schema/wake_test.cc's, and a node that claims through it NodeTest's.
#include "sleep_horizon.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using Clock = SleepHorizon::Clock;
using std::chrono::milliseconds;
const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);

TEST(SleepHorizonTest, WatchesTheListedAndTheUnlistedBelowTheNextIdAndClaimsWhenOneEnds) {
  SleepHorizon horizon;
  // 10 and 12 listed; 14 and 15 assigned after the last to end (xmax 14), so unlisted; the next
  // id 16. 20 cannot be running below 16 and is not watched.
  horizon.Start({.next_xid = 16, .now = {.xmin = 10, .xmax = 14, .running = {10, 12}}}, t0);
  ASSERT_TRUE(horizon.watching());
  EXPECT_EQ(horizon.next_look(), t0 + SleepHorizon::kFirstInterval);

  // Nothing ended: the same snapshot, later.
  EXPECT_FALSE(horizon.Look({.xmin = 10, .xmax = 14, .running = {10, 12}}, t0 + milliseconds(2)));
  // 12 ended (xmax unmoved).
  EXPECT_TRUE(horizon.Look({.xmin = 10, .xmax = 14, .running = {10}}, t0 + milliseconds(6)));
  // 15 ended: xmax passed 14 and 15, and only 14 is listed; 16 and on are not watched.
  EXPECT_TRUE(
      horizon.Look({.xmin = 10, .xmax = 18, .running = {10, 14, 16, 17}}, t0 + milliseconds(14)));
  EXPECT_TRUE(horizon.watching()) << "10 and 14 still run";
  // 16 and 17 ending is no news to this runner.
  EXPECT_FALSE(horizon.Look({.xmin = 10, .xmax = 18, .running = {10, 14}}, t0 + milliseconds(30)));
  // 10 and 14 end: the last of them, so it stops looking.
  EXPECT_TRUE(horizon.Look({.xmin = 18, .xmax = 18, .running = {}}, t0 + milliseconds(62)));
  EXPECT_FALSE(horizon.watching());
  EXPECT_EQ(horizon.next_look(), Clock::time_point::max());
}

TEST(SleepHorizonTest, AnUnlistedIdPassedByXmaxAndStillRunningIsWatchedAsListed) {
  SleepHorizon horizon;
  horizon.Start({.next_xid = 22, .now = {.xmin = 20, .xmax = 20, .running = {}}}, t0);
  // 21 ended, which moved xmax past 20 and 21: 20 is listed now, and runs.
  EXPECT_TRUE(horizon.Look({.xmin = 20, .xmax = 22, .running = {20}}, t0 + milliseconds(2)));
  EXPECT_FALSE(horizon.Look({.xmin = 20, .xmax = 25, .running = {20, 23}}, t0 + milliseconds(6)));
  EXPECT_TRUE(horizon.Look({.xmin = 23, .xmax = 25, .running = {23}}, t0 + milliseconds(14)));
  EXPECT_FALSE(horizon.watching());
}

TEST(SleepHorizonTest, LooksComeTwiceAsFarApartUpToTheLongestInterval) {
  SleepHorizon horizon;
  const RunningXids long_one{.xmin = 5, .xmax = 6, .running = {5}};
  horizon.Start({.next_xid = 6, .now = long_one}, t0);
  Clock::time_point now = t0;
  std::vector<milliseconds> gaps;
  for (int i = 0; i < 9; ++i) {
    const Clock::time_point look = horizon.next_look();
    gaps.push_back(std::chrono::duration_cast<milliseconds>(look - now));
    now = look;
    EXPECT_FALSE(horizon.Look(long_one, now)) << "a transaction still open is not news";
  }
  EXPECT_EQ(gaps,
            (std::vector<milliseconds>{milliseconds(2), milliseconds(4), milliseconds(8),
                                       milliseconds(16), milliseconds(32), milliseconds(64),
                                       milliseconds(100), milliseconds(100), milliseconds(100)}));
}

TEST(SleepHorizonTest, ANewStartReplacesWhatWasWatchedAndStopEndsIt) {
  SleepHorizon horizon;
  horizon.Start({.next_xid = 6, .now = {.xmin = 5, .xmax = 6, .running = {5}}}, t0);
  horizon.Look({.xmin = 5, .xmax = 6, .running = {5}}, t0 + milliseconds(2));
  horizon.Start({.next_xid = 40, .now = {.xmin = 39, .xmax = 40, .running = {39}}},
                t0 + milliseconds(5));
  EXPECT_EQ(horizon.next_look(), t0 + milliseconds(7)) << "the first interval again";
  EXPECT_FALSE(horizon.Look({.xmin = 39, .xmax = 40, .running = {39}}, t0 + milliseconds(7)))
      << "5 is no longer watched, so its absence is no news";
  horizon.Stop();
  EXPECT_FALSE(horizon.watching());
  EXPECT_EQ(horizon.next_look(), Clock::time_point::max());
}

}  // namespace
}  // namespace bulkhead
