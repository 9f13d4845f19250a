// Ordering keys (migration 0013): of a channel's live deliveries (available, executing, parked)
// with one key only the oldest goes; every later one is held, `available` or `parked` with
// scheduled_at = 'infinity'. What holds a delivery (a live one of its key on its channel, never
// one of another channel, never a finished one; no key, no hold), what releases the oldest held
// one and only it (its head completed, discarded or cancelled, as the node writes those ends),
// what does not (a retry, parking, unparking, a held one cancelled), a replayed delivery waiting
// behind its key and going before the later held ones, and the concurrency: two enqueues of one
// key serialised, and the deferred settle at COMMIT that releases a delivery held behind a head
// whose end was written by another session at the same time, in either commit order. Last, a
// channel of 10,000 keys with two deliveries each.
//
// The node's writes are simulated with UPDATEs of the columns it sets: an executing row has
// attempted_by, attempted_at and attempt >= 1; a finished row has finished_at; a discarded one
// has last_error. Every extra session runs with a statement_timeout, so a wait that never ends
// fails the test instead of hanging it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::QueryValue;

std::string Str(int64_t id) { return std::to_string(id); }

// SELECT bulkhead.enqueue(channel, '{}', NULL, now(), key) in `tx` (key: an SQL expression,
// e.g. "'k'" or "NULL"); returns the id.
int64_t Enqueue(pqxx::transaction_base& tx, int64_t channel, const std::string& key) {
  return tx
      .exec1("SELECT bulkhead.enqueue(" + Str(channel) + ", '{}', NULL, now(), " + key + ")")[0]
      .as<int64_t>();
}

// The UPDATEs that move a job as the node and the operator do.
std::string Execute(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'executing', attempt = attempt + 1, "
         "attempted_by = 'node-a', attempted_at = now() WHERE id = " +
         Str(id);
}
std::string Complete(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() WHERE id = " + Str(id);
}
std::string Discard(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'discarded', finished_at = now(), "
         "last_error = 'HTTP 410' WHERE id = " +
         Str(id);
}
std::string Cancel(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'cancelled', finished_at = now() WHERE id = " + Str(id);
}
// An attempt failed: back to available, due a minute later.
std::string Retry(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'available', scheduled_at = now() + interval "
         "'1 minute', last_error = 'HTTP 500' WHERE id = " +
         Str(id);
}
// The attempt's channel broke: the job waits parked (scheduled_at untouched).
std::string ParkExecuting(int64_t id) {
  return "UPDATE bulkhead.jobs SET state = 'parked', priority = 3, last_error = 'HTTP 500' "
         "WHERE id = " +
         Str(id);
}
// Replay as `bulkhead jobs replay` writes it (admin_jobs_store.sql).
std::string Replay(const std::string& ids) {
  return "UPDATE bulkhead.jobs SET state = 'available', priority = 3, attempt = 0, "
         "finished_at = NULL, scheduled_at = now() WHERE id IN (" +
         ids + ")";
}

