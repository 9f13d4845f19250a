// The ranges of bulkhead.jobs (migration 0021) and the leader's care of them (JobRangeKeeper),
// against real PostgreSQL: ranges added ahead of the ids, a range dropped whole with its keys
// once its jobs all finished before the retention, a range a live job holds pruned row by row,
// ids past the ranges kept in the default range, and a drop that gives way to an application's
// open transaction instead of holding its enqueues; and two nodes delivering every job once while
// ranges are added and dropped beneath them.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "delivery_test.h"
#include "fleet_store.h"
#include "http_receiver.h"
#include "job_range_keeper.h"
#include "node_process.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::hours;
using std::chrono::steady_clock;
using testing::DeliveryTest;
using testing::QueryValue;

constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();

class JobRangesTest : public DeliveryTest {
 protected:
  void SetUp() override {
    DeliveryTest::SetUp();
    channel_ = testing::CreateChannel(db(), testing::CreateTenant(db(), "acme"));
    store_.emplace(db());
  }

  // The ranges as job_ranges() lists them: "name low-high", the default last.
  std::string Ranges() {
    return QueryValue<std::string>(
        db(),
        "SELECT string_agg(range_name || ' ' || coalesce(low::text, '') || '-' || "
        "coalesce(high::text, ''), ', ') FROM bulkhead.job_ranges()");
  }
  // Which range holds job `id`.
  std::string RangeOf(int64_t id) {
    return QueryValue<std::string>(
        db(),
        "SELECT c.relname::text FROM bulkhead.job_rows j JOIN pg_class c "
        "ON c.oid = j.tableoid WHERE j.id = " +
            std::to_string(id));
  }
  // One leader round, 1,000 hours after the last on the keeper's clock: the ids these tests
  // draw make a rate of nearly nothing, and each range is the least size, 10 ids.
  std::vector<IdInterval> Keep() {
    clock_ += std::chrono::hours(1000);
    return keeper_.Keep(*store_, clock_);
  }
  int64_t EnqueueKeyed(const std::string& key) {
    return QueryValue<int64_t>(
        db(), "SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{}', '" + key + "')");
  }
  void FinishLongAgo(const std::string& where) {
    Exec(
        "UPDATE bulkhead.jobs SET state = 'completed', attempt = 1, "
        "finished_at = now() - interval '8 days' WHERE " +
        where);
  }

  int64_t channel_ = 0;
  std::optional<FleetStore> store_;
  // Ranges of 10 ids, a week's retention.
  JobRangeKeeper keeper_{{.retention = hours(24 * 7), .min_range_ids = 10}};
  steady_clock::time_point clock_ = steady_clock::now();
};

TEST_F(JobRangesTest, TheLeaderAddsRangesAheadOfTheIdsAndNewJobsLandInThem) {
  EXPECT_EQ(Ranges(), "jobs_first -1, jobs_beyond -");
  Keep();
  EXPECT_EQ(Ranges(), "jobs_first -1, jobs_from_1 1-11, jobs_beyond -");
  // Nine ids left of ten: the next range is added.
  const int64_t first = EnqueueOne(channel_);
  EXPECT_EQ(RangeOf(first), "jobs_from_1");
  Keep();
  EXPECT_EQ(Ranges(), "jobs_first -1, jobs_from_1 1-11, jobs_from_11 11-21, jobs_beyond -");
  // Ten ids and more ahead: nothing is added.
  Keep();
  EXPECT_EQ(keeper_.added(), 2u);
  Enqueue(channel_, 12);
  EXPECT_EQ(RangeOf(13), "jobs_from_11");
  // The first new range takes jobs_first's storage options (the autovacuum settings of
  // migrations 0003 and 0008) with its fillfactor lowered from 90 (0007) to 50 (0022); the next
  // takes the one before it's as they are.
  auto options = [&](const std::string& range) {
    return QueryValue<std::string>(db(),
                                   "SELECT array_to_string(reloptions, ',') FROM pg_class "
                                   "WHERE oid = 'bulkhead." +
                                       range + "'::regclass");
  };
  std::string old = options("jobs_first");
  ASSERT_NE(old.find("fillfactor=90,"), std::string::npos) << old;
  old.replace(old.find("fillfactor=90,"), 14, "");
  EXPECT_EQ(options("jobs_from_1"), old + ",fillfactor=50");
  EXPECT_EQ(options("jobs_from_11"), options("jobs_from_1"));
}

