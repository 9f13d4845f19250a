// A database that stops answering: the node's connection settings (session_settings.h), and a
// `bulkhead run` node behind a TCP proxy that the test stalls (tests/harness/tcp_proxy.h) —
// it must notice, report not ready, stop claiming, and honour SIGTERM within its grace.
#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>
#include <pqxx/pqxx>

#include "delivery_test.h"
#include "http_get.h"
#include "http_receiver.h"
#include "node_process.h"
#include "poll.h"
#include "session_settings.h"
#include "tcp_proxy.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::DeliveryTest;
using testing::HttpReceiver;
using testing::NodeProcess;
using testing::PostgresEnvironment;
using testing::ReceivedRequest;
using testing::Reply;
using testing::TcpProxy;

// ---- The connection settings ------------------------------------------------------------------

TEST(SessionSettingsTest, AddsTimeoutsAndKeepalivesToAUrlOrKeywordString) {
  const DatabaseTimeouts defaults;
  EXPECT_EQ(WithSessionSettings("postgresql://app@db.internal:5433/jobs", defaults),
            "connect_timeout='5' dbname='jobs' host='db.internal' keepalives='1' "
            "keepalives_count='3' keepalives_idle='10' keepalives_interval='2' "
            "options='-c statement_timeout=60000 -c jit=off' port='5433' "
            "tcp_user_timeout='10000' user='app'");
  EXPECT_EQ(WithSessionSettings("host=/run/pg dbname=x", {1500, 0, 0, 0}),
            "connect_timeout='2' dbname='x' host='/run/pg' options='-c jit=off'");
  // Empty: libpq's PG* variables still apply to everything not named.
  EXPECT_EQ(WithSessionSettings("", {0, 30000, 0, 0}),
            "options='-c statement_timeout=30000 -c jit=off'");
}

TEST(SessionSettingsTest, KeepsWhatTheOperatorSet) {
  EXPECT_EQ(WithSessionSettings("dbname=x connect_timeout=30 options='-c search_path=a'",
                                {5000, 1000, 0, 0}),
            "connect_timeout='30' dbname='x' "
            "options='-c search_path=a -c statement_timeout=1000 -c jit=off'");
  EXPECT_EQ(
      WithSessionSettings("dbname=x options='-c statement_timeout=5s -c jit=on'", {0, 1000, 0, 0}),
      "dbname='x' options='-c statement_timeout=5s -c jit=on'");
  // Quotes and backslashes in a value survive the round trip.
  EXPECT_EQ(WithSessionSettings("dbname='it\\'s' password='a\\\\b'", {0, 0, 0, 0}),
            "dbname='it\\'s' options='-c jit=off' password='a\\\\b'");
  // What libpq cannot parse is passed on as it is, for libpq's own error.
  EXPECT_EQ(WithSessionSettings("dbname='unterminated", {}), "dbname='unterminated");
}

class DatabaseStallTest : public DeliveryTest {};

TEST_F(DatabaseStallTest, ASessionGetsItsStatementTimeout) {
  pqxx::connection conn(WithSessionSettings(conninfo(), {5000, 1234, 10000, 10000}));
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "1234ms");
}

// ---- A node whose database stops answering ----------------------------------------------------

int ReadyStatus(const NodeProcess& node, std::string* body = nullptr) {
  auto answer = testing::HttpGet(
      "http://127.0.0.1:" + std::to_string(node.metrics_port()) + "/readyz", seconds(2));
  if (body) *body = answer.body;
  return answer.status;
}

TEST_F(DatabaseStallTest, ANodeWhoseDatabaseStopsAnsweringIsNotReadyStopsClaimingAndStopsOnTime) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  const int64_t ch =
      testing::CreateChannel(db(), testing::CreateTenant(db(), "acme"), receiver.Url("/hook"));
  TcpProxy proxy(PostgresEnvironment::Cluster().port());
  nlohmann::json tier = {{"workers", 4}, {"channel_share", 1}, {"tenant_share", 1}};
  NodeProcess node(
      testing::TestNodeConfig("stalled", {{"lease_ms", 3000}, {"shutdown_grace_ms", 2000}}),
      {{"default", tier}});
  node.Start("postgresql://bulkhead@127.0.0.1:" + std::to_string(proxy.port()) + "/" + dbname());
  Enqueue(ch, 1);
  ASSERT_TRUE(receiver.WaitForRequests(1, seconds(20))) << node.Log();
  ASSERT_TRUE(testing::PollUntil([&] { return ReadyStatus(node) == 200; }, seconds(10)))
      << node.Log();

  proxy.Stall();
  const auto stalled_at = std::chrono::steady_clock::now();
  // Notices: a heartbeat waits longer than a heartbeat period (600 ms here) for its answer.
  std::string body;
  ASSERT_TRUE(testing::PollUntil(
      [&] { return ReadyStatus(node, &body) == 503 && body.find("database") != std::string::npos; },
      seconds(10)))
      << body << node.Log();
  const auto noticed = std::chrono::steady_clock::now() - stalled_at;
  std::cout << "not ready " << std::chrono::duration_cast<milliseconds>(noticed).count()
            << " ms after the stall (lease_ms 3000: heartbeat every 600 ms): " << body << "\n";
  // Stops claiming: the lease lapses 2.4 s after the last heartbeat that landed.
  ASSERT_TRUE(node.WaitForLog("lease_lapsed", seconds(10))) << node.Log();
  EXPECT_TRUE(testing::PollUntil(
      [&] { return ReadyStatus(node, &body) == 503 && body.find("lease") != std::string::npos; },
      seconds(5)))
      << body;
  Enqueue(ch, 2);  // on the test's own connection, not through the proxy

  // SIGTERM during the stall: out by the end of the grace (2 s), not when the database answers.
  node.Signal(SIGTERM);
  const auto signalled = std::chrono::steady_clock::now();
  std::optional<int> code = node.Wait(seconds(6));
  ASSERT_TRUE(code.has_value()) << node.Log();
  std::cout << "exited "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() -
                                                        signalled)
                   .count()
            << " ms after SIGTERM (grace 2000 ms), code " << *code << "\n";
  EXPECT_EQ(*code, 1);
  EXPECT_TRUE(node.WaitForLog("stop_deadline_exit", seconds(1))) << node.Log();
  EXPECT_EQ(receiver.request_count(), 1u);  // nothing claimed while stalled
  EXPECT_EQ(Count("state = 'available'"), 2);
}

}  // namespace
}  // namespace bulkhead
