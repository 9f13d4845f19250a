// bulkhead.enqueue and bulkhead.enqueue_many: the row a delivery becomes (queue from the tenant's
// tier, state from the channel's breaker), the caller's transaction deciding whether it exists,
// deduplication on (channel, idempotency key) including between concurrent sessions,
// scheduling, every refusal (SQLSTATE, message, and no row left behind), and the batch form's
// ordering, deduplication, all-or-nothing refusal and array checks.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "database_test.h"
#include "sql_failure.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::QueryValue;

using testing::ExpectSqlFailure;
using testing::SqlFailure;

// SELECT bulkhead.enqueue(<args>) in `tx`; returns the id.
int64_t Enqueue(pqxx::transaction_base& tx, const std::string& args) {
  return tx.exec1("SELECT bulkhead.enqueue(" + args + ")")[0].as<int64_t>();
}

// SELECT bulkhead.enqueue_many(<args>) in `tx`; returns the ids in the array's order.
std::vector<int64_t> EnqueueMany(pqxx::transaction_base& tx, const std::string& args) {
  std::vector<int64_t> ids;
  for (const auto& row : tx.exec("SELECT u.id FROM unnest(bulkhead.enqueue_many(" + args +
                                 ")) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord")) {
    ids.push_back(row[0].as<int64_t>());
  }
  return ids;
}

std::string Str(int64_t id) { return std::to_string(id); }

// A tenant `acme` on the default tier with one channel; more when a test needs them.
class EnqueueTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = CreateTenant(db(), "acme");
    channel_ = CreateChannel(db(), tenant_);
  }

  int JobCount() { return QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"); }

  // Enqueues one job in a transaction of its own and commits it.
  int64_t EnqueueCommitted(const std::string& args) {
    pqxx::work tx(db());
    int64_t id = Enqueue(tx, args);
    tx.commit();
    return id;
  }

  // Sets `sql` on the channel, e.g. "breaker_state = 'open', breaker_probe_at = now()".
  void UpdateChannel(int64_t channel, const std::string& sql) {
    pqxx::work tx(db());
    tx.exec("UPDATE bulkhead.channels SET " + sql + " WHERE id = " + Str(channel));
    tx.commit();
  }

  // What a second session's enqueue did: the id it returned, the error it raised, and whether
  // it waited for a lock first.
  struct Second {
    int64_t id = 0;
    std::string error;
    bool waited = false;
  };
  // Runs SELECT bulkhead.enqueue(<args>) and commits on a session of its own, in a thread;
  // waits (10 s at most) until that session waits for a lock, then calls `release` (the first
  // session's commit) and waits for the thread.
  Second EnqueueBehind(const std::string& args, const std::function<void()>& release) {
    return RunBehind("SELECT bulkhead.enqueue(" + args + ")", release);
  }

  // EnqueueBehind for any statement `select` whose one value is an id. `release` must not
  // throw: the thread is joined after it.
  Second RunBehind(const std::string& select, const std::function<void()>& release) {
    auto other = Connect();
    const int other_pid = other->backendpid();
    auto watcher = Connect();
    Second second;
    std::thread b([&] {
      try {
        pqxx::work tx(*other);
        second.id = tx.exec1(select)[0].as<int64_t>();
        tx.commit();
      } catch (const std::exception& e) {
        second.error = e.what();
      }
    });
    bool waited = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         !waited && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
      waited = QueryValue<bool>(*watcher, "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = " +
                                              std::to_string(other_pid) +
                                              " AND wait_event_type = 'Lock'");
    }
    release();
    b.join();
    second.waited = waited;
    return second;
  }

  int64_t tenant_ = 0;
  int64_t channel_ = 0;
};

// ---- The row ---------------------------------------------------------------------------------

