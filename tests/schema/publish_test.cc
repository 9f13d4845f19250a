// bulkhead.publish (migration 0013): one delivery of an event to every enabled channel of a
// tenant subscribed to its type (event_types NULL: every type, {}: none, or a list), each row
// routed as enqueue routes it (parked behind a breaker that is not closed or a paused channel),
// deduplicated per channel on the idempotency key, held per channel behind a live delivery of
// its ordering key; the count it returns, the caller's transaction deciding whether the rows
// exist, every refusal (SQLSTATE and no row left behind), a 1,000-channel fan-out, and what the
// app part of `bulkhead grant` may do with it and with the channels' two new settings.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "database_test.h"
#include "sql_failure.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::ExpectSqlFailure;
using testing::QueryValue;
using testing::SqlFailure;

std::string Str(int64_t id) { return std::to_string(id); }

// SELECT bulkhead.publish(<args>) in `tx`; returns how many deliveries it created.
int Publish(pqxx::transaction_base& tx, const std::string& args) {
  return tx.exec1("SELECT bulkhead.publish(" + args + ")")[0].as<int>();
}

// {"d": "xxx…"} is 9 bytes of text around the string.
std::string PayloadOfBytes(int bytes) {
  return "jsonb_build_object('d', repeat('x', " + std::to_string(bytes - 9) + "))";
}

// A tenant `acme` on the default tier with one channel subscribed to every type.
class PublishTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = CreateTenant(db(), "acme");
    channel_ = CreateChannel(db(), tenant_);
  }

  int JobCount() { return QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"); }

  // Jobs of `channel` matching `where` (SQL over bulkhead.jobs).
  int Count(int64_t channel, const std::string& where = "true") {
    return QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " +
                                     Str(channel) + " AND (" + where + ")");
  }

  // Publishes in a transaction of its own and commits it; returns publish's count.
  int PublishCommitted(const std::string& args) {
    pqxx::work tx(db());
    int created = Publish(tx, args);
    tx.commit();
    return created;
  }

  // "<tenant>, 'invoice.paid', '{}'" and then `rest`, e.g. ", 'key'".
  std::string Args(const std::string& type = "'invoice.paid'", const std::string& rest = "") const {
    return Str(tenant_) + ", " + type + ", '{\"n\": 1}'" + rest;
  }

  // Sets `sql` on the channel, e.g. "event_types = '{a,b}'".
  void UpdateChannel(int64_t channel, const std::string& sql) {
    Exec("UPDATE bulkhead.channels SET " + sql + " WHERE id = " + Str(channel));
  }

  int64_t tenant_ = 0;
  int64_t channel_ = 0;
};

// ---- Fan-out and subscriptions ---------------------------------------------------------------

TEST_F(PublishTest, CreatesOneDeliveryPerChannelWithTheSamePayloadAndReturnsTheCount) {
  int64_t second = CreateChannel(db(), tenant_, "https://acme.example/second");
  int64_t third = CreateChannel(db(), tenant_, "https://acme.example/third");
  pqxx::work tx(db());
  EXPECT_EQ(Publish(tx, Str(tenant_) + ", 'invoice.paid', '{\"invoice\": 7, \"amount\": 12}'"), 3);
  pqxx::result rows = tx.exec(
      "SELECT channel_id, queue, tenant_id, state, priority, attempt, scheduled_at = now(), "
      "payload::text, idempotency_key IS NULL, ordering_key IS NULL FROM bulkhead.jobs "
      "ORDER BY channel_id");
  tx.commit();
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<int64_t> channels = {channel_, second, third};
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i][0].as<int64_t>(), channels[i]);
    EXPECT_EQ(rows[i][1].as<std::string>(), "default");
    EXPECT_EQ(rows[i][2].as<int64_t>(), tenant_);
    EXPECT_EQ(rows[i][3].as<std::string>(), "available");
    EXPECT_EQ(rows[i][4].as<int>(), 1);
    EXPECT_EQ(rows[i][5].as<int>(), 0);
    EXPECT_TRUE(rows[i][6].as<bool>());  // due now
    EXPECT_EQ(rows[i][7].as<std::string>(), "{\"amount\": 12, \"invoice\": 7}");
    EXPECT_TRUE(rows[i][8].as<bool>());
    EXPECT_TRUE(rows[i][9].as<bool>());
  }
}

