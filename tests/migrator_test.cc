// Migrator against a real PostgreSQL: up, down, status, refusals, one transaction per step,
// and the identical schema after up → down → up.
#include "migrator.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "database_test.h"
#include "migrations.h"
#include "subprocess.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;
using testing::QueryValue;

class MigratorTest : public DatabaseTest {
 protected:
  MigratorTest() : DatabaseTest(Start::kEmpty) {}

  // The schema as pg_dump sees it, without ownership noise and without the \restrict lines,
  // whose key pg_dump draws at random on every run.
  std::string SchemaDump() {
    auto result = testing::RunCommand(
        {(testing::PostgresEnvironment::Cluster().bindir() / "pg_dump").string(), "--schema-only",
         "--no-owner", "--no-privileges", "--dbname=" + conninfo()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::istringstream in(result.out);
    std::string dump, line;
    while (std::getline(in, line)) {
      if (!line.starts_with("\\restrict ") && !line.starts_with("\\unrestrict "))
        dump += line + "\n";
    }
    return dump;
  }

  bool Exists(const std::string& regclass) {
    return QueryValue<bool>(db(), "SELECT to_regclass('" + regclass + "') IS NOT NULL");
  }
};

const int kNewest = static_cast<int>(EmbeddedMigrations().size());

TEST_F(MigratorTest, UpAppliesEveryMigrationInOrderAndRecordsIt) {
  Migrator migrator(db(), EmbeddedMigrations());
  Migrator::Result result = migrator.Up();
  ASSERT_TRUE(result.ok()) << result.error;
  ASSERT_EQ(static_cast<int>(result.steps.size()), kNewest);
  for (int i = 0; i < kNewest; ++i) EXPECT_EQ(result.steps[i].version, i + 1);
  EXPECT_EQ(result.steps[0].name, "0001_init");
  EXPECT_EQ(migrator.DatabaseVersion(), kNewest);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.migrations"), kNewest);
  EXPECT_TRUE(Exists("bulkhead.jobs"));
  EXPECT_TRUE(Exists("bulkhead.channels"));
}

TEST_F(MigratorTest, UpOnAnUpToDateDatabaseDoesNothing) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  Migrator::Result again = migrator.Up();
  EXPECT_TRUE(again.ok()) << again.error;
  EXPECT_TRUE(again.steps.empty());
}

TEST_F(MigratorTest, StatusReadsWithoutCreatingAnything) {
  Migrator migrator(db(), EmbeddedMigrations());
  Migrator::Report before = migrator.Status();
  EXPECT_EQ(before.database_version, 0);
  EXPECT_EQ(before.binary_version, kNewest);
  ASSERT_EQ(static_cast<int>(before.rows.size()), kNewest);
  EXPECT_TRUE(before.rows[0].applied_at.empty());
  EXPECT_FALSE(QueryValue<bool>(db(), "SELECT to_regnamespace('bulkhead') IS NOT NULL"));

  ASSERT_TRUE(migrator.Up().ok());
  Migrator::Report after = migrator.Status();
  EXPECT_EQ(after.database_version, kNewest);
  EXPECT_FALSE(after.rows[0].applied_at.empty());
}

TEST_F(MigratorTest, UpAfterDownGivesBackTheIdenticalSchema) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  std::string first = SchemaDump();
  ASSERT_NE(first.find("CREATE TABLE bulkhead.job_rows"), std::string::npos);
  ASSERT_NE(first.find("CREATE VIEW bulkhead.jobs AS"), std::string::npos);
  ASSERT_NE(first.find("CREATE INDEX jobs_claim"), std::string::npos);

  Migrator::Result down = migrator.Down(kNewest);
  ASSERT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(static_cast<int>(down.steps.size()), kNewest);
  EXPECT_EQ(down.steps.front().version, kNewest);  // newest reversed first
  EXPECT_EQ(migrator.DatabaseVersion(), 0);
  EXPECT_FALSE(Exists("bulkhead.jobs"));
  // Only the runner's own version table is left in the schema.
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                            "n.oid = c.relnamespace WHERE n.nspname = 'bulkhead' AND "
                            "c.relkind IN ('r', 'i', 'S', 'v') AND c.relname <> 'migrations' "
                            "AND c.relname <> 'migrations_pkey'"),
            0);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON "
                            "n.oid = p.pronamespace WHERE n.nspname = 'bulkhead'"),
            0);

  ASSERT_TRUE(migrator.Up().ok());
  EXPECT_EQ(SchemaDump(), first);
}

