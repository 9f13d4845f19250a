// The completion writer against real PostgreSQL: a result the database refuses (or that cannot
// even be encoded) is isolated by halving its batch and quarantined, so the results around it
// are written and later ones keep flowing; a writer whose writes keep failing says it is not
// making progress.
#include "completion_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "all_stores.h"
#include "completion_store.h"
#include "database_test.h"
#include "metrics.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::AllStores;
using testing::DatabaseTest;
using testing::QueryValue;

class CompletionWriterTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    channel_ = testing::CreateChannel(db(), testing::CreateTenant(db(), "acme"));
  }

  // Enqueues `n` deliveries and claims them for node-a: jobs the writer may finish.
  std::vector<ClaimedJob> Claimed(int n) {
    Exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) +
         ", '{}'::jsonb) FROM generate_series(1, " + std::to_string(n) + ")");
    AllStores store(db());
    return store.Claim("default", n, "node-a");
  }

  static AttemptResult Delivered(const ClaimedJob& job) {
    AttemptResult r;
    r.id = job.id;
    r.attempt = job.attempt;
    r.delivered = true;
    r.status = 204;
    r.duration_ms = 3;
    return r;
  }

  static AttemptResult Failed(const ClaimedJob& job, std::string error) {
    AttemptResult r;
    r.id = job.id;
    r.attempt = job.attempt;
    r.error = std::move(error);
    r.duration_ms = 3;
    r.retry_delay_ms = 60000;
    return r;
  }

  int64_t Count(const std::string& where) {
    return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE " + where);
  }

  CompletionWriter::Options WriterOptions() {
    CompletionWriter::Options options;
    options.database = conninfo();
    options.node = "node-a";
    options.batch_size = 500;
    options.flush_interval = std::chrono::milliseconds(5);
    return options;
  }

  int64_t channel_ = 0;
};

// curl's error buffer may hold bytes that are not UTF-8: the batch cannot be encoded. Before
// the fix the whole batch went back to the front and was retried for ever, and every later
// result waited behind it.
TEST_F(CompletionWriterTest, AResultWithInvalidUtf8IsQuarantinedAndTheOthersAreWritten) {
  std::vector<ClaimedJob> jobs = Claimed(40);
  ASSERT_EQ(jobs.size(), 40u);
  CompletionWriter writer(WriterOptions());
  for (size_t i = 0; i < jobs.size(); ++i) {
    writer.Add(i == 17 ? Failed(jobs[i], "tls: bad record \xff\xfe from peer")
                       : Delivered(jobs[i]));
  }
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));
  EXPECT_EQ(Count("state = 'completed'"), 39);
  // The poisoned attempt is not lost: its job got its retry, with the text made storable.
  EXPECT_EQ(Count("id = " + std::to_string(jobs[17].id) +
                  " AND state = 'available' AND last_error LIKE 'tls: bad record % from peer%'"),
            1);
  EXPECT_EQ(writer.quarantined(), 1u);

  // Later results are not stuck behind it.
  std::vector<ClaimedJob> more = Claimed(3);
  for (const auto& job : more) writer.Add(Delivered(job));
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));
  EXPECT_EQ(Count("state = 'completed'"), 42);
}

// A NUL byte encodes (as \u0000) but PostgreSQL refuses it as text (SQLSTATE 22P05): a statement
// failure on the data, not the connection's.
TEST_F(CompletionWriterTest, AResultThePostgresRefusesIsIsolatedByHalvingTheBatch) {
  std::vector<ClaimedJob> jobs = Claimed(100);
  ASSERT_EQ(jobs.size(), 100u);
  CompletionWriter writer(WriterOptions());
  for (size_t i = 0; i < jobs.size(); ++i) {
    writer.Add(i == 3 || i == 70 ? Failed(jobs[i], std::string("reset\0by peer", 13))
                                 : Delivered(jobs[i]));
  }
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));
  EXPECT_EQ(Count("state = 'completed'"), 98);
  EXPECT_EQ(Count("state = 'available' AND last_error IS NOT NULL"), 2);
  EXPECT_EQ(Count("state = 'executing'"), 0);
  EXPECT_EQ(writer.quarantined(), 2u);
}

