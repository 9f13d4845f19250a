#include "database_test.h"

#include <cstdlib>

#include "migrations.h"
#include "migrator.h"
#include "poll.h"
#include "source_file.h"
#include "tenancy.h"

namespace bulkhead::testing {
namespace {

std::unique_ptr<ThrowawayPostgres> cluster;
int next_database = 0;

void Admin(const std::string& sql) {
  pqxx::connection admin(cluster->ConnectionString("postgres"));
  pqxx::nontransaction(admin).exec(sql);  // CREATE/DROP DATABASE cannot run in a transaction
}

}  // namespace

void PostgresEnvironment::SetUp() {
  try {
    cluster = ThrowawayPostgres::Start();
    Admin(std::string("CREATE DATABASE ") + kTemplate);
    pqxx::connection conn(cluster->ConnectionString(kTemplate));
    Migrator::Result result = Migrator(conn, EmbeddedMigrations()).Up();
    ASSERT_TRUE(result.ok()) << "migrating " << kTemplate << ": " << result.error;
    // Another layout to run the tests on (a path from the repository root, such as ADR 0026's
    // ranges: tests/schema/jobs_in_ranges.sql), applied to the template once.
    if (const char* extra = std::getenv("BULKHEAD_TEST_TEMPLATE_SQL"); extra && *extra) {
      pqxx::nontransaction(conn).exec(ReadSourceFile(extra));
    }
  } catch (const std::exception& e) {
    FAIL() << "starting the throwaway PostgreSQL: " << e.what();
  }
}

void PostgresEnvironment::TearDown() { cluster.reset(); }

ThrowawayPostgres& PostgresEnvironment::Cluster() { return *cluster; }

void DatabaseTest::SetUp() {
  ASSERT_NE(cluster, nullptr) << "the throwaway PostgreSQL did not start";
  dbname_ = "t_" + std::to_string(++next_database);
  Admin("CREATE DATABASE " + dbname_ + " STRATEGY = FILE_COPY" +
        (start_ == Start::kMigrated ? std::string(" TEMPLATE ") + PostgresEnvironment::kTemplate
                                    : std::string(" TEMPLATE template0")));
}

void DatabaseTest::TearDown() {
  db_.reset();
  if (!dbname_.empty() && cluster) Admin("DROP DATABASE IF EXISTS " + dbname_ + " WITH (FORCE)");
}

pqxx::connection& DatabaseTest::db() {
  if (!db_) db_ = Connect();
  return *db_;
}

std::unique_ptr<pqxx::connection> DatabaseTest::Connect() const {
  return std::make_unique<pqxx::connection>(conninfo());
}

void DatabaseTest::Exec(const std::string& sql) {
  pqxx::work tx(db());
  tx.exec(sql);
  tx.commit();
}

bool DatabaseTest::WaitFor(const std::string& condition, std::chrono::milliseconds timeout) {
  return PollUntil([&] { return QueryValue<bool>(db(), "SELECT " + condition); }, timeout);
}

}  // namespace bulkhead::testing
