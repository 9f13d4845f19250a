// The integrity rules of schema 0001, written against the tables directly: every named CHECK
// constraint refuses a row that breaks it (SQLSTATE 23514, named in the message) — the
// payload's and the attempt log's, on the columns' domains since 0005, also an update that
// writes a bad value; jobs' rules, one CHECK calling bulkhead.job_row_valid since 0025, on an
// update too — every job state is accepted in a well-formed row, the defaults of a
// minimal tenant and channel, the foreign key that keeps a tenant on a tier with a queue, the
// shipped tiers, and the partial claim index with the plan that uses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
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

// The one channel and tenant that a fixture makes, by subquery, so that the rows below can be
// written before the test's database exists.
const std::string kTenant = "(SELECT min(id) FROM bulkhead.tenants)";
const std::string kChannel = "(SELECT min(id) FROM bulkhead.channels)";

// INSERT of one job that is well-formed (available, fresh) apart from `columns` = `values`.
std::string JobRow(const std::string& columns = "", const std::string& values = "",
                   const std::string& payload = "'{\"n\": 1}'") {
  return "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload" +
         (columns.empty() ? "" : ", " + columns) + ") VALUES ('default', " + kTenant + ", " +
         kChannel + ", " + payload + (values.empty() ? "" : ", " + values) + ")";
}

// INSERT of one channel that is well-formed apart from `columns` = `values`.
std::string ChannelRow(const std::string& columns, const std::string& values) {
  return "INSERT INTO bulkhead.channels (tenant_id, url, " + columns + ") VALUES (" + kTenant +
         ", 'https://example.com/hook', " + values + ")";
}

struct Violation {
  std::string label;       // the test's name suffix
  std::string constraint;  // the CHECK constraint that must refuse it
  std::string sql;
};

std::ostream& operator<<(std::ostream& out, const Violation& v) { return out << v.label; }

