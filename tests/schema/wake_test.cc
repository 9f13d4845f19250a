// The wake-up of bulkhead.enqueue: a NOTIFY on channel `bulkhead_jobs` whose payload is the
// queue name, sent at COMMIT, once per queue per transaction, and only for a queue that has a
// runner marked asleep in bulkhead.sleepers when the transaction commits (migration 0010, ADR
// 0019), whose mark that commit takes (migration 0014, ADR 0022); none for a rolled-back
// transaction, for jobs due later or for parked jobs; and a debounce flag that rolls back with a
// savepoint together with the notification it stands for. The trigger runs only while the
// wake-up gate was open at the INSERT (migration 0027, ADR 0030): the last tests hold the gate
// and what a runner watches for what it cannot see. Unless a test says otherwise, a runner of
// each queue sleeps.
//
// A listening session collects the notifications. After the writer is done, a fence
// notification on another channel is committed; notifications reach a listener in commit
// order, so once the fence has arrived every notification of the writer's earlier transactions
// has too, and what was collected is the exact set, with no waiting for stragglers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "claim_store.h"
#include "database_test.h"
#include "sleep_horizon.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::QueryValue;

// Collects the payloads, and the senders' backend pids, of one notification channel.
class Collector : public pqxx::notification_receiver {
 public:
  Collector(pqxx::connection_base& conn, const std::string& channel)
      : pqxx::notification_receiver(conn, channel) {}
  void operator()(const std::string& payload, int backend_pid) override {
    payloads.push_back(payload);
    pids.push_back(backend_pid);
  }
  std::vector<std::string> payloads;
  std::vector<int> pids;
};

constexpr const char* kFence = "bulkhead_test_fence";

class WakeTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    default_channel_ = CreateChannel(db(), CreateTenant(db(), "acme", "default"));
    bulk_channel_ = CreateChannel(db(), CreateTenant(db(), "globex", "bulk"));
    Sleep("default", "node-a");
    Sleep("bulk", "node-b");
    listener_ = Connect();
    jobs_ = std::make_unique<Collector>(*listener_, "bulkhead_jobs");  // LISTENs now
    fence_ = std::make_unique<Collector>(*listener_, kFence);
  }

  void TearDown() override {
    fence_.reset();
    jobs_.reset();
    listener_.reset();
    DatabaseTest::TearDown();
  }

  // The payloads on bulkhead_jobs since the last call, sorted. Commits a fence notification
  // from `sender` (by default the writer, db()) and reads until it arrives.
  std::vector<std::string> Received(pqxx::connection_base* sender = nullptr) {
    pqxx::connection_base& fence_sender = sender ? *sender : db();
    {
      pqxx::work tx(fence_sender);
      tx.exec(std::string("NOTIFY ") + kFence);
      tx.commit();
    }
    listener_->get_notifs();
    // Bounded only so that a lost fence fails the test instead of hanging it.
    for (int i = 0; i < 100 && fence_->payloads.empty(); ++i) {
      listener_->await_notification(0, 100'000);
    }
    EXPECT_EQ(fence_->payloads.size(), 1u) << "the fence notification never arrived";
    fence_->payloads.clear();
    std::vector<std::string> received;
    received.swap(jobs_->payloads);
    std::sort(received.begin(), received.end());
    for (int pid : jobs_->pids) EXPECT_EQ(pid, db().backendpid());
    jobs_->pids.clear();
    return received;
  }

  using Payloads = std::vector<std::string>;

  // Marks node's runner of queue asleep and opens the wake-up gate, as QueueRunner does
  // (SleepMark: ClaimStore::MarkAsleep, then FellAsleep), from a session of its own.
  SleepStart Sleep(const std::string& queue, const std::string& node) {
    auto conn = Connect();
    ClaimStore(*conn).MarkAsleep(queue, node);
    return ClaimStore(*conn).FellAsleep();
  }

  // Whether the wake-up gate is open (bulkhead.wake_gate at 1; NULL or 0 is closed).
  bool GateOpen() {
    return QueryValue<bool>(db(),
                            "SELECT coalesce(pg_sequence_last_value('bulkhead.wake_gate'), 0) > 0");
  }

  void Enqueue(int64_t channel) {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + std::to_string(channel) + ", '{}')");
    tx.commit();
  }

  int64_t default_channel_ = 0;
  int64_t bulk_channel_ = 0;
  std::unique_ptr<pqxx::connection> listener_;
  std::unique_ptr<Collector> jobs_;
  std::unique_ptr<Collector> fence_;
};

std::string Str(int64_t id) { return std::to_string(id); }

TEST_F(WakeTest, OneTransactionWakesEachQueueOnce) {
  pqxx::work tx(db());
  for (int i = 0; i < 20; ++i) {
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{\"n\": " + std::to_string(i) +
            "}')");
  }
  tx.exec("SELECT bulkhead.enqueue_many(array_fill(" + Str(default_channel_) +
          "::bigint, ARRAY[30]), array_fill('{}'::jsonb, ARRAY[30]))");
  for (int i = 0; i < 5; ++i) tx.exec("SELECT bulkhead.enqueue(" + Str(bulk_channel_) + ", '[]')");
  tx.exec("SELECT bulkhead.enqueue_many(array_fill(" + Str(bulk_channel_) +
          "::bigint, ARRAY[5]), array_fill('[]'::jsonb, ARRAY[5]))");
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM bulkhead.jobs")[0].as<int>(), 60);
  tx.commit();
  EXPECT_EQ(Received(), (Payloads{"bulk", "default"}));
}

