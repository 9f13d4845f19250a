// BreakerKeeper's own logic, in memory (MemoryBreakerLedger): a failure streak opens a breaker
// once, a transition that fails on the database's account is retried and not lost, a statement
// timeout halves the batch, a request refused for its data is quarantined and the queue moves
// on, a probe's answer closes or re-opens. What the statements do to channels and jobs is
// breaker_keeper_test's and breaker_store_test's, against real PostgreSQL.
//
// No test times anything. The keeper runs its requests in the order they were queued, so a
// request queued last and seen made tells that every earlier one has run.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "breaker_keeper.h"
#include "memory_breaker_ledger.h"
#include "verdict.h"

namespace bulkhead {
namespace {

using testing::MemoryBreakerLedger;

constexpr std::chrono::milliseconds kPatience{30000};  // a broken keeper fails, never hangs
constexpr int64_t kChannel = 7;
constexpr int64_t kOther = 8;
constexpr int64_t kMarker = 9;  // Settle()'s, never half-open

BreakerKeeper::Options KeeperOptions() {
  TierOptions tier;
  tier.name = "default";
  tier.failure_threshold = 5;
  BreakerKeeper::Options options;
  options.tiers = {tier};
  return options;
}

// Queues a probe answer for kMarker (a CloseBreaker that makes nothing) and waits until the
// keeper has run it, and so every request queued before it.
void Settle(BreakerKeeper& keeper, MemoryBreakerLedger& ledger, int64_t job) {
  keeper.ProbeAnswered("default", kMarker, job, true, "");
  ASSERT_TRUE(ledger.WaitForCall("CloseBreaker", kMarker, kPatience));
}

TEST(BreakerKeeperLogic, AFailureStreakAtTheThresholdOpensTheBreakerOnce) {
  MemoryBreakerLedger ledger;
  BreakerKeeper keeper(KeeperOptions(), ledger.Ledger());
  auto now = BreakerBoard::Clock::now();
  int trips = 0;
  for (int64_t job = 1; job <= 8; ++job) {  // past the threshold of 5
    keeper.board("default").Started(kChannel, job, now);
    std::optional<BreakerBoard::Trip> trip =
        keeper.board("default").Finished(kChannel, job, BreakerSignal::kFailure, "HTTP 503", now);
    if (trip) {
      ++trips;
      keeper.RequestOpen("default", std::move(*trip));
    }
  }
  EXPECT_EQ(trips, 1);
  ASSERT_TRUE(ledger.WaitForState(kChannel, "open", kPatience));
  Settle(keeper, ledger, 100);
  EXPECT_EQ(ledger.calls("OpenBreaker", kChannel).size(), 1u);
  EXPECT_EQ(keeper.opened(), 1u);
  EXPECT_FALSE(keeper.OpenPending(kChannel));
}

TEST(BreakerKeeperLogic, AnOpenThatFailsOnALostConnectionIsRetriedAndMade) {
  MemoryBreakerLedger ledger;
  ledger.FailNext(2);
  BreakerKeeper keeper(KeeperOptions(), ledger.Ledger());
  keeper.RequestOpen("default", {kChannel, "5 failures in a row: HTTP 503"});
  ASSERT_TRUE(ledger.WaitForState(kChannel, "open", kPatience));
  Settle(keeper, ledger, 100);
  auto opens = ledger.calls("OpenBreaker", kChannel);
  ASSERT_EQ(opens.size(), 3u);  // two lost, the third made
  EXPECT_TRUE(opens[0].failed);
  EXPECT_TRUE(opens[1].failed);
  EXPECT_TRUE(opens[2].done);
  EXPECT_EQ(ledger.Reason(kChannel), "5 failures in a row: HTTP 503");
  EXPECT_EQ(ledger.resets(), 2);  // a new connection after each failure
  EXPECT_EQ(keeper.opened(), 1u);
  EXPECT_EQ(keeper.quarantined(), 0u);  // the database's failure, not the request's
}

TEST(BreakerKeeperLogic, AStatementTimeoutHalvesTheBatchAndRetriesOnTheSameConnection) {
  MemoryBreakerLedger ledger;
  ledger.FailNext(1, "57014");
  BreakerKeeper::Options options = KeeperOptions();
  options.backlog_batch = 1000;
  BreakerKeeper keeper(options, ledger.Ledger());
  keeper.RequestOpen("default", {kChannel, "5 failures in a row: HTTP 503"});
  ASSERT_TRUE(ledger.WaitForState(kChannel, "open", kPatience));
  auto opens = ledger.calls("OpenBreaker", kChannel);
  ASSERT_EQ(opens.size(), 2u);
  EXPECT_EQ(opens[0].batch, 1000);
  EXPECT_EQ(opens[1].batch, 500);
  EXPECT_EQ(ledger.resets(), 0);  // the database answered: no reconnect
}

TEST(BreakerKeeperLogic, ARequestRefusedForItsTextIsQuarantinedAndTheQueueMovesOn) {
  MemoryBreakerLedger ledger;
  ledger.Refuse("tls: bad \xff record");
  BreakerKeeper keeper(KeeperOptions(), ledger.Ledger());
  keeper.RequestOpen("default", {kChannel, "tls: bad \xff record"});
  keeper.RequestOpen("default", {kOther, "HTTP 503"});
  ASSERT_TRUE(ledger.WaitForState(kOther, "open", kPatience));
  Settle(keeper, ledger, 100);
  EXPECT_EQ(ledger.State(kChannel), "open");  // made with its text made storable
  EXPECT_EQ(ledger.Reason(kChannel),
            "tls: bad \uFFFD record [the original text could not be stored: SQLSTATE 22021]");
  EXPECT_EQ(keeper.quarantined(), 1u);
  EXPECT_EQ(keeper.opened(), 2u);
  EXPECT_EQ(ledger.resets(), 0);  // a data failure keeps the connection
}

TEST(BreakerKeeperLogic, AProbesAnswerClosesOrReopensItsBreaker) {
  MemoryBreakerLedger ledger;
  ledger.SetState(kChannel, "half_open");
  ledger.SetState(kOther, "half_open");
  BreakerKeeper keeper(KeeperOptions(), ledger.Ledger());
  keeper.ProbeAnswered("default", kChannel, 41, true, "");
  keeper.ProbeAnswered("default", kOther, 42, false, "HTTP 503");
  ASSERT_TRUE(ledger.WaitForState(kChannel, "closed", kPatience));
  ASSERT_TRUE(ledger.WaitForState(kOther, "open", kPatience));
  Settle(keeper, ledger, 100);
  EXPECT_EQ(ledger.Reason(kOther), "probe job 42 failed: HTTP 503");
  EXPECT_EQ(keeper.closed(), 1u);
  EXPECT_EQ(keeper.reopened(), 1u);
}

}  // namespace
}  // namespace bulkhead
