// Fleet reliability against real PostgreSQL: rescue of a lost node's jobs and the fence against
// its late results, leadership by advisory lock, pruning in batches (the stores); and `bulkhead
// run` nodes killed with SIGKILL, frozen with SIGSTOP, and restarted under their old name.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "all_stores.h"
#include "delivery_test.h"
#include "http_get.h"
#include "http_receiver.h"
#include "node_process.h"
#include "poll.h"
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

  // stalled_after_ms at the request timeout turns the stall rule off (docs/configuration.md):
  // these receivers answer in 0.8-1.5 s, past the default 500 ms, and a channel marked stalled
  // is capped at 1 until an answer comes within it, so the rescue case's 30 deliveries went
  // one at a time (33 s of this binary). The caps are not what these tests are about.
  static nlohmann::json Tier(int workers) {
    return {{"workers", workers},          {"channel_share", 1},
            {"tenant_share", 1},           {"failure_threshold", 1000},
            {"slow_call_ms", 3600000},     {"connect_timeout_ms", 2000},
            {"request_timeout_ms", 30000}, {"stalled_after_ms", 30000},
            {"retry_delays_ms", {50}},     {"retry_jitter", 0}};
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

TEST_F(FleetTest, ALiveNodeReturnsItsStrandedJobsUnspentButNotThoseItHoldsNorFreshClaims) {
  // The state a claim leaves when it commits on the server and its reply is lost: the job is
  // executing under a live node that does not know it has it (issue 17, item 1).
  int64_t ch = Channel(), probing = Channel(), other = Channel();
  Enqueue(ch, 5);
  Enqueue(probing, 1);
  Enqueue(other, 1);
  AllStores store(db());
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-a', now() + interval '1 h')");
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-b', now() + interval '1 h')");
  auto jobs = store.Claim("default", 6, "node-a");
  ASSERT_EQ(jobs.size(), 6u);
  ASSERT_EQ(store.Claim("default", 1, "node-b").size(), 1u);
  // All but the last of ch's claims, the probing channel's and node-b's are a minute old.
  Exec("UPDATE bulkhead.jobs SET attempted_at = now() - interval '1 min' WHERE id <> " +
       std::to_string(jobs[4].id));
  // A lost probe claim: its channel is half-open (ClaimProbes moved it), so it does not flow.
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'half_open', breaker_probe_at = now() + "
      "interval '30 s', breaker_probe_job = " +
      std::to_string(jobs[5].id) + " WHERE id = " + std::to_string(probing));
  // node-a holds jobs[0] (in flight, say); jobs[4] was claimed just now.
  Stranded stranded = store.ReturnStranded("node-a", {jobs[0].id}, 30'000);
  EXPECT_EQ(stranded.jobs, 4);  // jobs[1..3] and the probing channel's
  EXPECT_EQ(stranded.ids, std::to_string(jobs[1].id) + "," + std::to_string(jobs[2].id) + "," +
                              std::to_string(jobs[3].id) + "," + std::to_string(jobs[5].id));
  // Back unspent: attempt 0, in the tenant's tier; the probing channel's parked.
  EXPECT_EQ(Count("state = 'available' AND attempt = 0 AND queue = 'default' AND channel_id = " +
                  std::to_string(ch)),
            3);
  EXPECT_EQ(Count("state = 'parked' AND priority = 3 AND attempt = 0 AND channel_id = " +
                  std::to_string(probing)),
            1);
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-a'"), 2);  // held, fresh
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-b'"), 1);  // not ours
  EXPECT_EQ(store.ReturnStranded("node-a", {jobs[0].id}, 30'000).jobs, 0);
  // Returned jobs are claimed again with the same attempt number a first claim gets.
  auto again = store.Claim("default", 3, "node-a");
  ASSERT_EQ(again.size(), 3u);
  for (const auto& job : again) EXPECT_EQ(job.attempt, 1);
}

// Issue 31, defect 4. A claim that waited behind a lock stamped its jobs with the time its
// transaction began, so the stranded sweep, run just after it committed and before the runner
// had registered them, took them for a claim lost long ago and put them back while they were
// being sent. Stamped when each row is claimed, they are as young as the claim's commit.
TEST_F(FleetTest, AClaimThatWaitedBehindALockIsNotTakenForStranded) {
  const int64_t ch = Channel();
  Enqueue(ch, 2);
  Exec("INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-a', now() + interval '1 h')");
  auto conn = Connect();
  AllStores claimer_store(*conn);
  // A runner's connection has its claim prepared and planned already: the wait is then the
  // claim's own, inside its transaction, not the prepare's before it.
  ASSERT_EQ(claimer_store.Claim("default", 0, "node-a").size(), 0u);
  auto holder = Connect();
  pqxx::work hold(*holder);
  hold.exec("LOCK TABLE bulkhead.job_rows IN EXCLUSIVE MODE");  // the claim waits for it
  std::vector<ClaimedJob> jobs;
  std::thread claimer([&] { jobs = claimer_store.Claim("default", 2, "node-a"); });
  std::this_thread::sleep_for(milliseconds(1500));
  hold.commit();
  claimer.join();
  ASSERT_EQ(jobs.size(), 2u);
  // The sweep runs before the runner has registered the claim (it holds nothing yet), with a
  // guard of one second, shorter than the claim's wait.
  AllStores store(db());
  EXPECT_EQ(store.ReturnStranded("node-a", {}, 1'000).jobs, 0);
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-a'"), 2);
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

TEST_F(FleetTest, ALeaderWithALongOrNonAsciiNameIsNotDeposedWhileItsLeaseRuns) {
  // PostgreSQL clips application_name to 63 bytes and shows non-ASCII as '?': a node named
  // after a long cloud host name, or in another script, must still be known as itself.
  const std::string shared(70, 'h');
  for (const std::string& name :
       {shared + "-node-00001", std::string("узел-ノード-κόμβος-") + shared}) {
    auto a = Connect();
    auto b = Connect();
    AllStores store_a(*a), store_b(*b);
    pqxx::work tx(db());
    tx.exec_params(
        "INSERT INTO bulkhead.nodes (name, lease_until) "
        "VALUES ($1, now() + interval '1 h')",
        name);
    tx.commit();
    ASSERT_TRUE(store_a.TryLead(name)) << name;
    EXPECT_EQ(store_b.DeposeLostLeader(), 0) << name;  // its lease runs
    EXPECT_TRUE(store_a.TryLead(name)) << name;        // still ours
    Exec(
        "UPDATE bulkhead.nodes SET heartbeat_at = now() - interval '1 min', "
        "lease_until = now() - interval '1 s'");
    EXPECT_EQ(store_b.DeposeLostLeader(), 1) << name;  // its lease ran out
    Exec("DELETE FROM bulkhead.nodes");
  }
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

// A pruned job's idempotency key goes with it (migration 0019), and only its own: the key of a
// job still kept stays, and a pruned key can be enqueued again as a new delivery.
TEST_F(FleetTest, PruningDeletesTheKeysOfThePrunedJobsAndFreesThem) {
  const std::string ch = std::to_string(Channel());
  const auto enqueue = [&](const std::string& key) {
    return QueryValue<int64_t>(db(), "SELECT bulkhead.enqueue(" + ch + ", '{}', '" + key + "')");
  };
  const int64_t old_job = enqueue("old");
  const int64_t kept_job = enqueue("kept");
  Enqueue(Channel(), 1);  // no key
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '8 days' "
      "WHERE id <> " +
      std::to_string(kept_job));
  AllStores store(db());
  EXPECT_EQ(store.PruneFinished(7LL * 24 * 3600 * 1000, 10), 2);
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(key || ' ' || job_id, ',') "
                                    "FROM bulkhead.idempotency_keys"),
            "kept " + std::to_string(kept_job));
  const int64_t again = enqueue("old");
  EXPECT_NE(again, old_job);
  EXPECT_EQ(enqueue("kept"), kept_job);
  EXPECT_EQ(Count("true"), 2);
}

// On jobs in ranges of ids (tests/schema/jobs_in_ranges.sql, ranges of 4 ids; the Release
// build's fleet_test_on_ranges), a prune batch reaches its rows through the primary key of their
// own ranges, and the others are pruned away when the plan runs: an `id IN (sub-select)` was a
// hash join over a seq scan of every range (0.7 s a batch of 1,000 on 32 ranges). On the table
// as migrated there is nothing to prune: plan_cost_test holds its buffers a row.
TEST_F(FleetTest, OnRangesAPruneBatchReadsOnlyTheRangesOfItsRows) {
  if (QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.job_ranges()") < 3) {
    GTEST_SKIP() << "bulkhead.jobs is jobs_first and the default range here; the _on_ranges run "
                    "holds this";
  }
  Enqueue(Channel(), 40);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '8 days' "
      "WHERE id <= 6");
  AllStores store(db());
  db().prepare_now("prune_finished");  // libpqxx prepares on first use, EXPLAIN needs it now
  int seq_scans = 0, never_executed = 0, deleted = -1;
  {
    pqxx::work tx(db());
    for (const auto& row :
         tx.exec("EXPLAIN (ANALYZE, COSTS OFF) EXECUTE prune_finished(604800000, 10, 1, 1000)")) {
      const std::string line = row[0].as<std::string>();
      // Of a range of jobs; the batch's keys (none here) are the planner's to read as it likes.
      if (line.find("Seq Scan on jobs") != std::string::npos) ++seq_scans;
      if (line.find("never executed") != std::string::npos) ++never_executed;
    }
    deleted = static_cast<int>(tx.exec("SELECT count(*) FROM bulkhead.jobs")[0][0].as<int>());
  }  // rolled back
  EXPECT_EQ(seq_scans, 0);
  EXPECT_EQ(deleted, 34) << "the batch deletes its 6 rows";
  // Ids 1 to 6 lie in the first two ranges of 4 ids; 40 jobs fill 10 ranges of the 18.
  EXPECT_GE(never_executed, 14) << "every other range is pruned when the plan runs";
  EXPECT_EQ(Count("true"), 40);
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

// Record's fence is three conditions: state 'executing', attempted_by this node, attempt this
// attempt. Here the rescued jobs are completed by node-b before the zombie wakes, so the state
// condition alone refuses its late results (node and attempt differ too): this test proves that
// a late result cannot undo a completion, not which of the other two conditions holds. The
// attempt condition on its own is proved by
// AFrozenNodesLateResultsAreFencedByTheAttemptWhenItsRestartedSelfHoldsTheJobs below.
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
  // Every job was delivered by node-b's attempt: node-a's late results were fenced off, so the
  // log holds no attempt of node-a's but the rescue's.
  EXPECT_EQ(Count("state = 'completed' AND attempt = 2 AND attempted_by = 'node-b' AND "
                  "delivered_status BETWEEN 200 AND 299 AND NOT EXISTS (SELECT 1 FROM "
                  "jsonb_array_elements(attempts) AS e WHERE e ->> 'node' = 'node-a' AND "
                  "coalesce(e ->> 'error', '') NOT LIKE 'rescued%')"),
            5)
      << a.Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
}

TEST_F(FleetTest, ALiveNodeReturnsAJobStrandedUnderItsNameAndDeliversItOnTheSameAttempt) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t ch = Channel(receiver.Url("/hook"));
  Enqueue(ch, 1);
  Exec("UPDATE bulkhead.jobs SET scheduled_at = now() + interval '1 h'");  // not claimable yet
  NodeProcess a(Node("node-a"), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(a.WaitForLog("node_started")) << a.Log();
  // What a claim whose reply was lost leaves: executing under the live node, unknown to it.
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_by = 'node-a', "
      "attempted_at = now() - interval '1 min', scheduled_at = now() - interval '1 min'");
  const auto stranded_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 1 FROM bulkhead.jobs WHERE state = 'completed')", seconds(20)))
      << a.Log();
  // lease_ms is 3 s here: one sweep a lease, so the job is back within about 3 s.
  std::cout << "stranded job delivered after "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() -
                                                        stranded_at)
                   .count()
            << " ms (lease_ms 3000)\n";
  EXPECT_TRUE(a.WaitForLog("stranded_jobs_returned")) << a.Log();
  EXPECT_EQ(Count("state = 'completed' AND attempt = 1"), 1);  // its attempt was not spent
  EXPECT_EQ(receiver.request_count(), 1u);
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
}