// Migration 0022: a new range stores the payload and the attempt log last, so that the claim's
// and the result's row versions leave them out of the WAL. Nothing a query sees changes: the
// parent's columns keep their order, and a job written and read through it round-trips.
TEST_F(JobRangesTest, ANewRangeStoresThePayloadAndTheAttemptLogLastAndAFillfactorCarriesOn) {
  Keep();
  auto columns = [&](const std::string& table) {
    return QueryValue<std::string>(db(),
                                   "SELECT string_agg(attname, ',' ORDER BY attnum) "
                                   "FROM pg_attribute WHERE attrelid = 'bulkhead." +
                                       table + "'::regclass AND attnum > 0 AND NOT attisdropped");
  };
  const std::string parent = columns("jobs");
  std::string stored = "," + parent + ",";
  for (const std::string name : {",payload,", ",attempts,"}) {
    ASSERT_NE(stored.find(name), std::string::npos) << stored;
    stored.replace(stored.find(name), name.size(), ",");
  }
  EXPECT_EQ("," + columns("jobs_from_1") + ",", stored + "payload,attempts,");
  EXPECT_EQ(columns("jobs_first"), parent);

  const int64_t id = QueryValue<int64_t>(
      db(), "SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{\"n\": 7}')");
  ASSERT_EQ(RangeOf(id), "jobs_from_1");
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_at = now(), "
      "attempted_by = 'n1' WHERE id = " +
      std::to_string(id));
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT state || ' ' || payload::text || ' ' || attempts::text "
                                    "|| ' ' || attempted_by FROM bulkhead.jobs WHERE id = " +
                                        std::to_string(id)),
            "executing {\"n\": 7} [] n1");

  // An operator's fillfactor on the newest range carries on to the next.
  Exec("ALTER TABLE bulkhead.jobs_from_1 SET (fillfactor = 30)");
  Enqueue(channel_, 9);
  Keep();
  EXPECT_NE(QueryValue<std::string>(db(),
                                    "SELECT array_to_string(reloptions, ',') FROM pg_class "
                                    "WHERE oid = 'bulkhead.jobs_from_11'::regclass")
                .find("fillfactor=30"),
            std::string::npos);
}

TEST_F(JobRangesTest, ARangeWhoseJobsAllFinishedBeforeTheRetentionIsDroppedWithItsKeys) {
  Keep();  // 1-11
  for (int i = 1; i <= 10; ++i) EnqueueKeyed("k" + std::to_string(i));
  Keep();                                     // 11-21
  const int64_t kept = EnqueueKeyed("kept");  // 11
  Keep();
  FinishLongAgo("id <= 10");
  // A job finished yesterday in the next range: that range is not dropped, nor pruned.
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', attempt = 1, "
      "finished_at = now() - interval '1 day' WHERE id = " +
      std::to_string(kept));

  const std::vector<IdInterval> pruned = Keep();
  EXPECT_EQ(keeper_.dropped(), 1u);
  EXPECT_EQ(Ranges().find("jobs_from_1 "), std::string::npos) << Ranges();
  EXPECT_NE(Ranges().find("jobs_from_11 11-21"), std::string::npos) << Ranges();
  EXPECT_EQ(Count("true"), 1);
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(key, ',') FROM "
                                    "bulkhead.idempotency_keys"),
            "kept");
  // Row by row: jobs_first and the default range's ids only.
  EXPECT_EQ(pruned, (std::vector<IdInterval>{{kLowest, 1}, {31, kHighest}}));
  // The keys are free again, as after a prune.
  EXPECT_GT(EnqueueKeyed("k1"), kept);
  EXPECT_EQ(EnqueueKeyed("kept"), kept);
}

TEST_F(JobRangesTest, ARangeALiveJobHoldsIsPrunedRowByRowUntilItEmpties) {
  Keep();  // 1-11
  Enqueue(channel_, 10);
  Keep();  // 11-21
  EnqueueOne(channel_);
  FinishLongAgo("id <= 9");
  Exec("UPDATE bulkhead.jobs SET state = 'parked' WHERE id = 10");

  const std::vector<IdInterval> pruned = Keep();
  EXPECT_EQ(keeper_.dropped(), 0u);
  ASSERT_EQ(pruned.back(), (IdInterval{1, 11}));
  EXPECT_EQ(store_->PruneFinished(7LL * 24 * 3600 * 1000, 100, 1, 11), 9);
  EXPECT_EQ(Count("true"), 2);

  // Once the parked job finished, long enough ago, the range goes whole.
  FinishLongAgo("id = 10");
  Keep();
  EXPECT_EQ(keeper_.dropped(), 1u);
  EXPECT_EQ(Count("true"), 1);
}

