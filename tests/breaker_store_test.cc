// The breaker's statements (the stores) against real PostgreSQL: parking and unparking in one
// statement, compare-and-set transitions, one probe per cooldown fleet-wide, the enqueue and
// claim paths behind an open breaker, pausing, and the parked reconciler.
#include <gtest/gtest.h>

#include <barrier>
#include <map>
#include <thread>
#include <vector>

#include "all_stores.h"
#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::AllStores;
using testing::DatabaseTest;
using testing::QueryValue;

class BreakerStoreTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    tenant_ = testing::CreateTenant(db(), "acme");
    channel_ = testing::CreateChannel(db(), tenant_);
    other_ = testing::CreateChannel(db(), tenant_);
  }

  void Exec(const std::string& sql) {
    pqxx::work tx(db());
    tx.exec(sql);
    tx.commit();
  }

  // Enqueues n deliveries to `channel` through the public API, in one transaction.
  void Enqueue(int64_t channel, int n, const std::string& scheduled_at = "now()") {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + std::to_string(channel) + ", '{}'::jsonb, NULL, " +
            scheduled_at + ") FROM generate_series(1, " + std::to_string(n) + ")");
    tx.commit();
  }

  int64_t Count(int64_t channel, const std::string& state, const std::string& extra = "") {
    return QueryValue<int64_t>(
        db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " + std::to_string(channel) +
                  " AND state = '" + state + "'" + extra);
  }

  std::string Breaker(int64_t channel) {
    return QueryValue<std::string>(
        db(), "SELECT breaker_state FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  // Moves the open breaker's probe time to the past: its cooldown is over.
  void CooldownOver(int64_t channel) {
    Exec("UPDATE bulkhead.channels SET breaker_probe_at = now() - interval '1 ms' WHERE id = " +
         std::to_string(channel));
  }

  int64_t tenant_ = 0;
  int64_t channel_ = 0;
  int64_t other_ = 0;
};

// A backlog within the batch moves with the state in one statement (ADR 0002, ADR 0017).
TEST_F(BreakerStoreTest, OpeningParksAWaitingBacklogWithinTheBatchInOneStatement) {
  Enqueue(channel_, 10000);
  Enqueue(channel_, 5, "now() + interval '1 hour'");  // retries waiting: parked too
  Enqueue(other_, 3);
  AllStores store(db());
  ASSERT_EQ(store.Claim("default", 2, "node-a").size(), 2u);  // in flight: stays executing
  Exec(
      "UPDATE bulkhead.jobs SET priority = 2 WHERE id IN (SELECT id FROM bulkhead.jobs "
      "WHERE state = 'available' ORDER BY id LIMIT 100)");  // priority 2 (an older version's
                                                            // demoted) parked too

  Exec("CREATE EXTENSION pg_stat_statements");
  auto counter = Connect();  // count only what the store's connection runs
  AllStores open_store(*counter);
  Exec("SELECT pg_stat_statements_reset()");
  BreakerTransition t = open_store.OpenBreaker(channel_, 30000, "5 failures in a row", 20000);
  // Exactly one statement ran besides BEGIN and COMMIT: the state change and the park together.
  EXPECT_EQ(
      QueryValue<std::string>(db(),
                              "SELECT string_agg(calls || ' ' || left(ltrim(query), 43), ' | ') "
                              "FROM pg_stat_statements WHERE query !~* '^(BEGIN|COMMIT)' "
                              "AND query NOT LIKE '%pg_stat_statements%'"),
      "1 WITH opened AS (\n  UPDATE bulkhead.channels");

  EXPECT_TRUE(t.done);
  EXPECT_EQ(t.jobs, 10000 + 5 - 2);
  EXPECT_EQ(Count(channel_, "parked"), 10003);
  EXPECT_EQ(Count(channel_, "parked", " AND priority = 3"), 10003);
  EXPECT_EQ(Count(channel_, "executing"), 2);
  EXPECT_EQ(Count(channel_, "available"), 0);
  EXPECT_EQ(Count(other_, "available"), 3);  // another channel's jobs are untouched
  EXPECT_EQ(Breaker(channel_), "open");
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT breaker_reason || ' ' || breaker_trips || ' ' || "
                                    "(breaker_probe_at - breaker_changed_at)::text "
                                    "FROM bulkhead.channels WHERE id = " +
                                        std::to_string(channel_)),
            "5 failures in a row 1 00:00:30");
}