// 0004_secrets on a database with a rotated channel: down drops the old secrets and the gate
// column and keeps every channel's current secret; up again restores the identical schema.
TEST_F(MigratorTest, SecretRotationMigrationGoesDownAndUpAgainKeepingCurrentSecrets) {
  ASSERT_GE(kNewest, 4);
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  const std::string full = SchemaDump();
  ASSERT_NE(full.find("CREATE TABLE bulkhead.channel_secrets"), std::string::npos);
  int64_t tenant = testing::CreateTenant(db(), "acme", "default");
  int64_t channel = testing::CreateChannel(db(), tenant, "http://127.0.0.1:9/x");
  const std::string id = std::to_string(channel);
  {
    pqxx::work tx(db());
    tx.exec(
        "INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at) SELECT id, "
        "secret, now() + interval '1 hour' FROM bulkhead.channels");
    tx.exec(
        "UPDATE bulkhead.channels SET secret = bulkhead.new_secret(), old_secrets_until = "
        "now() + interval '1 hour'");
    tx.commit();
  }
  const std::string current =
      QueryValue<std::string>(db(), "SELECT secret FROM bulkhead.channels WHERE id = " + id);

  // Down to 0003: the table, the column and the index go; the channel keeps its secret.
  Migrator::Result down = migrator.Down(kNewest - 3);
  ASSERT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(migrator.DatabaseVersion(), 3);
  EXPECT_FALSE(Exists("bulkhead.channel_secrets"));
  EXPECT_FALSE(Exists("bulkhead.channels_old_secrets_until"));
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM information_schema.columns WHERE "
                            "table_schema = 'bulkhead' AND column_name = "
                            "'old_secrets_until'"),
            0);
  EXPECT_EQ(QueryValue<std::string>(db(), "SELECT secret FROM bulkhead.channels WHERE id = " + id),
            current);

  ASSERT_TRUE(migrator.Up().ok());
  EXPECT_EQ(SchemaDump(), full);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 0);
  EXPECT_TRUE(QueryValue<bool>(
      db(), "SELECT old_secrets_until IS NULL FROM bulkhead.channels WHERE id = " + id));
}

// Migration 0016 keeps the delivering attempt in two columns; its down puts that attempt back
// at the end of the attempt log, as the result write appended it before, and drops them.
TEST_F(MigratorTest, DeliveredInColumnsGoesDownIntoTheAttemptLog) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  const int version = QueryValue<int>(
      db(), "SELECT version FROM bulkhead.migrations WHERE name LIKE '%delivered_in_columns'");
  int64_t tenant = testing::CreateTenant(db(), "acme", "default");
  int64_t channel = testing::CreateChannel(db(), tenant, "http://127.0.0.1:9/x");
  {
    pqxx::work tx(db());
    // Two delivered jobs (one after a failure, one from before 0016 with NULL columns) and one
    // that failed and waits.
    tx.exec(
        "INSERT INTO bulkhead.jobs (id, queue, tenant_id, channel_id, state, payload, attempt, "
        "attempted_at, attempted_by, finished_at, delivered_status, delivered_ms, attempts) "
        "VALUES (1, 'default', " +
        std::to_string(tenant) + ", " + std::to_string(channel) +
        ", 'completed', '{}', 2, '2026-12-05T00:00:00Z', 'n1', now(), 204, 41.5, "
        "'[{\"attempt\": 1, \"status\": 503}]'), "
        "(2, 'default', " +
        std::to_string(tenant) + ", " + std::to_string(channel) +
        ", 'completed', '{}', 1, now(), 'n1', now(), NULL, NULL, '[{\"attempt\": 1}]'), "
        "(3, 'default', " +
        std::to_string(tenant) + ", " + std::to_string(channel) +
        ", 'available', '{}', 1, now(), 'n1', NULL, NULL, NULL, '[{\"attempt\": 1}]')");
    tx.commit();
  }
  Migrator::Result down = migrator.Down(kNewest - version + 1);
  ASSERT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM information_schema.columns WHERE table_schema = "
                            "'bulkhead' AND column_name IN ('delivered_status', 'delivered_ms')"),
            0);
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT (attempts -> 1) - 'at' FROM bulkhead.jobs WHERE id = 1"),
            "{\"node\": \"n1\", \"status\": 204, \"attempt\": 2, \"duration_ms\": 41.5}");
  // The attempt's start, whatever the session's time zone wrote it in.
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT (attempts -> 1 ->> 'at')::timestamptz = "
                               "'2026-12-05T00:00:00Z' FROM bulkhead.jobs WHERE id = 1"));
  // The job delivered before 0016 and the one still waiting keep their logs as they were.
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(attempts::text, ' ' ORDER BY id) "
                                    "FROM bulkhead.jobs WHERE id IN (2, 3)"),
            "[{\"attempt\": 1}] [{\"attempt\": 1}]");
  ASSERT_TRUE(migrator.Up().ok());
}