const std::vector<Violation> kViolations = {
    {"TierNameWithAHyphen", "tiers_name_is_identifier",
     "INSERT INTO bulkhead.tiers (name) VALUES ('high-priority')"},
    {"TierNameWithACapital", "tiers_name_is_identifier",
     "INSERT INTO bulkhead.tiers (name) VALUES ('Premium')"},
    {"EmptyTenantName", "tenants_name_length", "INSERT INTO bulkhead.tenants (name) VALUES ('')"},
    {"TenantNameOf201Characters", "tenants_name_length",
     "INSERT INTO bulkhead.tenants (name) VALUES (repeat('t', 201))"},
    {"FtpUrl", "channels_url_is_http",
     "INSERT INTO bulkhead.channels (tenant_id, url) VALUES (" + kTenant +
         ", 'ftp://example.com/hook')"},
    {"UrlWithASpace", "channels_url_is_http",
     "INSERT INTO bulkhead.channels (tenant_id, url) VALUES (" + kTenant +
         ", 'https://example.com/a hook')"},
    {"SecretWithoutPrefix", "channels_secret_format",
     ChannelRow("secret", "'c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0'")},
    {"SecretTooShort", "channels_secret_format", ChannelRow("secret", "'whsec_c2VjcmV0'")},
    {"SecretNotWholeBase64Groups", "channels_secret_format",
     ChannelRow("secret", "'whsec_' || repeat('A', 33)")},
    {"SecretWithMisplacedPadding", "channels_secret_format",
     ChannelRow("secret", "'whsec_' || repeat('A', 32) || 'A==='")},
    {"DisabledChannelWithoutReason", "channels_disabled_has_reason",
     ChannelRow("enabled", "false")},
    {"UnknownBreakerState", "channels_breaker_state_known",
     ChannelRow("breaker_state, breaker_probe_at", "'tripped', now()")},
    {"OpenBreakerWithoutProbeAt", "channels_breaker_probe_at_iff_not_closed",
     ChannelRow("breaker_state", "'open'")},
    {"HalfOpenBreakerWithoutProbeAt", "channels_breaker_probe_at_iff_not_closed",
     ChannelRow("breaker_state", "'half_open'")},
    {"ClosedBreakerWithProbeAt", "channels_breaker_probe_at_iff_not_closed",
     ChannelRow("breaker_probe_at", "now()")},
    {"HalfOpenBreakerWithoutProbeJob", "channels_breaker_probe_job_iff_half_open",
     ChannelRow("breaker_state, breaker_probe_at", "'half_open', now()")},
    {"OpenBreakerWithProbeJob", "channels_breaker_probe_job_iff_half_open",
     ChannelRow("breaker_state, breaker_probe_at, breaker_probe_job", "'open', now(), 1")},
    {"NegativeBreakerTrips", "channels_breaker_trips_not_negative",
     ChannelRow("breaker_trips", "-1")},
    {"OldSecretTooShort", "channel_secrets_secret_format",
     "INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at) VALUES (" + kChannel +
         ", 'whsec_c2VjcmV0', now() + interval '1 hour')"},
    {"OldSecretExpiringBeforeItWasRetired", "channel_secrets_expire_after_retiring",
     "INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at) VALUES (" + kChannel +
         ", bulkhead.new_secret(), now() - interval '1 second')"},
    {"EmptyNodeName", "nodes_name_length",
     "INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('', now() + interval '30 s')"},
    {"NodeLeaseBeforeHeartbeat", "nodes_lease_after_heartbeat",
     "INSERT INTO bulkhead.nodes (name, lease_until) VALUES ('node-a', now() - interval '1 s')"},
    {"ASecondClaimFloor", "claim_floor_one_row",
     "INSERT INTO bulkhead.claim_floor (one) VALUES (false)"},
    {"AClaimFloorAboveItsSettledBound", "claim_floor_below_settled",
     "UPDATE bulkhead.claim_floor SET floor_id = settled_below + 1"},
    {"UnknownJobState", "jobs_state_known", JobRow("state", "'running'")},
    {"PriorityZero", "jobs_priority_in_range", JobRow("priority", "0")},
    {"PriorityFour", "jobs_priority_in_range", JobRow("priority", "4")},
    {"MaxAttemptsZero", "jobs_max_attempts_in_range", JobRow("max_attempts", "0")},
    {"MaxAttempts101", "jobs_max_attempts_in_range", JobRow("max_attempts", "101")},
    {"AttemptOverMaxAttempts", "jobs_attempt_within_max", JobRow("attempt, max_attempts", "9, 8")},
    {"NegativeAttempt", "jobs_attempt_within_max", JobRow("attempt", "-1")},
    {"CompletedWithoutFinishedAt", "jobs_finished_has_finished_at", JobRow("state", "'completed'")},
    {"CancelledWithoutFinishedAt", "jobs_finished_has_finished_at", JobRow("state", "'cancelled'")},
    {"AvailableWithFinishedAt", "jobs_finished_has_finished_at", JobRow("finished_at", "now()")},
    {"ExecutingWithoutAttemptedBy", "jobs_executing_has_owner",
     JobRow("state, attempt, attempted_at", "'executing', 1, now()")},
    {"ExecutingWithoutAttemptedAt", "jobs_executing_has_owner",
     JobRow("state, attempt, attempted_by", "'executing', 1, 'node-a'")},
    {"ExecutingAtAttemptZero", "jobs_executing_has_owner",
     JobRow("state, attempted_at, attempted_by", "'executing', now(), 'node-a'")},
    {"DiscardedWithoutLastError", "jobs_discarded_has_error",
     JobRow("state, finished_at", "'discarded', now()")},
    {"StringPayload", "jobs_payload_is_object_or_array", JobRow("", "", "'\"hello\"'")},
    {"NumberPayload", "jobs_payload_is_object_or_array", JobRow("", "", "'42'")},
    {"AttemptLogThatIsAnObject", "jobs_attempts_is_array", JobRow("attempts", "'{}'")},
    {"PayloadUpdatedToAString", "jobs_payload_is_object_or_array",
     JobRow() + "; UPDATE bulkhead.jobs SET payload = '\"hello\"'"},
    {"AttemptLogUpdatedToAnObject", "jobs_attempts_is_array",
     JobRow() + "; UPDATE bulkhead.jobs SET attempts = '{}'"},
    {"EmptyIdempotencyKey", "jobs_idempotency_key_length", JobRow("idempotency_key", "''")},
    {"IdempotencyKeyOf256Characters", "jobs_idempotency_key_length",
     JobRow("idempotency_key", "repeat('k', 256)")},
    {"EmptyOrderingKey", "jobs_ordering_key_length", JobRow("ordering_key", "''")},
    {"OrderingKeyOf256Characters", "jobs_ordering_key_length",
     JobRow("ordering_key", "repeat('k', 256)")},
    {"EmptyEventTypeName", "channels_event_types_valid",
     ChannelRow("event_types", "ARRAY['order.created', '']")},
    {"NullEventTypeName", "channels_event_types_valid",
     ChannelRow("event_types", "ARRAY['order.created', NULL]")},
    {"TwoDimensionalEventTypes", "channels_event_types_valid",
     ChannelRow("event_types", "ARRAY[ARRAY['a'], ARRAY['b']]")},
    {"ZeroRateLimit", "channels_rate_limit_positive", ChannelRow("rate_limit_per_s", "0")},
    {"NegativeRateLimit", "channels_rate_limit_positive", ChannelRow("rate_limit_per_s", "-1")},
    {"ConsoleActionOfAnUnknownKind", "console_actions_action_known",
     "INSERT INTO bulkhead.console_actions (who, action, target) VALUES ('admin:x', 'drop', 'x')"},
};

