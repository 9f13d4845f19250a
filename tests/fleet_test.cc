// Fleet reliability against real PostgreSQL: rescue of a lost node's jobs and the fence against
// its late results, leadership by advisory lock, pruning in batches (the stores); and `bulkhead
// run` nodes killed with SIGKILL, frozen with SIGSTOP, and restarted under their old name.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <thread>

#include "all_stores.h"
#include "delivery_test.h"
#include "http_receiver.h"
#include "node_process.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AllStores;
using testing::DeliveryTest;
using testing::HttpReceiver;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::QueryValue;
using testing::ReceivedRequest;
using testing::Reply;

class FleetTest : public DeliveryTest {
 protected:
  int64_t Channel(const std::string& url = "http://127.0.0.1:9/hook") {
    static int tenants = 0;
    return testing::CreateChannel(
        db(), testing::CreateTenant(db(), "tenant-" + std::to_string(++tenants)), url);
  }

  // A node registered with a lease that has already run out.
  void DeadNode(const std::string& name) {
    Exec("INSERT INTO bulkhead.nodes (name, heartbeat_at, lease_until) VALUES ('" + name +
         "', now() - interval '1 min', now() - interval '30 s')");
  }

  static nlohmann::json Tier(int workers) {
    return {{"workers", workers},          {"channel_share", 1},      {"tenant_share", 1},
            {"failure_threshold", 1000},   {"slow_call_ms", 3600000}, {"connect_timeout_ms", 2000},
            {"request_timeout_ms", 30000}, {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
  }

  static nlohmann::json Node(const std::string& name) {
    return {{"node", name},
            {"poll_interval_ms", 200},
            {"lease_ms", 3000},
            {"shutdown_grace_ms", 5000},
            {"allowed_networks", LoopbackNetworks()}};
  }
};

// ---- Statements ------------------------------------------------------------------------------

TEST_F(FleetTest, ALostNodesJobsGoBackKeepingTheirAttemptAndItsLateResultsChangeNothing) {
  int64_t ch = Channel();
  Enqueue(ch, 5);
  AllStores store(db());
  DeadNode("node-a");
  auto jobs = store.Claim("default", 3, "node-a");
  ASSERT_EQ(jobs.size(), 3u);
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-b', now() + interval '1 h')");
  ASSERT_EQ(store.Claim("default", 1, "node-b").size(), 1u);  // alive: not rescued

  Rescue rescue = store.RescueLost();
  EXPECT_EQ(rescue.jobs, 3);
  EXPECT_EQ(rescue.discarded, 0);
  EXPECT_EQ(rescue.nodes, "node-a");
  EXPECT_EQ(Count("state = 'available' AND attempt = 1 AND last_error LIKE 'rescued: node "
                  "node-a lost its lease during attempt 1'"),
            3);
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-b'"), 1);
  EXPECT_EQ(Count("attempts @> '[{\"node\": \"node-a\", \"error\": \"rescued: the node lost "
                  "its lease\"}]'"),
            3);
  // The zombie wakes up and reports: fenced off, before and after another node's claim.
  EXPECT_EQ(store.Record({{jobs[0].id, 1, true, 200, "", 5, 0}}, "node-a"), 0);
  auto again = store.Claim("default", 5, "node-b");
  EXPECT_EQ(again.size(), 4u);  // the 3 rescued (attempt 2 now) and the last fresh one
  EXPECT_EQ(store.Record({{jobs[0].id, 1, true, 200, "", 5, 0}}, "node-a"), 0);
  EXPECT_EQ(Count("state = 'completed'"), 0);
  EXPECT_EQ(store.RescueLost().jobs, 0);  // nothing more to rescue
}

TEST_F(FleetTest, ARescuedJobAtItsLastAttemptIsDiscardedAndOneBehindAnOpenBreakerIsParked) {
  int64_t last = Channel(), broken = Channel();
  Enqueue(last, 1);
  Exec("UPDATE bulkhead.jobs SET max_attempts = 1");
  Enqueue(broken, 1);
  AllStores store(db());
  DeadNode("node-a");
  ASSERT_EQ(store.Claim("default", 2, "node-a").size(), 2u);
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_at = now() + "
      "interval '30 s' WHERE id = " +
      std::to_string(broken));
  Rescue rescue = store.RescueLost();
  EXPECT_EQ(rescue.jobs, 2);
  EXPECT_EQ(rescue.discarded, 1);
  EXPECT_EQ(Count("state = 'discarded' AND finished_at IS NOT NULL AND channel_id = " +
                  std::to_string(last)),
            1);
  EXPECT_EQ(Count("state = 'parked' AND priority = 3 AND channel_id = " + std::to_string(broken)),
            1);
}

TEST_F(FleetTest, ANodeRestartingUnderItsNameRescuesWhatItsPreviousLifeLeftExecuting) {
  int64_t ch = Channel();
  Enqueue(ch, 2);
  AllStores store(db());
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('fixed', now() + interval '1 h')");
  ASSERT_EQ(store.Claim("default", 2, "fixed").size(), 2u);
  EXPECT_EQ(store.RescueLost().jobs, 0);  // its lease still runs
  EXPECT_EQ(store.RescueLost("fixed").jobs, 2);
}

TEST_F(FleetTest, OneSessionLeadsAndTheLeadershipEndsWithItsConnection) {
  auto a = Connect();
  auto b = Connect();
  AllStores store_a(*a), store_b(*b);
  EXPECT_TRUE(store_a.TryLead("node-a"));
  EXPECT_TRUE(store_a.TryLead("node-a"));  // still ours
  EXPECT_FALSE(store_b.TryLead("node-b"));
  a.reset();  // the leader's connection closes
  // The server releases the lock when the backend has exited, a moment after the client closed.
  bool led = false;
  for (int i = 0; i < 100 && !(led = store_b.TryLead("node-b")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(led);
}

TEST_F(FleetTest, ALeaderWithoutALeaseIsDeposed) {
  auto a = Connect();
  auto b = Connect();
  AllStores store_a(*a), store_b(*b);
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-a', now() + interval '1 h')");
  ASSERT_TRUE(store_a.TryLead("node-a"));
  EXPECT_EQ(store_b.DeposeLostLeader(), 0);  // node-a's lease runs
  Exec(
      "UPDATE bulkhead.nodes SET heartbeat_at = now() - interval '1 min', "
      "lease_until = now() - interval '1 s' WHERE name = 'node-a'");
  EXPECT_EQ(store_b.DeposeLostLeader(), 1);
  // Termination is asynchronous: the lock is free once node-a's backend has gone.
  bool led = false;
  for (int i = 0; i < 100 && !led; ++i) {
    led = store_b.TryLead("node-b");
    if (!led) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(led);
}

TEST_F(FleetTest, PruningDeletesOnlyOldFinishedJobsInBoundedBatches) {
  int64_t ch = Channel();
  Enqueue(ch, 25);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '8 days' "
      "WHERE id <= 12");
  Exec(
      "UPDATE bulkhead.jobs SET state = 'discarded', last_error = 'x', "
      "finished_at = now() - interval '9 days' WHERE id BETWEEN 13 AND 15");
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '1 day' "
      "WHERE id BETWEEN 16 AND 20");
  AllStores store(db());
  const int64_t week = 7LL * 24 * 3600 * 1000;
  EXPECT_EQ(store.PruneFinished(week, 10), 10);
  EXPECT_EQ(store.PruneFinished(week, 10), 5);
  EXPECT_EQ(store.PruneFinished(week, 10), 0);
  EXPECT_EQ(Count("true"), 10);  // 5 recent finished, 5 still available
  EXPECT_EQ(Count("state = 'available'"), 5);
}

TEST_F(FleetTest, AJobReplayedWhileAPruneWaitsForItsRowIsNotDeleted) {
  // Issue 17.8: a prune batch picks an old discarded job, then waits for its row lock while an
  // operator's replay holds it. Once the replay commits, the job is waiting again and must stay.
  const int64_t id = EnqueueOne(Channel());
  const std::string job = std::to_string(id);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'discarded', last_error = 'x', "
      "finished_at = now() - interval '8 days' WHERE id = " +
      job);
  auto operator_session = Connect();
  pqxx::work replay(*operator_session);
  // What Replay (admin_jobs_store.sql) sets, in a transaction still open.
  replay.exec(
      "UPDATE bulkhead.jobs SET state = 'available', priority = 3, attempt = 0, "
      "finished_at = NULL, scheduled_at = now() WHERE id = " +
      job);

  auto leader = Connect();
  pqxx::nontransaction(*leader).exec("SET lock_timeout = '20s'");  // a bug fails, never hangs
  int pruned = -1;
  std::string error;
  std::thread prune([&] {
    try {
      AllStores store(*leader);
      pruned = store.PruneFinished(7LL * 24 * 3600 * 1000, 10);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  const bool waited = WaitFor(
      "(SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = current_database() "
      "AND wait_event_type = 'Lock')",
      seconds(10));
  replay.commit();
  prune.join();
  EXPECT_TRUE(waited) << "the prune never waited for the replay's row lock";
  EXPECT_EQ(error, "");
  EXPECT_EQ(pruned, 0);
  EXPECT_EQ(Count("id = " + job + " AND state = 'available' AND finished_at IS NULL"), 1);
}

// ---- Nodes -----------------------------------------------------------------------------------

Reply After(milliseconds delay) {
  Reply reply;
  reply.delay = delay;
  return reply;
}

TEST_F(FleetTest, JobsOfANodeKilledWithSigkillAreDeliveredByAnotherAfterItsLease) {
  HttpReceiver receiver([](const ReceivedRequest&) { return After(milliseconds(1500)); });
  int64_t ch = Channel(receiver.Url("/hook"));
  Enqueue(ch, 30);
  NodeProcess a(Node("node-a"), {{"default", Tier(10)}});
  a.Start(conninfo());
  ASSERT_TRUE(receiver.WaitForRequests(10, seconds(20))) << a.Log();
  a.Signal(SIGKILL);
  a.Wait(seconds(5));
  const int64_t stranded = Count("state = 'executing' AND attempted_by = 'node-a'");
  EXPECT_GT(stranded, 0);

  NodeProcess b(Node("node-b"), {{"default", Tier(10)}});
  b.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 30 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << b.Log();
  EXPECT_TRUE(b.WaitForLog("jobs_rescued")) << b.Log();
  // The rescued jobs spent node-a's attempt: they completed on their second.
  EXPECT_EQ(Count("attempt = 2"), stranded);
  // Every delivery arrived; repeats only for the requests in flight at the kill, each with its
  // job's own webhook-id.
  std::map<std::string, int> by_id;
  for (const auto& r : receiver.Requests()) ++by_id[r.headers.at("webhook-id")];
  EXPECT_EQ(by_id.size(), 30u);
  int repeats = 0;
  for (const auto& [id, n] : by_id) repeats += n - 1;
  EXPECT_LE(repeats, stranded);
}

TEST_F(FleetTest, AFrozenNodesLateResultsChangeNothingAfterItsJobsWereRescued) {
  HttpReceiver receiver([](const ReceivedRequest&) { return After(milliseconds(800)); });
  int64_t ch = Channel(receiver.Url("/hook"));
  Enqueue(ch, 5);
  NodeProcess a(Node("node-a"), {{"default", Tier(5)}});
  a.Start(conninfo());
  ASSERT_TRUE(receiver.WaitForRequests(5, seconds(20))) << a.Log();
  a.Signal(SIGSTOP);  // a zombie: alive, but its lease runs out

  NodeProcess b(Node("node-b"), {{"default", Tier(5)}});
  b.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 5 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << b.Log();
  a.Signal(SIGCONT);  // it wakes up, reads the answers to its requests and reports them
  std::this_thread::sleep_for(seconds(2));
  // Every job's last attempt is node-b's: node-a's late results were fenced off.
  EXPECT_EQ(Count("state = 'completed' AND attempt = 2 AND attempts -> -1 ->> 'node' = "
                  "'node-b'"),
            5)
      << a.Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
}

TEST_F(FleetTest, OneNodeLeadsAndLeadershipMovesWhenItDies) {
  NodeProcess a(Node("node-a"), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(a.WaitForLog("leader_elected")) << a.Log();
  NodeProcess b(Node("node-b"), {{"default", Tier(2)}});
  b.Start(conninfo());
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.nodes)"));
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(b.Log().find("leader_elected"), std::string::npos) << b.Log();
  a.Signal(SIGKILL);
  a.Wait(seconds(5));
  EXPECT_TRUE(b.WaitForLog("leader_elected", seconds(10))) << b.Log();
  b.Signal(SIGTERM);
  EXPECT_EQ(b.Wait(seconds(20)), 0);
}

}  // namespace
}  // namespace bulkhead
