// The jobs table's storage settings beside a table of finished deliveries (issue 34): where a
// burst's row versions land (migration 0007), and what a vacuum leaves in the claim's index
// (0008, at the end of this file); and that no trigger locks a job before its update (0023).
//
// A delivery writes three versions of its job row: the enqueue's insert, the claim's update and
// the result's; none is HOT. PostgreSQL puts a new version where the free space map says it fits.
// After a vacuum of a table of finished rows, that can be the space left at the end of nearly
// every page: whether a burst row fits there depends on the sizes of both rows, at any
// fillfactor (a sweep of 21 history row sizes, 330–482 bytes, beside a burst of 210-byte rows:
// the burst landed a row a page at 9 sizes at fillfactor 90 and at 10 at 100). What fillfactor 90
// changes is what follows: each page keeps a tenth of itself, so the claim's and the result's
// versions stay on the page the insert chose, where at 100 each moves to another page.
//
// The page tests count the distinct heap pages that hold any version of the burst's rows (by ctid,
// recorded after each step), at the migrated setting and at PostgreSQL's default, beside the
// same vacuumed history, at a row size where the burst lands a row a page at both settings.
// Every value written is fixed (no now() in the JSON, whose microseconds print with a varying
// number of digits), so the rows' sizes, and the pages, are the same on every run.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::QueryValue;

constexpr int kHistory = 100'000;  // finished deliveries: about 5,900 pages at fillfactor 90
constexpr int kBurst = 2'000;
// The history's payload text: with it a finished row is 402 bytes, and the space a page of them
// keeps takes one burst row at either fillfactor. (At 394 bytes the burst lands on about 60 new
// pages at both.)
const std::string kHistoryText(83, 'x');
// The burst's payload text: a row of about 210 bytes.
const std::string kText = "a message of about a hundred bytes, like an order notification";
// An attempt log entry as the result write leaves it, at a fixed time (a string, as the JSON
// holds it, so no session time zone changes its length).
std::string AttemptLog(const std::string& node) {
  std::string log = "jsonb_build_array(jsonb_build_object('attempt', 1,";
  log += " 'at', '2026-12-03T07:00:00.123456+00:00', 'node', '";
  log += node;
  log += "', 'duration_ms', 21.5, 'status', 200))";
  return log;
}

// SQL that resets the storage option `option` on every range of jobs (a partitioned table has
// none of its own since migration 0021; the rows here land in its default range).
std::string ResetOnEveryRange(const std::string& option) {
  return "DO $$ DECLARE leaf regclass; BEGIN FOR leaf IN SELECT relid FROM "
         "pg_partition_tree('bulkhead.job_rows') WHERE isleaf LOOP EXECUTE format('ALTER TABLE %s "
         "RESET (" +
         option + ")', leaf); END LOOP; END $$";
}

// Where a burst's row versions went: the pages its inserts chose, and all the pages that held
// any version after the claim and the result.
struct BurstPages {
  int inserted;
  int total;
};

class JobsStorageTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    const int64_t tenant = CreateTenant(db(), "acme");
    for (int i = 0; i < 20; ++i) CreateChannel(db(), tenant, "https://example.com/hook");
  }

  // Writes the history, finished rows as the result write leaves them (each with its attempt
  // log), and vacuums it.
  void WriteHistory() {
    Exec(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, payload, attempt,"
        "  attempted_at, attempted_by, finished_at, attempts)"
        " SELECT 'default', c.tenant_id, c.id, 'completed',"
        "   jsonb_build_object('n', g, 'text', '" +
        kHistoryText +
        "'), 1,"
        "   now(), 'history', now(), " +
        AttemptLog("history") + "   FROM generate_series(1, " + std::to_string(kHistory) +
        ") g"
        "   JOIN bulkhead.channels c"
        "     ON c.id = (SELECT min(id) FROM bulkhead.channels) + g % 20");
    pqxx::nontransaction(db()).exec("VACUUM bulkhead.job_rows");
  }

  // Enqueues `n` deliveries over the 20 channels, each payload {"n": i, "text": text}.
  void Enqueue(int n, const std::string& text) {
    const std::string count = std::to_string(n);
    Exec(
        "SELECT bulkhead.enqueue_many("
        "  ARRAY(SELECT (SELECT min(id) FROM bulkhead.channels) + g % 20"
        "          FROM generate_series(1, " +
        count +
        ") g)::bigint[],"
        "  ARRAY(SELECT jsonb_build_object('n', g, 'text', '" +
        text +
        "')"
        "          FROM generate_series(1, " +
        count + ") g))");
  }

  // Every available job to executing, the columns the claim writes.
  void ClaimAll() {
    Exec(
        "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_at = now(),"
        "  attempted_by = 'node-1' WHERE state = 'available'");
  }

  // Writes the history, then enqueues the burst, claims it and records it completed, as the
  // claim and the result write do to each row's columns.
  BurstPages PagesTheBurstTouched() {
    WriteHistory();
    Exec("CREATE TABLE burst_pages (page bigint)");
    const std::string record =
        "INSERT INTO burst_pages SELECT (ctid::text::point)[0] FROM bulkhead.job_rows"
        " WHERE attempted_by IS DISTINCT FROM 'history'";
    Enqueue(kBurst, kText);
    EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE state = 'available'"),
              kBurst);
    Exec(record);
    const int inserted = QueryValue<int>(db(), "SELECT count(DISTINCT page) FROM burst_pages");
    ClaimAll();
    Exec(record);
    Exec("UPDATE bulkhead.jobs SET state = 'completed', finished_at = now(), attempts = " +
         AttemptLog("node-1") + " WHERE state = 'executing'");
    Exec(record);
    return {inserted, QueryValue<int>(db(), "SELECT count(DISTINCT page) FROM burst_pages")};
  }
};