TEST_F(WakeTest, NotifiesAtCommitAndNotBefore) {
  auto other = Connect();
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  // The writer's transaction is still open: the fence, sent by another session, arrives alone.
  EXPECT_EQ(Received(other.get()), Payloads{});
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"default"});
}

// One sleep, one notification (migration 0014): the first commit takes the mark as it
// notifies, the commits after it find none, and a runner that marks itself again is notified
// again.
TEST_F(WakeTest, TheCommitThatNotifiesTakesTheMarkSoOneSleepCostsOneNotification) {
  for (int i = 0; i < 3; ++i) {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
    tx.commit();
  }
  EXPECT_EQ(Received(), (Payloads{"default"}));
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'default'"),
            0);
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'bulk'"),
            1)
      << "another queue's mark stays";
  Sleep("default", "node-a");
  {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
    tx.commit();
  }
  EXPECT_EQ(Received(), (Payloads{"default"}));
}

// A mark another commit is taking (here: locked by a session that stands for it) is passed over
// without waiting: the enqueue commits at once and sends nothing, since that other commit
// notifies. The application's commits never queue behind each other for a mark.
TEST_F(WakeTest, ACommitPassesOverAMarkAnotherCommitIsTakingWithoutWaiting) {
  auto taker = Connect();
  pqxx::work taking(*taker);
  taking.exec("SELECT 1 FROM bulkhead.sleepers WHERE queue = 'default' FOR UPDATE");
  {
    pqxx::work tx(db());
    tx.exec("SET LOCAL statement_timeout = '5s'");  // a wait fails the test instead of hanging
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
    tx.commit();
  }
  EXPECT_EQ(Received(), Payloads{});
  taking.abort();
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'default'"),
            1);
}

// Nothing a runner writes waits for a commit that is taking its mark: MarkAsleep finds the row
// still there and leaves it (the notification that follows tells the runner to write it again).
TEST_F(WakeTest, ARunnerMarkingItselfDoesNotWaitForACommitTakingItsMark) {
  auto taker = Connect();
  pqxx::work taking(*taker);
  taking.exec("DELETE FROM bulkhead.sleepers WHERE queue = 'default'");
  auto runner = Connect();
  pqxx::nontransaction(*runner).exec("SET statement_timeout = '5s'");
  ClaimStore(*runner).MarkAsleep("default", "node-a");
  taking.commit();
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'default'"),
            0);
  ClaimStore(*runner).MarkAsleep("default", "node-a");
  ClaimStore(*runner).MarkAsleep("default", "node-a");
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'default'"),
            1)
      << "a mark written twice is one row";
}

TEST_F(WakeTest, ARolledBackTransactionWakesNobody) {
  {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
    tx.exec("SELECT bulkhead.enqueue(" + Str(bulk_channel_) + ", '{}')");
    tx.abort();
  }
  EXPECT_EQ(Received(), Payloads{});
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 2)
      << "and takes no mark";
}

TEST_F(WakeTest, AJobDueLaterWakesNobody) {
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) +
          ", '{}', NULL, now() + interval '1 hour')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{});
}

TEST_F(WakeTest, AParkedJobWakesNobody) {
  pqxx::work tx(db());
  tx.exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_at = now() + "
      "interval '30 s', breaker_trips = 1 WHERE id = " +
      Str(default_channel_));
  auto id = tx.exec1("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')")[0];
  EXPECT_EQ(tx.exec1("SELECT state FROM bulkhead.jobs WHERE id = " + id.as<std::string>())[0]
                .as<std::string>(),
            "parked");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{});
}

TEST_F(WakeTest, ADeduplicatedEnqueueWakesNobody) {
  {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}', 'k')");
    tx.commit();
  }
  ASSERT_EQ(Received(), Payloads{"default"});
  Sleep("default", "node-a");  // the first commit took the mark
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}', 'k')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{});
}

TEST_F(WakeTest, TheDebounceFlagRollsBackWithASavepoint) {
  pqxx::work tx(db());
  tx.exec("SAVEPOINT before_enqueue");
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  tx.exec("ROLLBACK TO SAVEPOINT before_enqueue");
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM bulkhead.jobs")[0].as<int>(), 1);
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"default"});
}

}  // namespace
}  // namespace bulkhead