// Migration 0019 moves the keys of a live database from the unique index jobs_idempotency into
// bulkhead.idempotency_keys, and its down moves them back: deduplication holds on both sides.
TEST_F(MigratorTest, IdempotencyKeysMoveToTheirTableAndBackKeepingEveryKey) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  const int version = QueryValue<int>(
      db(), "SELECT version FROM bulkhead.migrations WHERE name LIKE '%idempotency_keys'");
  const std::string channel = std::to_string(testing::CreateChannel(
      db(), testing::CreateTenant(db(), "acme", "default"), "http://127.0.0.1:9/x"));
  const auto enqueue = [&](const std::string& key) {
    return QueryValue<int64_t>(db(), "SELECT bulkhead.enqueue(" + channel + ", '{}', " + key + ")");
  };
  ASSERT_TRUE(migrator.Down(kNewest - version + 1).ok());
  EXPECT_FALSE(Exists("bulkhead.idempotency_keys"));
  const int64_t a = enqueue("'a'"), b = enqueue("'b'");
  enqueue("NULL");

  ASSERT_TRUE(migrator.Up().ok());
  EXPECT_FALSE(Exists("bulkhead.jobs_idempotency"));
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(key || ' ' || job_id, ',' ORDER BY "
                                    "key) FROM bulkhead.idempotency_keys"),
            "a " + std::to_string(a) + ",b " + std::to_string(b));
  EXPECT_EQ(enqueue("'a'"), a);
  const int64_t c = enqueue("'c'");

  ASSERT_TRUE(migrator.Down(kNewest - version + 1).ok());
  EXPECT_TRUE(Exists("bulkhead.jobs_idempotency"));
  EXPECT_EQ(enqueue("'b'"), b);
  EXPECT_EQ(enqueue("'c'"), c);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"), 4);
  ASSERT_TRUE(migrator.Up().ok());
}

// Migration 0021 moves jobs into ranges without copying a row, and its down moves them back:
// every job and key kept under its id, the next id where it was, the schema as it was.
TEST_F(MigratorTest, JobsGoIntoRangesAndBackKeepingEveryJobAndTheNextId) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  const int version = QueryValue<int>(
      db(), "SELECT version FROM bulkhead.migrations WHERE name LIKE '%jobs_in_ranges'");
  ASSERT_TRUE(migrator.Down(kNewest - version + 1).ok());
  const std::string before = SchemaDump();
  const std::string channel = std::to_string(testing::CreateChannel(
      db(), testing::CreateTenant(db(), "acme", "default"), "http://127.0.0.1:9/x"));
  const auto enqueue = [&](const std::string& key) {
    return QueryValue<int64_t>(db(), "SELECT bulkhead.enqueue(" + channel + ", '{}', " + key + ")");
  };
  const auto range_of = [&](int64_t id) {
    return QueryValue<std::string>(
        db(),
        "SELECT c.relname::text FROM bulkhead.job_rows j JOIN pg_class c "
        "ON c.oid = j.tableoid WHERE j.id = " +
            std::to_string(id));
  };
  const auto ids = [&] {
    return QueryValue<std::string>(
        db(), "SELECT string_agg(id::text, ',' ORDER BY id) FROM bulkhead.jobs");
  };
  const int64_t keyed = enqueue("'a'");
  for (int i = 0; i < 4; ++i) enqueue("NULL");

  ASSERT_TRUE(migrator.Up().ok());
  EXPECT_EQ(range_of(keyed), "jobs_first");
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(range_name || ' ' || "
                                    "coalesce(high::text, ''), ', ') FROM bulkhead.job_ranges()"),
            "jobs_first 6, jobs_beyond ");
  EXPECT_EQ(enqueue("'a'"), keyed);  // the key still holds
  const int64_t next =
      QueryValue<int64_t>(db(),
                          "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END "
                          "FROM bulkhead.jobs_id_seq");
  Exec("SELECT bulkhead.add_job_range(" + std::to_string(next) + ", " + std::to_string(next + 2) +
       ")");
  const int64_t b = enqueue("'b'");
  EXPECT_EQ(range_of(b), "jobs_from_" + std::to_string(next));
  enqueue("NULL");
  const int64_t beyond = enqueue("NULL");
  EXPECT_EQ(range_of(beyond), "jobs_beyond");
  const std::string all = ids();

  ASSERT_TRUE(migrator.Down(kNewest - version + 1).ok());
  EXPECT_EQ(SchemaDump(), before);
  EXPECT_EQ(ids(), all);
  EXPECT_EQ(enqueue("'b'"), b);
  const int64_t after = enqueue("NULL");
  EXPECT_GT(after, beyond);
  ASSERT_TRUE(migrator.Up().ok());
  EXPECT_EQ(range_of(after), "jobs_first");
}