// A backlog over the batch: the opening parks a batch, ParkBacklog the rest while the breaker
// stays open (waiting retries and priority 2 too), and nothing once the channel flows again;
// the close unparks a batch, UnparkBacklog the rest while the channel flows (ADR 0017).
TEST_F(BreakerStoreTest, ABacklogOverTheBatchMovesInBatchesWhileTheStateHolds) {
  Enqueue(channel_, 250);
  Enqueue(channel_, 5, "now() + interval '1 hour'");
  Enqueue(other_, 3);
  Exec(
      "UPDATE bulkhead.jobs SET priority = 2 WHERE id IN (SELECT id FROM bulkhead.jobs "
      "WHERE state = 'available' ORDER BY id LIMIT 10)");
  AllStores store(db());
  BreakerTransition t = store.OpenBreaker(channel_, 30000, "5 failures in a row", 100);
  EXPECT_TRUE(t.done);
  EXPECT_EQ(t.jobs, 100);
  EXPECT_EQ(Count(channel_, "available"), 155);
  EXPECT_EQ(store.ParkBacklog(channel_, 100), 100);
  EXPECT_EQ(store.ParkBacklog(channel_, 100), 55);
  EXPECT_EQ(store.ParkBacklog(channel_, 100), 0);
  EXPECT_EQ(Count(channel_, "parked", " AND priority = 3"), 255);
  EXPECT_EQ(Count(other_, "available"), 3);
  EXPECT_EQ(store.UnparkBacklog(channel_, 100), 0);  // still open: the backlog stays parked

  // Half-open with a probe that answered: the close returns a batch, UnparkBacklog the rest.
  const int64_t probe = QueryValue<int64_t>(
      db(), "SELECT min(id) FROM bulkhead.jobs WHERE channel_id = " + std::to_string(channel_));
  Exec("UPDATE bulkhead.channels SET breaker_state = 'half_open', breaker_probe_job = " +
       std::to_string(probe) + " WHERE id = " + std::to_string(channel_));
  EXPECT_EQ(store.ParkBacklog(channel_, 100), 0);  // nothing available to park meanwhile
  t = store.CloseBreaker(channel_, probe, 100);
  EXPECT_TRUE(t.done);
  EXPECT_EQ(t.jobs, 100);
  EXPECT_EQ(store.ParkBacklog(channel_, 100), 0);  // closed: what came back stays available
  EXPECT_EQ(store.UnparkBacklog(channel_, 100), 100);
  EXPECT_EQ(store.UnparkBacklog(channel_, 100), 55);
  EXPECT_EQ(store.UnparkBacklog(channel_, 100), 0);
  EXPECT_EQ(Count(channel_, "available"), 255);
  EXPECT_EQ(Breaker(channel_), "closed");
}