namespace bulkhead {
namespace {

TEST_F(WakeTest, NoRunnerAsleepNoNotification) {
  Exec("DELETE FROM bulkhead.sleepers");
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  tx.exec("SELECT bulkhead.enqueue(" + Str(bulk_channel_) + ", '{}')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{});
}

TEST_F(WakeTest, ARunnerOfAnotherQueueAsleepWakesOnlyItsQueue) {
  Exec("DELETE FROM bulkhead.sleepers WHERE queue = 'default'");
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  tx.exec("SELECT bulkhead.enqueue(" + Str(bulk_channel_) + ", '{}')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"bulk"});
}

// The look happens at COMMIT: a runner that marks itself asleep while the enqueuing
// transaction is still open is notified, when the gate was open at the INSERT (here the marks
// are deleted behind the gate's back, so it stays open). A closed gate: the last test.
TEST_F(WakeTest, ARunnerThatFallsAsleepBeforeTheCommitIsNotified) {
  Exec("DELETE FROM bulkhead.sleepers");
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  Sleep("default", "node-a");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"default"});
}

// Two runners asleep on one queue: one notification, which every listening node receives, and
// both marks taken.
TEST_F(WakeTest, TwoRunnersAsleepOnAQueueStillOneNotification) {
  Sleep("default", "node-c");
  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"default"});
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.sleepers "
                                "WHERE queue = 'default'"),
            0);
}

// The wake-up gate (migration 0027). The commit that takes the last mark closes it, and the
// enqueues after it run no trigger: a mark written without opening the gate is not notified.
TEST_F(WakeTest, TheCommitThatTakesTheLastMarkClosesTheGate) {
  Exec("DELETE FROM bulkhead.sleepers WHERE queue = 'bulk'");
  ASSERT_TRUE(GateOpen());
  Enqueue(default_channel_);
  EXPECT_EQ(Received(), Payloads{"default"});
  EXPECT_FALSE(GateOpen());
  {
    auto runner = Connect();
    ClaimStore(*runner).MarkAsleep("default", "node-a");  // and not FellAsleep
  }
  Enqueue(default_channel_);
  EXPECT_EQ(Received(), Payloads{}) << "the gate was closed at the INSERT";
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 1);
  Sleep("default", "node-a");
  EXPECT_TRUE(GateOpen());
  Enqueue(default_channel_);
  EXPECT_EQ(Received(), Payloads{"default"});
}

TEST_F(WakeTest, AMarkLeftOnAnotherQueueKeepsTheGateOpen) {
  Enqueue(default_channel_);
  EXPECT_EQ(Received(), Payloads{"default"});
  EXPECT_TRUE(GateOpen()) << "bulk's runner still sleeps";
  Enqueue(bulk_channel_);
  EXPECT_EQ(Received(), Payloads{"bulk"});
  EXPECT_FALSE(GateOpen());
}

// A transaction with an older snapshot may not see a mark that committed after it began: it
// notifies what it sees and never closes the gate.
TEST_F(WakeTest, ARepeatableReadCommitLeavesTheGateOpen) {
  Exec("DELETE FROM bulkhead.sleepers WHERE queue = 'bulk'");
  pqxx::work tx(db());
  tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  tx.commit();
  EXPECT_EQ(Received(), Payloads{"default"});
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 0);
  EXPECT_TRUE(GateOpen());
}

// What the gate cannot see. An enqueue that inserted while the gate was closed does not notify
// a runner that fell asleep before its COMMIT; the runner watches it instead: fell_asleep()
// returns a next id above the transaction's and lists it as running (or leaves it unlisted,
// above xmax), and once it commits, the runner's horizon reads it as ended, so the runner claims.
TEST_F(WakeTest, ARunnerFallingAsleepAfterAnInsertTheGateLetPassWatchesThatTransaction) {
  Exec("DELETE FROM bulkhead.sleepers");
  Enqueue(default_channel_);  // the gate open, no mark: the commit closes it
  ASSERT_FALSE(GateOpen());
  EXPECT_EQ(Received(), Payloads{});

  pqxx::work tx(db());
  tx.exec("SELECT bulkhead.enqueue(" + Str(default_channel_) + ", '{}')");
  const auto xid = tx.exec1("SELECT pg_current_xact_id()::text::bigint")[0].as<int64_t>();
  const SleepStart start = Sleep("default", "node-a");
  EXPECT_LT(xid, start.next_xid);
  EXPECT_TRUE(xid >= start.now.xmax ||
              std::count(start.now.running.begin(), start.now.running.end(), xid) == 1)
      << "transaction " << xid << " is not among those running";
  SleepHorizon horizon;
  const auto t0 = SleepHorizon::Clock::now();
  horizon.Start(start, t0);
  auto watcher = Connect();
  // Other tests' transactions on the cluster may end meanwhile: what this look returns is not
  // this test's; that the enqueuing transaction still runs, and stays watched, is.
  const RunningXids before = ClaimStore(*watcher).RunningTransactions();
  EXPECT_TRUE(xid >= before.xmax ||
              std::count(before.running.begin(), before.running.end(), xid) == 1);
  horizon.Look(before, t0);
  tx.commit();
  EXPECT_EQ(Received(), Payloads{}) << "the gate was closed at its INSERT";
  EXPECT_TRUE(horizon.Look(ClaimStore(*watcher).RunningTransactions(), t0))
      << "its end is what the runner claims for";
}

}  // namespace
}  // namespace bulkhead