TEST_F(MigratorTest, DownStopsWhenNothingIsLeftToReverse) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  Migrator::Result down = migrator.Down(kNewest + 5);
  EXPECT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(static_cast<int>(down.steps.size()), kNewest);
  EXPECT_TRUE(migrator.Down(1).steps.empty());
}

TEST_F(MigratorTest, RefusesADatabaseNewerThanTheBinaryAndLeavesItAlone) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Up().ok());
  {
    pqxx::work tx(db());
    tx.exec("INSERT INTO bulkhead.migrations (version, name) VALUES (" +
            std::to_string(kNewest + 1) + ", 'from_the_future')");
    tx.commit();
  }
  Migrator::Result up = migrator.Up();
  EXPECT_FALSE(up.ok());
  EXPECT_NE(up.error.find("newer than this binary"), std::string::npos) << up.error;
  Migrator::Result down = migrator.Down(1);
  EXPECT_FALSE(down.ok());
  EXPECT_TRUE(down.steps.empty());
  EXPECT_TRUE(Exists("bulkhead.jobs"));
  EXPECT_EQ(migrator.Status().rows.back().version, kNewest + 1);
}

// A migration list of our own: the second one fails halfway.
const Migration kBrokenSecond[] = {
    {1, "first", "CREATE TABLE bulkhead.first (id int)", "DROP TABLE bulkhead.first"},
    {2, "broken", "CREATE TABLE bulkhead.second (id int); SELECT 1 / 0",
     "DROP TABLE bulkhead.second"},
    {3, "third", "CREATE TABLE bulkhead.third (id int)", "DROP TABLE bulkhead.third"},
};

TEST_F(MigratorTest, EachMigrationIsItsOwnTransaction) {
  Migrator migrator(db(), kBrokenSecond);
  Migrator::Result result = migrator.Up();
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("0002_broken"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("division by zero"), std::string::npos) << result.error;
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_EQ(migrator.DatabaseVersion(), 1);
  EXPECT_TRUE(Exists("bulkhead.first"));
  EXPECT_FALSE(Exists("bulkhead.second"));  // rolled back with its step, not half-applied
  EXPECT_FALSE(Exists("bulkhead.third"));
}

TEST_F(MigratorTest, ConcurrentRunnersApplyEachMigrationOnce) {
  // Two nodes deploying at once: the advisory lock serialises them.
  auto other = Connect();
  Migrator::Result a, b;
  std::thread t([&] { a = Migrator(*other, EmbeddedMigrations()).Up(); });
  b = Migrator(db(), EmbeddedMigrations()).Up();
  t.join();
  ASSERT_TRUE(a.ok()) << a.error;
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_EQ(static_cast<int>(a.steps.size() + b.steps.size()), kNewest);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.migrations"), kNewest);
}

}  // namespace
}  // namespace bulkhead