// A tenant with two channels.
class OrderingTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = CreateTenant(db(), "acme");
    channel_ = CreateChannel(db(), tenant_);
    other_channel_ = CreateChannel(db(), tenant_, "https://acme.example/other");
  }

  // Enqueues one delivery of `key` (an SQL expression) to `channel` and commits; its id.
  int64_t EnqueueCommitted(const std::string& key, int64_t channel = 0) {
    pqxx::work tx(db());
    int64_t id = Enqueue(tx, channel == 0 ? channel_ : channel, key);
    tx.commit();
    return id;
  }

  // Whether job `id` is held (scheduled_at = 'infinity').
  bool Held(int64_t id) {
    return QueryValue<bool>(
        db(), "SELECT scheduled_at = 'infinity' FROM bulkhead.jobs WHERE id = " + Str(id));
  }

  // Whether job `id` is due (scheduled_at <= now()).
  bool Due(int64_t id) {
    return QueryValue<bool>(
        db(), "SELECT scheduled_at <= now() FROM bulkhead.jobs WHERE id = " + Str(id));
  }

  // The state of job `id`.
  std::string State(int64_t id) {
    return QueryValue<std::string>(db(), "SELECT state FROM bulkhead.jobs WHERE id = " + Str(id));
  }

  // Live jobs of key 'k' on channel_ that are due, as "id,id,…" in id order ("" if none).
  std::string DueOfKey(const std::string& key = "k") {
    return QueryValue<std::string>(
        db(),
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM bulkhead.jobs "
        "WHERE channel_id = " +
            Str(channel_) + " AND ordering_key = '" + key +
            "' AND state IN ('available', 'executing', 'parked') "
            "AND scheduled_at <> 'infinity'");
  }

  // A further session whose statements give up after 30 s.
  std::unique_ptr<pqxx::connection> Session() {
    auto conn = Connect();
    pqxx::nontransaction(*conn).exec("SET statement_timeout = '30s'");
    return conn;
  }

  // Polls up to 10 s until backend `pid` waits for a lock; whether it did.
  bool WaitsForALock(int pid) {
    auto watcher = Connect();
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
      if (QueryValue<bool>(*watcher, "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = " +
                                         std::to_string(pid) + " AND wait_event_type = 'Lock'")) {
        return true;
      }
    }
    return false;
  }

  int64_t tenant_ = 0;
  int64_t channel_ = 0;
  int64_t other_channel_ = 0;
};

// ---- What holds a delivery -------------------------------------------------------------------

TEST_F(OrderingTest, AnEnqueueBehindALiveDeliveryOfItsKeyIsHeld) {
  int64_t first = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  int64_t third = EnqueueCommitted("'k'");
  EXPECT_TRUE(Due(first));
  EXPECT_TRUE(Held(second));
  EXPECT_TRUE(Held(third));
  EXPECT_EQ(State(second), "available");
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT ordering_key FROM bulkhead.jobs WHERE id = " + Str(third)),
            "k");
}

TEST_F(OrderingTest, TheFirstDeliveryOfAKeyKeepsItsScheduledAtAndAHeldOneDoesNot) {
  pqxx::work tx(db());
  int64_t first = tx.exec1("SELECT bulkhead.enqueue(" + Str(channel_) +
                           ", '{}', NULL, '2999-01-01 00:00:00+00', 'k')")[0]
                      .as<int64_t>();
  int64_t second = tx.exec1("SELECT bulkhead.enqueue(" + Str(channel_) +
                            ", '{}', NULL, '2999-01-01 00:00:00+00', 'k')")[0]
                       .as<int64_t>();
  tx.commit();
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT scheduled_at = '2999-01-01 00:00:00+00' FROM "
                               "bulkhead.jobs WHERE id = " +
                                   Str(first)));
  EXPECT_TRUE(Held(second));
}

