// The ranges of bulkhead.jobs (migration 0021) and the leader's care of them (JobRangeKeeper),
// against real PostgreSQL: ranges added ahead of the ids, a range dropped whole with its keys
// once its jobs all finished before the retention, a range a live job holds pruned row by row,
// ids past the ranges kept in the default range, and a drop that gives way to an application's
// open transaction instead of holding its enqueues.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "delivery_test.h"
#include "fleet_store.h"
#include "job_range_keeper.h"
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
    return QueryValue<std::string>(db(),
                                   "SELECT c.relname::text FROM bulkhead.jobs j JOIN pg_class c "
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
  // The new range takes the storage options of the one before it, which migration 0021 copied
  // from jobs_first: the fillfactor of migration 0007, the autovacuum settings of 0003 and 0008.
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT array_to_string(reloptions, ',') FROM pg_class "
                                    "WHERE oid = 'bulkhead.jobs_from_11'::regclass"),
            QueryValue<std::string>(db(),
                                    "SELECT array_to_string(reloptions, ',') FROM pg_class "
                                    "WHERE oid = 'bulkhead.jobs_first'::regclass"));
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

}  // namespace
}  // namespace bulkhead
