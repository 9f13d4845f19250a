// The jobs table's storage settings beside a table of finished deliveries (issue 34): where a
// burst's rows land (migration 0007), and what a vacuum leaves in the claim's index (0008, at
// the end of this file).
//
// A delivery writes three versions of its job row: the enqueue's insert, the claim's update and
// the result's. PostgreSQL puts a new version where the free space map says it fits; after a
// vacuum of a table of finished rows that is the few hundred bytes left at the end of nearly
// every page, so at the default fillfactor (100) a burst lands one row a page across the whole
// table, and each page costs a read, a dirty write and a full-page image in the WAL. With
// `fillfactor = 90` an insert, or an update that leaves its page, needs room for the row plus a
// tenth of a page: the burst fills pages densely and its updates stay on them.
//
// The page tests count the distinct heap pages that hold any version of the burst's rows (by ctid,
// recorded after each step), at the migrated setting and at PostgreSQL's default, beside the
// same vacuumed history.
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

constexpr int kHistory = 100'000;  // finished deliveries: about 5,600 pages at fillfactor 90
constexpr int kBurst = 2'000;
// Rows of one size leave the same tail free on every page. This text makes the finished rows
// about 385 bytes (20 to a page, 368 bytes left) and the burst's about 205: each tail takes a
// burst row. (At 354 bytes, 23 to a page, 26 bytes are left and nothing lands there.)
const std::string kText = "a message of about a hundred bytes, like an order notification";

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
        kText +
        "'), 1,"
        "   now(), 'history', now(),"
        "   jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'node', 'history',"
        "                                        'duration_ms', 21.5, 'status', 200))"
        "   FROM generate_series(1, " +
        std::to_string(kHistory) +
        ") g"
        "   JOIN bulkhead.channels c"
        "     ON c.id = (SELECT min(id) FROM bulkhead.channels) + g % 20");
    pqxx::nontransaction(db()).exec("VACUUM bulkhead.jobs");
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
  // claim and the result write do to each row's columns. Returns the number of heap pages that
  // held any version of the burst's rows.
  int PagesTheBurstTouched() {
    WriteHistory();
    Exec("CREATE TABLE burst_pages (page bigint)");
    const std::string record =
        "INSERT INTO burst_pages SELECT (ctid::text::point)[0] FROM bulkhead.jobs"
        " WHERE attempted_by IS DISTINCT FROM 'history'";
    Enqueue(kBurst, kText);
    EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE state = 'available'"),
              kBurst);
    Exec(record);
    ClaimAll();
    Exec(record);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now(),"
        "  attempts = jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(),"
        "    'node', 'node-1', 'duration_ms', 1.5, 'status', 200))"
        " WHERE state = 'executing'");
    Exec(record);
    return QueryValue<int>(db(), "SELECT count(DISTINCT page) FROM burst_pages");
  }
};

TEST_F(JobsStorageTest, TheJobsTableKeepsATenthOfEachPage) {
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT 'fillfactor=90' = ANY(reloptions) FROM pg_class"
                               " WHERE oid = 'bulkhead.jobs'::regclass"));
}

TEST_F(JobsStorageTest, ABurstBesideAVacuumedHistoryFillsPagesInsteadOfARowAPage) {
  const int pages = PagesTheBurstTouched();
  std::printf("fillfactor 90: %d rows' versions on %d pages\n", kBurst, pages);
  EXPECT_LE(pages, kBurst / 2);  // 702 here
}

// The premise: at PostgreSQL's default the same burst lands a row a page, and its updates move
// each row to another (4,096 pages here).
TEST_F(JobsStorageTest, AtTheDefaultFillfactorTheSameBurstLandsARowAPage) {
  Exec("ALTER TABLE bulkhead.jobs RESET (fillfactor)");
  const int pages = PagesTheBurstTouched();
  std::printf("fillfactor 100: %d rows' versions on %d pages\n", kBurst, pages);
  EXPECT_GE(pages, kBurst);
}

// Migration 0008: 1,000 claimed rows beside 100,000 finished ones. Enqueued first, their dead
// versions sit on about 30 of the table's 5,600 pages, under the 2 % below which PostgreSQL
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
    pqxx::nontransaction(db()).exec("VACUUM bulkhead.jobs");
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
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT 'vacuum_index_cleanup=on' = ANY(reloptions) FROM pg_class"
                               " WHERE oid = 'bulkhead.jobs'::regclass"));
  const auto [before, after] = ClaimIndexPagesAroundAVacuum();
  std::printf("jobs_claim, no live entry: %lld pages read before the vacuum, %lld after\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_LE(after, 2);
}

// The premise: left to decide, the same vacuum skips the index pass and the dead entries stay.
TEST_F(IndexCleanupTest, LeftToDecideTheSameVacuumLeavesTheDeadEntries) {
  Exec("ALTER TABLE bulkhead.jobs RESET (vacuum_index_cleanup)");
  const auto [before, after] = ClaimIndexPagesAroundAVacuum();
  std::printf("auto: %lld pages read before the vacuum, %lld after\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_GE(after, 4);
}

}  // namespace
}  // namespace bulkhead
