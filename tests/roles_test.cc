// Least privilege (issue 31, Part C): `bulkhead grant --as app|node|console` against real
// PostgreSQL, and each part then doing its work on its own role — the application enqueuing
// through the SECURITY DEFINER functions, a `bulkhead run` node delivering, breaking, parking,
// rescuing and pruning, the operator's verbs as the console — and each refused (SQLSTATE 42501)
// what its part must not do.
//
// Roles belong to the cluster, not to a database: every test makes (or finds) bk_app, bk_node
// and bk_console, and grants them on its own database.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "claim_store.h"
#include "cli.h"
#include "console_pool.h"
#include "console_store.h"
#include "fleet_store.h"
#include "http_receiver.h"
#include "migrations.h"
#include "migrator.h"
#include "node_process.h"
#include "sql_failure.h"
#include "store_failure.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::seconds;
using testing::Bulkhead;
using testing::CliTest;
using testing::CommandResult;
using testing::ExpectSqlFailure;
using testing::HttpReceiver;
using testing::NodeProcess;
using testing::QueryValue;
using testing::ReceivedRequest;
using testing::Reply;

class RolesTest : public CliTest {
 protected:
  // The role `bk_<part>`, made with LOGIN if the cluster has none, granted `part` on this
  // test's database by the real binary.
  std::string Grant(const std::string& part) {
    std::string role = "bk_" + part;
    MakeRole(role);
    CommandResult granted = Run({"grant", "--role", role, "--as", part});
    EXPECT_EQ(granted.exit_code, 0) << granted.err;
    return role;
  }

  void MakeRole(const std::string& role) {
    Exec("DO $$ BEGIN CREATE ROLE " + role +
         " LOGIN; EXCEPTION WHEN duplicate_object THEN "
         "NULL; END $$");
  }

  // This test's database, as `role`.
  std::string As(const std::string& role) const { return conninfo() + " user=" + role; }

  // `bulkhead <args> --database <this database as role>`.
  CommandResult RunAs(const std::string& role, std::vector<std::string> args) {
    args.push_back("--database");
    args.push_back(As(role));
    return Bulkhead(args);
  }

  int64_t Tenant(const std::string& name) { return testing::CreateTenant(db(), name); }
};

Reply Status(int status) {
  Reply reply;
  reply.status = status;
  return reply;
}

// ---- The application ------------------------------------------------------------------------