// Issue 16.6, migration 0005: the payload's rule runs when a payload is written, not on every
// update of its job. Before it, PostgreSQL evaluated the table's CHECK on the payload for each
// row a park or an unpark moved, fetching every out-of-line payload from TOAST: half the time of
// parking 100,000 jobs with 4 KB payloads (load/park_bench.sh, ADR 0010).
TEST_F(BreakerStoreTest, ParkingAndUnparkingReadNoPayload) {
  // 8 KB of hex each, which PostgreSQL cannot compress enough: stored out of line.
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) +
       ", jsonb_build_object('n', i, 'data', (SELECT string_agg(md5(i || '.' || k), '') "
       "FROM generate_series(1, 250) AS k))) FROM generate_series(1, 40) AS i");
  // Every range's (migration 0021): a partitioned table has no TOAST of its own.
  const std::string ranges =
      "SELECT relid FROM pg_partition_tree('bulkhead.job_rows') WHERE isleaf";
  ASSERT_GT(QueryValue<int64_t>(db(),
                                "SELECT sum(pg_relation_size(reltoastrelid))::bigint FROM pg_class "
                                "WHERE oid IN (" +
                                    ranges + ")"),
            0);
  // The jobs table's TOAST blocks read by this connection so far (hits and reads): its
  // statistics flushed first, as when it goes idle after the call that forces the next flush.
  auto toast_blocks = [&] {
    QueryValue<std::string>(db(), "SELECT pg_stat_force_next_flush()::text");
    return QueryValue<int64_t>(
        db(),
        "SELECT coalesce(sum(coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0)), 0)"
        "::bigint FROM pg_statio_user_tables WHERE relid IN (" +
            ranges + ")");
  };
  AllStores store(db());

  int64_t before = toast_blocks();
  ASSERT_EQ(store.OpenBreaker(channel_, 30000, "x").jobs, 40);
  EXPECT_EQ(toast_blocks() - before, 0) << "parking read payloads";

  before = toast_blocks();
  ASSERT_EQ(store.ResetBreaker(channel_)->jobs, 40);
  EXPECT_EQ(toast_blocks() - before, 0) << "unparking read payloads";

  // The count does see payloads being read: the claim reads each one it hands out.
  before = toast_blocks();
  ASSERT_EQ(store.Claim("default", 5, "node-a").size(), 5u);
  EXPECT_GT(toast_blocks() - before, 0);
}

TEST_F(BreakerStoreTest, OnlyOneOfTwoNodesOpensTheBreaker) {
  Enqueue(channel_, 50);
  auto other = Connect();
  AllStores a(db()), b(*other);
  BreakerTransition first, second;
  std::thread t([&] { first = a.OpenBreaker(channel_, 30000, "a"); });
  second = b.OpenBreaker(channel_, 30000, "b");
  t.join();
  EXPECT_NE(first.done, second.done);
  EXPECT_EQ(first.jobs + second.jobs, 50);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT breaker_trips FROM bulkhead.channels WHERE id = " +
                                      std::to_string(channel_)),
            1);
}

TEST_F(BreakerStoreTest, OpeningNotifiesTheFleet) {
  auto listener = Connect();
  std::vector<std::string> payloads;
  struct Receiver : pqxx::notification_receiver {
    Receiver(pqxx::connection_base& c, std::vector<std::string>& out)
        : pqxx::notification_receiver(c, "bulkhead_breakers"), out_(out) {}
    void operator()(const std::string& payload, int) override { out_.push_back(payload); }
    std::vector<std::string>& out_;
  } receiver(*listener, payloads);
  AllStores store(db());
  store.OpenBreaker(channel_, 30000, "x");
  store.OpenBreaker(channel_, 30000, "x");  // not made twice, not announced twice
  listener->await_notification(5, 0);
  listener->get_notifs();
  EXPECT_EQ(payloads, std::vector<std::string>{std::to_string(channel_) + " open"});
}

TEST_F(BreakerStoreTest, WhileOpenEnqueueInsertsParkedAndClaimTakesNothing) {
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  Enqueue(channel_, 20);
  Enqueue(other_, 2);
  EXPECT_EQ(Count(channel_, "parked", " AND priority = 3 AND attempt = 0"), 20);
  auto jobs = store.Claim("default", 100, "node-a");
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& job : jobs) EXPECT_EQ(job.channel_id, other_);
}

