// The breaker keeper's queue against real PostgreSQL: a request the database refuses for its
// data is set aside, so the requests behind it are still made; a backlog too big for one
// statement moves in batches, and the other requests and the timers go on between them.
#include "breaker_keeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "database_test.h"
#include "session_settings.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;
using testing::QueryValue;

class BreakerKeeperTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    int64_t tenant = testing::CreateTenant(db(), "acme");
    first_ = testing::CreateChannel(db(), tenant);
    second_ = testing::CreateChannel(db(), tenant);
    third_ = testing::CreateChannel(db(), tenant);
    tier_.name = "default";
  }

  // `n` available jobs for `channel`, as enqueue writes them.
  void Backlog(int64_t channel, int n) {
    Exec(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload)"
        " SELECT 'default', c.tenant_id, c.id, jsonb_build_object('n', g)"
        "   FROM bulkhead.channels c, generate_series(1, " +
        std::to_string(n) + ") g WHERE c.id = " + std::to_string(channel));
  }

  int64_t Jobs(int64_t channel, const std::string& state) {
    return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " +
                                         std::to_string(channel) + " AND state = '" + state + "'");
  }

  std::string Breaker(int64_t channel) {
    return QueryValue<std::string>(db(),
                                   "SELECT breaker_state || ' ' || coalesce(breaker_reason, "
                                   "'') FROM bulkhead.channels WHERE id = " +
                                       std::to_string(channel));
  }

  TierOptions tier_;
  int64_t first_ = 0;
  int64_t second_ = 0;
  int64_t third_ = 0;
};

// The reason holds bytes that are not UTF-8: PostgreSQL refuses the parameter (22021). Before
// the fix the request stayed at the front of the queue for ever and no later one was made.
TEST_F(BreakerKeeperTest, ARequestRefusedForItsTextIsQuarantinedAndTheQueueMovesOn) {
  BreakerKeeper keeper(BreakerKeeper::Options{conninfo(), {tier_}});
  keeper.RequestOpen("default", {first_, "5 failures in a row: tls: bad \xff\xfe record"});
  keeper.RequestOpen("default", {second_, "5 failures in a row: HTTP 503"});
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.channels WHERE breaker_state = 'open')",
                      std::chrono::seconds(5)))
      << Breaker(first_) << " / " << Breaker(second_);
  EXPECT_EQ(Breaker(second_), "open 5 failures in a row: HTTP 503");
  // Made with the text made storable, and a note saying so.
  EXPECT_EQ(Breaker(first_).rfind("open 5 failures in a row: tls: bad \uFFFD\uFFFD record [", 0),
            0u)
      << Breaker(first_);
  EXPECT_EQ(keeper.quarantined(), 1u);
  EXPECT_EQ(keeper.opened(), 2u);
}

// Issue 31, defect 1. Parking 200,000 jobs in one statement takes about a second here; under a
// 250 ms statement timeout the open was cancelled and retried at the front of the keeper's
// queue for ever: the breaker never opened, the second channel's open behind it was never
// made, and the timers (probe expiry, resync, slow checks) never ran again. Now a transition
// moves the state with one batch of the backlog, and the rest follows in batches at the back
// of the queue.
TEST_F(BreakerKeeperTest, ABacklogTooBigForOneStatementMovesInBatchesAndBlocksNothing) {
  constexpr int kBig = 200'000;
  Backlog(first_, kBig);
  Backlog(second_, 10);
  DatabaseTimeouts timeouts;
  timeouts.statement_timeout_ms = 250;
  BreakerKeeper keeper(BreakerKeeper::Options{WithSessionSettings(conninfo(), timeouts), {tier_}});

  keeper.RequestOpen("default", {first_, "5 failures in a row: HTTP 500"});
  keeper.RequestOpen("default", {second_, "5 failures in a row: HTTP 500"});
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.channels WHERE breaker_state = 'open')",
                      std::chrono::seconds(10)))
      << Breaker(first_) << " / " << Breaker(second_);
  ASSERT_TRUE(WaitFor("NOT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'available')",
                      std::chrono::seconds(60)))
      << Jobs(first_, "available") << " of the first channel's jobs still available";
  EXPECT_EQ(Jobs(first_, "parked"), kBig);
  EXPECT_EQ(Jobs(second_, "parked"), 10);

  // The probe answered well: the close returns the whole backlog. Meanwhile a third channel's
  // probe has run out of time, and the keeper's timer re-opens it while the backlog moves.
  const int64_t probe = QueryValue<int64_t>(
      db(), "SELECT min(id) FROM bulkhead.jobs WHERE channel_id = " + std::to_string(first_));
  Exec("UPDATE bulkhead.channels SET breaker_state = 'half_open', breaker_probe_job = " +
       std::to_string(probe) + " WHERE id = " + std::to_string(first_));
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'half_open', breaker_probe_job = 1,"
      "  breaker_probe_at = now() - interval '1 second' WHERE id = " +
      std::to_string(third_));
  keeper.ProbeAnswered("default", first_, probe, true, "HTTP 200");
  ASSERT_TRUE(WaitFor("(SELECT breaker_state = 'open' FROM bulkhead.channels WHERE id = " +
                          std::to_string(third_) + ")",
                      std::chrono::seconds(10)))
      << Breaker(third_);
  ASSERT_TRUE(
      WaitFor("NOT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'parked'"
              " AND channel_id = " +
                  std::to_string(first_) + ")",
              std::chrono::seconds(60)))
      << Jobs(first_, "parked") << " of the first channel's jobs still parked; " << Breaker(first_);
  EXPECT_EQ(Breaker(first_), "closed 5 failures in a row: HTTP 500");
  EXPECT_EQ(Jobs(first_, "available"), kBig);
  EXPECT_EQ(keeper.opened(), 2u);
  EXPECT_EQ(keeper.closed(), 1u);
}

// A batch that does not fit in the statement timeout either is halved until it does: here the
// first tries to park all 200,000 jobs at once.
TEST_F(BreakerKeeperTest, ABatchTheStatementTimeoutCancelsIsHalvedUntilItFits) {
  constexpr int kBig = 200'000;
  Backlog(first_, kBig);
  DatabaseTimeouts timeouts;
  timeouts.statement_timeout_ms = 250;
  BreakerKeeper::Options options{WithSessionSettings(conninfo(), timeouts), {tier_}};
  options.backlog_batch = 1'000'000;
  BreakerKeeper keeper(options);
  keeper.RequestOpen("default", {first_, "5 failures in a row: HTTP 500"});
  ASSERT_TRUE(WaitFor("NOT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'available')",
                      std::chrono::seconds(60)))
      << Breaker(first_) << "; " << Jobs(first_, "available") << " jobs still available";
  EXPECT_EQ(Breaker(first_), "open 5 failures in a row: HTTP 500");
  EXPECT_EQ(Jobs(first_, "parked"), kBig);
  EXPECT_EQ(keeper.opened(), 1u);
}

}  // namespace
}  // namespace bulkhead