TEST_F(RolesTest, TheAppEnqueuesAndAddsItsChannelsAndIsRefusedSecretsJobsAndNodeStatements) {
  const std::string role = Grant("app");
  pqxx::connection app(As(role));

  // Its tenants and channels: a tenant by INSERT, a channel by add_channel, which returns the
  // one secret the application may read.
  int64_t tenant = QueryValue<int64_t>(
      app, "INSERT INTO bulkhead.tenants (name, tier) VALUES ('acme', 'default') RETURNING id");
  pqxx::row added = [&] {
    pqxx::work tx(app);
    pqxx::row row = tx.exec1("SELECT id, secret FROM bulkhead.add_channel(" +
                             std::to_string(tenant) + ", 'https://acme.example/hooks')");
    tx.commit();
    return row;
  }();
  const int64_t channel = added["id"].as<int64_t>();
  EXPECT_EQ(added["secret"].as<std::string>().rfind("whsec_", 0), 0u);
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT secret FROM bulkhead.channels WHERE id = " + std::to_string(channel)),
            added["secret"].as<std::string>());
  const std::string ch = std::to_string(channel);
  {
    pqxx::work tx(app);
    tx.exec0("UPDATE bulkhead.channels SET url = 'https://acme.example/v2' WHERE id = " + ch);
    tx.commit();
  }
  EXPECT_EQ(QueryValue<std::string>(app, "SELECT url FROM bulkhead.channels WHERE id = " + ch),
            "https://acme.example/v2");

  // Enqueue, one and many, with their idempotency and their errors unchanged.
  int64_t one = QueryValue<int64_t>(app, "SELECT bulkhead.enqueue(" + ch + ", '{\"n\": 1}', 'k')");
  EXPECT_EQ(QueryValue<int64_t>(app, "SELECT bulkhead.enqueue(" + ch + ", '{\"n\": 1}', 'k')"),
            one);
  EXPECT_EQ(QueryValue<int>(app, "SELECT cardinality(bulkhead.enqueue_many(ARRAY[" + ch + ", " +
                                     ch + "]::bigint[], ARRAY['{}', '[]']::jsonb[]))"),
            2);
  EXPECT_EQ(Count("channel_id = " + ch), 3);
  EXPECT_EQ(ExpectSqlFailure(app, "SELECT bulkhead.enqueue(999999, '{}')").sqlstate, "23503");
  EXPECT_EQ(ExpectSqlFailure(app, "SELECT bulkhead.enqueue(" + ch + ", '1')").sqlstate, "22023");
  // A temporary function of the caller's cannot stand in for one of PostgreSQL's inside the
  // enqueue: its search_path is pinned.
  Exec("GRANT TEMPORARY ON DATABASE " + dbname() + " TO " + role);
  {
    pqxx::work tx(app);
    tx.exec0(
        "CREATE FUNCTION pg_temp.now() RETURNS timestamptz LANGUAGE sql AS "
        "$$ SELECT timestamptz '2000-01-01' $$");
    tx.exec0("SET LOCAL search_path = pg_temp, pg_catalog");
    tx.exec1("SELECT bulkhead.enqueue(" + ch + ", '{\"temp\": true}')");
    tx.commit();
  }
  EXPECT_EQ(Count("payload ? 'temp' AND scheduled_at > now() - interval '1 hour'"), 1);

  // Refused: secrets, the jobs table, other roles' work, the node's statements.
  for (const std::string& sql :
       {std::string("SELECT secret FROM bulkhead.channels"),
        std::string("SELECT * FROM bulkhead.channels"),
        std::string("SELECT secret FROM bulkhead.channel_secrets"),
        "UPDATE bulkhead.channels SET secret = bulkhead.new_secret() WHERE id = " + ch,
        "UPDATE bulkhead.channels SET breaker_state = 'open' WHERE id = " + ch,
        "INSERT INTO bulkhead.channels (tenant_id, url) VALUES (" + std::to_string(tenant) +
            ", 'https://evil.example/')",
        std::string("SELECT count(*) FROM bulkhead.jobs"),
        std::string("UPDATE bulkhead.jobs SET state = 'cancelled'"),
        std::string("DELETE FROM bulkhead.jobs"), std::string("DELETE FROM bulkhead.nodes"),
        std::string("INSERT INTO bulkhead.sleepers (queue, node) VALUES ('default', 'fake')"),
        std::string("DELETE FROM bulkhead.sleepers"),
        std::string("SELECT bulkhead.check_delivery('{}', NULL, 1, '')"),
        "SELECT bulkhead.route(" + ch + ", '')"}) {
    EXPECT_EQ(ExpectSqlFailure(app, sql).sqlstate, "42501") << sql;
  }
  ClaimStore claims(app);
  try {
    claims.Claim("default", 10, "not-a-node");
    ADD_FAILURE() << "the app role claimed jobs";
  } catch (const pqxx::sql_error& e) {
    EXPECT_EQ(SqlState(e), "42501") << e.what();
  }
  EXPECT_EQ(Count("state = 'available'"), 4);  // nothing claimed, nothing changed
}

// ---- A node ---------------------------------------------------------------------------------