TEST_F(EnqueueTest, ReturnsTheNewIdOfAnAvailableFreshJob) {
  pqxx::work tx(db());
  int64_t id = Enqueue(tx, Str(channel_) + ", '{\"event\": \"invoice.paid\", \"n\": 7}'");
  auto row = tx.exec_params1(
      "SELECT queue, tenant_id, channel_id, state, priority, attempt, max_attempts, "
      "scheduled_at = now(), payload::text, idempotency_key IS NULL, created_at = now() "
      "FROM bulkhead.jobs WHERE id = $1",
      id);
  tx.commit();
  EXPECT_EQ(row[0].as<std::string>(), "default");
  EXPECT_EQ(row[1].as<int64_t>(), tenant_);
  EXPECT_EQ(row[2].as<int64_t>(), channel_);
  EXPECT_EQ(row[3].as<std::string>(), "available");
  EXPECT_EQ(row[4].as<int>(), 1);
  EXPECT_EQ(row[5].as<int>(), 0);
  EXPECT_EQ(row[6].as<int>(), 8);
  EXPECT_TRUE(row[7].as<bool>());  // scheduled_at is the transaction's now()
  EXPECT_EQ(row[8].as<std::string>(), "{\"n\": 7, \"event\": \"invoice.paid\"}");
  EXPECT_TRUE(row[9].as<bool>());
  EXPECT_TRUE(row[10].as<bool>());
  EXPECT_EQ(JobCount(), 1);
}

TEST_F(EnqueueTest, QueuesAJobOnItsTenantsTier) {
  int64_t bulk_tenant = CreateTenant(db(), "globex", "bulk");
  int64_t bulk_channel = CreateChannel(db(), bulk_tenant, "https://globex.example/hooks");
  int64_t id = EnqueueCommitted(Str(bulk_channel) + ", '[1, 2, 3]'");
  auto row = QueryValue<std::string>(
      db(),
      "SELECT queue || ' ' || tenant_id || ' ' || channel_id || ' ' || payload::text "
      "FROM bulkhead.jobs WHERE id = " +
          Str(id));
  EXPECT_EQ(row, "bulk " + Str(bulk_tenant) + " " + Str(bulk_channel) + " [1, 2, 3]");
}

TEST_F(EnqueueTest, TheJobExistsOnlyIfTheCallersTransactionCommits) {
  {
    pqxx::work tx(db());
    int64_t id = Enqueue(tx, Str(channel_) + ", '{}'");
    EXPECT_EQ(tx.exec1("SELECT count(*) FROM bulkhead.jobs WHERE id = " + Str(id))[0].as<int>(), 1);
    tx.abort();
  }
  EXPECT_EQ(JobCount(), 0);
}

// ---- Deduplication ---------------------------------------------------------------------------

TEST_F(EnqueueTest, DeduplicatesOnChannelAndIdempotencyKey) {
  pqxx::work tx(db());
  int64_t first = Enqueue(tx, Str(channel_) + ", '{\"n\": 1}', 'order-42'");
  int64_t second = Enqueue(tx, Str(channel_) + ", '{\"n\": 2}', 'order-42'");
  tx.commit();
  EXPECT_EQ(second, first);
  EXPECT_EQ(JobCount(), 1);
  EXPECT_EQ(QueryValue<std::string>(db(), "SELECT payload::text FROM bulkhead.jobs"), "{\"n\": 1}");
}

TEST_F(EnqueueTest, TheSameKeyOnAnotherChannelMakesASecondJob) {
  int64_t other = CreateChannel(db(), tenant_, "https://example.com/other");
  pqxx::work tx(db());
  int64_t a = Enqueue(tx, Str(channel_) + ", '{}', 'order-42'");
  int64_t b = Enqueue(tx, Str(other) + ", '{}', 'order-42'");
  tx.commit();
  EXPECT_NE(a, b);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM bulkhead.jobs WHERE idempotency_key = "
                            "'order-42' AND channel_id IN (" +
                                Str(channel_) + ", " + Str(other) + ")"),
            2);
}

TEST_F(EnqueueTest, ANullKeyNeverDeduplicates) {
  pqxx::work tx(db());
  int64_t a = Enqueue(tx, Str(channel_) + ", '{}'");
  int64_t b = Enqueue(tx, Str(channel_) + ", '{}', NULL");
  int64_t c = Enqueue(tx, Str(channel_) + ", '{}', NULL");
  tx.commit();
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
  EXPECT_EQ(JobCount(), 3);
}

