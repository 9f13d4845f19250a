// How a node opens its connections (worker/store/database_connection.h): the session settings
// taken out of libpq's `options` and set after connecting, the application_name of each
// connection — and, behind Debian's PgBouncer 1.18 with its default settings, a node that starts,
// delivers and keeps its statement timeout (issue 30, goal 5, session mode).
#include "database_connection.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "delivery_test.h"
#include "http_receiver.h"
#include "node_process.h"
#include "session_settings.h"
#include "tenancy.h"
#include "throwaway_pgbouncer.h"

namespace bulkhead {
namespace {

using std::chrono::seconds;
using testing::HttpReceiver;
using testing::NodeProcess;
using testing::QueryValue;
using testing::ReceivedRequest;
using testing::Reply;
using testing::ThrowawayPgBouncer;
using Settings = std::vector<std::pair<std::string, std::string>>;

// ---- The pure parts ---------------------------------------------------------------------------

TEST(StartupSettingsTest, TakesEverySettingOutOfOptionsAndKeepsTheRest) {
  StartupSettings s = TakeStartupSettings(
      "host=/run/pg dbname=x options='-c statement_timeout=60000 -csearch_path=a --work_mem=4MB'");
  EXPECT_EQ(s.conninfo, "dbname='x' host='/run/pg'");
  EXPECT_EQ(s.settings,
            (Settings{{"statement_timeout", "60000"}, {"search_path", "a"}, {"work_mem", "4MB"}}));

  // A value with an escaped space stays one value; a switch that is not a setting stays.
  s = TakeStartupSettings("dbname=x options='-c application_name=a\\\\ b -e'");
  EXPECT_EQ(s.settings, (Settings{{"application_name", "a b"}}));
  EXPECT_EQ(s.conninfo, "dbname='x' options='-e'");

  s = TakeStartupSettings("postgresql://app@db:5433/jobs");
  EXPECT_EQ(s.conninfo, "dbname='jobs' host='db' port='5433' user='app'");
  EXPECT_TRUE(s.settings.empty());
  // What libpq cannot parse is passed on as it is, for libpq's own error.
  s = TakeStartupSettings("dbname='unterminated");
  EXPECT_EQ(s.conninfo, "dbname='unterminated");
  EXPECT_TRUE(s.settings.empty());
}

TEST(StartupSettingsTest, AnApplicationNameIsPrintableAsciiAndFitsPostgresLimit) {
  EXPECT_EQ(ApplicationName("node-a", "claim:default"), "bulkhead:node-a:claim:default");
  EXPECT_EQ(ApplicationName("nœud", "record"), "bulkhead:n??ud:record");
  std::string name = ApplicationName(std::string(100, 'n'), "claim:default");
  EXPECT_EQ(name.size(), 63u);
  EXPECT_EQ(name.rfind("bulkhead:nnn", 0), 0u);
}

// ---- Against PostgreSQL, directly and through PgBouncer -------------------------------------

class DatabaseConnectionTest : public testing::DeliveryTest {
 protected:
  static std::string Show(pqxx::connection& conn, const std::string& setting) {
    pqxx::nontransaction tx(conn);
    return tx.exec1("SHOW " + setting)[0].as<std::string>();
  }

  static nlohmann::json Tier() {
    return {{"workers", 10},           {"channel_share", 1},
            {"tenant_share", 1},       {"failure_threshold", 1000},
            {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
  }
};

TEST_F(DatabaseConnectionTest, AConnectionGetsItsSettingsAfterConnectingAndItsName) {
  SetConnectionNode("node-a");
  auto conn = OpenConnection(WithSessionSettings(conninfo(), {5000, 1234, 10000, 10000}), "record");
  EXPECT_EQ(Show(*conn, "statement_timeout"), "1234ms");
  EXPECT_EQ(Show(*conn, "application_name"), "bulkhead:node-a:record");
}

TEST_F(DatabaseConnectionTest, ThroughAStockPgBouncerTheSettingsHoldWhereOptionsAreRefused) {
  ThrowawayPgBouncer pgbouncer(testing::PostgresEnvironment::Cluster());
  const std::string pooled =
      WithSessionSettings(pgbouncer.ConnectionString(dbname()), {5000, 1234, 10000, 10000});
  // What a node sent before: the settings as a startup parameter, which PgBouncer refuses.
  try {
    pqxx::connection refused(pooled);
    ADD_FAILURE() << "PgBouncer accepted the options startup parameter";
  } catch (const pqxx::broken_connection& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported startup parameter: options"),
              std::string::npos)
        << e.what();
  }
  SetConnectionNode("node-a");
  auto conn = OpenConnection(pooled, "claim:default");
  EXPECT_EQ(Show(*conn, "statement_timeout"), "1234ms");
  EXPECT_EQ(Show(*conn, "application_name"), "bulkhead:node-a:claim:default");
}

TEST_F(DatabaseConnectionTest, ANodeBehindAStockPgBouncerDeliversAndNamesEachConnection) {
  ThrowawayPgBouncer pgbouncer(testing::PostgresEnvironment::Cluster());
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  const int64_t channel =
      testing::CreateChannel(db(), testing::CreateTenant(db(), "acme"), receiver.Url("/hook"));
  Enqueue(channel, 200);
  NodeProcess node(testing::TestNodeConfig("pooled", {{"database_statement_timeout_ms", 4321}}),
                   {{"default", Tier()}});
  node.Start(pgbouncer.ConnectionString(dbname()));
  ASSERT_TRUE(node.WaitReady()) << node.Log() << pgbouncer.Log();
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 200 FROM bulkhead.jobs WHERE state = 'completed')"))
      << node.Log() << pgbouncer.Log();
  EXPECT_EQ(receiver.Requests().size(), 200u);

  // Every connection of the node names itself (the lease keeper's opens at its first heartbeat,
  // the leader's when it leads).
  std::string parts;
  for (const char* part : {"claim:default", "record", "breaker", "lease", "listen"}) {
    parts += std::string(parts.empty() ? "" : ", ") + "'bulkhead:pooled:" + part + "'";
  }
  EXPECT_TRUE(
      WaitFor("(SELECT count(DISTINCT application_name) = 5 FROM pg_stat_activity "
              "WHERE application_name IN (" +
              parts + "))"))
      << QueryValue<std::string>(db(),
                                 "SELECT string_agg(application_name, ', ') FROM "
                                 "pg_stat_activity");

  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
}

}  // namespace
}  // namespace bulkhead