// A database with one tenant and one channel, for the rows that refer to them.
class ConstraintTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = CreateTenant(db(), "acme");
    channel_ = CreateChannel(db(), tenant_);
  }

  int64_t tenant_ = 0;
  int64_t channel_ = 0;
};

class CheckConstraintTest : public ConstraintTest,
                            public ::testing::WithParamInterface<Violation> {};

TEST_P(CheckConstraintTest, RefusesTheViolatingRowByName) {
  const Violation& v = GetParam();
  SqlFailure failure = ExpectSqlFailure(db(), v.sql);
  EXPECT_EQ(failure.sqlstate, "23514") << failure.message;
  EXPECT_NE(failure.message.find("check constraint \"" + v.constraint + "\""), std::string::npos)
      << failure.message;
}

INSTANTIATE_TEST_SUITE_P(Schema, CheckConstraintTest, ::testing::ValuesIn(kViolations),
                         [](const ::testing::TestParamInfo<Violation>& info) {
                           return info.param.label;
                         });

// The runner's own table (bulkhead.migrations) is not part of schema 0001.
TEST_F(ConstraintTest, EveryCheckConstraintOfTheSchemaHasAViolationCase) {
  std::set<std::string> covered;
  for (const Violation& v : kViolations) covered.insert(v.constraint);
  std::set<std::string> declared;
  pqxx::work tx(db());
  for (const auto& row : tx.exec(
           "SELECT c.conname FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
           "WHERE n.nspname = 'bulkhead' AND c.contype = 'c' "
           "AND c.conrelid <> 'bulkhead.migrations'::regclass")) {
    declared.insert(row[0].as<std::string>());
  }
  // Since migration 0025 jobs' row rules are one CHECK, jobs_row_valid, whose function raises
  // the violated rule by its own name: each of those names needs its case instead.
  EXPECT_EQ(declared.erase("jobs_row_valid"), 1u);
  for (const auto& row :
       tx.exec("SELECT m[1] FROM pg_proc p, regexp_matches(p.prosrc, 'rule := ''(\\w+)''', 'g') m "
               "WHERE p.oid = 'bulkhead.job_row_valid'::regproc")) {
    declared.insert(row[0].as<std::string>());
  }
  EXPECT_EQ(covered, declared);
}

TEST_F(ConstraintTest, AcceptsEveryStateInAWellFormedRow) {
  pqxx::work tx(db());
  tx.exec(JobRow("state", "'available'"));
  tx.exec(JobRow("state, attempt, attempted_at, attempted_by", "'executing', 1, now(), 'node-a'"));
  tx.exec(JobRow("state, priority", "'parked', 3"));
  tx.exec(JobRow("state, attempt, attempted_at, attempted_by, finished_at",
                 "'completed', 1, now(), 'node-a', now()"));
  tx.exec(
      JobRow("state, attempt, finished_at, last_error", "'discarded', 8, now(), 'HTTP 410 Gone'"));
  tx.exec(JobRow("state, finished_at", "'cancelled', now()"));
  tx.commit();
  EXPECT_EQ(
      QueryValue<std::string>(db(), "SELECT string_agg(state, ',' ORDER BY id) FROM bulkhead.jobs"),
      "available,executing,parked,completed,discarded,cancelled");
}