TEST_F(BreakerStoreTest, AClaimParksAJobThatSlippedInAsAvailableBehindAnOpenBreaker) {
  // The race the claim closes: an enqueue that read the breaker closed commits after the park.
  Enqueue(channel_, 3);
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_at = now() + "
      "interval '30 s' WHERE id = " +
      std::to_string(channel_));
  AllStores store(db());
  int parked = -1;
  EXPECT_TRUE(store.Claim("default", 10, "node-a", &parked).empty());
  EXPECT_EQ(parked, 3);
  EXPECT_EQ(Count(channel_, "parked", " AND priority = 3 AND attempt = 0"), 3);
}

TEST_F(BreakerStoreTest, JobsThatSlippedInBehindAnOpenBreakerAreParkedWithoutAClaim) {
  Enqueue(channel_, 4);
  Enqueue(other_, 2);
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_at = now() + "
      "interval '30 s' WHERE id = " +
      std::to_string(channel_));
  AllStores store(db());
  EXPECT_EQ(store.ParkBehindOpenBreakers(), (std::pair<int64_t, int64_t>{4, 1}));
  EXPECT_EQ(Count(channel_, "parked", " AND priority = 3 AND attempt = 0"), 4);
  EXPECT_EQ(Count(other_, "available"), 2);
  EXPECT_EQ(store.ParkBehindOpenBreakers(), (std::pair<int64_t, int64_t>{0, 0}));
}

TEST_F(BreakerStoreTest, AFailedAttemptOfAnOpenChannelIsParkedWithoutMoreAttempts) {
  Enqueue(channel_, 2);
  AllStores store(db());
  auto jobs = store.Claim("default", 2, "node-a");
  ASSERT_EQ(jobs.size(), 2u);
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  // The two in flight end: one fails (its own attempt spent, then parked), one succeeds.
  EXPECT_EQ(store.Record({{jobs[0].id, 1, false, 0, "timeout: x", 10000, 5000},
                          {jobs[1].id, 1, true, 200, "", 20, 0}},
                         "node-a"),
            2);
  EXPECT_EQ(Count(channel_, "parked", " AND attempt = 1 AND priority = 3"), 1);
  EXPECT_EQ(Count(channel_, "completed"), 1);
}