// A result refused even with a storable error text (here a retry delay past what an interval
// holds: 22008) is dropped: its job stays executing, to be handed back or rescued, and the
// results around it are written.
TEST_F(CompletionWriterTest, AResultRefusedEvenWithAStorableTextIsDroppedAndCounted) {
  std::vector<ClaimedJob> jobs = Claimed(10);
  Metrics metrics("test");
  CompletionWriter::Options options = WriterOptions();
  options.metrics = &metrics;
  CompletionWriter writer(options);
  for (size_t i = 0; i < jobs.size(); ++i) {
    AttemptResult r = Delivered(jobs[i]);
    if (i == 5) {
      r = Failed(jobs[i], "HTTP 503");
      r.retry_delay_ms = std::numeric_limits<int64_t>::max();
    }
    writer.Add(r);
  }
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));
  EXPECT_EQ(Count("state = 'completed'"), 9);
  EXPECT_EQ(Count("id = " + std::to_string(jobs[5].id) + " AND state = 'executing'"), 1);
  EXPECT_EQ(writer.quarantined(), 1u);
  std::string scrape = metrics.Scrape();
  EXPECT_NE(scrape.find(R"(bulkhead_quarantined_total{outcome="dropped",writer="completion"} 1)"),
            std::string::npos)
      << scrape;
  EXPECT_NE(scrape.find(R"(bulkhead_quarantined_total{outcome="recorded",writer="completion"} 0)"),
            std::string::npos);
}

// A database that refuses every write (here a trigger) is not the data's fault: the writer keeps
// the results and retries, and says it is not making progress, which /readyz reports.
TEST_F(CompletionWriterTest, AWriterWhoseWritesKeepFailingSaysItIsNotMakingProgress) {
  std::vector<ClaimedJob> jobs = Claimed(5);
  Exec(
      "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
      "$$BEGIN RAISE EXCEPTION 'writes refused'; END$$; "
      "CREATE TRIGGER refuse BEFORE UPDATE ON bulkhead.job_rows FOR EACH ROW EXECUTE FUNCTION "
      "refuse()");
  CompletionWriter::Options options = WriterOptions();
  options.stalled_after = std::chrono::milliseconds(300);
  CompletionWriter writer(options);
  EXPECT_FALSE(writer.progress().stalled);  // nothing waiting
  for (const auto& job : jobs) writer.Add(Delivered(job));
  EXPECT_FALSE(writer.progress().stalled);  // waiting, but not for long
  EXPECT_FALSE(writer.Drain(std::chrono::milliseconds(600)));
  CompletionWriter::Progress p = writer.progress();
  EXPECT_TRUE(p.stalled);
  EXPECT_EQ(p.waiting, 5u);
  EXPECT_GE(p.since_write, std::chrono::milliseconds(300));
  EXPECT_EQ(p.Describe().rfind("completion writer: 5 results waiting, none written for ", 0), 0u)
      << p.Describe();
  EXPECT_EQ(writer.quarantined(), 0u);  // none of them was set aside

  // The writes are let through by the trigger's function, not by dropping the trigger: DROP
  // TRIGGER locks jobs and each of its ranges, in an order the writer's retry, locking the same
  // relations in its plan's order, can meet the other way round; PostgreSQL then cancelled the
  // DROP as a deadlock (the ASan build, 2026-12-07). Replacing a function locks no table, and
  // plpgsql reads the new body at the trigger's next call.
  Exec(
      "CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
      "$$BEGIN RETURN NEW; END$$");
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));  // kept, and written once it could be
  EXPECT_EQ(Count("state = 'completed'"), 5);
  EXPECT_FALSE(writer.progress().stalled);
}