TEST_F(JobsStorageTest, TheJobsTableKeepsATenthOfEachPage) {
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT bool_and('fillfactor=90' = ANY(reloptions)) FROM pg_class"
                               " WHERE oid IN (SELECT relid FROM pg_partition_tree("
                               "'bulkhead.job_rows') WHERE isleaf)"));
}

// Migration 0023: no BEFORE UPDATE row trigger on jobs. PostgreSQL 15 locks the old row for one
// before it reads the trigger's column list or WHEN, and logs the lock (54 WAL bytes): every
// result write, park and rescue paid one a row until 0013's rejoin moved after the update
// (load/wal_life.sh: 2.1 lock records a delivery against 1.1). tgtype's bits: 1 a row trigger,
// 2 BEFORE, 16 UPDATE.
TEST_F(JobsStorageTest, NoTriggerLocksAJobBeforeItsUpdate) {
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT coalesce(string_agg(tgname, ', '), '') FROM pg_trigger"
                                    " WHERE tgrelid = 'bulkhead.job_rows'::regclass"
                                    "   AND tgtype & (1 | 2 | 16) = (1 | 2 | 16)"),
            "");
}

TEST_F(JobsStorageTest, ABurstsUpdatesStayOnThePagesItsInsertsChose) {
  const auto [inserted, total] = PagesTheBurstTouched();
  std::printf("fillfactor 90: %d rows inserted on %d pages, all versions on %d\n", kBurst, inserted,
              total);
  EXPECT_GE(inserted, kBurst * 9 / 10);  // the premise at this size: a row a page (2,000)
  EXPECT_EQ(total, inserted);
}

// The premise: at PostgreSQL's default the same burst lands on as many pages, and its updates
// move each row to others (4,096 pages in all).
TEST_F(JobsStorageTest, AtTheDefaultFillfactorTheUpdatesMoveToOtherPages) {
  Exec(ResetOnEveryRange("fillfactor"));
  const auto [inserted, total] = PagesTheBurstTouched();
  std::printf("fillfactor 100: %d rows inserted on %d pages, all versions on %d\n", kBurst,
              inserted, total);
  EXPECT_GE(inserted, kBurst * 9 / 10);
  EXPECT_GE(total, 2 * inserted);
}

// Migration 0008: 1,000 claimed rows beside 100,000 finished ones. Enqueued first, their dead
// versions sit on about 30 of the table's 5,900 pages, under the 2 % below which PostgreSQL
// would skip the vacuum's index pass (vacuum_index_cleanup = auto) and leave their entries at
// the front of jobs_claim for every claim to step over.
class IndexCleanupTest : public JobsStorageTest {
 protected:
  // Index and heap pages a count over jobs_claim reads after the claimed rows died, before
  // and after a vacuum.
  std::pair<int64_t, int64_t> ClaimIndexPagesAroundAVacuum() {
    Enqueue(1'000, "a short message");
    WriteHistory();
    ClaimAll();
    const int64_t before = ClaimIndexPages();
    pqxx::nontransaction(db()).exec("VACUUM bulkhead.job_rows");
    return {before, ClaimIndexPages()};
  }

  int64_t ClaimIndexPages() {
    pqxx::work tx(db());
    const nlohmann::json plan =
        nlohmann::json::parse(tx.exec1("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT count(*)"
                                       "  FROM bulkhead.jobs WHERE queue = 'default'"
                                       "   AND state = 'available' AND priority BETWEEN 1 AND 3")[0]
                                  .as<std::string>());
    return plan.at(0).at("Plan").at("Shared Hit Blocks").get<int64_t>() +
           plan.at(0).at("Plan").at("Shared Read Blocks").get<int64_t>();
  }
};

TEST_F(IndexCleanupTest, EveryVacuumOfTheJobsTableCleansItsIndexes) {
  EXPECT_TRUE(
      QueryValue<bool>(db(),
                       "SELECT bool_and('vacuum_index_cleanup=on' = ANY(reloptions)) FROM pg_class"
                       " WHERE oid IN (SELECT relid FROM pg_partition_tree("
                       "'bulkhead.job_rows') WHERE isleaf)"));
  const auto [before, after] = ClaimIndexPagesAroundAVacuum();
  std::printf("jobs_claim, no live entry: %lld pages read before the vacuum, %lld after\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_LE(after, 2);
}

// The premise: left to decide, the same vacuum skips the index pass and the dead entries stay.
TEST_F(IndexCleanupTest, LeftToDecideTheSameVacuumLeavesTheDeadEntries) {
  Exec(ResetOnEveryRange("vacuum_index_cleanup"));
  const auto [before, after] = ClaimIndexPagesAroundAVacuum();
  std::printf("auto: %lld pages read before the vacuum, %lld after\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_GE(after, 4);
}

}  // namespace
}  // namespace bulkhead
