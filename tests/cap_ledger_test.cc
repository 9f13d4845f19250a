// CapLedger: the per-node caps' arithmetic, counting, slow start and failing channels, with a fake
// clock.
#include "cap_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace bulkhead {
namespace {

using namespace std::chrono_literals;

TEST(CapLedgerCaps, AreTheShareOfTheWorkersRoundedDownAtLeastOneAndNeverAllOfThem) {
  auto caps = CapLedger::For(20, 0.5, 0.5);
  EXPECT_EQ(caps.channel, 10);
  EXPECT_EQ(caps.tenant, 10);
  EXPECT_EQ(CapLedger::For(5, 0.5, 0.5).channel, 2);      // the bulk tier
  EXPECT_EQ(CapLedger::For(20, 0.01, 0.5).channel, 1);    // at least one
  EXPECT_EQ(CapLedger::For(20, 0.99, 0.99).channel, 19);  // never the last slot
  EXPECT_EQ(CapLedger::For(2, 0.9, 0.9).channel, 1);
  EXPECT_EQ(CapLedger::For(1, 0.5, 0.5).channel, 1);    // one worker: one job
  EXPECT_EQ(CapLedger::For(20, 1.0, 1.0).channel, 20);  // share 1: no cap
  EXPECT_EQ(CapLedger::For(20, 0.5, 1.0).tenant, 20);
}

TEST(CapLedger, ReportsTheJobThatReachesACapAndTheOneThatLeavesIt) {
  CapLedger ledger({2, 3});
  EXPECT_FALSE(ledger.Add(1, 100).channel);
  auto second = ledger.Add(1, 100);
  EXPECT_TRUE(second.channel);
  EXPECT_FALSE(second.tenant);
  auto third = ledger.Add(2, 100);  // another channel of the same tenant
  EXPECT_FALSE(third.channel);
  EXPECT_TRUE(third.tenant);
  EXPECT_EQ(ledger.in_flight(1), 2);
  EXPECT_EQ(ledger.tenant_in_flight(100), 3);
  EXPECT_TRUE(ledger.Holds(2, 100));  // the tenant was at its cap
  ledger.Remove(2, 100);
  EXPECT_TRUE(ledger.Holds(1, 100));  // the channel was at its cap
  ledger.Remove(1, 100);
  EXPECT_FALSE(ledger.Holds(1, 100));  // neither was
  ledger.Remove(1, 100);
  EXPECT_EQ(ledger.tracked(), 0u);
}

TEST(CapLedger, LimitsCarryTheCountsInFlightAndTheCaps) {
  CapLedger ledger({2, 10});
  ledger.Add(1, 100);
  ledger.Add(1, 100);  // at cap
  ledger.Add(2, 100);
  ledger.Add(3, 200);
  ClaimLimits limits = ledger.Limits(0);
  EXPECT_EQ(limits.channel_cap, 2);
  EXPECT_EQ(limits.tenant_cap, 10);
  std::sort(limits.channels_in_flight.begin(), limits.channels_in_flight.end());
  EXPECT_EQ(limits.channels_in_flight,
            (std::vector<std::pair<int64_t, int>>{{1, 2}, {2, 1}, {3, 1}}));
  std::sort(limits.tenants_in_flight.begin(), limits.tenants_in_flight.end());
  EXPECT_EQ(limits.tenants_in_flight, (std::vector<std::pair<int64_t, int>>{{100, 3}, {200, 1}}));
}

// A job that ends of a channel at its cap, or of a tenant at its cap, opens a slot for what the
// caps held back: the runner claims again. Below both, nothing was held back. Nothing is
// remembered at 0 in flight but a grown window or a failure.
TEST(CapLedger, AnEndedJobOpensASlotOnlyWhenItsChannelOrTenantWasAtItsCap) {
  CapLedger ledger({3, 4});
  ledger.Add(1, 100);
  ledger.Add(1, 100);
  EXPECT_FALSE(ledger.Holds(1, 100));  // 2 of 3, tenant 2 of 4
  ledger.Remove(1, 100);
  ledger.Add(1, 100);
  ledger.Add(1, 100);  // 3 of 3
  EXPECT_TRUE(ledger.Holds(1, 100));
  ledger.Remove(1, 100);
  ledger.Add(2, 100);
  ledger.Add(2, 100);                 // channel 1 at 2, channel 2 at 2: tenant 100 at 4 of 4
  EXPECT_TRUE(ledger.Holds(2, 100));  // its tenant was at its cap
  ledger.Remove(2, 100);
  EXPECT_FALSE(ledger.Holds(2, 100));  // 3 of 4
  ledger.Remove(2, 100);
  EXPECT_FALSE(ledger.Holds(1, 100));
  ledger.Remove(1, 100);
  EXPECT_FALSE(ledger.Holds(1, 100));
  ledger.Remove(1, 100);
  EXPECT_EQ(ledger.in_flight(1), 0);
  EXPECT_EQ(ledger.tracked(), 0u);
}

TEST(CapLedgerFailing, AFailingChannelIsCappedAtOneUntilItSucceeds) {
  CapLedger ledger({10, 10});
  auto now = CapLedger::Clock::time_point{} + 1h;
  ledger.Failed(7, now);
  EXPECT_TRUE(ledger.failing(7));
  // Nothing in flight: the claim sees 9 of 10, room for one job.
  ClaimLimits limits = ledger.Limits(0);
  EXPECT_EQ(limits.channels_in_flight, (std::vector<std::pair<int64_t, int>>{{7, 9}}));
  // One in flight is its cap: reached, and reported full.
  EXPECT_TRUE(ledger.Add(7, 70).channel);
  EXPECT_EQ(ledger.Limits(0).channels_in_flight, (std::vector<std::pair<int64_t, int>>{{7, 10}}));
  // Its end opens the slot for it again; it stays failing (and tracked) at 0 in flight.
  EXPECT_TRUE(ledger.Holds(7, 70));
  ledger.Remove(7, 70);
  EXPECT_TRUE(ledger.failing(7));
  EXPECT_EQ(ledger.tracked(), 1u);
  // A quick success gives it the tier's cap back, and it is forgotten at 0 in flight.
  ledger.Succeeded(7);
  EXPECT_FALSE(ledger.failing(7));
  EXPECT_TRUE(ledger.Limits(0).channels_in_flight.empty());
  EXPECT_EQ(ledger.tracked(), 0u);
}

TEST(CapLedgerFailing, AChannelAlreadyPastOneWhenItFailsTakesNoMore) {
  CapLedger ledger({10, 10});
  auto now = CapLedger::Clock::time_point{} + 1h;
  for (int i = 0; i < 4; ++i) ledger.Add(7, 70);
  ledger.Failed(7, now);
  EXPECT_EQ(ledger.Limits(0).channels_in_flight, (std::vector<std::pair<int64_t, int>>{{7, 13}}));
  EXPECT_TRUE(ledger.Holds(7, 70));  // 3 left, still over its cap of 1: its slot opened
  ledger.Remove(7, 70);
  EXPECT_EQ(ledger.Limits(0).channels_in_flight, (std::vector<std::pair<int64_t, int>>{{7, 12}}));
}

TEST(CapLedgerFailing, TheMarkIsForgottenAMinuteAfterTheLastFailure) {
  CapLedger ledger({10, 10});
  auto now = CapLedger::Clock::time_point{} + 1h;
  ledger.Failed(7, now);
  ledger.Forget(now + 59s);
  EXPECT_TRUE(ledger.failing(7));
  ledger.Forget(now + 60s);
  EXPECT_FALSE(ledger.failing(7));
  EXPECT_EQ(ledger.tracked(), 0u);
}

// Slow start (issue 16): a channel's window starts at 10, grows by one with each quick answer up
// to the workers less the reserve (lent slots included), and starts again after a failure; a
// window is remembered for 10 s at 0 in flight.
TEST(CapLedger, AChannelsWindowStartsAtTenAndGrowsWithQuickAnswers) {
  CapLedger ledger(CapLedger::For(200, 0.5, 0.5));
  EXPECT_EQ(ledger.caps().channel, 100);
  EXPECT_EQ(ledger.caps().first_window, 10);
  auto window_of = [&](int64_t channel) {
    ClaimLimits limits = ledger.Limits(0);
    for (size_t i = 0; i < limits.channels_in_flight.size(); ++i) {
      if (limits.channels_in_flight[i].first == channel) return limits.channel_windows[i];
    }
    return limits.first_window;  // no record: the first window
  };
  for (int i = 0; i < 10; ++i) ledger.Add(1, 100);
  EXPECT_EQ(window_of(1), 10);
  EXPECT_TRUE(ledger.Holds(1, 100)) << "at its window: a slot opened for it";
  ledger.Remove(1, 100);
  ledger.Add(1, 100);
  for (int i = 0; i < 5; ++i) ledger.Succeeded(1);
  EXPECT_EQ(window_of(1), 15);
  EXPECT_EQ(ledger.Limits(0).channel_cap, 100) << "the cap is unchanged";
  for (int i = 0; i < 200; ++i) ledger.Succeeded(1);
  EXPECT_EQ(window_of(1), 180) << "past the cap (lending, ADR 0013), never past the 200 "
                                  "workers less the reserve of 20";

  const auto now = CapLedger::Clock::time_point{} + 1h;
  ledger.Failed(1, now);
  EXPECT_EQ(window_of(1), 100) << "failing: passed as its cap, with 99 counted in flight";
  EXPECT_EQ(ledger.Limits(0).channels_in_flight[0].second, 10 + 99);
  ledger.Succeeded(1);
  EXPECT_EQ(window_of(1), 11) << "after a failure it starts again from the first window";

  // All ten end: the grown window stays for 10 s at 0 in flight, then goes.
  for (int i = 0; i < 10; ++i) ledger.Remove(1, 100);
  ledger.Forget(now);
  EXPECT_EQ(window_of(1), 11);
  ledger.Forget(now + 9s);
  EXPECT_EQ(window_of(1), 11);
  ledger.Forget(now + 10s);
  EXPECT_EQ(window_of(1), 10);
  EXPECT_EQ(ledger.tracked(), 0u);
}

// A slow success (an endpoint answering 200 after stalled_after_ms) clears the failing mark a
// stall set, and grows nothing: the channel goes back to its first window, not to one at a time.
TEST(CapLedgerFailing, ASlowSuccessEndsTheFailingCapWithoutGrowingTheWindow) {
  CapLedger ledger(CapLedger::For(200, 0.5, 0.5));
  const auto now = CapLedger::Clock::time_point{} + 1h;
  for (int i = 0; i < 10; ++i) ledger.Add(1, 100);
  ledger.Failed(1, now);  // a request of it stalled
  EXPECT_EQ(ledger.Limits(0).channels_in_flight[0].second, 10 + 99) << "capped at 1";
  ledger.Remove(1, 100);
  ledger.Answered(1);
  EXPECT_FALSE(ledger.failing(1));
  ClaimLimits limits = ledger.Limits(0);
  ASSERT_EQ(limits.channels_in_flight.size(), 1u);
  EXPECT_EQ(limits.channels_in_flight[0].second, 9) << "its 9 in flight, no longer inflated";
  EXPECT_EQ(limits.channel_windows[0], 10) << "the first window, not grown";
  for (int i = 0; i < 9; ++i) ledger.Remove(1, 100);
  EXPECT_EQ(ledger.tracked(), 0u) << "nothing left to remember";
  ledger.Answered(2);  // a channel with no entry: nothing to do
  EXPECT_EQ(ledger.tracked(), 0u);
}

TEST(CapLedger, NoSlowStartWithoutCaps) {
  CapLedger ledger(CapLedger::For(200, 1.0, 1.0));
  EXPECT_EQ(ledger.caps().first_window, 0);
  EXPECT_EQ(ledger.Limits(0).first_window, 0);
}

// Lending (ADR 0013): a claim may lend its free slots less the reserve (a tenth of the workers,
// at least 1), and only to channels that have answered quickly and are not failing, each up to
// its window, which grows past the cap up to the workers less the reserve.
TEST(CapLedgerLending, LendsTheFreeSlotsLessTheReserveToChannelsThatAnsweredQuickly) {
  EXPECT_EQ(CapLedger::For(200, 0.5, 0.5).reserve, 20);
  EXPECT_EQ(CapLedger::For(1000, 0.5, 0.5).reserve, 100);
  EXPECT_EQ(CapLedger::For(5, 0.5, 0.5).reserve, 1);  // the bulk tier: at least 1
  EXPECT_EQ(CapLedger::For(200, 1.0, 0.5).reserve, 0) << "no slow start: no lending";
  EXPECT_EQ(CapLedger::For(200, 0.5, 0.5, 0.25).reserve, 50);
  EXPECT_EQ(CapLedger::For(200, 0.5, 0.5, 1.0).reserve, 200);
  EXPECT_EQ(CapLedger(CapLedger::For(200, 0.5, 0.5, 1.0)).Limits(200).lend, 0)
      << "reserve_share 1: strict caps";

  CapLedger ledger(CapLedger::For(200, 0.5, 0.5));
  EXPECT_EQ(ledger.Limits(100).lend, 80);
  EXPECT_EQ(ledger.Limits(20).lend, 0) << "nothing but the reserve is free";
  EXPECT_EQ(ledger.Limits(5).lend, 0);

  ledger.Add(1, 100);  // unproven: first window, never answered
  ledger.Add(2, 100);
  ledger.Succeeded(2);  // answered quickly: window 11
  ledger.Add(3, 100);
  ledger.Succeeded(3);
  ledger.Failed(3, CapLedger::Clock::time_point{} + 1h);  // then failed
  auto lend_window_of = [](const ClaimLimits& limits, int64_t channel) {
    for (size_t i = 0; i < limits.channels_in_flight.size(); ++i) {
      if (limits.channels_in_flight[i].first == channel) return limits.lend_windows[i];
    }
    return -1;
  };
  ClaimLimits limits = ledger.Limits(150);
  EXPECT_EQ(limits.lend, 130);
  EXPECT_EQ(lend_window_of(limits, 1), 0);
  EXPECT_EQ(lend_window_of(limits, 2), 11);
  EXPECT_EQ(lend_window_of(limits, 3), 0);
  EXPECT_EQ(lend_window_of(ledger.Limits(20), 2), 0) << "no budget: no lend window either";

  for (int i = 0; i < 300; ++i) ledger.Succeeded(2);
  EXPECT_EQ(lend_window_of(ledger.Limits(150), 2), 180);
  for (int i = 0; i < 150; ++i) ledger.Add(2, 100);
  EXPECT_TRUE(ledger.Holds(2, 100)) << "past its cap of 100: its ends wake the runner";
}

// Memory and the claim's arrays (issue 34): of the channels with nothing in flight, the ledger
// keeps at most the workers' worth (at least kIdleFloor), the most recently idle, so a node that
// has served 60,000 channels sends a claim no more than the channels in flight and those.
TEST(CapLedger, KeepsAtMostTheWorkersWorthOfIdleChannelsTheNewestFirst) {
  CapLedger ledger(CapLedger::For(200, 0.5, 0.5));
  const auto now = CapLedger::Clock::time_point{} + 1h;
  for (int64_t channel = 1; channel <= 60'000; ++channel) {
    ledger.Add(channel, channel);  // a tenant per channel, one delivery each
    if (channel % 2 == 0) {
      ledger.Succeeded(channel);  // a quick answer: its window grew to 11
    } else {
      ledger.Failed(channel, now);  // a failure: capped at 1
    }
    ledger.Remove(channel, channel);
  }
  EXPECT_EQ(ledger.tracked(), 200u) << "200 idle channels, no tenant";
  ClaimLimits limits = ledger.Limits(200);
  ASSERT_EQ(limits.channels_in_flight.size(), 200u);
  EXPECT_EQ(limits.channel_windows.size(), 200u);
  EXPECT_EQ(limits.lend_windows.size(), 200u);
  EXPECT_TRUE(limits.tenants_in_flight.empty());
  EXPECT_TRUE(ledger.failing(59'999)) << "the newest are remembered";
  EXPECT_FALSE(ledger.failing(59'599)) << "the oldest are forgotten";

  // A channel in flight is never forgotten for the idle ones, and it counts apart from them.
  ledger.Add(5, 5);
  ledger.Failed(5, now);
  for (int64_t channel = 100'001; channel <= 100'400; ++channel) {
    ledger.Add(channel, channel);
    ledger.Succeeded(channel);
    ledger.Remove(channel, channel);
  }
  EXPECT_TRUE(ledger.failing(5));
  EXPECT_EQ(ledger.in_flight(5), 1);
  EXPECT_EQ(ledger.Limits(200).channels_in_flight.size(), 201u);
  EXPECT_FALSE(ledger.failing(59'999)) << "pushed out by 400 newer idle channels";

  // Busy again, then idle: it goes to the front, not back to its old place.
  ledger.Remove(5, 5);
  for (int64_t channel = 200'001; channel <= 200'199; ++channel) {
    ledger.Add(channel, channel);
    ledger.Succeeded(channel);
    ledger.Remove(channel, channel);
  }
  EXPECT_TRUE(ledger.failing(5)) << "199 newer idle channels leave room for it";
  ledger.Forget(now + 60s);
  EXPECT_FALSE(ledger.failing(5));
}

TEST(CapLedger, AFewWorkersStillRememberTheIdleFloor) {
  CapLedger ledger(CapLedger::For(5, 0.5, 0.5));
  for (int64_t channel = 1; channel <= 1000; ++channel) {
    ledger.Add(channel, 1);
    ledger.Succeeded(channel);
    ledger.Remove(channel, 1);
  }
  EXPECT_EQ(ledger.tracked(), CapLedger::kIdleFloor);
}

}  // namespace
}  // namespace bulkhead
