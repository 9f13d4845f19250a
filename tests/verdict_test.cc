// Verdict: one row per kind of answer — what is recorded, what the breaker, the metrics, the
// snooze and the 410 rule make of it. A fixed retry schedule and the jitter's middle point
// (0.5) make every retry delay exact; the wall clock is a fixed instant.
#include "verdict.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace bulkhead {
namespace {

using std::chrono::milliseconds;

// 5 s after attempt 1, 60 s after attempt 2 and later; jitter ±10 % (0.5 picks the middle).
const RetryPolicy kRetry({milliseconds(5000), milliseconds(60000)}, 0.1);
// 2000-01-01T00:00:00Z: the "now" an HTTP-date Retry-After is read against.
const std::chrono::system_clock::time_point kNow =
    std::chrono::sys_days(std::chrono::year_month_day(std::chrono::year(2000), std::chrono::January,
                                                      std::chrono::day(1)));
constexpr milliseconds kRetryAfterMax{3'600'000};  // 1 h

HttpOutcome Answer(int status, std::string retry_after = "") {
  HttpOutcome o;
  o.status = status;
  o.duration = std::chrono::microseconds(1500);
  if (status < 200 || status >= 300) o.error_text = "HTTP " + std::to_string(status);
  o.retry_after = std::move(retry_after);
  return o;
}

HttpOutcome Error(HttpError error, std::string text) {
  HttpOutcome o;
  o.error = error;
  o.error_text = std::move(text);
  o.duration = std::chrono::microseconds(1500);
  return o;
}

Verdict DecideFor(const HttpOutcome& outcome, AttemptFacts attempt = {}) {
  return Decide(outcome, attempt, {kRetry, kRetryAfterMax, 0.5, kNow});
}

struct Row {
  const char* name;
  HttpOutcome outcome;
  AttemptFacts attempt;
  // Expected:
  bool delivered;
  bool permanent;
  std::string error;
  int64_t retry_delay_ms;
  BreakerSignal breaker;
  DeliveryOutcome counted;
  bool snoozed;
  int64_t snooze_channel_ms;
  bool gone;
  bool probe_closes;
};

constexpr BreakerSignal kSuccess = BreakerSignal::kSuccess;
constexpr BreakerSignal kFailure = BreakerSignal::kFailure;
constexpr BreakerSignal kNeither = BreakerSignal::kNeither;
constexpr AttemptFacts kFirst{1, false, false};
constexpr AttemptFacts kSecond{2, false, false};
constexpr AttemptFacts kLast{8, true, false};
constexpr AttemptFacts kProbe{3, false, true};

std::vector<Row> Rows() {
  using D = DeliveryOutcome;
  return {
      // name                     outcome                    attempt
      //   delivered permanent error  delay  breaker counted snoozed snooze gone probe_closes
      {"2xx", Answer(200), kFirst, true, false, "", 0, kSuccess, D::kDelivered, false, 0, false,
       false},
      {"204 on the last attempt", Answer(204), kLast, true, false, "", 0, kSuccess, D::kDelivered,
       false, 0, false, false},
      {"3xx", Answer(302), kFirst, false, false, "HTTP 302", 5000, kNeither, D::kFailed, false, 0,
       false, false},
      {"4xx", Answer(404), kSecond, false, false, "HTTP 404", 60000, kNeither, D::kFailed, false, 0,
       false, false},
      {"4xx on the last attempt", Answer(422), kLast, false, false, "HTTP 422", 60000, kNeither,
       D::kDiscarded, false, 0, false, false},
      {"410", Answer(410), kFirst, false, false, "HTTP 410", 5000, kNeither, D::kFailed, false, 0,
       true, false},
      // Parked with its channel, not discarded: counted failed even on the last attempt.
      {"410 on the last attempt", Answer(410), kLast, false, false, "HTTP 410", 60000, kNeither,
       D::kFailed, false, 0, true, false},
      {"410 with a Retry-After", Answer(410, "120"), kFirst, false, false, "HTTP 410", 5000,
       kNeither, D::kFailed, false, 0, true, false},
      {"429 without Retry-After", Answer(429), kFirst, false, false, "HTTP 429", 5000, kFailure,
       D::kFailed, false, 0, false, false},
      {"429 asking longer than the retry delay", Answer(429, "120"), kFirst, false, false,
       "HTTP 429", 120000, kFailure, D::kFailed, true, 120000, false, false},
      // The job waits its own (longer) delay; the channel's other jobs still wait the ask.
      {"429 asking shorter than the retry delay", Answer(429, "2"), kFirst, false, false,
       "HTTP 429", 5000, kFailure, D::kFailed, false, 2000, false, false},
      {"429 as an HTTP-date", Answer(429, "Sat, 01 Jan 2000 00:10:00 GMT"), kFirst, false, false,
       "HTTP 429", 600000, kFailure, D::kFailed, true, 600000, false, false},
      {"429 asking past retry_after_max", Answer(429, "86400"), kFirst, false, false, "HTTP 429",
       3600000, kFailure, D::kFailed, true, 3600000, false, false},
      {"429 with a garbage Retry-After", Answer(429, "soon"), kFirst, false, false, "HTTP 429",
       5000, kFailure, D::kFailed, false, 0, false, false},
      {"429 with a date in the past", Answer(429, "Fri, 31 Dec 1999 23:00:00 GMT"), kFirst, false,
       false, "HTTP 429", 5000, kFailure, D::kFailed, false, 0, false, false},
      // Discarded anyway: its own wait is moot, its channel's jobs still wait.
      {"429 with Retry-After on the last attempt", Answer(429, "120"), kLast, false, false,
       "HTTP 429", 60000, kFailure, D::kDiscarded, false, 120000, false, false},
      {"503 with Retry-After", Answer(503, "30"), kFirst, false, false, "HTTP 503", 30000, kFailure,
       D::kFailed, true, 30000, false, false},
      {"503 without Retry-After", Answer(503), kFirst, false, false, "HTTP 503", 5000, kFailure,
       D::kFailed, false, 0, false, false},
      {"5xx other than 503 ignores Retry-After", Answer(500, "120"), kFirst, false, false,
       "HTTP 500", 5000, kFailure, D::kFailed, false, 0, false, false},
      {"timeout", Error(HttpError::kTimeout, "Operation timed out"), kFirst, false, false,
       "timeout: Operation timed out", 5000, kFailure, D::kTimeout, false, 0, false, false},
      {"timeout on the last attempt", Error(HttpError::kTimeout, "Operation timed out"), kLast,
       false, false, "timeout: Operation timed out", 60000, kFailure, D::kDiscarded, false, 0,
       false, false},
      {"connect error", Error(HttpError::kConnect, "Couldn't connect to server"), kFirst, false,
       false, "connect: Couldn't connect to server", 5000, kFailure, D::kRefused, false, 0, false,
       false},
      {"dns", Error(HttpError::kDns, "Could not resolve host"), kFirst, false, false,
       "dns: Could not resolve host", 5000, kFailure, D::kFailed, false, 0, false, false},
      {"tls", Error(HttpError::kTls, "SSL certificate problem"), kFirst, false, false,
       "tls: SSL certificate problem", 5000, kFailure, D::kFailed, false, 0, false, false},
      {"protocol", Error(HttpError::kProtocol, "Connection reset"), kFirst, false, false,
       "protocol: Connection reset", 5000, kFailure, D::kFailed, false, 0, false, false},
      // The guard's text is recorded as it is; discarded at once, whatever attempts remain.
      {"blocked", Error(HttpError::kBlocked, "blocked: 10.0.0.5 is in a private range"), kFirst,
       false, true, "blocked: 10.0.0.5 is in a private range", 5000, kFailure, D::kDiscarded, false,
       0, false, false},
      {"other (our side)", Error(HttpError::kOther, "the channel's secret is not whsec_ + base64"),
       kFirst, false, false, "other: the channel's secret is not whsec_ + base64", 5000, kNeither,
       D::kFailed, false, 0, false, false},
      {"probe answered 2xx", Answer(200), kProbe, true, false, "", 0, kSuccess, D::kDelivered,
       false, 0, false, true},
      // The endpoint answered: it is up, the probe closes the breaker.
      {"probe answered 4xx", Answer(400), kProbe, false, false, "HTTP 400", 60000, kNeither,
       D::kFailed, false, 0, false, true},
      {"probe answered 503", Answer(503), kProbe, false, false, "HTTP 503", 60000, kFailure,
       D::kFailed, false, 0, false, false},
      {"probe timed out", Error(HttpError::kTimeout, "Operation timed out"), kProbe, false, false,
       "timeout: Operation timed out", 60000, kFailure, D::kTimeout, false, 0, false, false},
      {"probe blocked", Error(HttpError::kBlocked, "blocked: 127.0.0.1 is loopback"), kProbe, false,
       true, "blocked: 127.0.0.1 is loopback", 60000, kFailure, D::kDiscarded, false, 0, false,
       false},
  };
}

TEST(Verdict, EachKindOfAnswerGetsItsRow) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    const Verdict v = DecideFor(row.outcome, row.attempt);
    EXPECT_EQ(v.delivered, row.delivered);
    EXPECT_EQ(v.permanent, row.permanent);
    EXPECT_EQ(v.status, row.outcome.status);
    EXPECT_EQ(v.error, row.error);
    EXPECT_DOUBLE_EQ(v.duration_ms, 1.5);
    EXPECT_EQ(v.retry_delay_ms, row.retry_delay_ms);
    EXPECT_EQ(v.breaker, row.breaker);
    EXPECT_EQ(v.outcome, row.counted);
    EXPECT_EQ(v.snoozed, row.snoozed);
    EXPECT_EQ(v.snooze_channel.count(), row.snooze_channel_ms);
    EXPECT_EQ(v.gone, row.gone);
    EXPECT_EQ(v.probe_closes, row.probe_closes);
  }
}

