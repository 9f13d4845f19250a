// The test harness for everything that touches SQL: one throwaway PostgreSQL per test binary,
// one fresh database per test.
//
// PostgresEnvironment (registered by test_main.cc) starts the cluster before the first test,
// creates `bulkhead_template` and migrates it with the real Migrator, and removes the cluster
// after the last test. DatabaseTest gives each test its own database, cloned from the template
// (or empty), and drops it afterwards, so tests never see each other's rows. It also carries the
// two helpers nearly every SQL test needs, written once here: run a statement, and wait for a
// SQL condition. (DeliveryTest, delivery_test.h, adds counting and enqueueing deliveries.)
//
// Everything here runs on the test's main thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "throwaway_postgres.h"

namespace bulkhead::testing {

class PostgresEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  // The running cluster; only valid between SetUp and TearDown.
  static ThrowawayPostgres& Cluster();
  // Name of the database migrated to the newest version, to clone per test.
  static constexpr const char* kTemplate = "bulkhead_template";
};

class DatabaseTest : public ::testing::Test {
 protected:
  // Migrated (the default): a clone of the migrated template. Empty: a database with nothing
  // in it, for the migration tests.
  enum class Start { kMigrated, kEmpty };

  explicit DatabaseTest(Start start = Start::kMigrated) : start_(start) {}

  void SetUp() override;
  void TearDown() override;

  const std::string& dbname() const { return dbname_; }
  std::string conninfo() const { return PostgresEnvironment::Cluster().ConnectionString(dbname_); }
  std::string url() const { return PostgresEnvironment::Cluster().Url(dbname_); }

  // A connection to this test's database, opened on first use.
  pqxx::connection& db();
  // A further connection, for tests that need two sessions (a listener, a concurrent writer).
  std::unique_ptr<pqxx::connection> Connect() const;

  // Runs `sql` in its own transaction on db().
  void Exec(const std::string& sql);

  // Polls (poll.h) until `condition` holds: "SELECT <condition>" returns true on db(). False if
  // `timeout` passed first.
  bool WaitFor(const std::string& condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  const Start start_;
  std::string dbname_;
  std::unique_ptr<pqxx::connection> db_;
};

}  // namespace bulkhead::testing