TEST_F(OrderingTest, ALiveDeliveryInAnyLiveStateHoldsTheNext) {
  int64_t executing = EnqueueCommitted("'executing'");
  Exec(Execute(executing));
  int64_t parked = EnqueueCommitted("'parked'");
  Exec(ParkExecuting(parked));
  int64_t retrying = EnqueueCommitted("'retrying'");
  Exec(Retry(retrying));
  for (const std::string key : {"'executing'", "'parked'", "'retrying'"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(Held(EnqueueCommitted(key)));
  }
}

TEST_F(OrderingTest, AFinishedDeliveryOfTheKeyHoldsNothing) {
  int64_t completed = EnqueueCommitted("'k'");
  Exec(Complete(completed));
  int64_t discarded = EnqueueCommitted("'k'");
  Exec(Discard(discarded));
  int64_t cancelled = EnqueueCommitted("'k'");
  Exec(Cancel(cancelled));
  EXPECT_TRUE(Due(EnqueueCommitted("'k'")));
}

TEST_F(OrderingTest, KeysArePerChannel) {
  int64_t here = EnqueueCommitted("'k'");
  int64_t there = EnqueueCommitted("'k'", other_channel_);
  EXPECT_TRUE(Due(here));
  EXPECT_TRUE(Due(there));
  EXPECT_TRUE(Held(EnqueueCommitted("'k'", other_channel_)));
  EXPECT_TRUE(Held(EnqueueCommitted("'k'")));
}

TEST_F(OrderingTest, OtherKeysOfTheChannelAreNotHeld) {
  EnqueueCommitted("'k'");
  EXPECT_TRUE(Due(EnqueueCommitted("'j'")));
  EXPECT_TRUE(Due(EnqueueCommitted("'K'")));
}

TEST_F(OrderingTest, UnkeyedDeliveriesAreNeverHeldNorHoldAny) {
  EnqueueCommitted("'k'");
  EnqueueCommitted("'k'");
  std::vector<int64_t> unkeyed;
  for (int i = 0; i < 3; ++i) unkeyed.push_back(EnqueueCommitted("NULL"));
  for (int64_t id : unkeyed) EXPECT_TRUE(Due(id)) << id;
  EXPECT_TRUE(Due(EnqueueCommitted("'fresh'")));
}

TEST_F(OrderingTest, ADuplicateEnqueueAnswersTheHeldJobAndAddsNone) {
  EnqueueCommitted("'k'");
  pqxx::work tx(db());
  int64_t held =
      tx.exec1("SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}', 'idem', now(), 'k')")[0]
          .as<int64_t>();
  int64_t again =
      tx.exec1("SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}', 'idem', now(), 'k')")[0]
          .as<int64_t>();
  tx.commit();
  EXPECT_EQ(again, held);
  EXPECT_TRUE(Held(held));
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"), 2);
}

TEST_F(OrderingTest, AHeldDeliveryBehindAnOpenBreakerWaitsParkedAndHeld) {
  EnqueueCommitted("'k'");
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_probe_at = now() + "
      "interval '30 s', breaker_trips = 1 WHERE id = " +
      Str(channel_));
  int64_t held = EnqueueCommitted("'k'");
  EXPECT_EQ(State(held), "parked");
  EXPECT_TRUE(Held(held));
}

// ---- What releases one -----------------------------------------------------------------------

TEST_F(OrderingTest, WhenTheHeadEndsTheOldestHeldOneBecomesDueAndOnlyIt) {
  struct End {
    std::string name = "";
    std::string (*sql)(int64_t) = nullptr;
  };
  for (const End& end :
       {End{"completed", Complete}, End{"discarded", Discard}, End{"cancelled", Cancel}}) {
    SCOPED_TRACE(end.name);
    const std::string key = "'" + end.name + "'";
    int64_t head = EnqueueCommitted(key);
    Exec(Execute(head));
    int64_t second = EnqueueCommitted(key);
    int64_t third = EnqueueCommitted(key);
    int64_t fourth = EnqueueCommitted(key);

    Exec(end.sql(head));
    EXPECT_EQ(State(head), end.name);
    EXPECT_TRUE(Due(second));
    EXPECT_TRUE(Held(third));
    EXPECT_TRUE(Held(fourth));
    EXPECT_EQ(DueOfKey(end.name), Str(second));

    // And so on down the key, each end releasing the next.
    Exec(Execute(second));
    Exec(end.sql(second));
    EXPECT_EQ(DueOfKey(end.name), Str(third));
    EXPECT_TRUE(Held(fourth));
    Exec(end.sql(third));  // ended before any attempt: an operator's cancel, say
    EXPECT_EQ(DueOfKey(end.name), Str(fourth));
    Exec(end.sql(fourth));
    EXPECT_EQ(DueOfKey(end.name), "");
  }
}