TEST_F(RolesTest, ANodeOnTheNodeRoleDeliversBreaksParksRescuesAndPrunes) {
  const std::string node_role = Grant("node");
  const std::string app_role = Grant("app");
  HttpReceiver receiver([](const ReceivedRequest& r) {
    if (r.path == "/broken") return Status(503);
    if (r.path == "/gone") return Status(410);
    return Status(204);
  });
  const std::string ok =
      std::to_string(testing::CreateChannel(db(), Tenant("ok"), receiver.Url("/ok")));
  const std::string broken =
      std::to_string(testing::CreateChannel(db(), Tenant("broken"), receiver.Url("/broken")));
  const std::string gone =
      std::to_string(testing::CreateChannel(db(), Tenant("gone"), receiver.Url("/gone")));
  {
    pqxx::connection app(As(app_role));
    pqxx::work tx(app);
    for (int i = 0; i < 20; ++i) {
      tx.exec1("SELECT bulkhead.enqueue(" + ok + ", '{}')");
      tx.exec1("SELECT bulkhead.enqueue(" + broken + ", '{}')");
    }
    tx.exec1("SELECT bulkhead.enqueue(" + gone + ", '{}')");
    tx.commit();
  }
  // What a lost node left executing (rescue), finished jobs past the retention (prune), and an
  // old secret whose window ended (expiry), all for the leader.
  Exec(
      "INSERT INTO bulkhead.nodes (name, heartbeat_at, lease_until) "
      "VALUES ('lost', now() - interval '1 min', now() - interval '30 s')");
  std::vector<int64_t> stranded = EnqueueMany(std::stoll(ok), 3);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_by = 'lost', "
      "attempted_at = now() - interval '1 min' WHERE id IN (" +
      std::to_string(stranded[0]) + ", " + std::to_string(stranded[1]) + ", " +
      std::to_string(stranded[2]) + ")");
  std::vector<int64_t> old = EnqueueMany(std::stoll(ok), 5);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '2 days' "
      "WHERE id >= " +
      std::to_string(old.front()) + " AND id <= " + std::to_string(old.back()));
  Exec(
      "INSERT INTO bulkhead.channel_secrets (channel_id, secret, retired_at, expires_at) "
      "SELECT id, bulkhead.new_secret(), now() - interval '2 h', now() - interval '1 h' "
      "FROM bulkhead.channels WHERE id = " +
      ok);
  Exec("UPDATE bulkhead.channels SET old_secrets_until = now() - interval '1 h' WHERE id = " + ok);
  // The lost node's runner had marked itself asleep (ADR 0019): the leader forgets the mark.
  Exec("INSERT INTO bulkhead.sleepers (queue, node) VALUES ('default', 'lost')");

  NodeProcess node(testing::TestNodeConfig("node-on-its-role", {{"retention_ms", 60000}}),
                   {{"default",
                     {{"workers", 10},
                      {"channel_share", 1},
                      {"tenant_share", 1},
                      {"failure_threshold", 5},
                      {"cooldown_ms", 600000},
                      {"cooldown_max_ms", 600000},
                      {"retry_delays_ms", {3600000}},
                      {"retry_jitter", 0}}}});
  node.Start(As(node_role));
  ASSERT_TRUE(node.WaitReady()) << node.Log();

  // Delivers (the 20 enqueued and the 3 rescued), breaks and parks, disables on a 410.
  EXPECT_TRUE(
      WaitFor("(SELECT count(*) = 23 FROM bulkhead.jobs WHERE state = 'completed' "
              "AND channel_id = " +
              ok + ")"))
      << node.Log();
  EXPECT_TRUE(
      WaitFor("(SELECT breaker_state = 'open' FROM bulkhead.channels WHERE id = " + broken + ")"))
      << node.Log();
  EXPECT_GT(Count("state = 'parked' AND channel_id = " + broken), 0);
  EXPECT_TRUE(WaitFor("(SELECT NOT enabled FROM bulkhead.channels WHERE id = " + gone + ")"))
      << node.Log();
  EXPECT_TRUE(node.WaitForLog("jobs_rescued")) << node.Log();
  // Waited for, not read once: the count of 23 above can also be met by the 5 old completed
  // jobs before the leader prunes them, while the rescued ones are still on their way.
  EXPECT_TRUE(
      WaitFor("(SELECT count(*) = 3 FROM bulkhead.jobs WHERE attempt = 2 AND state = "
              "'completed' AND id IN (" +
              std::to_string(stranded[0]) + ", " + std::to_string(stranded[1]) + ", " +
              std::to_string(stranded[2]) + "))"))
      << node.Log();
  // Prunes and expires.
  EXPECT_TRUE(
      WaitFor("(SELECT count(*) = 0 FROM bulkhead.jobs WHERE finished_at < now() - "
              "interval '1 day')"))
      << node.Log();
  EXPECT_TRUE(WaitFor("(SELECT count(*) = 0 FROM bulkhead.channel_secrets)")) << node.Log();
  // Marks its idle runner asleep, and the lost node's mark is gone.
  EXPECT_TRUE(
      WaitFor("(SELECT coalesce(array_agg(node) = '{node-on-its-role}', false) "
              "FROM bulkhead.sleepers WHERE queue = 'default')"))
      << node.Log();

  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 0)
      << "a node that stops deletes its marks";
  EXPECT_EQ(node.Log().find("permission denied"), std::string::npos) << node.Log();
}

