// SleepMark: when a queue runner writes its sleeping mark and looks at what ran when it fell
// asleep (ADR 0019, ADR 0022, ADR 0030). Its logic with a fake clock (Write, Look and Delete, its
// database side, run in every node test); the mark's effect on enqueues is
// tests/schema/wake_test.cc, the horizon's arithmetic sleep_horizon_test.cc, and a node woken
// through it NodeTest.AnEnqueueWakesAnIdleNodeWithoutWaitingForThePoll and
// NodeTest.AJobCommittedAfterTheNodeFellAsleepIsClaimedWithoutWaitingForThePoll.
#include "sleep_mark.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using Clock = SleepMark::Clock;
constexpr Clock::time_point kNever = Clock::time_point::max();

// Fell asleep while transaction 7 ran; the next id was 9 (8 not yet listed).
SleepStart OneRunning() { return {.next_xid = 9, .now = {.xmin = 7, .xmax = 8, .running = {7}}}; }

TEST(SleepMarkTest, AFreshRunnerMarksItselfThenLooksWhileWhatRanThenRuns) {
  SleepMark mark("default", "node-a");
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_EQ(mark.look_at(), kNever);
  mark.Marked(t0, OneRunning());
  EXPECT_FALSE(mark.NeedsMark());
  EXPECT_TRUE(mark.marked());
  EXPECT_EQ(mark.look_at(), t0 + SleepHorizon::kFirstInterval);
  mark.Claimed();  // the claim right after the mark changes nothing of the horizon
  EXPECT_EQ(mark.look_at(), t0 + SleepHorizon::kFirstInterval);
}

TEST(SleepMarkTest, NothingRunningWhenItFellAsleepMeansNothingToLookAt) {
  SleepMark mark("default", "node-a");
  mark.Marked(Clock::now(), {.next_xid = 12, .now = {.xmin = 12, .xmax = 12, .running = {}}});
  EXPECT_EQ(mark.look_at(), kNever);
}

TEST(SleepMarkTest, ANotificationMeansTheMarkWasTakenAndMustBeWrittenAgain) {
  SleepMark mark("default", "node-a");
  mark.Marked(Clock::now(), OneRunning());
  EXPECT_FALSE(mark.NeedsMark()) << "a runner that finds work by itself leaves its mark";
  mark.Notified();
  EXPECT_FALSE(mark.marked());
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_EQ(mark.look_at(), kNever) << "it claims now, and watches anew when it marks again";
  mark.Marked(Clock::now(), OneRunning());
  EXPECT_NE(mark.look_at(), kNever);
}

TEST(SleepMarkTest, AFailedMarkWaitsForASuccessfulClaimAndALostOneIsWrittenAgain) {
  SleepMark mark("default", "node-a");
  mark.Failed();
  EXPECT_FALSE(mark.NeedsMark()) << "no retry loop against a database that is down";
  mark.Claimed();
  EXPECT_TRUE(mark.NeedsMark());
  mark.Marked(Clock::now(), OneRunning());
  mark.Lost();
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_FALSE(mark.marked());
  EXPECT_EQ(mark.look_at(), kNever);
}

}  // namespace
}  // namespace bulkhead
