// How a node opens its connections (worker/store/database_connection.h): the session settings
// taken out of libpq's `options` and set after connecting, the application_name of each
// connection — and, behind Debian's PgBouncer 1.18 with its default settings, a node that starts,
// delivers and keeps its statement timeout (issue 30, goal 5, session mode); and, with a
// PgBouncer in transaction mode as its `database_pool`, a node whose claim, result, breaker and
// lease traffic goes through it, unprepared and with its settings made per transaction
// (pooled_connection.h).
#include "database_connection.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <thread>

#include "claim_store.h"
#include "delivery_test.h"
#include "http_receiver.h"
#include "node_process.h"
#include "pooled_connection.h"
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
  EXPECT_EQ(Show(*conn, "jit"), "off");  // ADR 0027
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

TEST_F(DatabaseConnectionTest, APooledConnectionMakesItsSettingsInEachTransactionOnly) {
  ThrowawayPgBouncer pgbouncer(testing::PostgresEnvironment::Cluster(), "transaction");
  SetConnectionNode("node-a");
  SessionSettings settings;
  auto conn = OpenPooledConnection(
      WithSessionSettings(pgbouncer.ConnectionString(dbname()), {5000, 1234, 10000, 10000}),
      "record", &settings);
  ASSERT_EQ(settings, (SessionSettings{{"statement_timeout", "1234"}, {"jit", "off"}}));
  PooledMark mark(*conn, settings);
  AddPooledSettings(*conn, {{"enable_seqscan", "off"}});
  ASSERT_TRUE(IsPooled(*conn));
  {
    pqxx::work tx(*conn);
    ApplyPooledSettings(tx);
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "1234ms");
    EXPECT_EQ(tx.exec1("SHOW enable_seqscan")[0].as<std::string>(), "off");
    EXPECT_EQ(tx.exec1("SHOW jit")[0].as<std::string>(), "off");
    // And it holds: a statement past it is cancelled (which ends the transaction).
    EXPECT_THROW(tx.exec0("SELECT pg_sleep(3)"), pqxx::sql_error);
  }
  {
    // Nothing stays behind on the server connection for the next transaction, whoever's it is.
    pqxx::work tx(*conn);
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "0");
  }
  {
    // A store's statement is prepared on the server connection once, under its hashed name, and
    // run again without a second PREPARE (which would fail: the name exists).
    ClaimStore store(*conn);
    store.MarkAwake("default", "node-a");
    store.MarkAwake("default", "node-a");
    pqxx::work tx(*conn);
    EXPECT_EQ(tx.exec1("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE "
                       "'bulkhead\\_mark\\_awake\\_%'")[0]
                  .as<int>(),
              1);
    EXPECT_EQ(PooledStatementOf("mark_awake").name.size(),
              std::string("bulkhead_mark_awake_").size() + 16);
  }
  {
    // A statement outside a transaction block could not have its settings: refused.
    pqxx::nontransaction tx(*conn);
    EXPECT_THROW(ApplyPooledSettings(tx), std::logic_error);
  }
  // A connection that is not marked makes nothing and runs as before.
  auto direct = OpenConnection(conninfo(), "record");
  EXPECT_FALSE(IsPooled(*direct));
  pqxx::nontransaction tx(*direct);
  EXPECT_NO_THROW(ApplyPooledSettings(tx));
}

