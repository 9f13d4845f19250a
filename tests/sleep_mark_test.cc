// SleepMark: when a queue runner writes and rechecks its sleeping mark (ADR 0019, ADR 0022).
// Its logic with a fake clock (Write and Delete, its database side, run in every node test); the
// mark's effect on enqueues is tests/schema/wake_test.cc, and a node woken through it is
// NodeTest.AnEnqueueWakesAnIdleNodeWithoutWaitingForThePoll.
#include "sleep_mark.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using Clock = SleepMark::Clock;
constexpr Clock::time_point kNever = Clock::time_point::max();

TEST(SleepMarkTest, AFreshRunnerMarksItselfThenRechecksOnce) {
  SleepMark mark("default", "node-a");
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_EQ(mark.recheck_at(), kNever);
  mark.Marked(t0);
  EXPECT_FALSE(mark.NeedsMark());
  EXPECT_EQ(mark.recheck_at(), t0 + SleepMark::kRecheck);
  mark.Claimed(t0);  // the claim right after the mark is not the recheck
  EXPECT_EQ(mark.recheck_at(), t0 + SleepMark::kRecheck);
  mark.Claimed(t0 + SleepMark::kRecheck);
  EXPECT_EQ(mark.recheck_at(), kNever);
  EXPECT_TRUE(mark.marked());
}

TEST(SleepMarkTest, ANotificationMeansTheMarkWasTakenAndMustBeWrittenAgain) {
  SleepMark mark("default", "node-a");
  mark.Marked(Clock::now());
  EXPECT_FALSE(mark.NeedsMark()) << "a runner that finds work by itself leaves its mark";
  mark.Notified();
  EXPECT_FALSE(mark.marked());
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_EQ(mark.recheck_at(), kNever);
  mark.Marked(Clock::now());
  EXPECT_NE(mark.recheck_at(), kNever) << "written anew: rechecked once";
}

TEST(SleepMarkTest, ThePollsRewriteAddsNoRecheck) {
  SleepMark mark("default", "node-a");
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  mark.Marked(t0);
  mark.Claimed(t0 + SleepMark::kRecheck);
  mark.Marked(t0 + std::chrono::seconds(1));
  EXPECT_EQ(mark.recheck_at(), kNever);
}

TEST(SleepMarkTest, AFailedMarkWaitsForASuccessfulClaimAndALostOneIsWrittenAgain) {
  SleepMark mark("default", "node-a");
  mark.Failed();
  EXPECT_FALSE(mark.NeedsMark()) << "no retry loop against a database that is down";
  mark.Claimed(Clock::now());
  EXPECT_TRUE(mark.NeedsMark());
  mark.Marked(Clock::now());
  mark.Lost();
  EXPECT_TRUE(mark.NeedsMark());
  EXPECT_FALSE(mark.marked());
}

}  // namespace
}  // namespace bulkhead