// Two nodes look for probes at the same moment, round after round: two sessions on two
// connections, two threads released together by a barrier. Every round, each of the cooled-
// down channels gets exactly one probe between them, never two and never none.
TEST_F(BreakerStoreTest, OneProbeFleetWideAfterTheCooldown) {
  constexpr int kRounds = 50;
  std::vector<int64_t> channels = {channel_, other_};
  while (channels.size() < 6) channels.push_back(testing::CreateChannel(db(), tenant_));
  std::string ids;
  for (int64_t channel : channels) ids += (ids.empty() ? "" : ", ") + std::to_string(channel);

  auto conn_a = Connect();
  auto conn_b = Connect();
  AllStores a(*conn_a);
  AllStores b(*conn_b);
  for (int64_t channel : channels) {
    Enqueue(channel, 3);
    ASSERT_TRUE(a.OpenBreaker(channel, 30000, "x").done);
  }
  EXPECT_TRUE(a.ClaimProbes("default", 10, "node-a", 15000).empty());  // cooling down

  int split = 0;  // rounds in which both sessions got some of the probes
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Every channel open, cooled down, with three parked jobs (an enqueue behind an open
    // breaker inserts them parked).
    Exec("DELETE FROM bulkhead.jobs");
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_job = NULL, "
        "breaker_probe_at = now() - interval '1 ms' WHERE id IN (" +
        ids + ")");
    for (int64_t channel : channels) Enqueue(channel, 3);
    ASSERT_EQ(QueryValue<int64_t>(db(),
                                  "SELECT count(*) FROM bulkhead.jobs WHERE state = "
                                  "'parked'"),
              static_cast<int64_t>(3 * channels.size()));

    std::barrier start(2);
    std::vector<ClaimedJob> probes_a, probes_b;
    std::thread ta([&] {
      start.arrive_and_wait();
      probes_a = a.ClaimProbes("default", 10, "node-a", 15000);
    });
    std::thread tb([&] {
      start.arrive_and_wait();
      probes_b = b.ClaimProbes("default", 10, "node-b", 15000);
    });
    ta.join();
    tb.join();
    split += !probes_a.empty() && !probes_b.empty();

    std::map<int64_t, int> per_channel;
    for (const auto* probes : {&probes_a, &probes_b}) {
      for (const ClaimedJob& probe : *probes) {
        ++per_channel[probe.channel_id];
        EXPECT_TRUE(probe.probe);
        EXPECT_EQ(probe.attempt, 1);
        // The channel's oldest parked job.
        EXPECT_EQ(probe.id, QueryValue<int64_t>(db(),
                                                "SELECT min(id) FROM bulkhead.jobs WHERE "
                                                "channel_id = " +
                                                    std::to_string(probe.channel_id)));
      }
    }
    for (int64_t channel : channels) EXPECT_EQ(per_channel[channel], 1) << "channel " << channel;
    EXPECT_EQ(per_channel.size(), channels.size());
    EXPECT_EQ(QueryValue<int64_t>(db(),
                                  "SELECT count(*) FROM bulkhead.channels WHERE "
                                  "breaker_state = 'half_open' AND id IN (" +
                                      ids + ")"),
              static_cast<int64_t>(channels.size()));
    EXPECT_EQ(QueryValue<int64_t>(db(),
                                  "SELECT count(*) FROM bulkhead.jobs WHERE state = "
                                  "'executing'"),
              static_cast<int64_t>(channels.size()));
    if (::testing::Test::HasFailure()) break;  // one round's failures say it all
  }
  // How often the two really interleaved, for whoever reads the run (not asserted: a loaded
  // machine may serialise them).
  RecordProperty("rounds_split_between_sessions", split);
  // Still half-open: no second probe, however often nodes look.
  EXPECT_TRUE(a.ClaimProbes("default", 10, "node-a", 15000).empty());
  EXPECT_TRUE(b.ClaimProbes("default", 10, "node-b", 15000).empty());
}

TEST_F(BreakerStoreTest, AnOpenChannelWithNothingParkedWaitsForADeliveryToProbeWith) {
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);
  EXPECT_TRUE(store.ClaimProbes("default", 5, "node-a", 15000).empty());
  EXPECT_EQ(Breaker(channel_), "open");
  Enqueue(channel_, 1);
  EXPECT_EQ(store.ClaimProbes("default", 5, "node-a", 15000).size(), 1u);
}

TEST_F(BreakerStoreTest, AProbeIsClaimedWhileAnotherSessionsEnqueueToTheChannelIsOpen) {
  // Issue 17.3: every enqueue holds FOR KEY SHARE on its channel's row until it commits (the
  // jobs → channels foreign key), so a busy channel always has some. The probe's lock on the
  // channel must not conflict with it, or SKIP LOCKED skips the channel nearly every time.
  Enqueue(channel_, 1);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);
  auto application = Connect();
  pqxx::work enqueuing(*application);
  enqueuing.exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{}'::jsonb)");

  auto probes = store.ClaimProbes("default", 5, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].channel_id, channel_);
  EXPECT_EQ(Breaker(channel_), "half_open");
  enqueuing.commit();  // and the enqueue is not held up by the probe either
  EXPECT_EQ(Count(channel_, "parked"), 1);
}