TEST_F(PublishTest, QueuesTheDeliveriesOnTheTenantsTierAndLeavesOtherTenantsAlone) {
  int64_t bulk_tenant = CreateTenant(db(), "globex", "bulk");
  int64_t bulk_channel = CreateChannel(db(), bulk_tenant, "https://globex.example/hooks");
  EXPECT_EQ(PublishCommitted(Str(bulk_tenant) + ", 'invoice.paid', '[1, 2]'"), 1);
  EXPECT_EQ(Count(bulk_channel, "queue = 'bulk' AND tenant_id = " + Str(bulk_tenant)), 1);
  EXPECT_EQ(Count(channel_), 0);
  EXPECT_EQ(JobCount(), 1);
}

TEST_F(PublishTest, DeliversToChannelsSubscribedToEveryTypeToTheTypeOrToNone) {
  int64_t listed = CreateChannel(db(), tenant_, "https://acme.example/listed");
  int64_t other_types = CreateChannel(db(), tenant_, "https://acme.example/other");
  int64_t none = CreateChannel(db(), tenant_, "https://acme.example/none");
  UpdateChannel(listed, "event_types = '{invoice.created,invoice.paid}'");
  UpdateChannel(other_types, "event_types = '{invoice.created,customer.deleted}'");
  UpdateChannel(none, "event_types = '{}'");

  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'")), 2);
  EXPECT_EQ(Count(channel_), 1);  // NULL: every type
  EXPECT_EQ(Count(listed), 1);
  EXPECT_EQ(Count(other_types), 0);
  EXPECT_EQ(Count(none), 0);

  EXPECT_EQ(PublishCommitted(Args("'customer.deleted'")), 2);
  EXPECT_EQ(Count(channel_), 2);
  EXPECT_EQ(Count(listed), 1);
  EXPECT_EQ(Count(other_types), 1);
  EXPECT_EQ(Count(none), 0);
}