TEST_F(EnqueueTest, DeduplicatesAcrossCommittedTransactions) {
  int64_t first = EnqueueCommitted(Str(channel_) + ", '{\"n\": 1}', 'order-42'");
  int64_t second = EnqueueCommitted(Str(channel_) + ", '{\"n\": 2}', 'order-42'");
  EXPECT_EQ(second, first);
  EXPECT_EQ(JobCount(), 1);
}

TEST_F(EnqueueTest, AConcurrentDuplicateWaitsAndReturnsTheCommittedJobsId) {
  pqxx::work a(db());
  int64_t a_id = Enqueue(a, Str(channel_) + ", '{\"from\": \"a\"}', 'k'");
  // B must be blocked on A's key before A commits, or the test would not be about concurrency.
  Second b = EnqueueBehind(Str(channel_) + ", '{\"from\": \"b\"}', 'k'", [&] { a.commit(); });

  EXPECT_TRUE(b.waited) << "session B never waited for A's idempotency key";
  EXPECT_EQ(b.error, "");
  EXPECT_EQ(b.id, a_id);
  EXPECT_EQ(JobCount(), 1);
  EXPECT_EQ(QueryValue<std::string>(db(), "SELECT payload->>'from' FROM bulkhead.jobs"), "a");
}

// Since migration 0019 a key is a row of bulkhead.idempotency_keys naming its job, written with
// the job and by nobody else.
TEST_F(EnqueueTest, AKeyIsHeldInItsOwnTableByTheJobThatTookIt) {
  int64_t id = EnqueueCommitted(Str(channel_) + ", '{}', 'order-7'");
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT channel_id || ' ' || key || ' ' || job_id FROM "
                                    "bulkhead.idempotency_keys"),
            Str(channel_) + " order-7 " + Str(id));
  EnqueueCommitted(Str(channel_) + ", '{}'");
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.idempotency_keys"), 1)
      << "an enqueue without a key writes no key";
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT idempotency_key FROM bulkhead.jobs WHERE id = " + Str(id)),
            "order-7")
      << "the job keeps its key for its readers";
}

// A job deleted other than by the prune (by hand, a TRUNCATE) leaves its key row behind; the
// key is free all the same, as it was when the key was an index of the job's own row.
TEST_F(EnqueueTest, AKeyWhoseJobIsGoneIsTakenByTheNextEnqueue) {
  int64_t first = EnqueueCommitted(Str(channel_) + ", '{\"n\": 1}', 'k'");
  {
    pqxx::work tx(db());
    tx.exec0("DELETE FROM bulkhead.jobs WHERE id = " + Str(first));
    tx.commit();
  }
  int64_t second = EnqueueCommitted(Str(channel_) + ", '{\"n\": 2}', 'k'");
  EXPECT_NE(second, first);
  EXPECT_EQ(JobCount(), 1);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT job_id FROM bulkhead.idempotency_keys"), second);
  EXPECT_EQ(EnqueueCommitted(Str(channel_) + ", '{\"n\": 3}', 'k'"), second);

  {
    pqxx::work tx(db());
    tx.exec0("TRUNCATE bulkhead.job_rows");
    tx.commit();
  }
  pqxx::work tx(db());
  std::vector<int64_t> ids =
      EnqueueMany(tx, "ARRAY[" + Str(channel_) + ", " + Str(channel_) +
                          "]::bigint[], ARRAY['{}', '{}']::jsonb[], ARRAY['k', 'k']");
  tx.commit();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_EQ(JobCount(), 1);
}

// Two enqueues taking over one free key at once: the second waits for the first, and answers
// with its job once it commits; one job in all.
TEST_F(EnqueueTest, TwoEnqueuesOfAFreedKeyAtOnceMakeOneJob) {
  int64_t gone = EnqueueCommitted(Str(channel_) + ", '{}', 'k'");
  {
    pqxx::work tx(db());
    tx.exec0("DELETE FROM bulkhead.jobs WHERE id = " + Str(gone));
    tx.commit();
  }
  pqxx::work a(db());
  int64_t a_id = Enqueue(a, Str(channel_) + ", '{\"from\": \"a\"}', 'k'");
  ASSERT_NE(a_id, gone);
  Second b = EnqueueBehind(Str(channel_) + ", '{\"from\": \"b\"}', 'k'", [&] { a.commit(); });

  EXPECT_TRUE(b.waited) << "session B never waited for A's take-over of the key";
  EXPECT_EQ(b.error, "");
  EXPECT_EQ(b.id, a_id);
  EXPECT_EQ(JobCount(), 1);
}