TEST_F(OrderingTest, AnEndReleasesOnlyItsOwnKeyAndChannel) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t held_k = EnqueueCommitted("'k'");
  EnqueueCommitted("'j'");
  int64_t held_j = EnqueueCommitted("'j'");
  EnqueueCommitted("'k'", other_channel_);
  int64_t held_other = EnqueueCommitted("'k'", other_channel_);
  Exec(Complete(head));
  EXPECT_TRUE(Due(held_k));
  EXPECT_TRUE(Held(held_j));
  EXPECT_TRUE(Held(held_other));
}

TEST_F(OrderingTest, AnEndThatRollsBackReleasesNothing) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t held = EnqueueCommitted("'k'");
  {
    pqxx::work tx(db());
    tx.exec0(Complete(head));
    EXPECT_TRUE(
        tx.exec1("SELECT scheduled_at <= now() FROM bulkhead.jobs WHERE id = " + Str(held))[0]
            .as<bool>());
    tx.abort();
  }
  EXPECT_TRUE(Held(held));
  EXPECT_EQ(DueOfKey(), Str(head));
}

TEST_F(OrderingTest, AHeadGoingToRetryKeepsTheOthersHeld) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  Exec(Execute(head));
  Exec(Retry(head));
  EXPECT_TRUE(Held(second));
  EXPECT_EQ(DueOfKey(), Str(head));  // due, a minute from now
  Exec(Execute(head));
  Exec(Complete(head));
  EXPECT_TRUE(Due(second));
}

TEST_F(OrderingTest, AHeadParkedKeepsTheOthersHeld) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  Exec(Execute(head));
  Exec(ParkExecuting(head));
  EXPECT_EQ(State(head), "parked");
  EXPECT_TRUE(Held(second));
}

TEST_F(OrderingTest, ARescuedHeadKeepsTheOthersHeld) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  Exec(Execute(head));
  Exec(
      "UPDATE bulkhead.jobs SET state = 'available', scheduled_at = now(), "
      "last_error = 'rescued' WHERE id = " +
      Str(head));
  EXPECT_TRUE(Held(second));
}

TEST_F(OrderingTest, ParkingAndUnparkingAChannelKeepHeldDeliveriesHeld) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  int64_t third = EnqueueCommitted("'k'");
  const std::string ch = Str(channel_);
  // A breaker opens: the channel's waiting backlog is parked (breaker_store.sql's park).
  Exec("UPDATE bulkhead.jobs SET state = 'parked', priority = 3 WHERE channel_id = " + ch +
       " AND state = 'available'");
  EXPECT_EQ(State(head), "parked");
  EXPECT_TRUE(Due(head));
  EXPECT_TRUE(Held(second));
  EXPECT_TRUE(Held(third));
  // It closes: unparked.
  Exec("UPDATE bulkhead.jobs SET state = 'available', priority = 1 WHERE channel_id = " + ch +
       " AND state = 'parked'");
  EXPECT_EQ(State(second), "available");
  EXPECT_TRUE(Held(second));
  EXPECT_TRUE(Held(third));
  EXPECT_EQ(DueOfKey(), Str(head));

  // The head ends while the channel is parked again: the next is released, still parked.
  Exec("UPDATE bulkhead.jobs SET state = 'parked', priority = 3 WHERE channel_id = " + ch +
       " AND state = 'available' AND id <> " + Str(head));
  Exec(Execute(head));
  Exec(Complete(head));
  EXPECT_EQ(State(second), "parked");
  EXPECT_TRUE(Due(second));
  EXPECT_TRUE(Held(third));
}

TEST_F(OrderingTest, CancellingAHeldDeliveryReleasesNothing) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  int64_t third = EnqueueCommitted("'k'");
  Exec(Cancel(second));
  EXPECT_TRUE(Held(third));
  EXPECT_EQ(DueOfKey(), Str(head));
  Exec(Complete(head));
  EXPECT_EQ(DueOfKey(), Str(third));
}

// ---- Replay ----------------------------------------------------------------------------------