TEST_F(PublishTest, MatchesTheTypeExactly) {
  UpdateChannel(channel_, "event_types = '{invoice.paid}'");
  for (const std::string type : {"'invoice'", "'Invoice.paid'", "'invoice.paid '", "'invoice.%'"}) {
    SCOPED_TRACE(type);
    EXPECT_EQ(PublishCommitted(Args(type)), 0);
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, ATypeNobodySubscribesToCreatesNothingAndReturnsZero) {
  UpdateChannel(channel_, "event_types = '{invoice.paid}'");
  EXPECT_EQ(PublishCommitted(Args("'customer.created'")), 0);
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, ATenantWithoutChannelsReturnsZero) {
  int64_t lonely = CreateTenant(db(), "lonely");
  EXPECT_EQ(PublishCommitted(Str(lonely) + ", 'invoice.paid', '{}'"), 0);
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, SkipsDisabledChannels) {
  int64_t disabled = CreateChannel(db(), tenant_, "https://acme.example/gone");
  UpdateChannel(disabled, "enabled = false, disabled_reason = 'endpoint gone (HTTP 410)'");
  EXPECT_EQ(PublishCommitted(Args()), 1);
  EXPECT_EQ(Count(channel_), 1);
  EXPECT_EQ(Count(disabled), 0);
}

TEST_F(PublishTest, ParksTheDeliveryOfAChannelBehindAnOpenOrHalfOpenBreaker) {
  int64_t open = CreateChannel(db(), tenant_, "https://acme.example/open");
  int64_t half_open = CreateChannel(db(), tenant_, "https://acme.example/half-open");
  UpdateChannel(open,
                "breaker_state = 'open', breaker_probe_at = now() + interval '30 s', "
                "breaker_trips = 1");
  UpdateChannel(half_open,
                "breaker_state = 'half_open', breaker_probe_at = now() + interval '10 s', "
                "breaker_trips = 1, breaker_probe_job = 1");
  EXPECT_EQ(PublishCommitted(Args()), 3);
  EXPECT_EQ(Count(channel_, "state = 'available' AND priority = 1"), 1);
  EXPECT_EQ(Count(open, "state = 'parked' AND priority = 3"), 1);
  EXPECT_EQ(Count(half_open, "state = 'parked' AND priority = 3"), 1);
}

// As bulkhead.enqueue does (route(), migration 0002): a paused channel's deliveries wait parked.
TEST_F(PublishTest, ParksTheDeliveryOfAPausedChannel) {
  int64_t paused = CreateChannel(db(), tenant_, "https://acme.example/paused");
  UpdateChannel(paused, "paused = true");
  EXPECT_EQ(PublishCommitted(Args()), 2);
  EXPECT_EQ(Count(channel_, "state = 'available' AND priority = 1"), 1);
  EXPECT_EQ(Count(paused, "state = 'parked' AND priority = 3"), 1)
      << "publish left a paused channel's delivery "
      << QueryValue<std::string>(db(),
                                 "SELECT string_agg(state || ' ' || priority, ', ') FROM "
                                 "bulkhead.jobs WHERE channel_id = " +
                                     Str(paused));
}

TEST_F(PublishTest, FansOutToAThousandChannelsInOneCall) {
  Exec("INSERT INTO bulkhead.channels (tenant_id, url) SELECT " + Str(tenant_) +
       ", 'https://acme.example/hooks/' || g FROM generate_series(2, 1000) AS g");
  pqxx::work tx(db());
  EXPECT_EQ(Publish(tx, Args()), 1000);
  tx.commit();
  EXPECT_EQ(JobCount(), 1000);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(DISTINCT channel_id) FROM bulkhead.jobs "
                            "WHERE tenant_id = " +
                                Str(tenant_) +
                                " AND state = 'available' AND payload = "
                                "'{\"n\": 1}'"),
            1000);
}

TEST_F(PublishTest, TheDeliveriesExistOnlyIfTheCallersTransactionCommits) {
  CreateChannel(db(), tenant_, "https://acme.example/second");
  {
    pqxx::work tx(db());
    EXPECT_EQ(Publish(tx, Args()), 2);
    EXPECT_EQ(tx.exec1("SELECT count(*) FROM bulkhead.jobs")[0].as<int>(), 2);
    tx.abort();
  }
  EXPECT_EQ(JobCount(), 0);
}

// ---- Deduplication ---------------------------------------------------------------------------

TEST_F(PublishTest, PublishingTwiceWithOneKeyCreatesNothingTheSecondTime) {
  CreateChannel(db(), tenant_, "https://acme.example/second");
  EXPECT_EQ(PublishCommitted(Str(tenant_) + ", 'invoice.paid', '{\"n\": 1}', 'evt-1'"), 2);
  EXPECT_EQ(PublishCommitted(Str(tenant_) + ", 'invoice.paid', '{\"n\": 2}', 'evt-1'"), 0);
  EXPECT_EQ(JobCount(), 2);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM bulkhead.jobs WHERE payload->>'n' = '1' "
                            "AND idempotency_key = 'evt-1'"),
            2);
}

TEST_F(PublishTest, TheSameKeyTwiceInOneTransactionCreatesOneDeliveryPerChannel) {
  pqxx::work tx(db());
  EXPECT_EQ(Publish(tx, Args("'invoice.paid'", ", 'evt-1'")), 1);
  EXPECT_EQ(Publish(tx, Args("'invoice.paid'", ", 'evt-1'")), 0);
  tx.commit();
  EXPECT_EQ(JobCount(), 1);
}