// ---- The console ----------------------------------------------------------------------------

TEST_F(RolesTest, TheConsoleRoleRunsTheOperatorsVerbsAndCannotReadASecret) {
  const std::string role = Grant("console");
  const int64_t tenant = Tenant("acme");
  const std::string ch = std::to_string(testing::CreateChannel(db(), tenant));
  const std::string off = std::to_string(testing::CreateChannel(db(), tenant));
  Enqueue(std::stoll(ch), 4);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'discarded', finished_at = now(), last_error = 'HTTP "
      "500' WHERE id IN "
      "(SELECT id FROM bulkhead.jobs ORDER BY id LIMIT 2)");
  Exec(
      "UPDATE bulkhead.channels SET enabled = false, paused = true, "
      "disabled_reason = 'the endpoint answered 410 Gone' WHERE id = " +
      off);

  // What the console shows and the actions it takes, as the operator's verbs run them.
  for (const std::vector<std::string>& verb : {std::vector<std::string>{"status"},
                                               {"breakers"},
                                               {"jobs"},
                                               {"channel", "show", ch},
                                               {"tenant", "show", std::to_string(tenant)},
                                               {"channel", "pause", ch},
                                               {"channel", "resume", ch},
                                               {"breaker", "reset", ch},
                                               {"channel", "enable", off},
                                               {"replay", "--channel", ch},
                                               {"cancel", "--channel", ch}}) {
    CommandResult r = RunAs(role, verb);
    EXPECT_EQ(r.exit_code, 0) << verb[0] << " " << (verb.size() > 1 ? verb[1] : "") << ": "
                              << r.err;
  }
  EXPECT_EQ(Count("state = 'cancelled'"), 4);  // replayed (2), then cancelled with the rest
  EXPECT_TRUE(QueryValue<bool>(db(), "SELECT enabled FROM bulkhead.channels WHERE id = " + off));

  // Secrets stay out of its reach, and so does everything that would make or show one.
  pqxx::connection console(As(role));
  for (const std::string& sql :
       {std::string("SELECT secret FROM bulkhead.channels"),
        std::string("SELECT secret FROM bulkhead.channel_secrets"),
        "SELECT * FROM bulkhead.add_channel(" + std::to_string(tenant) + ", 'https://a.example/')",
        "SELECT bulkhead.enqueue(" + ch + ", '{}')", std::string("DELETE FROM bulkhead.jobs")}) {
    EXPECT_EQ(ExpectSqlFailure(console, sql).sqlstate, "42501") << sql;
  }
  for (const std::vector<std::string>& verb :
       {std::vector<std::string>{"channel", "add", "--tenant", std::to_string(tenant), "--url",
                                 "https://b.example/"},
        {"channel", "rotate-secret", ch}}) {
    CommandResult r = RunAs(role, verb);
    EXPECT_EQ(r.exit_code, 1) << verb[1];
    EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("whsec_"), std::string::npos);
  }
}