TEST_F(OrderingTest, AReplayWhileTheKeyIsLiveIsHeldAndGoesBeforeTheLaterHeldOnes) {
  int64_t first = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  int64_t third = EnqueueCommitted("'k'");
  Exec(Execute(first));
  Exec(Discard(first));
  ASSERT_EQ(DueOfKey(), Str(second));

  Exec(Replay(Str(first)));
  EXPECT_EQ(State(first), "available");
  EXPECT_TRUE(Held(first));
  EXPECT_TRUE(Held(third));
  EXPECT_EQ(DueOfKey(), Str(second));

  Exec(Complete(second));
  EXPECT_EQ(DueOfKey(), Str(first));
  EXPECT_TRUE(Held(third));
  Exec(Complete(first));
  EXPECT_EQ(DueOfKey(), Str(third));
}

TEST_F(OrderingTest, AReplayWhenTheKeyIsIdleGoesAtOnce) {
  int64_t first = EnqueueCommitted("'k'");
  Exec(Discard(first));
  Exec(Replay(Str(first)));
  EXPECT_EQ(State(first), "available");
  EXPECT_TRUE(Due(first));
  // And holds the next enqueue of its key.
  EXPECT_TRUE(Held(EnqueueCommitted("'k'")));
}

TEST_F(OrderingTest, ReplayingTwoDeliveriesOfAnIdleKeyInOneStatementLetsOnlyTheOlderGo) {
  int64_t first = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  Exec(Discard(first));
  Exec(Discard(second));
  Exec(Replay(Str(first) + ", " + Str(second)));
  EXPECT_EQ(DueOfKey(), Str(first));
  EXPECT_TRUE(Held(second));
}

TEST_F(OrderingTest, AReplayOfAnUnkeyedDeliveryIsNeverHeld) {
  int64_t id = EnqueueCommitted("NULL");
  EnqueueCommitted("NULL");
  Exec(Discard(id));
  Exec(Replay(Str(id)));
  EXPECT_TRUE(Due(id));
}

// ---- Concurrency -----------------------------------------------------------------------------