TEST_F(DatabaseConnectionTest, ANodeWithATransactionPoolerDeliversBreaksAndStopsThroughIt) {
  // What a node did before `database_pool`, pointed at PgBouncer in transaction mode (with
  // ignore_startup_parameters): about half the deliveries, then `prepared statement "record"
  // does not exist` on every claim and result. Here: the session work (LISTEN, the leader, start
  // and stop) on the database itself, everything else through the pooler.
  ThrowawayPgBouncer pgbouncer(testing::PostgresEnvironment::Cluster(), "transaction");
  HttpReceiver receiver([](const ReceivedRequest& r) {
    Reply reply;
    if (r.path == "/dead") reply.status = 500;
    return reply;
  });
  const int64_t tenant = testing::CreateTenant(db(), "acme");
  const int64_t healthy = testing::CreateChannel(db(), tenant, receiver.Url("/hook"));
  const int64_t dead = testing::CreateChannel(db(), tenant, receiver.Url("/dead"));
  Enqueue(healthy, 1000);
  Enqueue(dead, 50);
  nlohmann::json tier = Tier();
  tier["failure_threshold"] = 5;
  tier["cooldown_ms"] = 600000;
  NodeProcess node(
      testing::TestNodeConfig("txpool", {{"database_statement_timeout_ms", 4321},
                                         {"database_pool", pgbouncer.ConnectionString(dbname())}}),
      {{"default", tier}});
  node.Start(conninfo());
  ASSERT_TRUE(node.WaitReady()) << node.Log() << pgbouncer.Log();
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 1000 FROM bulkhead.jobs WHERE state = 'completed' AND "
              "channel_id = " +
              std::to_string(healthy) + ")"))
      << node.Log() << pgbouncer.Log();
  // The dead channel's breaker opened and parked its backlog: the breaker's connection works
  // through the pooler too.
  ASSERT_TRUE(WaitFor("(SELECT breaker_state = 'open' FROM bulkhead.channels WHERE id = " +
                      std::to_string(dead) + ") AND (SELECT count(*) > 0 FROM bulkhead.jobs " +
                      "WHERE state = 'parked' AND channel_id = " + std::to_string(dead) + ")"))
      << node.Log();
  size_t to_healthy = 0;
  for (const auto& r : receiver.Requests()) to_healthy += r.path == "/hook" ? 1 : 0;
  EXPECT_EQ(to_healthy, 1000u);
  // The main thread's connection is closed once the node has started (opened again to stop).
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM pg_stat_activity WHERE "
                                "application_name = 'bulkhead:txpool:node'"),
            0);
  // The lease keeper heartbeats through it (every lease_ms / 5).
  const std::string heartbeat = "(SELECT heartbeat_at FROM bulkhead.nodes WHERE name = 'txpool')";
  const std::string first = QueryValue<std::string>(db(), "SELECT " + heartbeat + "::text");
  EXPECT_TRUE(WaitFor(heartbeat + " > '" + first + "'::timestamptz")) << node.Log();

  // Four clients logged in through the pooler: the claim, result, breaker and lease connections.
  const std::string log = pgbouncer.Log();
  size_t logins = 0;
  for (size_t at = log.find("login attempt"); at != std::string::npos;
       at = log.find("login attempt", at + 1)) {
    ++logins;
  }
  EXPECT_EQ(logins, 4u) << log;

  // A second node: it follows, and a follower holds no session but its LISTEN — it closes its
  // leader connection after each try (every 2 s), so at most moments one node has one.
  NodeProcess follower(testing::TestNodeConfig(
                           "txpool-b", {{"database_pool", pgbouncer.ConnectionString(dbname())}}),
                       {{"default", tier}});
  follower.Start(conninfo());
  ASSERT_TRUE(follower.WaitReady()) << follower.Log();
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = "
              "'bulkhead:txpool-b:listen')"));
  int one_leader_session = 0;
  for (int sample = 0; sample < 20; ++sample) {
    one_leader_session +=
        QueryValue<int64_t>(db(),
                            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE "
                            "'bulkhead-maintenance:%' OR application_name LIKE "
                            "'bulkhead:txpool%:leader'") == 1
            ? 1
            : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(one_leader_session, 18) << follower.Log();
  follower.Signal(SIGTERM);
  EXPECT_EQ(follower.Wait(seconds(20)), 0) << follower.Log();

  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
  EXPECT_EQ(node.Log().find("does not exist"), std::string::npos) << node.Log();
  EXPECT_EQ(node.Log().find("_failed"), std::string::npos) << node.Log();
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.jobs WHERE state = "
                                "'executing'"),
            0);
}

}  // namespace
}  // namespace bulkhead