// Since migration 0020 a call takes the keys it can in one INSERT and settles each conflict on
// its own: in one call, a fresh key, a key whose job is gone, a key a live job holds, and a key
// twice.
TEST_F(EnqueueTest, EnqueueManySettlesFreshGoneLiveAndRepeatedKeysInOneCall) {
  int64_t live = EnqueueCommitted(Str(channel_) + ", '{}', 'live'");
  int64_t gone = EnqueueCommitted(Str(channel_) + ", '{}', 'gone'");
  {
    pqxx::work tx(db());
    tx.exec0("DELETE FROM bulkhead.jobs WHERE id = " + Str(gone));
    tx.commit();
  }
  const std::string c = Str(channel_);
  pqxx::work tx(db());
  std::vector<int64_t> ids =
      EnqueueMany(tx, "ARRAY[" + c + ", " + c + ", " + c + ", " + c + ", " + c +
                          "]::bigint[], ARRAY['{}', '{}', '{}', '{}', '{}']::jsonb[], "
                          "ARRAY['gone', 'fresh', 'live', 'gone', NULL]");
  tx.commit();
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_NE(ids[0], gone) << "the gone job's key is taken over by a new job";
  EXPECT_EQ(ids[2], live);
  EXPECT_EQ(ids[3], ids[0]);
  EXPECT_NE(ids[1], ids[0]);
  EXPECT_NE(ids[4], ids[0]);
  EXPECT_EQ(JobCount(), 4);  // live, and the call's gone, fresh and unkeyed
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(key || '=' || job_id, ' ' ORDER BY key) "
                                    "FROM bulkhead.idempotency_keys"),
            "fresh=" + Str(ids[1]) + " gone=" + Str(ids[0]) + " live=" + Str(live));
}

// A call takes its keys in (channel, key) order, not in its items' order, so two calls that
// share keys queue on the first they share. Taken in the items' order (as before 0020) the
// second call below would hold k2 while it waited for k1, and the first call's k2 would then
// wait for it: a deadlock, which PostgreSQL breaks by failing one of them.
TEST_F(EnqueueTest, TwoEnqueueManyCallsSharingKeysInOppositeOrdersQueueRatherThanDeadlock) {
  const std::string c = Str(channel_);
  pqxx::work a(db());
  std::vector<int64_t> k1 = EnqueueMany(a, "ARRAY[" + c +
                                               "]::bigint[], ARRAY['{}']::jsonb[], "
                                               "ARRAY['k1']");
  ASSERT_EQ(k1.size(), 1u);
  std::vector<int64_t> k2;
  std::string a_error;
  Second b = RunBehind("SELECT (bulkhead.enqueue_many(ARRAY[" + c + ", " + c +
                           "]::bigint[], ARRAY['{}', '{}']::jsonb[], ARRAY['k2', 'k1']))[1]",
                       [&] {
                         try {
                           k2 = EnqueueMany(a, "ARRAY[" + c +
                                                   "]::bigint[], ARRAY['{}']::jsonb[], "
                                                   "ARRAY['k2']");
                           a.commit();
                         } catch (const std::exception& e) {
                           a_error = e.what();
                         }
                       });
  EXPECT_TRUE(b.waited) << "the second call never waited for the first's k1";
  EXPECT_EQ(a_error, "");
  EXPECT_EQ(b.error, "");
  ASSERT_EQ(k2.size(), 1u);
  EXPECT_EQ(b.id, k2[0]) << "the second call's k2 answers with the first call's job";
  EXPECT_EQ(JobCount(), 2);
}

// ---- Scheduling and the breaker --------------------------------------------------------------

TEST_F(EnqueueTest, KeepsAFutureScheduledAt) {
  pqxx::work tx(db());
  int64_t id = Enqueue(tx, Str(channel_) + ", '{}', NULL, '2999-01-02 03:04:05+00'");
  auto row = tx.exec1(
      "SELECT state, scheduled_at = '2999-01-02 03:04:05+00' FROM bulkhead.jobs WHERE id = " +
      Str(id));
  EXPECT_EQ(row[0].as<std::string>(), "available");
  EXPECT_TRUE(row[1].as<bool>());
}