TEST_F(PublishTest, AChannelAddedLaterGetsItsDeliveryOnTheSecondPublish) {
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1'")), 1);
  int64_t later = CreateChannel(db(), tenant_, "https://acme.example/later");
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1'")), 1);
  EXPECT_EQ(Count(channel_), 1);
  EXPECT_EQ(Count(later, "idempotency_key = 'evt-1'"), 1);
}

TEST_F(PublishTest, DeduplicatesAgainstADeliveryMadeByEnqueueWithTheSameKey) {
  Exec("SELECT bulkhead.enqueue(" + Str(channel_) + ", '{\"from\": \"enqueue\"}', 'evt-1')");
  int64_t second = CreateChannel(db(), tenant_, "https://acme.example/second");
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1'")), 1);
  EXPECT_EQ(Count(channel_), 1);
  EXPECT_EQ(Count(channel_, "payload->>'from' = 'enqueue'"), 1);
  EXPECT_EQ(Count(second), 1);
}

// A channel whose delivery of the key is gone (deleted by hand) takes its key over; beside it
// a channel whose delivery lives answers with that one, and a new channel takes the key afresh.
TEST_F(PublishTest, AKeyWhoseDeliveryIsGoneIsTakenOverOnItsChannelAlone) {
  int64_t second = CreateChannel(db(), tenant_, "https://acme.example/second");
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1'")), 2);
  Exec("DELETE FROM bulkhead.jobs WHERE channel_id = " + Str(channel_));
  int64_t third = CreateChannel(db(), tenant_, "https://acme.example/third");
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1'")), 2);
  EXPECT_EQ(Count(channel_), 1);
  EXPECT_EQ(Count(second), 1);
  EXPECT_EQ(Count(third), 1);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM bulkhead.idempotency_keys k JOIN bulkhead.jobs j "
                            "ON j.id = k.job_id AND j.channel_id = k.channel_id "
                            "AND j.idempotency_key = k.key"),
            3)
      << "every key names its channel's live delivery";
}

TEST_F(PublishTest, WithoutAKeyEveryPublishCreatesNewDeliveries) {
  EXPECT_EQ(PublishCommitted(Args()), 1);
  EXPECT_EQ(PublishCommitted(Args()), 1);
  EXPECT_EQ(Count(channel_), 2);
}

// ---- Ordering keys ---------------------------------------------------------------------------

TEST_F(PublishTest, AnOrderingKeyHoldsEachChannelsDeliveryBehindALiveOneOfTheKeyOnThatChannel) {
  int64_t second = CreateChannel(db(), tenant_, "https://acme.example/second");
  // channel_ has a live delivery of key `customer-9`; `second` has none.
  Exec("SELECT bulkhead.enqueue(" + Str(channel_) +
       ", '{\"first\": true}', NULL, now(), 'customer-9')");

  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", NULL, 'customer-9'")), 2);
  EXPECT_EQ(Count(channel_, "ordering_key = 'customer-9' AND scheduled_at = 'infinity'"), 1);
  EXPECT_EQ(Count(channel_, "ordering_key = 'customer-9' AND scheduled_at <= now()"), 1);
  EXPECT_EQ(Count(second, "ordering_key = 'customer-9' AND scheduled_at <= now()"), 1);

  // A second publish is held on both channels now.
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", NULL, 'customer-9'")), 2);
  EXPECT_EQ(Count(channel_, "scheduled_at = 'infinity'"), 2);
  EXPECT_EQ(Count(second, "scheduled_at = 'infinity'"), 1);

  // Another key is not held.
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", NULL, 'customer-10'")), 2);
  EXPECT_EQ(QueryValue<int>(db(),
                            "SELECT count(*) FROM bulkhead.jobs WHERE ordering_key = "
                            "'customer-10' AND scheduled_at <= now()"),
            2);
}