TEST(CompletionWriterStall, TheDefaultIsAThousandFlushesButNoLessThanFiveSeconds) {
  EXPECT_EQ(CompletionWriter::DefaultStalledAfter(std::chrono::milliseconds(5)),
            std::chrono::seconds(5));
  EXPECT_EQ(CompletionWriter::DefaultStalledAfter(std::chrono::milliseconds(20)),
            std::chrono::seconds(20));
}

// Issue 16.7: what a crash repeats is bounded by what the writer holds unwritten. Claims wait
// once one batch's worth of results is waiting or being written, not 20 batches' worth (10,000
// at the defaults; one crash run repeated 726 deliveries). The rows are locked by another
// session, so no write can finish while the test counts.
TEST_F(CompletionWriterTest, ClaimsWaitOnceOneBatchOfResultsIsUnwritten) {
  std::vector<ClaimedJob> jobs = Claimed(10);
  ASSERT_EQ(jobs.size(), 10u);
  auto locker = Connect();
  pqxx::work lock(*locker);
  lock.exec("SELECT id FROM bulkhead.jobs FOR UPDATE");
  CompletionWriter::Options options = WriterOptions();
  options.batch_size = 10;
  CompletionWriter writer(options);
  for (size_t i = 0; i + 1 < jobs.size(); ++i) writer.Add(Delivered(jobs[i]));
  EXPECT_FALSE(writer.Saturated()) << "9 results unwritten, below one batch of 10";
  writer.Add(Delivered(jobs.back()));
  EXPECT_TRUE(writer.Saturated()) << "10 results unwritten, waiting or being written";
  lock.abort();
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(10)));
  EXPECT_FALSE(writer.Saturated());
  EXPECT_EQ(Count("state = 'completed'"), 10);
}

// The result write is planned once for the connection, not at every batch. Under
// plan_cache_mode = auto, statistics that had seen the node's executing rows (an autovacuum's
// ANALYZE during a drain) kept PostgreSQL making a custom plan for every write: 3,195 plans in
// 3,541 writes of an 8-node drain (load/pool_bench.sh, POOL_BENCH_STATEMENTS=1), at 0.3-0.5 ms
// each. Its shape does not depend on the batch (ADR 0016), and the plan reaches the rows by an
// index whatever the statistics said when it was made.
TEST_F(CompletionWriterTest, TheResultWriteIsPlannedOnceAndFromIndexesNotAtEveryBatch) {
  std::vector<ClaimedJob> jobs = Claimed(200);
  ASSERT_EQ(jobs.size(), 200u);
  Exec("ANALYZE bulkhead.job_rows");  // the statistics see node-a's 200 executing jobs
  auto conn = Connect();
  CompletionStore store(*conn);
  constexpr int kWrites = 10;
  for (int w = 0; w < kWrites; ++w) {
    std::vector<AttemptResult> batch;
    for (int i = 0; i < 10; ++i) batch.push_back(Delivered(jobs[w * 10 + i]));
    EXPECT_EQ(store.Record(batch, "node-a"), 10) << "write " << w;
  }
  EXPECT_EQ(Count("state = 'completed'"), 10 * kWrites);
  pqxx::nontransaction tx(*conn);
  const pqxx::row plans = tx.exec1(
      "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
      "WHERE name = 'record'");
  EXPECT_EQ(plans[1].as<int64_t>(), 0)
      << "custom plans: under plan_cache_mode = auto the first five of every connection, and, "
         "once the statistics have seen executing rows, often one for each write";
  EXPECT_EQ(plans[0].as<int64_t>(), kWrites);
  // The plan made now, from statistics that say the table holds nothing, still reads jobs by
  // an index: a sequential scan would read the whole table at every write.
  tx.exec0("TRUNCATE bulkhead.job_rows");
  tx.exec0("ANALYZE bulkhead.job_rows");
  std::string plan;
  for (const auto& row : tx.exec("EXPLAIN EXECUTE record('[]', 'node-a')")) {
    plan += row[0].as<std::string>() + "\n";
  }
  EXPECT_EQ(plan.find("Seq Scan"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Bitmap"), std::string::npos) << plan;
}

}  // namespace
}  // namespace bulkhead
