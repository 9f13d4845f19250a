// WindowLookAhead: the look-ahead the runner passes its next claim, from what the last one's
// windows kept and how many heads its skip scan visited (pure logic; the claim's side of it is
// CapsTest.AShortLookAheadLeavesACappedFrontToTheSkipScanAndReportsWhatEachSaw).
#include "window_look_ahead.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

constexpr int kLong = ClaimLimits::kLongLookAhead;
constexpr int kShort = ClaimLimits::kShortLookAhead;

ClaimWindows Saw(int kept, int heads) { return {true, kept, heads}; }

TEST(WindowLookAheadTest, StartsLong) {
  static_assert(kShort < kLong);
  EXPECT_EQ(WindowLookAhead().next(), kLong);
}

TEST(WindowLookAheadTest, ShortAfterAClaimWhoseWindowsKeptNothingAndWhoseSkipScanVisitedFewHeads) {
  WindowLookAhead look_ahead;
  look_ahead.Saw(Saw(0, 20));  // a lone tenant borrowing: everything came through the skip scan
  EXPECT_EQ(look_ahead.next(), kShort);
  look_ahead.Saw(Saw(0, WindowLookAhead::kFewHeads));
  EXPECT_EQ(look_ahead.next(), kShort);
}

TEST(WindowLookAheadTest, LongAgainOnceTheWindowsKeepAnything) {
  WindowLookAhead look_ahead;
  look_ahead.Saw(Saw(0, 2));
  ASSERT_EQ(look_ahead.next(), kShort);
  look_ahead.Saw(Saw(1, 2));
  EXPECT_EQ(look_ahead.next(), kLong);
  look_ahead.Saw(Saw(50, 0));  // the windows filled the claim; the skip scan did not run
  EXPECT_EQ(look_ahead.next(), kLong);
}

// Many channels due behind a held-back front: the short claim's skip scan visits each of them
// (12.5 ms against 3.2 at 1,001 channels, load/claim_bench.sh many); the next claim looks long.
TEST(WindowLookAheadTest, LongAgainAfterASkipScanOfManyHeads) {
  WindowLookAhead look_ahead;
  look_ahead.Saw(Saw(0, 3));
  ASSERT_EQ(look_ahead.next(), kShort);
  look_ahead.Saw(Saw(0, WindowLookAhead::kFewHeads + 1));
  EXPECT_EQ(look_ahead.next(), kLong);
}

TEST(WindowLookAheadTest, AClaimThatTookNothingChangesNothing) {
  WindowLookAhead look_ahead;
  look_ahead.Saw(ClaimWindows{});
  EXPECT_EQ(look_ahead.next(), kLong);
  look_ahead.Saw(Saw(0, 1));
  look_ahead.Saw(ClaimWindows{});
  EXPECT_EQ(look_ahead.next(), kShort);
}

}  // namespace
}  // namespace bulkhead