TEST_F(BreakerStoreTest, ChannelsWhoseParkedJobsAreNotDueDoNotHoldUpAnotherChannelsProbe) {
  // Issue 17.5: the probe scan takes at most `limit` channels; ones that have nothing due to
  // probe with (their parked jobs are retries hours away) must not be among them.
  AllStores store(db());
  std::vector<int64_t> waiting;
  for (int i = 0; i < 3; ++i) {
    int64_t ch = testing::CreateChannel(db(), tenant_);
    Enqueue(ch, 1, "now() + interval '2 hours'");
    ASSERT_TRUE(store.OpenBreaker(ch, 30000, "x").done);
    Exec("UPDATE bulkhead.channels SET breaker_probe_at = now() - interval '1 hour' WHERE id = " +
         std::to_string(ch));  // cooled down long before channel_
    waiting.push_back(ch);
  }
  Enqueue(channel_, 1);
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);

  auto probes = store.ClaimProbes("default", 2, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].channel_id, channel_);
  for (int64_t ch : waiting) EXPECT_EQ(Breaker(ch), "open");
}

TEST_F(BreakerStoreTest, ASuccessfulProbeClosesAndUnparksEverythingExactlyOnce) {
  Enqueue(channel_, 1000);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);
  auto probes = store.ClaimProbes("default", 1, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  Enqueue(other_, 5);  // another channel's fresh work

  BreakerTransition t = store.CloseBreaker(channel_, probes[0].id);
  EXPECT_TRUE(t.done);
  EXPECT_EQ(t.jobs, 999);
  EXPECT_EQ(Breaker(channel_), "closed");
  EXPECT_EQ(Count(channel_, "available", " AND priority = 3"), 999);
  EXPECT_EQ(Count(channel_, "parked"), 0);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT breaker_trips FROM bulkhead.channels WHERE id = " +
                                      std::to_string(channel_)),
            0);
  // A repeated answer (or one for another probe) changes nothing.
  EXPECT_FALSE(store.CloseBreaker(channel_, probes[0].id).done);
  // Fresh deliveries of other channels are claimed before the unparked backlog.
  auto next = store.Claim("default", 5, "node-a");
  ASSERT_EQ(next.size(), 5u);
  for (const auto& job : next) EXPECT_EQ(job.channel_id, other_);
}

TEST_F(BreakerStoreTest, AFailedProbeReopensWithACooldownThatDoublesUpToTheCap) {
  Enqueue(channel_, 10);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  auto cooldown = [&] {
    return QueryValue<std::string>(
        db(),
        "SELECT (breaker_probe_at - breaker_changed_at)::text FROM bulkhead.channels "
        "WHERE id = " +
            std::to_string(channel_));
  };
  std::vector<std::string> cooldowns;
  for (int round = 0; round < 6; ++round) {
    CooldownOver(channel_);
    auto probes = store.ClaimProbes("default", 1, "node-a", 15000);
    ASSERT_EQ(probes.size(), 1u) << round;
    // Its failure is recorded (parked again), then the breaker re-opens.
    ASSERT_EQ(
        store.Record({{probes[0].id, probes[0].attempt, false, 503, "HTTP 503", 5, 0}}, "node-a"),
        1);
    ASSERT_TRUE(store.ReopenBreaker(channel_, probes[0].id, 30000, 600000, "probe failed").done);
    EXPECT_EQ(Breaker(channel_), "open");
    cooldowns.push_back(cooldown());
  }
  EXPECT_EQ(cooldowns, (std::vector<std::string>{"00:01:00", "00:02:00", "00:04:00", "00:08:00",
                                                 "00:10:00", "00:10:00"}));
  EXPECT_EQ(Count(channel_, "parked"), 10);  // nothing lost, nothing left available
}

