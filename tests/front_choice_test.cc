// FrontChoice: whether the runner's next claim runs the claim's front alone or the whole claim,
// from what the last one took (pure logic; the claims' side of it is claim_front_test, which
// runs both statements against PostgreSQL, and queue_runner_test's lending tests).
#include "front_choice.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

ClaimWindows Windows(int kept, int heads) { return {true, kept, heads}; }

// A runner whose last claim, a whole one of `limit`, its windows filled: its next is a front.
FrontChoice AfterAFullClaim(int limit) {
  FrontChoice choice;
  choice.Saw(false, limit, limit, 0, Windows(limit, 0));
  return choice;
}

TEST(FrontChoiceTest, TheFirstClaimIsWhole) { EXPECT_FALSE(FrontChoice().next()); }

TEST(FrontChoiceTest, AWholeClaimThatItsWindowsFilledIsFollowedByTheFront) {
  FrontChoice choice;
  EXPECT_FALSE(choice.Saw(false, 25, 25, 0, Windows(25, 0)));
  EXPECT_TRUE(choice.next());
}

// A front that the caps trimmed a row or two off (8 nodes of 25 workers) is enough: the next
// claim is a front again, and the runner does not claim again at once for the rest.
TEST(FrontChoiceTest, AFrontThatTookHalfItsLimitAndTheLendingBudgetIsFollowedByAFront) {
  FrontChoice choice = AfterAFullClaim(13);
  ASSERT_TRUE(choice.next());
  EXPECT_FALSE(choice.Saw(true, 13, 11, 10, Windows(11, 0)));
  EXPECT_TRUE(choice.next());
  EXPECT_FALSE(choice.Saw(true, 13, 7, 0, Windows(7, 0)));  // half of 13, rounded up
  EXPECT_TRUE(choice.next());
}

TEST(FrontChoiceTest, AFrontShortOfHalfItsLimitSendsTheRunnerToTheWholeClaimAtOnce) {
  FrontChoice choice = AfterAFullClaim(13);
  EXPECT_TRUE(choice.Saw(true, 13, 6, 0, Windows(6, 0)));
  EXPECT_FALSE(choice.next());
  choice = AfterAFullClaim(13);
  EXPECT_TRUE(choice.Saw(true, 13, 0, 0, Windows(0, 0)));  // took nothing
  EXPECT_FALSE(choice.next());
}

// The whole claim lends what its picks leave of the lending budget; a front cannot. A lone
// tenant at its cap of 10 with 18 slots free and a budget of 16: the front's 10 are not enough.
TEST(FrontChoiceTest, AFrontShortOfTheLendingBudgetSendsTheRunnerToTheWholeClaimAtOnce) {
  FrontChoice choice = AfterAFullClaim(18);
  EXPECT_TRUE(choice.Saw(true, 18, 10, 16, Windows(10, 0)));
  EXPECT_FALSE(choice.next());
}

TEST(FrontChoiceTest, AWholeClaimWhoseWindowsKeptEnoughIsFollowedByTheFront) {
  FrontChoice choice;
  // The skip scan ran (the caps held part of the window back) and found a row more: the
  // windows alone kept 8 of 10, which a front would have taken.
  choice.Saw(false, 10, 10, 0, Windows(8, 28));
  EXPECT_TRUE(choice.next());
  // Kept too little: the skip scan found most of it; the whole claim again.
  choice.Saw(false, 10, 10, 0, Windows(4, 28));
  EXPECT_FALSE(choice.next());
  // Kept enough for half, not for the lending budget.
  choice.Saw(false, 10, 6, 8, Windows(6, 3));
  EXPECT_FALSE(choice.next());
}

}  // namespace
}  // namespace bulkhead
