// RetryPolicy: the schedule, its repetition past the end, and the jitter band, stepped with
// fixed "random" points instead of a generator.
#include "retry_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace bulkhead {
namespace {

using std::chrono::milliseconds;

// Just below 1: the largest value a draw from [0, 1) can take.
const double kAlmostOne = std::nextafter(1.0, 0.0);

TEST(RetryPolicy, FollowsTheScheduleOneDelayPerFailedAttempt) {
  RetryPolicy policy({milliseconds(100), milliseconds(2000), milliseconds(30000)}, 0.0);
  EXPECT_EQ(policy.NextDelay(1, 0.5), milliseconds(100));
  EXPECT_EQ(policy.NextDelay(2, 0.5), milliseconds(2000));
  EXPECT_EQ(policy.NextDelay(3, 0.5), milliseconds(30000));
}

TEST(RetryPolicy, RepeatsTheLastDelayPastTheEndOfTheSchedule) {
  RetryPolicy policy({milliseconds(100), milliseconds(2000)}, 0.0);
  EXPECT_EQ(policy.NextDelay(3, 0.5), milliseconds(2000));
  EXPECT_EQ(policy.NextDelay(50, 0.5), milliseconds(2000));
  EXPECT_EQ(policy.NextDelay(std::numeric_limits<int>::max(), 0.5), milliseconds(2000));
}

TEST(RetryPolicy, CountsAnAttemptBelowOneAsTheFirst) {
  RetryPolicy policy({milliseconds(100), milliseconds(2000)}, 0.0);
  EXPECT_EQ(policy.NextDelay(0, 0.5), milliseconds(100));
  EXPECT_EQ(policy.NextDelay(-3, 0.5), milliseconds(100));
}

TEST(RetryPolicy, WithoutJitterIgnoresTheRandomPoint) {
  RetryPolicy policy({milliseconds(5000)}, 0.0);
  for (double u : {0.0, 0.25, 0.5, 0.75, kAlmostOne}) {
    EXPECT_EQ(policy.NextDelay(1, u), milliseconds(5000)) << "u = " << u;
  }
}

TEST(RetryPolicy, JitterStartsTheBandAtTheLowerBoundForZero) {
  RetryPolicy policy({milliseconds(5000), milliseconds(7'200'000)}, 0.1);
  EXPECT_EQ(policy.NextDelay(1, 0.0), milliseconds(4500));
  EXPECT_EQ(policy.NextDelay(2, 0.0), milliseconds(6'480'000));
}

TEST(RetryPolicy, JitterEndsTheBandAtTheUpperBoundTowardsOne) {
  RetryPolicy policy({milliseconds(5000), milliseconds(7'200'000)}, 0.1);
  EXPECT_EQ(policy.NextDelay(1, kAlmostOne), milliseconds(5500));
  EXPECT_EQ(policy.NextDelay(2, kAlmostOne), milliseconds(7'920'000));
}

TEST(RetryPolicy, JitterIsCentredOnTheScheduledDelay) {
  RetryPolicy policy({milliseconds(5000)}, 0.1);
  EXPECT_EQ(policy.NextDelay(1, 0.5), milliseconds(5000));
  EXPECT_EQ(policy.NextDelay(1, 0.25), milliseconds(4750));
  EXPECT_EQ(policy.NextDelay(1, 0.75), milliseconds(5250));
}

TEST(RetryPolicy, JitterStaysWithinItsBandAndGrowsWithTheRandomPoint) {
  RetryPolicy policy({milliseconds(1000)}, 0.3);
  milliseconds previous(0);
  for (int step = 0; step <= 1000; ++step) {
    double u = std::min(step / 1000.0, kAlmostOne);
    milliseconds delay = policy.NextDelay(1, u);
    EXPECT_GE(delay, milliseconds(700)) << "u = " << u;
    EXPECT_LE(delay, milliseconds(1300)) << "u = " << u;
    EXPECT_GE(delay, previous) << "u = " << u;
    previous = delay;
  }
  EXPECT_EQ(previous, milliseconds(1300));
}

TEST(RetryPolicy, ClampsARandomPointOutsideTheUnitInterval) {
  RetryPolicy policy({milliseconds(5000)}, 0.1);
  EXPECT_EQ(policy.NextDelay(1, -1.0), milliseconds(4500));
  EXPECT_EQ(policy.NextDelay(1, 1.0), milliseconds(5500));
  EXPECT_EQ(policy.NextDelay(1, 7.0), milliseconds(5500));
  EXPECT_EQ(policy.NextDelay(1, std::nan("")), milliseconds(4500));
}

TEST(RetryPolicy, NeverWaitsLessThanOneMillisecond) {
  RetryPolicy policy({milliseconds(1)}, 1.0);
  EXPECT_EQ(policy.NextDelay(1, 0.0), milliseconds(1));
  EXPECT_EQ(policy.NextDelay(1, kAlmostOne), milliseconds(2));
}

TEST(RetryPolicy, DefaultScheduleIsFiveSecondsToTenHoursOverEightAttempts) {
  using std::chrono::hours;
  using std::chrono::minutes;
  using std::chrono::seconds;
  const std::vector<milliseconds> expected = {seconds(5), minutes(5), minutes(30), hours(2),
                                              hours(5),   hours(10),  hours(10)};
  RetryPolicy policy({kDefaultRetryDelays.begin(), kDefaultRetryDelays.end()}, kDefaultRetryJitter);
  EXPECT_EQ(policy.delays(), expected);
  EXPECT_EQ(policy.jitter(), 0.1);
  // 7 waits between the 8 attempts of bulkhead.jobs.max_attempts' default.
  EXPECT_EQ(kDefaultRetryDelays.size() + 1, 8u);
  milliseconds total(0);
  for (int attempt = 1; attempt <= 7; ++attempt) total += policy.NextDelay(attempt, 0.5);
  EXPECT_EQ(total, seconds(99'305));  // ≈ 27.6 h from the first failure to the last attempt
}

TEST(RetryPolicy, RefusesAnEmptyScheduleANonPositiveDelayAndJitterOutsideTheUnitInterval) {
  EXPECT_THROW(RetryPolicy({}, 0.1), std::invalid_argument);
  EXPECT_THROW(RetryPolicy({milliseconds(5), milliseconds(0)}, 0.1), std::invalid_argument);
  EXPECT_THROW(RetryPolicy({milliseconds(-5)}, 0.1), std::invalid_argument);
  EXPECT_THROW(RetryPolicy({milliseconds(5)}, -0.01), std::invalid_argument);
  EXPECT_THROW(RetryPolicy({milliseconds(5)}, 1.01), std::invalid_argument);
  EXPECT_THROW(RetryPolicy({milliseconds(5)}, std::nan("")), std::invalid_argument);
  EXPECT_NO_THROW(RetryPolicy({milliseconds(5)}, 1.0));
}

}  // namespace
}  // namespace bulkhead