// What `bulkhead console` runs (ConsoleStore and the admin stores it acts through), on a role
// granted the console part: every read, an action and its audit row, with the breaker history
// the node role's transitions wrote through the trigger.
TEST_F(RolesTest, TheConsoleRoleServesTheConsoleAndWritesItsAuditLog) {
  const std::string role = Grant("console");
  const int64_t tenant = Tenant("acme");
  const int64_t ch = testing::CreateChannel(db(), tenant);
  Enqueue(ch, 3);
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_reason = 'x', "
      "breaker_probe_at = now() WHERE id = " +
      std::to_string(ch));

  pqxx::connection conn(As(role));
  console::ConsoleStores stores(std::make_unique<pqxx::connection>(As(role)));
  EXPECT_NE(stores.console.Overview().find("\"breakers\""), std::string::npos);
  EXPECT_NE(stores.console.Channels(std::nullopt, 0, 10).find("acme"), std::string::npos);
  ASSERT_TRUE(stores.console.Channel(ch));
  EXPECT_NE(stores.console.Channel(ch)->find("\"to\": \"open\""), std::string::npos);
  EXPECT_NE(stores.console.Deliveries({}, 10).find("\"deliveries\""), std::string::npos);
  EXPECT_EQ(stores.console.CountCancel(
                {.state = {}, .channel = ch, .tenant = {}, .since = {}, .until = {}}),
            3);
  EXPECT_TRUE(stores.channels.PauseChannel(ch));
  EXPECT_GT(stores.console.RecordAction("admin:test", "pause", "channel 1", "{}", 3), 0);
  EXPECT_NE(stores.console.Actions(5).find("admin:test"), std::string::npos);
  EXPECT_EQ(ExpectSqlFailure(conn, "DELETE FROM bulkhead.console_actions").sqlstate, "42501");
  EXPECT_EQ(ExpectSqlFailure(conn,
                             "INSERT INTO bulkhead.breaker_events (channel_id, from_state, "
                             "to_state) VALUES (1, 'open', 'closed')")
                .sqlstate,
            "42501");
}

TEST_F(RolesTest, AConsoleRoleGrantedBeforeMigration0012ReadsTheHistoryAndWritesTheLogAfterIt) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Down(EmbeddedMigrations().back().version - 11).ok());  // to before 0012
  MakeRole("bk_old_console");
  Exec("SELECT bulkhead.grant_role('bk_old_console', 'console')");
  ASSERT_TRUE(migrator.Up().ok());

  pqxx::connection console(As("bk_old_console"));
  ConsoleStore store(console);
  EXPECT_GT(store.RecordAction("admin:old", "reset", "channel 1", "{}", 0), 0);
  EXPECT_EQ(QueryValue<int64_t>(console, "SELECT count(*) FROM bulkhead.breaker_events"), 0);
}

// ---- The verb -------------------------------------------------------------------------------

