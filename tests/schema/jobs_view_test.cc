// bulkhead.jobs, a view of the table that holds the jobs, bulkhead.job_rows (migration 0028,
// ADR 0029 step 1). Readers keep what they had: the view shows every column of the table in its
// order, and INSERT, UPDATE and DELETE through it act on the table with the table's defaults and
// row rules. The schema's functions name the table. A role granted before the migration may do
// through the view what it could do to the table, and so may one granted after it. Down gives
// back every function exactly as migration 0027 left it.
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "database_test.h"
#include "migrations.h"
#include "migrator.h"
#include "sql_failure.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;
using testing::ExpectSqlFailure;
using testing::QueryValue;

// Every column of `relation`, "name type" in their order.
std::string Columns(pqxx::connection_base& conn, const std::string& relation) {
  return QueryValue<std::string>(
      conn,
      "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' "
      "ORDER BY attnum) FROM pg_attribute WHERE attrelid = '" +
          relation + "'::regclass AND attnum > 0 AND NOT attisdropped");
}

class JobsViewTest : public DatabaseTest {};

TEST_F(JobsViewTest, TheViewShowsEveryColumnOfTheTableInItsOrder) {
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT relkind::text FROM pg_class "
                                    "WHERE oid = 'bulkhead.jobs'::regclass"),
            "v");
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT relkind::text FROM pg_class "
                                    "WHERE oid = 'bulkhead.job_rows'::regclass"),
            "p");
  const std::string columns = Columns(db(), "bulkhead.job_rows");
  EXPECT_NE(columns.find("payload job_payload"), std::string::npos) << columns;
  EXPECT_EQ(Columns(db(), "bulkhead.jobs"), columns);
}

TEST_F(JobsViewTest, WritesThroughTheViewActOnTheTableWithItsDefaultsAndRules) {
  const int64_t tenant = testing::CreateTenant(db(), "acme");
  const int64_t channel = testing::CreateChannel(db(), tenant);
  const std::string id = std::to_string(QueryValue<int64_t>(
      db(),
      "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload) VALUES "
      "('default', " +
          std::to_string(tenant) + ", " + std::to_string(channel) + ", '{}') RETURNING id"));
  // The table's defaults, for columns the view was not given.
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT state || ' ' || priority || ' ' || max_attempts "
                                    "FROM bulkhead.job_rows WHERE id = " +
                                        id),
            "available 1 8");

  Exec("UPDATE bulkhead.jobs SET state = 'cancelled', finished_at = now() WHERE id = " + id);
  EXPECT_EQ(QueryValue<std::string>(db(), "SELECT state FROM bulkhead.job_rows WHERE id = " + id),
            "cancelled");

  // A broken row rule through the view: the table's CHECK, with its SQLSTATE and message.
  testing::SqlFailure broken =
      ExpectSqlFailure(db(), "UPDATE bulkhead.jobs SET finished_at = NULL WHERE id = " + id);
  EXPECT_EQ(broken.sqlstate, "23514");
  EXPECT_NE(broken.message.find("new row for relation \"jobs\" violates check constraint "
                                "\"jobs_finished_has_finished_at\""),
            std::string::npos)
      << broken.message;

  Exec("DELETE FROM bulkhead.jobs WHERE id = " + id);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.job_rows"), 0);
}

// The functions write and look up the table; only the grant function names the view, to grant
// a part its rights on both.
TEST_F(JobsViewTest, TheSchemasFunctionsNameTheTable) {
  EXPECT_EQ(QueryValue<std::string>(
                db(),
                "SELECT coalesce(string_agg(proname, ',' ORDER BY proname), '') FROM pg_proc "
                "WHERE pronamespace = 'bulkhead'::regnamespace "
                "AND prosrc ~ 'bulkhead\\.jobs(?![_a-z0-9])'"),
            "grant_role_0009");
  EXPECT_GE(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM pg_proc "
                                "WHERE pronamespace = 'bulkhead'::regnamespace "
                                "AND prosrc ~ 'bulkhead\\.job_rows(?![_a-z0-9])'"),
            10);
}