TEST_F(EnqueueTest, AnExplicitNullScheduledAtMeansNow) {
  pqxx::work tx(db());
  int64_t id = Enqueue(tx, Str(channel_) + ", '{}', NULL, NULL");
  EXPECT_TRUE(tx.exec1("SELECT scheduled_at = now() FROM bulkhead.jobs WHERE id = " + Str(id))[0]
                  .as<bool>());
}

TEST_F(EnqueueTest, ParksTheJobBehindAnOpenBreaker) {
  UpdateChannel(channel_,
                "breaker_state = 'open', breaker_probe_at = now() + interval '30 s', "
                "breaker_trips = 1");
  int64_t id = EnqueueCommitted(Str(channel_) + ", '{}'");
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT state || ' ' || priority FROM bulkhead.jobs WHERE id = " + Str(id)),
            "parked 3");
}

TEST_F(EnqueueTest, ParksTheJobBehindAHalfOpenBreaker) {
  UpdateChannel(channel_,
                "breaker_state = 'half_open', breaker_probe_at = now() + interval '10 s', "
                "breaker_trips = 1, breaker_probe_job = 1");
  int64_t id = EnqueueCommitted(Str(channel_) + ", '{}'");
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT state || ' ' || priority FROM bulkhead.jobs WHERE id = " + Str(id)),
            "parked 3");
}

TEST_F(EnqueueTest, ParksTheJobOfAPausedChannel) {
  UpdateChannel(channel_, "paused = true");
  int64_t id = EnqueueCommitted(Str(channel_) + ", '{}'");
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT state || ' ' || priority FROM bulkhead.jobs WHERE id = " + Str(id)),
            "parked 3");
}

// ---- Refusals: each raises, with the message naming the function, and leaves no row --------