TEST(Verdict, BreakerSignalAndOutcomeAreTheClassifiersOwn) {
  // Decide is the one caller of the classifiers on the delivery path: it agrees with them.
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    const Verdict v = DecideFor(row.outcome, row.attempt);
    EXPECT_EQ(v.breaker, ClassifyForBreaker(row.outcome));
    if (!v.gone) {
      EXPECT_EQ(v.outcome, ClassifyDelivery(row.outcome, row.attempt.last));
    }
  }
}

TEST(Verdict, RetryDelayFollowsTheJitterPoint) {
  const HttpOutcome timeout = Error(HttpError::kTimeout, "Operation timed out");
  EXPECT_EQ(Decide(timeout, kFirst, {kRetry, kRetryAfterMax, 0.0, kNow}).retry_delay_ms, 4500);
  EXPECT_EQ(Decide(timeout, kFirst, {kRetry, kRetryAfterMax, 0.5, kNow}).retry_delay_ms, 5000);
  // A Retry-After shorter than the jittered delay leaves the delay alone.
  EXPECT_EQ(Decide(Answer(429, "5"), kFirst, {kRetry, kRetryAfterMax, 0.0, kNow}).retry_delay_ms,
            5000);
  EXPECT_EQ(Decide(Answer(429, "5"), kFirst, {kRetry, kRetryAfterMax, 0.99, kNow}).retry_delay_ms,
            kRetry.NextDelay(1, 0.99).count());
}