TEST_F(OrderingTest, AConcurrentEnqueueOfTheKeyWaitsForTheFirstToCommitAndIsThenHeld) {
  auto a = Session();
  auto b = Session();
  const int b_pid = b->backendpid();

  pqxx::work ta(*a);
  int64_t a_id = Enqueue(ta, channel_, "'k'");

  int64_t b_id = 0;
  std::string b_error;
  std::thread thread([&] {
    try {
      pqxx::work tb(*b);
      b_id = Enqueue(tb, channel_, "'k'");
      tb.commit();
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  });
  const bool b_waited = WaitsForALock(b_pid);
  ta.commit();
  thread.join();

  EXPECT_TRUE(b_waited) << "session B never waited for A's ordering key";
  ASSERT_EQ(b_error, "");
  EXPECT_TRUE(Due(a_id));
  EXPECT_TRUE(Held(b_id));
}

TEST_F(OrderingTest, AConcurrentEnqueueOfTheKeyOnAnotherChannelIsNotHeld) {
  auto a = Session();
  auto b = Session();
  pqxx::work ta(*a);
  int64_t a_id = Enqueue(ta, channel_, "'k'");
  // The lock is per tenant and key, so B waits for A even so; it is not held once A commits.
  int64_t b_id = 0;
  std::string b_error;
  std::thread thread([&] {
    try {
      pqxx::work tb(*b);
      b_id = Enqueue(tb, other_channel_, "'k'");
      tb.commit();
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  });
  WaitsForALock(b->backendpid());
  ta.commit();
  thread.join();
  ASSERT_EQ(b_error, "");
  EXPECT_TRUE(Due(a_id));
  EXPECT_TRUE(Due(b_id));
}

// The race the settle trigger exists for: A holds its delivery behind a head that B is ending;
// B's release cannot see A's uncommitted row, and B commits first.
TEST_F(OrderingTest, ADeliveryHeldBehindAHeadEndedAndCommittedMeanwhileIsReleasedAtItsCommit) {
  int64_t head = EnqueueCommitted("'k'");
  Exec(Execute(head));
  auto a = Session();
  auto b = Session();

  pqxx::work ta(*a);
  int64_t a_id = Enqueue(ta, channel_, "'k'");
  EXPECT_TRUE(
      ta.exec1("SELECT scheduled_at = 'infinity' FROM bulkhead.jobs WHERE id = " + Str(a_id))[0]
          .as<bool>());
  {
    pqxx::work tb(*b);
    tb.exec0(Complete(head));
    tb.commit();
  }
  EXPECT_EQ(State(head), "completed");
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE id = " + Str(a_id)), 0);
  ta.commit();
  EXPECT_TRUE(Due(a_id));
  EXPECT_EQ(DueOfKey(), Str(a_id));
}

// The same race for a replay (migration 0023: the rejoin holds it after the update, in an UPDATE
// of its own, and the settle follows that change): A replays a finished delivery of the key
// while B's end of the head commits first; A's commit releases it.
TEST_F(OrderingTest, AReplayHeldBehindAHeadEndedAndCommittedMeanwhileIsReleasedAtItsCommit) {
  int64_t old_one = EnqueueCommitted("'k'");
  Exec(Discard(old_one));
  int64_t head = EnqueueCommitted("'k'");
  Exec(Execute(head));
  auto a = Session();
  auto b = Session();

  pqxx::work ta(*a);
  ta.exec0(Replay(Str(old_one)));
  EXPECT_TRUE(
      ta.exec1("SELECT scheduled_at = 'infinity' FROM bulkhead.jobs WHERE id = " + Str(old_one))[0]
          .as<bool>());
  {
    pqxx::work tb(*b);
    tb.exec0(Complete(head));
    tb.commit();
  }
  EXPECT_EQ(State(head), "completed");
  ta.commit();
  EXPECT_TRUE(Due(old_one));
  EXPECT_EQ(DueOfKey(), Str(old_one));
}

// The other order: B's end of the head is written but not committed when A commits; A's commit
// waits for B's, and then releases A's delivery.
TEST_F(OrderingTest, ACommitBehindAHeadWhoseEndIsBeingWrittenWaitsForItAndIsReleased) {
  int64_t head = EnqueueCommitted("'k'");
  Exec(Execute(head));
  auto a = Session();
  auto b = Session();
  const int a_pid = a->backendpid();

  pqxx::work tb(*b);
  tb.exec0(Complete(head));

  int64_t a_id = 0;
  bool a_held_in_tx = false;
  std::string a_error;
  std::thread thread([&] {
    try {
      pqxx::work ta(*a);
      a_id = Enqueue(ta, channel_, "'k'");
      a_held_in_tx =
          ta.exec1("SELECT scheduled_at = 'infinity' FROM bulkhead.jobs WHERE id = " + Str(a_id))[0]
              .as<bool>();
      ta.commit();
    } catch (const std::exception& e) {
      a_error = e.what();
    }
  });
  const bool a_waited = WaitsForALock(a_pid);
  tb.commit();
  thread.join();

  EXPECT_TRUE(a_waited) << "A's commit never waited for B's end of the head";
  ASSERT_EQ(a_error, "");
  EXPECT_TRUE(a_held_in_tx);
  EXPECT_EQ(State(head), "completed");
  EXPECT_TRUE(Due(a_id));
  EXPECT_EQ(DueOfKey(), Str(a_id));
}

// The same race for a replay: A replays a discarded delivery of the key while B's end of the
// head is not committed yet.
TEST_F(OrderingTest, AReplayBehindAHeadWhoseEndIsBeingWrittenIsReleasedAtItsCommit) {
  int64_t old = EnqueueCommitted("'k'");
  Exec(Discard(old));
  int64_t head = EnqueueCommitted("'k'");
  Exec(Execute(head));
  auto a = Session();
  auto b = Session();
  const int a_pid = a->backendpid();

  pqxx::work tb(*b);
  tb.exec0(Complete(head));

  std::string a_error;
  std::thread thread([&] {
    try {
      pqxx::work ta(*a);
      ta.exec0(Replay(Str(old)));
      ta.commit();
    } catch (const std::exception& e) {
      a_error = e.what();
    }
  });
  const bool a_waited = WaitsForALock(a_pid);
  tb.commit();
  thread.join();

  EXPECT_TRUE(a_waited);
  ASSERT_EQ(a_error, "");
  EXPECT_EQ(State(old), "available");
  EXPECT_EQ(DueOfKey(), Str(old));
}

// The head ends (B) while an operator cancels the oldest held delivery (C), neither committed:
// B's release must not settle on C's cancelled row and leave the next one held for ever.
TEST_F(OrderingTest, AHeadEndingWhileTheNextIsBeingCancelledReleasesTheOneAfter) {
  int64_t head = EnqueueCommitted("'k'");
  int64_t second = EnqueueCommitted("'k'");
  int64_t third = EnqueueCommitted("'k'");
  Exec(Execute(head));
  auto b = Session();
  auto c = Session();
  const int b_pid = b->backendpid();

  pqxx::work tc(*c);
  tc.exec0(Cancel(second));

  std::string b_error;
  std::thread thread([&] {
    try {
      pqxx::work tb(*b);
      tb.exec0(Complete(head));
      tb.commit();
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  });
  WaitsForALock(b_pid);  // B's release may wait for C's row, or not need it
  tc.commit();
  thread.join();

  ASSERT_EQ(b_error, "");
  EXPECT_EQ(State(head), "completed");
  EXPECT_EQ(State(second), "cancelled");
  EXPECT_TRUE(Due(third)) << "the key is stuck: nothing of it goes any more";
  EXPECT_EQ(DueOfKey(), Str(third));
}

// ---- Scale -----------------------------------------------------------------------------------

TEST_F(OrderingTest, TenThousandKeysWithTwoDeliveriesEachHaveTenThousandDueAndTenThousandHeld) {
  const std::string enqueue_all = "SELECT count(bulkhead.enqueue(" + Str(channel_) +
                                  ", '{}', NULL, now(), 'key-' || g)) "
                                  "FROM generate_series(1, 10000) AS g";
  {
    pqxx::work tx(db());
    EXPECT_EQ(tx.exec1(enqueue_all)[0].as<int>(), 10000);
    EXPECT_EQ(tx.exec1(enqueue_all)[0].as<int>(), 10000);
    tx.commit();
  }
  pqxx::row counts = [&] {
    pqxx::work tx(db());
    pqxx::row row = tx.exec1(
        "SELECT count(*) FILTER (WHERE scheduled_at <= now()), "
        "count(*) FILTER (WHERE scheduled_at = 'infinity'), "
        "count(DISTINCT ordering_key) FILTER (WHERE scheduled_at <= now()), "
        "count(DISTINCT ordering_key) FILTER (WHERE scheduled_at = 'infinity'), "
        "(SELECT count(*) FROM (SELECT min(id) FILTER (WHERE scheduled_at <= now()) AS due, "
        "                              min(id) FILTER (WHERE scheduled_at = 'infinity') AS held "
        "                         FROM bulkhead.jobs WHERE channel_id = " +
        Str(channel_) +
        "                        GROUP BY ordering_key) AS k WHERE k.held < k.due) "
        "FROM bulkhead.jobs WHERE channel_id = " +
        Str(channel_));
    tx.commit();
    return row;
  }();
  EXPECT_EQ(counts[0].as<int>(), 10000);
  EXPECT_EQ(counts[1].as<int>(), 10000);
  EXPECT_EQ(counts[2].as<int>(), 10000);  // one due per key
  EXPECT_EQ(counts[3].as<int>(), 10000);  // one held per key
  EXPECT_EQ(counts[4].as<int>(), 0);      // the held one is the later of the two
}

}  // namespace
}  // namespace bulkhead