TEST_F(BreakerStoreTest, AProbeThatNeverAnswersExpiresAndTheBreakerReopens) {
  Enqueue(channel_, 3);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);
  auto probes = store.ClaimProbes("default", 1, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(store.ExpireProbes("default", 30000, 600000), 0);  // its time is not up
  Exec("UPDATE bulkhead.channels SET breaker_probe_at = now() - interval '1 ms' WHERE id = " +
       std::to_string(channel_));
  EXPECT_EQ(store.ExpireProbes("bulk", 30000, 600000), 0);  // another tier's node
  EXPECT_EQ(store.ExpireProbes("default", 30000, 600000), 1);
  EXPECT_EQ(Breaker(channel_), "open");
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT breaker_reason FROM bulkhead.channels WHERE "
                                    "id = " +
                                        std::to_string(channel_)),
            "probe job " + std::to_string(probes[0].id) + " got no answer in time");
  // The late answer of the lost probe moves nothing.
  EXPECT_FALSE(store.CloseBreaker(channel_, probes[0].id).done);
  EXPECT_EQ(Breaker(channel_), "open");
}

TEST_F(BreakerStoreTest, TheReconcilerUnparksJobsStrandedBehindAClosedBreaker) {
  Enqueue(channel_, 40);
  Enqueue(other_, 7);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  ASSERT_TRUE(store.OpenBreaker(other_, 30000, "x").done);
  // A half-done transition: an operator closed the first breaker by hand in SQL.
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'closed', breaker_probe_at = NULL "
      "WHERE id = " +
      std::to_string(channel_));
  auto [jobs, channels] = store.ReconcileParked();
  EXPECT_EQ(jobs, 40);
  EXPECT_EQ(channels, 1);
  EXPECT_EQ(Count(channel_, "available", " AND priority = 3"), 40);
  EXPECT_EQ(Count(other_, "parked"), 7);  // still behind its open breaker
  EXPECT_EQ(store.ReconcileParked(), (std::pair<int64_t, int64_t>{0, 0}));
}

TEST_F(BreakerStoreTest, PausingParksAndResumingUnparksUnlessTheBreakerIsOpen) {
  Enqueue(channel_, 12);
  AllStores store(db());
  auto paused = store.PauseChannel(channel_);
  ASSERT_TRUE(paused);
  EXPECT_EQ(paused->before, "running");
  EXPECT_EQ(paused->jobs, 12);
  Enqueue(channel_, 3);
  EXPECT_EQ(Count(channel_, "parked"), 15);
  EXPECT_EQ(store.ReconcileParked().first, 0);  // paused: not stranded
  EXPECT_EQ(store.PauseChannel(channel_)->before, "paused");

  auto resumed = store.ResumeChannel(channel_);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->before, "paused");
  EXPECT_EQ(resumed->jobs, 15);
  EXPECT_EQ(Count(channel_, "available"), 15);

  ASSERT_TRUE(store.PauseChannel(channel_));
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  EXPECT_EQ(store.ResumeChannel(channel_)->jobs, 0);  // the open breaker keeps them parked
  EXPECT_EQ(Count(channel_, "parked"), 15);
  EXPECT_FALSE(store.PauseChannel(999999));
  EXPECT_FALSE(store.ResumeChannel(999999));
}

TEST_F(BreakerStoreTest, AResetClosesFromAnyStateAndUnparks) {
  Enqueue(channel_, 8);
  AllStores store(db());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "x").done);
  CooldownOver(channel_);
  auto probes = store.ClaimProbes("default", 1, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  auto reset = store.ResetBreaker(channel_);
  ASSERT_TRUE(reset);
  EXPECT_EQ(reset->before, "half_open");
  EXPECT_EQ(reset->jobs, 7);
  EXPECT_EQ(Breaker(channel_), "closed");
  EXPECT_FALSE(store.ReopenBreaker(channel_, probes[0].id, 30000, 600000, "late").done);
  EXPECT_FALSE(store.ResetBreaker(999999));
}