TEST(Verdict, RetryAfterMaxZeroIgnoresEveryAsk) {
  const Verdict v = Decide(Answer(429, "120"), kFirst, {kRetry, milliseconds(0), 0.5, kNow});
  EXPECT_FALSE(v.snoozed);
  EXPECT_EQ(v.snooze_channel.count(), 0);
  EXPECT_EQ(v.retry_delay_ms, 5000);
}

TEST(Verdict, CancelledCountsAsNeither) {
  const Verdict v = DecideFor(Error(HttpError::kCancelled, "sender stopped"));
  EXPECT_FALSE(v.delivered);
  EXPECT_EQ(v.breaker, BreakerSignal::kNeither);
  EXPECT_FALSE(v.gone);
}

// curl's error buffer can hold a peer's bytes; one text PostgreSQL refuses would fail the whole
// completion batch (completion_writer_test), so the recorded reason is always storable.
TEST(Verdict, TheRecordedReasonIsStorableWhateverCurlSaid) {
  const Verdict v =
      DecideFor(Error(HttpError::kTls, std::string("bad record \xff\xfe\0 from peer", 24)));
  EXPECT_EQ(v.error, "tls: bad record \uFFFD\uFFFD\uFFFD from peer");
  const Verdict blocked = DecideFor(Error(HttpError::kBlocked, "blocked: h\xc3"));
  EXPECT_EQ(blocked.error, "blocked: h\uFFFD");
}

}  // namespace
}  // namespace bulkhead