TEST_F(EnqueueTest, RefusesANullChannelId) {
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(NULL, '{}')");
  EXPECT_EQ(f.sqlstate, "22004");
  EXPECT_EQ(f.message, "bulkhead.enqueue: channel_id is NULL");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, RefusesAnUnknownChannel) {
  const std::string unknown = Str(channel_ + 1000);
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(" + unknown + ", '{}')");
  EXPECT_EQ(f.sqlstate, "23503");
  EXPECT_EQ(f.message, "bulkhead.enqueue: no channel with id " + unknown);
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, RefusesADisabledChannelWithItsReason) {
  UpdateChannel(channel_, "enabled = false, disabled_reason = 'endpoint gone (HTTP 410)'");
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}')");
  EXPECT_EQ(f.sqlstate, "55000");
  EXPECT_TRUE(f.message.starts_with("bulkhead.enqueue: ")) << f.message;
  EXPECT_NE(f.message.find("disabled"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("endpoint gone (HTTP 410)"), std::string::npos) << f.message;
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, RefusesAPayloadThatIsNotAnObjectOrArray) {
  for (const std::string payload : {"'\"hello\"'", "'42'", "'true'", "'null'"}) {
    SCOPED_TRACE(payload);
    SqlFailure f =
        ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(" + Str(channel_) + ", " + payload + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_TRUE(f.message.starts_with("bulkhead.enqueue: payload must be a JSON object or array"))
        << f.message;
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, RefusesASqlNullPayload) {
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(" + Str(channel_) + ", NULL)");
  EXPECT_EQ(f.sqlstate, "22004");
  EXPECT_EQ(f.message, "bulkhead.enqueue: payload is NULL");
  EXPECT_EQ(JobCount(), 0);
}

// Of several bad arguments, the one reported is always the first in this order: the setting,
// the payload, the idempotency key, the ordering key, the channel. An application that fixes
// one refusal and meets the next depends on it; migration 0024 tests the conditions in the
// function's own body and keeps the order the called functions gave.
TEST_F(EnqueueTest, OfSeveralBadArgumentsReportsTheFirstInAFixedOrder) {
  const std::string unknown = Str(channel_ + 1000);
  struct Case {
    std::string sql;
    std::string sqlstate;
    std::string starts;
  };
  const std::vector<Case> cases = {
      {"SET bulkhead.max_payload_bytes = 'abc'; SELECT bulkhead.enqueue(NULL, NULL, '')", "22023",
       "bulkhead.max_payload_bytes must be a number"},
      {"SELECT bulkhead.enqueue(NULL, NULL, '', ordering_key => '')", "22004",
       "bulkhead.enqueue: payload is NULL"},
      {"SELECT bulkhead.enqueue(NULL, '42', '')", "22023",
       "bulkhead.enqueue: payload must be a JSON object or array"},
      {"SET bulkhead.max_payload_bytes = '5'; SELECT bulkhead.enqueue(NULL, '{\"a\": 1}', '')",
       "54000", "bulkhead.enqueue: payload is 8 bytes"},
      {"SELECT bulkhead.enqueue(NULL, '{}', '', ordering_key => '')", "22023",
       "bulkhead.enqueue: idempotency_key must be"},
      {"SELECT bulkhead.enqueue(NULL, '{}', ordering_key => '')", "22023",
       "bulkhead.enqueue: ordering_key must be"},
      {"SELECT bulkhead.enqueue(NULL, '{}')", "22004", "bulkhead.enqueue: channel_id is NULL"},
      {"SELECT bulkhead.enqueue(" + unknown + ", '{}')", "23503",
       "bulkhead.enqueue: no channel with id"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sql);
    SqlFailure f = ExpectSqlFailure(db(), c.sql);
    EXPECT_EQ(f.sqlstate, c.sqlstate);
    EXPECT_TRUE(f.message.starts_with(c.starts)) << f.message;
  }
  EXPECT_EQ(JobCount(), 0);
}

// Migration 0026: enqueue and route() (which enqueue_many and publish call) find a channel and
// its tenant through their primary keys, however few tenants there are. With 100 of them,
// analyzed, the planner's choice without the functions' enable_seqscan = off is a sequential
// scan of both tables at every call; a later CREATE OR REPLACE that forgot to restate the
// setting would bring that back, and this test with it.
TEST_F(EnqueueTest, FindsTheChannelAndItsTenantByKeyAmongFewTenants) {
  {
    pqxx::work tx(db());
    tx.exec0("INSERT INTO bulkhead.tenants (name) SELECT 'few' || g FROM generate_series(1, 99) g");
    tx.exec0(
        "INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, 'http://127.0.0.1:9/' "
        "FROM bulkhead.tenants WHERE name LIKE 'few%'");
    tx.commit();
  }
  pqxx::nontransaction(db()).exec0("ANALYZE bulkhead.tenants, bulkhead.channels");

  std::vector<int64_t> channels;
  for (const auto& row : pqxx::nontransaction(db()).exec("SELECT id FROM bulkhead.channels")) {
    channels.push_back(row[0].as<int64_t>());
  }
  ASSERT_EQ(channels.size(), 100u);

  // pg_stat_xact_user_tables counts this session's scans not yet sent to the statistics
  // (PostgreSQL 15 sends them at most once a second, so the SELECT above may be among them):
  // what counts is what the calls add. Eight calls of each function: plpgsql's generic plan,
  // the one it keeps, replaces the custom ones from the sixth.
  pqxx::work tx(db());
  const std::string count =
      "SELECT coalesce(sum(seq_scan), 0), coalesce(sum(idx_scan), 0) "
      "FROM pg_stat_xact_user_tables "
      "WHERE schemaname = 'bulkhead' AND relname IN ('tenants', 'channels')";
  const pqxx::row before = tx.exec1(count);
  for (size_t i = 0; i < 8; ++i) {
    tx.exec1("SELECT bulkhead.enqueue(" + Str(channels[i * 11]) + ", '{}')");
    tx.exec1("SELECT bulkhead.enqueue_many(ARRAY[" + Str(channels[i * 7 + 1]) +
             "]::bigint[], ARRAY['{}'::jsonb])");
  }
  const pqxx::row after = tx.exec1(count);
  EXPECT_EQ(after[0].as<int64_t>() - before[0].as<int64_t>(), 0) << "sequential scans";
  // A channel and its tenant a call, at least.
  EXPECT_GE(after[1].as<int64_t>() - before[1].as<int64_t>(), 32) << "index scans";
}

// {"d": "xxx…"} is 9 bytes of text around the string.
std::string PayloadOfBytes(int bytes) {
  return "jsonb_build_object('d', repeat('x', " + std::to_string(bytes - 9) + "))";
}

TEST_F(EnqueueTest, AcceptsAPayloadOfExactly256KiB) {
  int64_t id = EnqueueCommitted(Str(channel_) + ", " + PayloadOfBytes(262144));
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT octet_length(payload::text) FROM bulkhead.jobs "
                            "WHERE id = " +
                                Str(id)),
            262144);
}

