// BreakerBoard: what counts toward opening a breaker, with a fake clock.
#include "breaker_board.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using namespace std::chrono_literals;
using Clock = BreakerBoard::Clock;

constexpr int64_t kChannel = 7;

HttpOutcome Answer(int status) {
  HttpOutcome outcome;
  outcome.status = status;
  return outcome;
}

HttpOutcome Error(HttpError error) {
  HttpOutcome outcome;
  outcome.error = error;
  return outcome;
}

TEST(ClassifyForBreaker, TimeoutsConnectionErrors5xxAnd429AreFailures) {
  for (HttpError e : {HttpError::kTimeout, HttpError::kConnect, HttpError::kDns, HttpError::kTls,
                      HttpError::kProtocol, HttpError::kBlocked}) {
    EXPECT_EQ(ClassifyForBreaker(Error(e)), BreakerSignal::kFailure) << HttpErrorName(e);
  }
  for (int status : {500, 502, 503, 504, 599, 429}) {
    EXPECT_EQ(ClassifyForBreaker(Answer(status)), BreakerSignal::kFailure) << status;
  }
}

TEST(ClassifyForBreaker, TwoHundredsAreSuccessesOtherAnswersAreNeither) {
  for (int status : {200, 201, 204, 299}) {
    EXPECT_EQ(ClassifyForBreaker(Answer(status)), BreakerSignal::kSuccess) << status;
  }
  for (int status : {301, 302, 400, 401, 404, 410, 413, 422}) {
    EXPECT_EQ(ClassifyForBreaker(Answer(status)), BreakerSignal::kNeither) << status;
  }
  EXPECT_EQ(ClassifyForBreaker(Error(HttpError::kCancelled)), BreakerSignal::kNeither);
  EXPECT_EQ(ClassifyForBreaker(Error(HttpError::kOther)), BreakerSignal::kNeither);
}

class BreakerBoardTest : public ::testing::Test {
 protected:
  // Sends job `job` at the current fake time.
  void Send(int64_t job, int64_t channel = kChannel) { board_.Started(channel, job, now_); }
  std::optional<BreakerBoard::Trip> End(int64_t job, BreakerSignal signal,
                                        int64_t channel = kChannel) {
    return board_.Finished(channel, job, signal, "timeout: no answer", now_);
  }
  std::optional<BreakerBoard::Trip> Fail(int64_t job) {
    Send(job);
    return End(job, BreakerSignal::kFailure);
  }

  BreakerBoard board_{{5, 2000ms, 5}};
  Clock::time_point now_ = Clock::time_point{} + 1000h;
};

TEST_F(BreakerBoardTest, TripsOnceAtTheThresholdOfFailuresInARow) {
  for (int64_t job = 1; job <= 4; ++job) EXPECT_FALSE(Fail(job)) << job;
  auto trip = Fail(5);
  ASSERT_TRUE(trip);
  EXPECT_EQ(trip->channel, kChannel);
  EXPECT_EQ(trip->reason, "5 failures in a row (last: timeout: no answer)");
  EXPECT_TRUE(board_.KnownOpen(kChannel));
  // Open: nothing more counts, and nothing trips again.
  for (int64_t job = 6; job <= 20; ++job) EXPECT_FALSE(Fail(job)) << job;
}

TEST_F(BreakerBoardTest, ASuccessResetsTheCountAndNeitherDoesNothing) {
  for (int64_t job = 1; job <= 4; ++job) EXPECT_FALSE(Fail(job));
  Send(5);
  EXPECT_FALSE(End(5, BreakerSignal::kSuccess));
  for (int64_t job = 6; job <= 9; ++job) EXPECT_FALSE(Fail(job));
  // A 404 between failures neither counts nor resets.
  Send(10);
  EXPECT_FALSE(End(10, BreakerSignal::kNeither));
  EXPECT_TRUE(Fail(11));
}

TEST_F(BreakerBoardTest, ChannelsCountApart) {
  for (int64_t job = 1; job <= 4; ++job) EXPECT_FALSE(Fail(job));
  Send(100, 8);
  EXPECT_FALSE(End(100, BreakerSignal::kFailure, 8));
  EXPECT_FALSE(board_.KnownOpen(8));
  EXPECT_TRUE(Fail(5));
  EXPECT_FALSE(board_.KnownOpen(8));
}

TEST_F(BreakerBoardTest, SlowCallsInFlightTripBeforeAnyAttemptEnds) {
  for (int64_t job = 1; job <= 5; ++job) Send(job);
  now_ += 1999ms;
  EXPECT_TRUE(board_.CheckSlow(now_).empty());
  now_ += 1ms;
  auto trips = board_.CheckSlow(now_);
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_EQ(trips[0].channel, kChannel);
  EXPECT_EQ(trips[0].reason, "5 attempts in flight longer than slow_call_ms (2000 ms)");
  EXPECT_TRUE(board_.CheckSlow(now_ + 10s).empty());  // once
}

