// ParseRetryAfter: every form RFC 9110 allows, and the garbage an endpoint may send instead,
// against a fixed `now` (no clock).
#include "retry_after.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace bulkhead {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

// 1994-11-06 08:49:37 UTC, the RFC's own example date, as Unix seconds.
constexpr int64_t kRfcExample = 784111777;

system_clock::time_point At(int64_t unix_seconds) {
  return system_clock::time_point(seconds(unix_seconds));
}

// `now` one minute before the RFC's example date.
const system_clock::time_point kNow = At(kRfcExample - 60);

TEST(RetryAfter, ReadsDeltaSeconds) {
  EXPECT_EQ(ParseRetryAfter("120", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("0", kNow), seconds(0));
  EXPECT_EQ(ParseRetryAfter("007", kNow), seconds(7));
  EXPECT_EQ(ParseRetryAfter("  2\t", kNow), seconds(2));  // optional whitespace around it
}

TEST(RetryAfter, ReadsTheThreeHttpDateFormsAlike) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kNow), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", kNow), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:37 1994", kNow), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Sun Nov 16 08:49:37 1994", kNow), seconds(60 + 10 * 86400));
}

TEST(RetryAfter, DoesNotCheckTheWeekdayAgainstTheDate) {
  // 1994-11-06 was a Sunday; a sender that gets the name wrong still means the date.
  EXPECT_EQ(ParseRetryAfter("Mon, 06 Nov 1994 08:49:37 GMT", kNow), seconds(60));
}

TEST(RetryAfter, GivesZeroForADateInThePastOrNow) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:48:37 GMT", kNow), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Thu, 01 Jan 1970 00:00:00 GMT", kNow), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", At(kRfcExample)), seconds(0));
}

TEST(RetryAfter, IgnoresTheFractionOfASecondOfNow) {
  auto now = At(kRfcExample - 60) + std::chrono::milliseconds(999);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now), seconds(60));
}

TEST(RetryAfter, HandlesLeapYearsAndMonthEnds) {
  const auto now = At(951782400 - 1);  // 2000-02-29 00:00:00 UTC, minus one second
  EXPECT_EQ(ParseRetryAfter("Tue, 29 Feb 2000 00:00:00 GMT", now), seconds(1));
  EXPECT_EQ(ParseRetryAfter("Wed, 01 Mar 2000 00:00:00 GMT", now), seconds(1 + 86400));
  EXPECT_EQ(ParseRetryAfter("Thu, 29 Feb 2001 00:00:00 GMT", now), std::nullopt);  // no such day
  EXPECT_EQ(ParseRetryAfter("Mon, 29 Feb 2100 00:00:00 GMT", now), std::nullopt);  // not leap
  EXPECT_EQ(ParseRetryAfter("Mon, 31 Apr 2000 00:00:00 GMT", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Mon, 31 Dec 2000 00:00:00 GMT", now),
            seconds(1 + 306 * 86400));  // Feb 29 → Dec 31 is 306 days in 2000
}

TEST(RetryAfter, ReadsATwoDigitYearWithinFiftyYearsAhead) {
  // now: 2026-11-30 00:00:00 UTC.
  const int64_t now_s = 1795996800;
  const auto now = At(now_s);
  // "26" is 2026: one day ahead.
  EXPECT_EQ(ParseRetryAfter("Tuesday, 01-Dec-26 00:00:00 GMT", now), seconds(86400));
  // "76" is 2076 (50 years ahead, not more): absurdly far, so no delay.
  EXPECT_EQ(ParseRetryAfter("Tuesday, 01-Dec-76 00:00:00 GMT", now), std::nullopt);
  // "77" would be 51 years ahead, so it is 1977: in the past.
  EXPECT_EQ(ParseRetryAfter("Tuesday, 01-Dec-77 00:00:00 GMT", now), seconds(0));
}

TEST(RetryAfter, LeapSecondIsAccepted) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:48:60 GMT", kNow), seconds(23));
}

TEST(RetryAfter, RefusesGarbage) {
  for (const char* bad : {"",
                          " ",
                          "soon",
                          "-1",
                          "+5",
                          "1.5",
                          "1e3",
                          "0x10",
                          "12 s",
                          "5,",
                          "Sun, 06 Nov 1994 08:49:37 UTC",
                          "Sun, 06 Nov 1994 08:49:37",
                          "Sun, 6 Nov 1994 08:49:37 GMT",
                          "sun, 06 Nov 1994 08:49:37 GMT",
                          "Sun, 06 nov 1994 08:49:37 GMT",
                          "Sun, 06 Nov 94 08:49:37 GMT",
                          "Sun, 06 Nov 1994 24:00:00 GMT",
                          "Sun, 06 Nov 1994 08:60:00 GMT",
                          "Sun, 06 Nov 1994 08:49:61 GMT",
                          "Sun, 00 Nov 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 08:49:37 GMT trailing",
                          "Sun, 06 Nov 1994 8:49:37 GMT",
                          "Sunday, 06-Nov-1994 08:49:37 GMT",
                          "Sun Nov 6 08:49:37 1994",
                          "Sun Nov  6 08:49:37 94",
                          "Sun Nov  6 08:49:37 1994 GMT",
                          "Sun,",
                          "Sunday,",
                          "Sun",
                          ",,,,",
                          "Xyz, 06 Nov 1994 08:49:37 GMT"}) {
    EXPECT_EQ(ParseRetryAfter(bad, kNow), std::nullopt) << '"' << bad << '"';
  }
}

TEST(RetryAfter, RefusesANulInsideTheValue) {
  EXPECT_EQ(ParseRetryAfter(std::string_view("12\0", 3), kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter(std::string_view("\0", 1), kNow), std::nullopt);
}

TEST(RetryAfter, RefusesAbsurdlyLargeOrOverflowingValues) {
  EXPECT_EQ(ParseRetryAfter(std::to_string(kMaxRetryAfter.count()), kNow), kMaxRetryAfter);
  EXPECT_EQ(ParseRetryAfter(std::to_string(kMaxRetryAfter.count() + 1), kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1795996800", kNow), std::nullopt);  // a Unix timestamp as seconds
  EXPECT_EQ(ParseRetryAfter("99999999999999999999999999999999999999", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter(std::string(100000, '9'), kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", At(-kRfcExample)), std::nullopt);
  // The largest and smallest clocks cannot overflow the subtraction either.
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", system_clock::time_point::max()),
            seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", system_clock::time_point::min()),
            std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", system_clock::time_point::min()),
            std::nullopt);
}

TEST(RetryAfter, AcceptsYearZeroWithoutMisbehaving) {
  EXPECT_EQ(ParseRetryAfter("Sat, 01 Jan 0000 00:00:00 GMT", kNow), seconds(0));
}

}  // namespace
}  // namespace bulkhead