TEST_F(ConstraintTest, AcceptsTheBoundsOfPriorityAttemptsAndKeyLength) {
  pqxx::work tx(db());
  tx.exec(JobRow("priority, max_attempts, idempotency_key", "3, 1, 'k'"));
  tx.exec(
      JobRow("priority, attempt, max_attempts, idempotency_key", "1, 100, 100, repeat('k', 255)"));
  tx.commit();
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"), 2);
}

// jobs' rules hold for an UPDATE as for an INSERT: an UPDATE of many rows stops at the first
// that breaks one, naming the rule, with the value that broke it in the error's DETAIL.
TEST_F(ConstraintTest, AnUpdateThatBreaksAJobRuleIsRefusedNamingTheRuleAndTheValue) {
  {
    pqxx::work tx(db());
    for (int i = 0; i < 3; ++i) tx.exec(JobRow());
    tx.commit();
  }
  SqlFailure f = ExpectSqlFailure(db(), "UPDATE bulkhead.jobs SET state = 'executing'");
  EXPECT_EQ(f.sqlstate, "23514");
  EXPECT_NE(f.message.find("check constraint \"jobs_executing_has_owner\""), std::string::npos)
      << f.message;
  std::string full;  // libpqxx's what() is the whole report, DETAIL included
  try {
    pqxx::work tx(db());
    tx.exec("UPDATE bulkhead.jobs SET state = 'running'");
  } catch (const pqxx::sql_error& e) {
    full = e.what();
  }
  EXPECT_NE(full.find("check constraint \"jobs_state_known\""), std::string::npos) << full;
  EXPECT_NE(full.find("DETAIL:  state is 'running'"), std::string::npos) << full;
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE state = 'available'"),
            3);
}

TEST_F(ConstraintTest, MinimalTenantAndChannelTakeTheirDefaults) {
  pqxx::work tx(db());
  auto tenant = tx.exec1(
      "INSERT INTO bulkhead.tenants (name, tier) VALUES ('globex', 'bulk') "
      "RETURNING id IS NOT NULL, tier, created_at = now()");
  EXPECT_TRUE(tenant[0].as<bool>());
  EXPECT_EQ(tenant[1].as<std::string>(), "bulk");
  EXPECT_TRUE(tenant[2].as<bool>());
  auto channel = tx.exec1(
      "INSERT INTO bulkhead.channels (tenant_id, url) "
      "VALUES ((SELECT id FROM bulkhead.tenants WHERE name = 'globex'), "
      "'https://globex.example/hooks') "
      "RETURNING id IS NOT NULL, enabled, disabled_reason IS NULL, breaker_state, "
      "breaker_changed_at = now(), breaker_probe_at IS NULL, breaker_trips, created_at = now(), "
      "secret ~ '^whsec_', length(decode(substr(secret, 7), 'base64'))");
  tx.commit();
  EXPECT_TRUE(channel[0].as<bool>());
  EXPECT_TRUE(channel[1].as<bool>());  // enabled
  EXPECT_TRUE(channel[2].as<bool>());  // no disabled_reason
  EXPECT_EQ(channel[3].as<std::string>(), "closed");
  EXPECT_TRUE(channel[4].as<bool>());
  EXPECT_TRUE(channel[5].as<bool>());  // no probe
  EXPECT_EQ(channel[6].as<int>(), 0);
  EXPECT_TRUE(channel[7].as<bool>());
  EXPECT_TRUE(channel[8].as<bool>());  // whsec_ prefix
  EXPECT_GE(channel[9].as<int>(), 24);
}

TEST_F(ConstraintTest, TwoChannelsGetDifferentSecrets) {
  int64_t second = CreateChannel(db(), tenant_, "https://example.com/second");
  pqxx::work tx(db());
  auto row = tx.exec_params1(
      "SELECT a.secret <> b.secret, a.secret ~ '^whsec_', b.secret ~ '^whsec_' "
      "FROM bulkhead.channels a, bulkhead.channels b WHERE a.id = $1 AND b.id = $2",
      channel_, second);
  EXPECT_TRUE(row[0].as<bool>());
  EXPECT_TRUE(row[1].as<bool>());
  EXPECT_TRUE(row[2].as<bool>());
}