TEST_F(FleetTest, ANodeWhoseRowWasForgottenRegistersAgain) {
  NodeProcess a(Node("node-a"), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 1 FROM bulkhead.nodes WHERE name = 'node-a')"));
  // What the leader's forget_nodes does to a node whose lease ended over an hour ago.
  Exec("DELETE FROM bulkhead.nodes WHERE name = 'node-a'");
  EXPECT_TRUE(
      WaitFor("(SELECT count(*) = 1 FROM bulkhead.nodes WHERE name = 'node-a' AND "
              "lease_until > now())",
              seconds(10)))
      << a.Log();
  EXPECT_TRUE(a.WaitForLog("node_reregistered")) << a.Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
  // A clean stop removes the row for good: no heartbeat after it registers the node again.
  EXPECT_EQ(testing::QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.nodes"), 0);
}

// Issue 17.10d. The one case where only the attempt condition of Record's fence stands between a
// zombie's late result and a job: a node frozen mid-request (SIGSTOP) is taken for dead and
// started again under its fixed name. The new process rescues its "previous self"'s jobs at
// start and claims them again, so when the zombie wakes each job is `executing`, attempted_by
// 'node-a' — the state and the node its result carries — at attempt 2 where the result says 1.
// Without `j.attempt = r.attempt` the zombie's 200s would complete jobs whose second attempt is
// still in flight.
TEST_F(FleetTest, AFrozenNodesLateResultsAreFencedByTheAttemptWhenItsRestartedSelfHoldsTheJobs) {
  std::atomic<int> requests{0};
  // The zombie's five requests are answered after 2 s (it is frozen by then); the second
  // attempts hang, so they stay executing for as long as the test looks.
  HttpReceiver receiver([&requests](const ReceivedRequest&) {
    Reply reply;
    if (++requests <= 5) {
      reply.delay = milliseconds(2000);
    } else {
      reply.hang = true;
    }
    return reply;
  });
  int64_t ch = Channel(receiver.Url("/hook"));
  Enqueue(ch, 5);
  // A long lease: ReturnStranded hands back only jobs claimed over a lease ago, so neither
  // process hands the other's claims back while the test runs. The restart does not need the
  // lease to run out: a node rescues the jobs of its own name at start.
  nlohmann::json node = Node("node-a");
  node["lease_ms"] = 60000;
  NodeProcess zombie(node, {{"default", Tier(5)}});
  zombie.Start(conninfo());
  ASSERT_TRUE(receiver.WaitForRequests(5, seconds(20))) << zombie.Log();
  zombie.Signal(SIGSTOP);
  ASSERT_EQ(Count("state = 'executing' AND attempt = 1 AND attempted_by = 'node-a'"), 5);

  NodeProcess restarted(node, {{"default", Tier(5)}});
  restarted.Start(conninfo());
  ASSERT_TRUE(receiver.WaitForRequests(10, seconds(20))) << restarted.Log();
  ASSERT_TRUE(WaitFor(
      "(SELECT count(*) = 5 FROM bulkhead.jobs WHERE state = 'executing' AND attempt = 2 AND "
      "attempted_by = 'node-a')"))
      << restarted.Log();
  EXPECT_TRUE(restarted.WaitForLog("jobs_rescued")) << restarted.Log();
  const std::string rows =
      "SELECT string_agg(id || ' ' || state || ' ' || attempt || ' ' || attempted_by || ' ' || "
      "attempted_at || ' ' || attempts::text, E'\\n' ORDER BY id) FROM bulkhead.jobs";
  const std::string before = QueryValue<std::string>(db(), rows);

  // The zombie wakes, reads its five 200s and writes them: same state, same node, attempt 1.
  zombie.Signal(SIGCONT);
  const std::string metrics = "http://127.0.0.1:" + std::to_string(zombie.metrics_port());
  ASSERT_TRUE(testing::PollUntil(
      [&] {
        return testing::HttpGet(metrics + "/metrics")
                   .body.find("\nbulkhead_completion_batch_size_sum 5\n") != std::string::npos;
      },
      seconds(20)))
      << testing::HttpGet(metrics + "/metrics").body << zombie.Log();
  // Written, and fenced off: every job is as node-a's second attempt left it.
  EXPECT_EQ(QueryValue<std::string>(db(), rows), before);
  EXPECT_EQ(Count("state = 'completed'"), 0);
  EXPECT_EQ(Count("state = 'executing' AND attempt = 2 AND attempted_by = 'node-a'"), 5);
  zombie.Signal(SIGKILL);
  zombie.Wait(seconds(5));
}

TEST_F(FleetTest, ANodeWhoseHeartbeatCannotLandStopsClaimingUntilItDoes) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t ch = Channel(receiver.Url("/hook"));
  NodeProcess a(Node("node-a"), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(a.WaitForLog("node_started")) << a.Log();
  Enqueue(ch, 1);
  ASSERT_TRUE(receiver.WaitForRequests(1, seconds(10))) << a.Log();  // it claims, and is ready
  // The heartbeat blocks behind a lock on the nodes table; the claims' connections work.
  auto blocker = Connect();
  pqxx::work lock(*blocker);
  lock.exec("LOCK TABLE bulkhead.nodes IN ACCESS EXCLUSIVE MODE");
  // lease_ms is 3 s: the lease is held for claiming until 2.4 s after the last heartbeat
  // that landed (lease.h), logged within a second after.
  std::this_thread::sleep_for(seconds(4));
  Enqueue(ch, 3);
  std::this_thread::sleep_for(seconds(2));  // a claim would take well under this
  EXPECT_EQ(receiver.request_count(), 1u) << a.Log();
  EXPECT_EQ(Count("state = 'available'"), 3);
  EXPECT_NE(a.Log().find("\"event\":\"lease_lapsed\""), std::string::npos) << a.Log();
  lock.abort();  // the heartbeat lands
  EXPECT_TRUE(a.WaitForLog("lease_renewed")) << a.Log();
  EXPECT_TRUE(receiver.WaitForRequests(4, seconds(10))) << a.Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
}

TEST_F(FleetTest, TwoNodesWithLongAndNonAsciiNamesKeepOneLeaderForTheWholeRun) {
  const std::string shared(75, 'n');
  NodeProcess a(Node(shared + "-a-01"), {{"default", Tier(2)}});
  NodeProcess b(Node("ノード-" + shared), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(a.WaitForLog("leader_elected")) << a.Log();
  b.Start(conninfo());
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.nodes)"));
  ASSERT_TRUE(a.WaitReady()) << a.Log();
  ASSERT_TRUE(b.WaitReady()) << b.Log();
  // Several election rounds (every 2 s): a node that cannot tell the leader's connection from
  // a lost one terminates it each round, and leadership flaps.
  std::this_thread::sleep_for(seconds(7));
  const std::string logs = a.Log() + b.Log();
  size_t elected = 0;
  for (size_t at = logs.find("leader_elected"); at != std::string::npos;
       at = logs.find("leader_elected", at + 1)) {
    ++elected;
  }
  EXPECT_EQ(elected, 1u) << logs;
  EXPECT_EQ(logs.find("leader_deposed"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("leadership_lost"), std::string::npos) << logs;
  a.Signal(SIGTERM);
  b.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(seconds(20)), 0) << a.Log();
  EXPECT_EQ(b.Wait(seconds(20)), 0) << b.Log();
}

TEST_F(FleetTest, OneNodeLeadsAndLeadershipMovesWhenItDies) {
  NodeProcess a(Node("node-a"), {{"default", Tier(2)}});
  a.Start(conninfo());
  ASSERT_TRUE(a.WaitForLog("leader_elected")) << a.Log();
  NodeProcess b(Node("node-b"), {{"default", Tier(2)}});
  b.Start(conninfo());
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.nodes)"));
  ASSERT_TRUE(b.WaitReady()) << b.Log();  // running, so its silence below means something
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