TEST_F(RolesTest, GrantReplacesBroadGrantsAndRunningItAgainChangesNothing) {
  MakeRole("bk_app");
  Exec("GRANT USAGE ON SCHEMA bulkhead TO bk_app");
  Exec("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA bulkhead TO bk_app");
  pqxx::connection app(As("bk_app"));
  EXPECT_EQ(QueryValue<int64_t>(app, "SELECT count(secret) FROM bulkhead.channels"), 0);

  CommandResult first = Run({"grant", "--role", "bk_app", "--as", "app"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("granted bk_app the app part"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("enqueue(bigint,jsonb,text,timestamp with time zone,text)"),
            std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("publish(bigint,text,jsonb,text,text)"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("jobs "), std::string::npos) << first.out;
  EXPECT_EQ(ExpectSqlFailure(app, "SELECT secret FROM bulkhead.channels").sqlstate, "42501");
  EXPECT_EQ(ExpectSqlFailure(app, "DELETE FROM bulkhead.jobs").sqlstate, "42501");

  CommandResult again = Run({"grant", "--role", "bk_app", "--as", "app"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
}

TEST_F(RolesTest, GrantRefusesAMissingRoleAnUnknownPartTheSchemasOwnerAndANonOwner) {
  testing::ExpectUsageError({"grant", "--as", "app"}, "missing --role NAME");
  testing::ExpectUsageError({"grant", "--role", "x"}, "missing --as app|node|console");
  testing::ExpectUsageError({"grant", "--role", "x", "--as", "admin"},
                            "--as must be app, node or console, not 'admin'");

  CommandResult missing = Run({"grant", "--role", "no_such_role", "--as", "node"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no role named \"no_such_role\""), std::string::npos) << missing.err;

  CommandResult owner = Run({"grant", "--role", "bulkhead", "--as", "app"});
  EXPECT_EQ(owner.exit_code, 1);
  EXPECT_NE(owner.err.find("owns schema bulkhead"), std::string::npos) << owner.err;

  // A role that does not own the schema cannot hand out its privileges, even to itself.
  MakeRole("bk_node");
  Grant("node");
  CommandResult by_node = RunAs("bk_node", {"grant", "--role", "bk_node", "--as", "console"});
  EXPECT_EQ(by_node.exit_code, 1);
  EXPECT_NE(by_node.err.find("permission denied"), std::string::npos) << by_node.err;
}

// ---- The migration --------------------------------------------------------------------------

// A deployment on the broad grants of the old docs keeps enqueuing across migration 0009: the
// role that could insert into jobs is granted the enqueue functions before PUBLIC loses them.
TEST_F(RolesTest, ARoleOnTheOldBroadGrantsStillEnqueuesAfterTheMigration) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Down(EmbeddedMigrations().back().version - 8).ok());  // to before 0009
  MakeRole("bk_broad");
  Exec("GRANT USAGE ON SCHEMA bulkhead TO bk_broad");
  Exec("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA bulkhead TO bk_broad");
  MakeRole("bk_none");
  Exec("GRANT USAGE ON SCHEMA bulkhead TO bk_none");
  ASSERT_TRUE(migrator.Up().ok());

  const std::string ch = std::to_string(testing::CreateChannel(db(), Tenant("acme")));
  pqxx::connection broad(As("bk_broad"));
  EXPECT_GT(QueryValue<int64_t>(broad, "SELECT bulkhead.enqueue(" + ch + ", '{}')"), 0);
  pqxx::connection none(As("bk_none"));
  EXPECT_EQ(ExpectSqlFailure(none, "SELECT bulkhead.enqueue(" + ch + ", '{}')").sqlstate, "42501");
}

// A node role granted before migration 0010 may write its sleeping marks after it, without a new
// `bulkhead grant`: otherwise its idle runners would wait for the poll, unnotified (ADR 0019).
TEST_F(RolesTest, ANodeRoleGrantedBeforeMigration0010MarksItsRunnersAsleepAfterIt) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Down(EmbeddedMigrations().back().version - 9).ok());  // to before 0010
  MakeRole("bk_old_node");
  Exec("SELECT bulkhead.grant_role('bk_old_node', 'node')");
  ASSERT_TRUE(migrator.Up().ok());

  pqxx::connection node(As("bk_old_node"));
  ClaimStore claims(node);
  claims.MarkAsleep("default", "old-node");
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 1);
  // And opens the wake-up gate after it, and reads what runs (migration 0027).
  EXPECT_GT(claims.FellAsleep().next_xid, 0);
  EXPECT_GT(claims.RunningTransactions().xmax, 0);
  claims.MarkAwake("default", "old-node");
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.sleepers"), 0);
}