TEST_F(JobRangesTest, IdsPastTheRangesLandInTheDefaultRangeAndTheNextRangeStartsAboveThem) {
  Enqueue(channel_, 5);  // no leader yet: the default range
  EXPECT_EQ(RangeOf(5), "jobs_beyond");
  Keep();
  // 1,000 ids above the highest (the least margin), so that the ids drawn meanwhile stay below.
  EXPECT_EQ(Ranges(), "jobs_first -1, jobs_from_1006 1006-1016, jobs_beyond -");
  FinishLongAgo("true");
  const std::vector<IdInterval> pruned = Keep();
  ASSERT_EQ(pruned.size(), 3u);
  int total = 0;
  for (const IdInterval& ids : pruned) {
    total += store_->PruneFinished(7LL * 24 * 3600 * 1000, 100, ids.low, ids.high);
  }
  EXPECT_EQ(total, 5);
}

// An application transaction that enqueued and stays open holds jobs; the drop's lock would
// queue every other statement on jobs behind it. So the drop gives up within its lock timeout,
// the round goes on, and the range goes at a later round.
TEST_F(JobRangesTest, ADropGivesWayToAnOpenApplicationTransaction) {
  Keep();  // 1-11
  Enqueue(channel_, 10);
  Keep();  // 11-21
  FinishLongAgo("id <= 10");

  pqxx::connection app(conninfo());
  pqxx::work open(app);
  open.exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{}')");
  Keep();
  EXPECT_EQ(keeper_.dropped(), 0u);
  open.commit();

  Keep();
  EXPECT_EQ(keeper_.dropped(), 1u);
  EXPECT_EQ(Count("true"), 1);
}

// The leader's rounds beside two nodes that claim and write results the whole time: ranges of
// 250 ids added ahead and each dropped as soon as its jobs are delivered (a retention of 1 ms),
// 30 rounds of 100 enqueues. Every job is delivered, once, whatever range it was in when the
// plans on jobs were made. The test holds the leadership itself, so the nodes' own leaders
// (ranges of 100,000, a week's retention) stay out of it.
TEST_F(JobRangesTest, TwoNodesDeliverEveryJobOnceWhileRangesComeAndGoBeneathThem) {
  testing::HttpReceiver receiver;
  Exec("UPDATE bulkhead.channels SET url = '" + receiver.Url("/hook") + "'");
  // A node with an hour's lease: the nodes depose a leader whose node has none.
  store_->RegisterNode("the-test", "localhost", 1, "test", {}, 3'600'000);
  ASSERT_TRUE(store_->TryLead("the-test"));
  JobRangeKeeper keeper({.retention = std::chrono::milliseconds(1), .min_range_ids = 250});
  const nlohmann::json tier = {{"workers", 20},           {"channel_share", 1},
                               {"tenant_share", 1},       {"failure_threshold", 1000},
                               {"slow_call_ms", 3600000}, {"request_timeout_ms", 10000},
                               {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
  testing::NodeProcess a(testing::TestNodeConfig("node-a"), {{"default", tier}});
  testing::NodeProcess b(testing::TestNodeConfig("node-b"), {{"default", tier}});
  a.Start(url());
  b.Start(url());
  constexpr int kRounds = 30, kPerRound = 100;
  keeper.Keep(*store_, clock_);  // the first range, from id 1
  for (int round = 0; round < kRounds; ++round) {
    Enqueue(channel_, kPerRound);
    clock_ += std::chrono::seconds(60);
    keeper.Keep(*store_, clock_);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(WaitFor("count(*) = 0 FROM bulkhead.jobs WHERE state <> 'completed'",
                      std::chrono::seconds(60)))
      << a.Log() << b.Log();
  clock_ += std::chrono::seconds(60);
  keeper.Keep(*store_, clock_);

  std::map<std::string, int> per_id;
  for (const testing::ReceivedRequest& r : receiver.Requests())
    ++per_id[r.headers.at("webhook-id")];
  EXPECT_EQ(per_id.size(), static_cast<size_t>(kRounds * kPerRound));
  int duplicates = 0;
  for (const auto& [id, n] : per_id) duplicates += n - 1;
  EXPECT_EQ(duplicates, 0);
  EXPECT_GE(keeper.added(), 10u);  // 3,000 ids in ranges of 250
  EXPECT_GE(keeper.dropped(), 8u);
  EXPECT_LT(Count("true"), kRounds * kPerRound) << "the dropped ranges' jobs are gone";
  a.Signal(SIGTERM);
  b.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(std::chrono::seconds(20)), 0) << a.Log();
  EXPECT_EQ(b.Wait(std::chrono::seconds(20)), 0) << b.Log();
}

}  // namespace
}  // namespace bulkhead