TEST_F(BreakerStoreTest, AJobHandedBackAfterATierMoveWaitsInTheNewTiersQueue) {
  // Issue 17.9: `tenant set-tier` moves only waiting jobs; one in flight must follow its tenant
  // when it comes back, as a rescued or retried one does, or the new tier's nodes never see it.
  Enqueue(channel_, 1);
  AllStores store(db());
  auto jobs = store.Claim("default", 1, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_TRUE(store.SetTenantTier("acme", "bulk"));
  EXPECT_EQ(store.HandBack({{jobs[0].id, jobs[0].attempt}}, "node-a"), 1);
  EXPECT_EQ(Count(channel_, "available", " AND queue = 'bulk' AND attempt = 0"), 1);
  EXPECT_TRUE(store.Claim("default", 1, "node-a").empty());
  EXPECT_EQ(store.Claim("bulk", 1, "node-b").size(), 1u);
}

TEST_F(BreakerStoreTest, AJobParkedByA410AfterATierMoveWaitsInTheNewTiersQueue) {
  Enqueue(channel_, 1);
  AllStores store(db());
  auto jobs = store.Claim("default", 1, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_TRUE(store.SetTenantTier("acme", "bulk"));
  GoneOutcome gone =
      store.DisableGone({channel_, jobs[0].id, jobs[0].attempt, "HTTP 410", 5.0}, "node-a");
  EXPECT_TRUE(gone.disabled);
  EXPECT_EQ(gone.jobs, 1);
  EXPECT_EQ(Count(channel_, "parked", " AND queue = 'bulk' AND attempt = 0"), 1);
}

TEST_F(BreakerStoreTest, ResumingADisabledChannelLeavesItPausedAndItsBacklogParked) {
  Enqueue(channel_, 4);
  AllStores store(db());
  ASSERT_TRUE(store.DisableChannel(channel_, "ops: retired"));
  auto resumed = store.ResumeChannel(channel_);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->before, "disabled");
  EXPECT_EQ(resumed->jobs, 4);  // held, not unparked
  EXPECT_EQ(resumed->reason, "ops: retired");
  EXPECT_EQ(Count(channel_, "parked"), 4);
  EXPECT_TRUE(store.Claim("default", 10, "node-a").empty());
}

TEST_F(BreakerStoreTest, NoJobOfADisabledChannelIsClaimedEvenIfItIsNotPaused) {
  // A disabled channel that is not paused: what `channel resume` left before issue 17.9 was
  // fixed, and what a hand-edited row can be. Its jobs are parked, not sent, and stay parked.
  Enqueue(channel_, 3);
  Enqueue(other_, 1);
  Exec("UPDATE bulkhead.channels SET enabled = false, disabled_reason = 'x' WHERE id = " +
       std::to_string(channel_));
  AllStores store(db());
  int parked = -1;
  auto jobs = store.Claim("default", 10, "node-a", &parked);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].channel_id, other_);
  EXPECT_EQ(parked, 3);
  EXPECT_EQ(store.ReconcileParked().first, 0);
  EXPECT_EQ(Count(channel_, "parked"), 3);
}

TEST_F(BreakerStoreTest, ListBreakersShowsTheBrokenAndThePaused) {
  Enqueue(channel_, 4);
  AllStores store(db());
  EXPECT_TRUE(store.ListBreakers().empty());
  ASSERT_TRUE(store.OpenBreaker(channel_, 30000, "5 failures in a row").done);
  ASSERT_TRUE(store.PauseChannel(other_));
  auto rows = store.ListBreakers();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].channel, channel_);
  EXPECT_EQ(rows[0].state, "open");
  EXPECT_EQ(rows[0].tenant, "acme");
  EXPECT_EQ(rows[0].tier, "default");
  EXPECT_EQ(rows[0].trips, 1);
  EXPECT_EQ(rows[0].parked, 4);
  EXPECT_EQ(rows[0].reason, "5 failures in a row");
  EXPECT_GT(rows[0].probe_in_s, 29.0);
  EXPECT_EQ(rows[1].channel, other_);
  EXPECT_EQ(rows[1].state, "closed");
  EXPECT_TRUE(rows[1].paused);
}

}  // namespace
}  // namespace bulkhead