TEST_F(BreakerBoardTest, AChannelCappedBelowTheThresholdTripsWhenAllItMayRunIsSlow) {
  board_.SetSettings({5, 2000ms, 2});  // a channel cap of 2 (the bulk tier)
  Send(1);
  Send(2);
  now_ += 2s;
  auto trips = board_.CheckSlow(now_);
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_EQ(trips[0].reason, "2 attempts in flight longer than slow_call_ms (2000 ms)");
}

TEST_F(BreakerBoardTest, SlowCallsAddToFailures) {
  for (int64_t job = 1; job <= 3; ++job) EXPECT_FALSE(Fail(job));
  Send(4);
  Send(5);
  now_ += 1s;
  Send(6);  // not slow yet
  now_ += 1s;
  auto trips = board_.CheckSlow(now_);
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_EQ(trips[0].reason,
            "3 failures in a row (last: timeout: no answer) and 2 attempts in flight longer "
            "than slow_call_ms (2000 ms)");
}

TEST_F(BreakerBoardTest, ASlowCallThatSucceedsIsASuccess) {
  for (int64_t job = 1; job <= 4; ++job) Send(job);
  now_ += 3s;
  EXPECT_TRUE(board_.CheckSlow(now_).empty());  // 4 slow < 5
  for (int64_t job = 1; job <= 4; ++job) EXPECT_FALSE(End(job, BreakerSignal::kSuccess));
  EXPECT_TRUE(board_.CheckSlow(now_ + 1h).empty());
  EXPECT_EQ(board_.tracked(), 0u);
}

TEST_F(BreakerBoardTest, AFailureWithSlowCallsInFlightTrips) {
  for (int64_t job = 1; job <= 4; ++job) Send(job);
  now_ += 2s;
  auto trip = Fail(5);
  ASSERT_TRUE(trip);
  EXPECT_EQ(trip->reason,
            "1 failure in a row (last: timeout: no answer) and 4 attempts in flight longer "
            "than slow_call_ms (2000 ms)");
}

TEST_F(BreakerBoardTest, LearningClosedForgetsOldFailures) {
  for (int64_t job = 1; job <= 5; ++job) Fail(job);
  ASSERT_TRUE(board_.KnownOpen(kChannel));
  board_.Learn(kChannel, true);
  EXPECT_FALSE(board_.KnownOpen(kChannel));
  for (int64_t job = 6; job <= 9; ++job) EXPECT_FALSE(Fail(job)) << job;  // counts from 0
  EXPECT_TRUE(Fail(10));
}

TEST_F(BreakerBoardTest, LearningOpenStopsCountingAndAnotherNodesCloseResets) {
  for (int64_t job = 1; job <= 4; ++job) Fail(job);
  board_.Learn(kChannel, false);  // another node opened it
  EXPECT_TRUE(board_.KnownOpen(kChannel));
  EXPECT_FALSE(Fail(5));
  board_.Learn(kChannel, true);
  EXPECT_FALSE(Fail(6));  // the four before the opening are forgotten
}

TEST_F(BreakerBoardTest, ResyncTakesTheDatabasesView) {
  for (int64_t job = 1; job <= 5; ++job) Fail(job);
  ASSERT_TRUE(board_.KnownOpen(kChannel));
  board_.Resync({8, 9});  // a NOTIFY was lost: 7 was closed meanwhile, 8 and 9 opened
  EXPECT_FALSE(board_.KnownOpen(kChannel));
  EXPECT_TRUE(board_.KnownOpen(8));
  EXPECT_TRUE(board_.KnownOpen(9));
  board_.Resync({});
  EXPECT_EQ(board_.tracked(), 0u);
}

TEST_F(BreakerBoardTest, ForgetsChannelsWithNothingToRemember) {
  for (int64_t job = 1; job <= 1000; ++job) {
    Send(job, job);
    End(job, BreakerSignal::kSuccess, job);
  }
  EXPECT_EQ(board_.tracked(), 0u);
}

TEST_F(BreakerBoardTest, NewSettingsApplyToTheNextCount) {
  board_.SetSettings({2, 500ms, 2});
  EXPECT_FALSE(Fail(1));
  EXPECT_TRUE(Fail(2));
  board_.Learn(kChannel, true);
  Send(3);
  now_ += 500ms;
  Send(4);
  now_ += 500ms;
  EXPECT_EQ(board_.CheckSlow(now_).size(), 1u);
}

}  // namespace
}  // namespace bulkhead