TEST_F(EnqueueTest, RefusesAPayloadOverTheDefaultLimit) {
  SqlFailure f = ExpectSqlFailure(
      db(), "SELECT bulkhead.enqueue(" + Str(channel_) + ", " + PayloadOfBytes(262145) + ")");
  EXPECT_EQ(f.sqlstate, "54000");
  EXPECT_EQ(f.message, "bulkhead.enqueue: payload is 262145 bytes, over the limit of 262144 bytes");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, TheMaxPayloadBytesSettingLowersTheLimit) {
  SqlFailure f =
      ExpectSqlFailure(db(), "SET bulkhead.max_payload_bytes = '100'; SELECT bulkhead.enqueue(" +
                                 Str(channel_) + ", " + PayloadOfBytes(101) + ")");
  EXPECT_EQ(f.sqlstate, "54000");
  EXPECT_EQ(f.message, "bulkhead.enqueue: payload is 101 bytes, over the limit of 100 bytes");
  EXPECT_EQ(JobCount(), 0);

  pqxx::work tx(db());
  tx.exec("SET LOCAL bulkhead.max_payload_bytes = '100'");
  int64_t id = Enqueue(tx, Str(channel_) + ", " + PayloadOfBytes(100));
  tx.commit();
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT octet_length(payload::text) FROM bulkhead.jobs "
                            "WHERE id = " +
                                Str(id)),
            100);
}

TEST_F(EnqueueTest, RefusesABadMaxPayloadBytesSetting) {
  for (const std::string value : {"abc", "0", "-5", "1073741824"}) {
    SCOPED_TRACE(value);
    SqlFailure f =
        ExpectSqlFailure(db(), "SET bulkhead.max_payload_bytes = '" + value +
                                   "'; SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}')");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_NE(f.message.find("bulkhead.max_payload_bytes must be a number of bytes"),
              std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("\"" + value + "\""), std::string::npos) << f.message;
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, RefusesAnEmptyOrOverlongIdempotencyKey) {
  for (const auto& [key, length] :
       std::vector<std::pair<std::string, int>>{{"''", 0}, {"repeat('k', 256)", 256}}) {
    SCOPED_TRACE(key);
    SqlFailure f =
        ExpectSqlFailure(db(), "SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}', " + key + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_EQ(f.message, "bulkhead.enqueue: idempotency_key must be 1 to 255 characters, not " +
                             std::to_string(length));
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, AcceptsAnIdempotencyKeyOf255Characters) {
  int64_t id = EnqueueCommitted(Str(channel_) + ", '{}', repeat('k', 255)");
  EXPECT_EQ(QueryValue<int>(
                db(), "SELECT length(idempotency_key) FROM bulkhead.jobs WHERE id = " + Str(id)),
            255);
}

// ---- enqueue_many ----------------------------------------------------------------------------

TEST_F(EnqueueTest, EnqueueManyReturnsIdsInInputOrderAcrossTenantsAndTiers) {
  int64_t bulk_tenant = CreateTenant(db(), "globex", "bulk");
  int64_t bulk_channel = CreateChannel(db(), bulk_tenant, "https://globex.example/hooks");
  const std::string a = Str(channel_), b = Str(bulk_channel);
  pqxx::work tx(db());
  std::vector<int64_t> ids =
      EnqueueMany(tx, "ARRAY[" + b + ", " + a + ", " + b + ", " + a +
                          "]::bigint[], "
                          "ARRAY['{\"n\": 1}', '{\"n\": 2}', '{\"n\": 3}', '{\"n\": 4}']::jsonb[]");
  tx.commit();
  ASSERT_EQ(ids.size(), 4u);
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    const bool bulk = i % 2 == 0;
    EXPECT_EQ(QueryValue<std::string>(
                  db(),
                  "SELECT payload->>'n' || ' ' || channel_id || ' ' || tenant_id || ' ' || "
                  "queue || ' ' || state FROM bulkhead.jobs WHERE id = " +
                      Str(ids[i])),
              std::to_string(i + 1) + " " + (bulk ? b : a) + " " +
                  Str(bulk ? bulk_tenant : tenant_) + " " + (bulk ? "bulk" : "default") +
                  " available");
  }
  EXPECT_EQ(JobCount(), 4);
}

TEST_F(EnqueueTest, EnqueueManyOfEmptyArraysReturnsAnEmptyArray) {
  pqxx::work tx(db());
  EXPECT_EQ(tx.exec1("SELECT bulkhead.enqueue_many('{}'::bigint[], '{}'::jsonb[])::text")[0]
                .as<std::string>(),
            "{}");
  tx.commit();
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, EnqueueManyMapsDuplicateKeysToTheOneJob) {
  int64_t existing = EnqueueCommitted(Str(channel_) + ", '{\"n\": 0}', 'old'");
  const std::string c = Str(channel_);
  pqxx::work tx(db());
  std::vector<int64_t> ids =
      EnqueueMany(tx, "ARRAY[" + c + ", " + c + ", " + c + ", " + c +
                          "]::bigint[], "
                          "ARRAY['{\"n\": 1}', '{\"n\": 2}', '{\"n\": 3}', '{\"n\": 4}']::jsonb[], "
                          "ARRAY['new', 'old', 'new', NULL]");
  tx.commit();
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], existing);  // against an existing job
  EXPECT_EQ(ids[2], ids[0]);    // within the call
  EXPECT_NE(ids[0], existing);
  EXPECT_NE(ids[3], ids[0]);
  EXPECT_NE(ids[3], existing);
  EXPECT_EQ(JobCount(), 3);
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT payload->>'n' FROM bulkhead.jobs WHERE id = " + Str(ids[0])),
            "1");
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT payload->>'n' FROM bulkhead.jobs WHERE id = " + Str(existing)),
            "0");
}