TEST_F(RolesTest, ANodeRoleGrantedBeforeMigration0019PrunesJobsWithTheirKeysAfterIt) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Down(EmbeddedMigrations().back().version - 18).ok());  // to before 0019
  MakeRole("bk_old_node");
  Exec("SELECT bulkhead.grant_role('bk_old_node', 'node')");
  ASSERT_TRUE(migrator.Up().ok());
  const std::string channel =
      std::to_string(testing::CreateChannel(db(), testing::CreateTenant(db(), "acme")));
  Exec("SELECT bulkhead.enqueue(" + channel + ", '{}', 'k')");
  Exec("UPDATE bulkhead.jobs SET state = 'completed', finished_at = now() - interval '8 days'");

  pqxx::connection node(As("bk_old_node"));
  FleetStore fleet(node);
  EXPECT_EQ(fleet.PruneFinished(7LL * 24 * 3600 * 1000, 10), 1);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.idempotency_keys"), 0);
}

// Migration 0021: the leader keeps the ranges of jobs through two SECURITY DEFINER functions
// that only the node part may call. A node role granted before it gets them from the migration,
// one granted after from `bulkhead grant`; an app role cannot call them.
TEST_F(RolesTest, OnlyTheNodePartKeepsTheRangesOfJobsWhetherGrantedBeforeOrAfterMigration0021) {
  Migrator migrator(db(), EmbeddedMigrations());
  ASSERT_TRUE(migrator.Down(EmbeddedMigrations().back().version - 20).ok());  // to before 0021
  MakeRole("bk_old_node");
  Exec("SELECT bulkhead.grant_role('bk_old_node', 'node')");
  ASSERT_TRUE(migrator.Up().ok());
  const std::string new_node = "bk_node";
  MakeRole(new_node);
  CommandResult granted = Run({"grant", "--role", new_node, "--as", "node"});
  ASSERT_EQ(granted.exit_code, 0) << granted.err;
  // The listing names the partitioned jobs and the two functions.
  EXPECT_NE(granted.out.find("\njobs "), std::string::npos) << granted.out;
  EXPECT_NE(granted.out.find("add_job_range(bigint,bigint)"), std::string::npos) << granted.out;
  EXPECT_NE(granted.out.find("drop_job_range(text,timestamp with time zone)"), std::string::npos)
      << granted.out;
  const std::string app = Grant("app");
  const std::string channel =
      std::to_string(testing::CreateChannel(db(), testing::CreateTenant(db(), "acme")));

  pqxx::connection old_node(As("bk_old_node"));
  FleetStore old_fleet(old_node);
  old_fleet.AddJobRange(1, 100);
  Exec("SELECT bulkhead.enqueue(" + channel + ", '{}', 'k')");
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', attempt = 1, "
      "finished_at = now() - interval '8 days'");

  pqxx::connection app_conn(As(app));
  EXPECT_EQ(ExpectSqlFailure(app_conn, "SELECT bulkhead.add_job_range(100, 200)").sqlstate,
            "42501");
  EXPECT_EQ(
      ExpectSqlFailure(app_conn, "SELECT bulkhead.drop_job_range('jobs_from_1', now())").sqlstate,
      "42501");

  pqxx::connection node(As(new_node));
  FleetStore fleet(node);
  std::vector<JobRange> ranges = fleet.JobRanges();
  ASSERT_EQ(ranges.size(), 3u);
  ASSERT_EQ(ranges[1].name, "jobs_from_1");
  EXPECT_TRUE(fleet.DropJobRange(ranges[1], 7LL * 24 * 3600 * 1000));
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs"), 0);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.idempotency_keys"), 0);
}

}  // namespace
}  // namespace bulkhead