TEST_F(PublishTest, AHeldPublishedDeliveryGoesWhenTheOneBeforeItCompletes) {
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-1', 'customer-9'")), 1);
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", 'evt-2', 'customer-9'")), 1);
  EXPECT_EQ(Count(channel_, "idempotency_key = 'evt-2' AND scheduled_at = 'infinity'"), 1);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() "
      "WHERE idempotency_key = 'evt-1'");
  EXPECT_EQ(Count(channel_, "idempotency_key = 'evt-2' AND scheduled_at <= now()"), 1);
}

TEST_F(PublishTest, AnUnkeyedLiveDeliveryDoesNotHoldAKeyedPublish) {
  Exec("SELECT bulkhead.enqueue(" + Str(channel_) + ", '{}')");
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", NULL, 'customer-9'")), 1);
  EXPECT_EQ(Count(channel_, "scheduled_at = 'infinity'"), 0);
}

// ---- Refusals: each raises with its SQLSTATE, naming the function, and leaves no row -------
// The SQLSTATEs are docs/events-rates-ordering.md's table ("Errors"), enqueue's own: a NULL
// tenant_id or event_type is 22004 (null_value_not_allowed), as enqueue's NULL channel_id.

TEST_F(PublishTest, RefusesANullTenant) {
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.publish(NULL, 'invoice.paid', '{}')");
  EXPECT_EQ(f.sqlstate, "22004");
  EXPECT_EQ(f.message, "bulkhead.publish: tenant_id is NULL");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesAnUnknownTenant) {
  const std::string unknown = Str(tenant_ + 1000);
  SqlFailure f =
      ExpectSqlFailure(db(), "SELECT bulkhead.publish(" + unknown + ", 'invoice.paid', '{}')");
  EXPECT_EQ(f.sqlstate, "23503");
  EXPECT_EQ(f.message, "bulkhead.publish: no tenant with id " + unknown);
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesANullEventType) {
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.publish(" + Args("NULL") + ")");
  EXPECT_EQ(f.sqlstate, "22004");
  EXPECT_EQ(f.message, "bulkhead.publish: event_type is NULL");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesAnEmptyOrOverlongEventType) {
  for (const auto& [type, length] :
       std::vector<std::pair<std::string, int>>{{"''", 0}, {"repeat('t', 256)", 256}}) {
    SCOPED_TRACE(type);
    SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.publish(" + Args(type) + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_EQ(f.message, "bulkhead.publish: event_type must be 1 to 255 characters, not " +
                             std::to_string(length));
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, AcceptsAnEventTypeOf255Characters) {
  UpdateChannel(channel_, "event_types = ARRAY[repeat('t', 255)]");
  EXPECT_EQ(PublishCommitted(Args("repeat('t', 255)")), 1);
}

TEST_F(PublishTest, RefusesAPayloadThatIsNotAnObjectOrArray) {
  for (const std::string payload : {"'\"hello\"'", "'42'", "'true'", "'null'"}) {
    SCOPED_TRACE(payload);
    SqlFailure f = ExpectSqlFailure(
        db(), "SELECT bulkhead.publish(" + Str(tenant_) + ", 'invoice.paid', " + payload + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_TRUE(f.message.starts_with("bulkhead.publish: payload must be a JSON object or array"))
        << f.message;
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesASqlNullPayload) {
  SqlFailure f =
      ExpectSqlFailure(db(), "SELECT bulkhead.publish(" + Str(tenant_) + ", 'invoice.paid', NULL)");
  EXPECT_EQ(f.sqlstate, "22004");
  EXPECT_EQ(f.message, "bulkhead.publish: payload is NULL");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesAPayloadOverTheLimitAndAcceptsOneAtIt) {
  SqlFailure f = ExpectSqlFailure(db(), "SELECT bulkhead.publish(" + Str(tenant_) +
                                            ", 'invoice.paid', " + PayloadOfBytes(262145) + ")");
  EXPECT_EQ(f.sqlstate, "54000");
  EXPECT_EQ(f.message, "bulkhead.publish: payload is 262145 bytes, over the limit of 262144 bytes");
  EXPECT_EQ(JobCount(), 0);
  EXPECT_EQ(PublishCommitted(Str(tenant_) + ", 'invoice.paid', " + PayloadOfBytes(262144)), 1);
}

TEST_F(PublishTest, TheMaxPayloadBytesSettingLowersTheLimit) {
  SqlFailure f =
      ExpectSqlFailure(db(), "SET bulkhead.max_payload_bytes = '100'; SELECT bulkhead.publish(" +
                                 Str(tenant_) + ", 'invoice.paid', " + PayloadOfBytes(101) + ")");
  EXPECT_EQ(f.sqlstate, "54000");
  EXPECT_EQ(f.message, "bulkhead.publish: payload is 101 bytes, over the limit of 100 bytes");
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesAnEmptyOrOverlongIdempotencyKey) {
  for (const auto& [key, length] :
       std::vector<std::pair<std::string, int>>{{"''", 0}, {"repeat('k', 256)", 256}}) {
    SCOPED_TRACE(key);
    SqlFailure f = ExpectSqlFailure(
        db(), "SELECT bulkhead.publish(" + Args("'invoice.paid'", ", " + key) + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_EQ(f.message, "bulkhead.publish: idempotency_key must be 1 to 255 characters, not " +
                             std::to_string(length));
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, RefusesAnEmptyOrOverlongOrderingKey) {
  for (const auto& [key, length] :
       std::vector<std::pair<std::string, int>>{{"''", 0}, {"repeat('o', 256)", 256}}) {
    SCOPED_TRACE(key);
    SqlFailure f = ExpectSqlFailure(
        db(), "SELECT bulkhead.publish(" + Args("'invoice.paid'", ", NULL, " + key) + ")");
    EXPECT_EQ(f.sqlstate, "22023");
    EXPECT_EQ(f.message, "bulkhead.publish: ordering_key must be 1 to 255 characters, not " +
                             std::to_string(length));
  }
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(PublishTest, AcceptsAnOrderingKeyOf255Characters) {
  EXPECT_EQ(PublishCommitted(Args("'invoice.paid'", ", NULL, repeat('o', 255)")), 1);
  EXPECT_EQ(Count(channel_, "length(ordering_key) = 255"), 1);
}

// ---- The channels' settings ------------------------------------------------------------------

TEST_F(PublishTest, AChannelRefusesUnusableEventTypesAndRateLimits) {
  for (const std::string setting :
       {"event_types = '{\"\"}'", "event_types = ARRAY[repeat('t', 256)]",
        "event_types = ARRAY[NULL]::text[]", "event_types = '{{a},{b}}'", "rate_limit_per_s = 0",
        "rate_limit_per_s = -1", "rate_limit_per_s = 1000001"}) {
    SCOPED_TRACE(setting);
    SqlFailure f = ExpectSqlFailure(
        db(), "UPDATE bulkhead.channels SET " + setting + " WHERE id = " + Str(channel_));
    EXPECT_EQ(f.sqlstate, "23514");
  }
  UpdateChannel(channel_, "event_types = '{}', rate_limit_per_s = 0.5");
  UpdateChannel(channel_, "event_types = NULL, rate_limit_per_s = 1000000");
}

// ---- The app part of `bulkhead grant` --------------------------------------------------------

// Roles belong to the cluster, so the role is made once per binary (or found) and granted the
// app part on this test's database, as `bulkhead grant --as app` does.
class PublishAsAppTest : public PublishTest {
 protected:
  static constexpr const char* kRole = "bk_publish_app";

  void SetUp() override {
    PublishTest::SetUp();
    if (HasFatalFailure()) return;
    Exec(std::string("DO $$ BEGIN CREATE ROLE ") + kRole +
         " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
    Exec(std::string("SELECT bulkhead.grant_role('") + kRole + "', 'app')");
    app_ = std::make_unique<pqxx::connection>(conninfo() + " user=" + kRole);
  }

  void TearDown() override {
    app_.reset();
    PublishTest::TearDown();
  }

  std::unique_ptr<pqxx::connection> app_;
};

TEST_F(PublishAsAppTest, TheAppPublishesAndSetsItsChannelsTypesAndRateLimitButWritesNoJob) {
  pqxx::connection& app = *app_;
  const std::string ch = Str(channel_);
  int64_t second = CreateChannel(db(), tenant_, "https://acme.example/second");
  {
    pqxx::work tx(app);
    tx.exec0(
        "UPDATE bulkhead.channels SET event_types = '{invoice.paid}', "
        "rate_limit_per_s = 25 WHERE id = " +
        ch);
    tx.exec0("UPDATE bulkhead.channels SET event_types = '{}' WHERE id = " + Str(second));
    tx.commit();
  }
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT event_types::text || ' ' || rate_limit_per_s FROM "
                                    "bulkhead.channels WHERE id = " +
                                        ch),
            "{invoice.paid} 25");
  EXPECT_EQ(QueryValue<std::string>(app,
                                    "SELECT coalesce(event_types::text, 'NULL') FROM "
                                    "bulkhead.channels WHERE id = " +
                                        Str(second)),
            "{}");

  // Deduplication is PublishTest's; here the key-less form, held behind its ordering key.
  EXPECT_EQ(QueryValue<int>(
                app, "SELECT bulkhead.publish(" + Args("'invoice.paid'", ", NULL, 'o1'") + ")"),
            1);
  EXPECT_EQ(QueryValue<int>(
                app, "SELECT bulkhead.publish(" + Args("'invoice.paid'", ", NULL, 'o1'") + ")"),
            1);
  EXPECT_EQ(QueryValue<int>(app, "SELECT bulkhead.publish(" + Args("'customer.created'") + ")"), 0);
  EXPECT_EQ(Count(channel_, "ordering_key = 'o1' AND scheduled_at <= now()"), 1);
  EXPECT_EQ(Count(channel_, "ordering_key = 'o1' AND scheduled_at = 'infinity'"), 1);
  EXPECT_EQ(Count(second), 0);
  // The five-argument enqueue too, with its ordering key.
  QueryValue<int64_t>(app, "SELECT bulkhead.enqueue(" + ch + ", '{}', NULL, now(), 'o1')");
  EXPECT_EQ(Count(channel_, "ordering_key = 'o1' AND scheduled_at = 'infinity'"), 2);
  EXPECT_EQ(ExpectSqlFailure(
                app, "SELECT bulkhead.publish(" + Str(tenant_ + 1000) + ", 'invoice.paid', '{}')")
                .sqlstate,
            "23503");

  for (const std::string& sql :
       {std::string("SELECT count(*) FROM bulkhead.jobs"),
        std::string("UPDATE bulkhead.jobs SET scheduled_at = now()"),
        std::string("UPDATE bulkhead.jobs SET state = 'cancelled', finished_at = now()"),
        std::string("DELETE FROM bulkhead.jobs"),
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload) VALUES ('default', " +
            Str(tenant_) + ", " + ch + ", '{}')",
        "UPDATE bulkhead.channels SET breaker_state = 'open' WHERE id = " + ch,
        std::string("SELECT * FROM bulkhead.rate_buckets"),
        "INSERT INTO bulkhead.rate_buckets (channel_id, tat) VALUES (" + ch + ", now())",
        "SELECT bulkhead.release_ordering_key(" + ch + ", 'o1')",
        "SELECT bulkhead.lock_ordering_key(" + Str(tenant_) + ", 'o1')"}) {
    EXPECT_EQ(ExpectSqlFailure(app, sql).sqlstate, "42501") << sql;
  }
  EXPECT_EQ(JobCount(), 3);
}

}  // namespace
}  // namespace bulkhead