TEST_F(EnqueueTest, EnqueueManyRefusesAllItemsForOneBadPayload) {
  const std::string c = Str(channel_);
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue_many(ARRAY[" + c + ", " + c +
                                            ", " + c + ", " + c +
                                            "]::bigint[], "
                                            "ARRAY['{}', '[]', '\"oops\"', '{}']::jsonb[])");
  EXPECT_EQ(f.sqlstate, "22023");
  EXPECT_TRUE(f.message.starts_with(
      "bulkhead.enqueue_many: item 3: payload must be a JSON object or array"))
      << f.message;
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, EnqueueManyRefusesAllItemsForOneUnknownChannel) {
  const std::string c = Str(channel_), unknown = Str(channel_ + 1000);
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue_many(ARRAY[" + c + ", " + unknown +
                                            ", " + c + ", " + c +
                                            "]::bigint[], "
                                            "ARRAY['{}', '{}', '{}', '{}']::jsonb[])");
  EXPECT_EQ(f.sqlstate, "23503");
  EXPECT_EQ(f.message, "bulkhead.enqueue_many: item 2: no channel with id " + unknown);
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(EnqueueTest, EnqueueManyRefusesArraysOfDifferentLengths) {
  const std::string c = Str(channel_);
  for (const std::string& args :
       {"ARRAY[" + c + ", " + c + "]::bigint[], ARRAY['{}']::jsonb[]",
        "ARRAY[" + c + "]::bigint[], ARRAY['{}']::jsonb[], ARRAY['a', 'b']",
        "ARRAY[" + c + "]::bigint[], ARRAY['{}']::jsonb[], NULL, ARRAY[now(), now()]"}) {
    SCOPED_TRACE(args);
    SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.enqueue_many(" + args + ")");
    EXPECT_EQ(f.sqlstate, "2202E");
    EXPECT_TRUE(f.message.starts_with("bulkhead.enqueue_many: the arrays differ in length"))
        << f.message;
  }
  EXPECT_EQ(JobCount(), 0);
}

}  // namespace
}  // namespace bulkhead