TEST_F(ConstraintTest, RefusesATenantOnAnUnknownTier) {
  SqlFailure failure = ExpectSqlFailure(
      db(), "INSERT INTO bulkhead.tenants (name, tier) VALUES ('initech', 'premium')");
  EXPECT_EQ(failure.sqlstate, "23503") << failure.message;
  EXPECT_NE(failure.message.find("tenants_tier_fkey"), std::string::npos) << failure.message;
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.tenants"), 1);
}

// jobs.channel_id has no foreign key (migration 0015, ADR 0023): a channel is never deleted
// instead, by anyone, so that no job is left behind whose channel is gone.
TEST_F(ConstraintTest, AChannelIsNeverDeletedOrTruncatedEvenWithoutJobs) {
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{}')");
  int64_t unused = CreateChannel(db(), tenant_, "https://example.com/unused");
  for (const std::string& sql :
       {"DELETE FROM bulkhead.channels WHERE id = " + std::to_string(channel_),
        "DELETE FROM bulkhead.channels WHERE id = " + std::to_string(unused),
        std::string("TRUNCATE bulkhead.channels CASCADE")}) {
    SqlFailure failure = ExpectSqlFailure(db(), sql);
    EXPECT_EQ(failure.sqlstate, "23503") << sql << ": " << failure.message;
    EXPECT_NE(failure.message.find("disable it instead"), std::string::npos) << failure.message;
  }
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.channels"), 2);
  EXPECT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"), 1);
}

TEST_F(ConstraintTest, TheDefaultAndBulkTiersExistAfterMigration) {
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT string_agg(name, ',' ORDER BY name) FROM bulkhead.tiers"),
            "bulk,default");
}

// Only available jobs; the priority range (which every job is in) keeps a statement that does
// not name it, such as one about a channel's jobs, from reading it (migration 0006).
TEST_F(ConstraintTest, ClaimIndexHoldsOnlyAvailableJobs) {
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT indexdef FROM pg_indexes WHERE schemaname = "
                                    "'bulkhead' AND indexname = 'jobs_claim'"),
            "CREATE INDEX jobs_claim ON ONLY bulkhead.job_rows USING btree "
            "(queue, priority, scheduled_at, id) WHERE ((state = 'available'::text) AND "
            "((priority >= 1) AND (priority <= 3)))");
}

TEST_F(ConstraintTest, ClaimUsesTheClaimIndexAmongManyFinishedJobs) {
  {
    pqxx::work tx(db());
    // 20,000 parked, completed and discarded jobs in the claimed queue, and 10 available ones.
    tx.exec(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload, state, finished_at, "
        "last_error) "
        "SELECT 'default', " +
        kTenant + ", " + kChannel +
        ", jsonb_build_object('n', g), (ARRAY['parked', 'completed', 'discarded'])[1 + g % 3], "
        "CASE WHEN g % 3 = 0 THEN NULL ELSE now() END, "
        "CASE WHEN g % 3 = 2 THEN 'HTTP 500' END "
        "FROM generate_series(1, 20000) g");
    tx.exec("INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload) SELECT 'default', " +
            kTenant + ", " + kChannel +
            ", jsonb_build_object('n', g) FROM generate_series(1, 10) g");
    tx.commit();
  }
  pqxx::nontransaction(db()).exec("ANALYZE bulkhead.job_rows");
  ASSERT_EQ(QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.jobs"), 20010);

  const std::string claim =
      "SELECT id FROM bulkhead.jobs WHERE queue = 'default' AND state = 'available' "
      "AND priority BETWEEN 1 AND 3 ORDER BY priority, scheduled_at, id LIMIT 10 "
      "FOR UPDATE SKIP LOCKED";
  pqxx::work tx(db());
  std::string plan;
  for (const auto& row : tx.exec("EXPLAIN " + claim)) plan += row[0].as<std::string>() + "\n";
  // The jobs are in the default range (no leader ran; migration 0021), read through its copy of
  // jobs_claim, named by PostgreSQL after its columns.
  EXPECT_NE(plan.find("Index Scan using jobs_beyond_queue_priority_scheduled_at_id_idx on "
                      "jobs_beyond"),
            std::string::npos)
      << plan;
  EXPECT_EQ(plan.find("Seq Scan on jobs_beyond"), std::string::npos) << plan;
  EXPECT_EQ(tx.exec(claim).size(), 10u);
}

}  // namespace
}  // namespace bulkhead