class JobsViewMigrationTest : public DatabaseTest {
 protected:
  JobsViewMigrationTest() : DatabaseTest(Start::kEmpty) {}

  // Every migration before 0028.
  std::span<const Migration> Before() const {
    return std::span<const Migration>(EmbeddedMigrations()).first(27);
  }

  // Every function of the schema, as PostgreSQL would create it again.
  std::string Functions() {
    return QueryValue<std::string>(
        db(),
        "SELECT string_agg(pg_get_functiondef(oid), E'\\n' ORDER BY oid::regprocedure::text) "
        "FROM pg_proc WHERE pronamespace = 'bulkhead'::regnamespace");
  }

  // Whether `role` holds each of SELECT, INSERT, UPDATE, DELETE on `relation`, as "tftf".
  std::string Rights(const std::string& role, const std::string& relation) {
    std::string rights;
    for (const char* privilege : {"SELECT", "INSERT", "UPDATE", "DELETE"}) {
      rights += QueryValue<bool>(db(), "SELECT has_table_privilege('" + role + "', '" + relation +
                                           "', '" + privilege + "')")
                    ? "t"
                    : "f";
    }
    return rights;
  }

  void MakeRole(const std::string& role) {
    Exec("DO $$ BEGIN CREATE ROLE " + role +
         " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
  }
};

TEST_F(JobsViewMigrationTest, ItsMigrationNamesThe0027OnesAndDownGivesThemBackExactly) {
  ASSERT_EQ(EmbeddedMigrations()[27].name, "jobs_a_view_of_its_table");
  Migrator before(db(), Before());
  ASSERT_TRUE(before.Up().ok());
  const std::string at_0027 = Functions();
  ASSERT_NE(at_0027.find("INSERT INTO bulkhead.jobs"), std::string::npos);

  Migrator all(db(), EmbeddedMigrations());
  Migrator::Result up = all.Up();
  ASSERT_TRUE(up.ok()) << up.error;
  EXPECT_EQ(Functions().find("INSERT INTO bulkhead.jobs"), std::string::npos);
  Migrator::Result down = all.Down(1);
  ASSERT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(Functions(), at_0027);
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT relkind::text FROM pg_class "
                                    "WHERE oid = 'bulkhead.jobs'::regclass"),
            "p");
}

// Roles are the cluster's: each name here is this test's own, so tests running beside it on
// other databases grant theirs apart.
TEST_F(JobsViewMigrationTest, ARoleGrantedBeforeOrAfterTheMigrationHasTheTablesRightsOnTheView) {
  Migrator before(db(), Before());
  ASSERT_TRUE(before.Up().ok());
  for (const char* part : {"app", "node", "console"}) {
    MakeRole(std::string("bk_view_old_") + part);
    Exec(std::string("SELECT bulkhead.grant_role('bk_view_old_") + part + "', '" + part + "')");
  }
  Migrator all(db(), EmbeddedMigrations());
  ASSERT_TRUE(all.Up().ok());
  for (const char* part : {"app", "node", "console"}) {
    MakeRole(std::string("bk_view_new_") + part);
    Exec(std::string("SELECT bulkhead.grant_role('bk_view_new_") + part + "', '" + part + "')");
  }
  for (const char* when : {"old", "new"}) {
    for (const char* part : {"app", "node", "console"}) {
      const std::string role = std::string("bk_view_") + when + "_" + part;
      EXPECT_EQ(Rights(role, "bulkhead.jobs"), Rights(role, "bulkhead.job_rows")) << role;
    }
  }
  EXPECT_EQ(Rights("bk_view_new_node", "bulkhead.jobs"), "tftt");
  EXPECT_EQ(Rights("bk_view_new_app", "bulkhead.jobs"), "ffff");
  // And reads through it, as the console does.
  pqxx::connection console(conninfo() + " user=bk_view_old_console");
  EXPECT_EQ(QueryValue<int64_t>(console, "SELECT count(*) FROM bulkhead.jobs"), 0);
}

}  // namespace
}  // namespace bulkhead
