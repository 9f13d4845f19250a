// ReconnectBackoff: the jittered waits stay within their bounds, double to the cap, start over
// after Reset, and differ between threads (seeds).
#include "reconnect_backoff.h"

#include <gtest/gtest.h>

#include <set>

namespace bulkhead {
namespace {

using std::chrono::milliseconds;

TEST(ReconnectBackoff, EachWaitLiesBetweenHalfTheCeilingAndTheCeilingWhichDoublesToFiveSeconds) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    ReconnectBackoff backoff(seed);
    int64_t ceiling = 100;
    for (int i = 0; i < 10; ++i) {
      milliseconds wait = backoff.Next();
      EXPECT_GE(wait.count(), ceiling / 2) << "seed " << seed << ", try " << i;
      EXPECT_LE(wait.count(), ceiling) << "seed " << seed << ", try " << i;
      ceiling = std::min<int64_t>(ceiling * 2, 5000);
    }
  }
}

TEST(ReconnectBackoff, ResetStartsOverAtOneHundredMilliseconds) {
  ReconnectBackoff backoff(7);
  for (int i = 0; i < 8; ++i) backoff.Next();
  EXPECT_GE(backoff.Next().count(), 2500);
  backoff.Reset();
  EXPECT_LE(backoff.Next().count(), 100);
}

TEST(ReconnectBackoff, ThreadsWithDifferentSeedsDoNotWaitInStep) {
  std::set<int64_t> first_waits;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    ReconnectBackoff backoff(seed);
    backoff.Next();
    backoff.Next();
    first_waits.insert(backoff.Next().count());  // the third wait, in [200, 400] ms
  }
  EXPECT_GT(first_waits.size(), 10u);
}

}  // namespace
}  // namespace bulkhead
