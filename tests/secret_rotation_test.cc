// Secret rotation (migration 0004, ADR 0008) against real PostgreSQL, and end to end: a real
// `bulkhead run` node delivering to the real mock provider over loopback, whose receiver rule
// (any one of the header's signatures verifying with a secret it knows) decides.
//
// - the claim and the probe claim carry a channel's old secrets only inside their windows,
//   newest retired first; the leader's prune deletes expired ones and clears the claim's gate;
// - a receiver that knows only the old secret keeps verifying during the window, one that
//   knows only the new secret verifies at once, and after the window (here: --keep-old 0, and
//   a 2 s window) the old secret is no longer sent;
// - no secret appears in the node's log, its /metrics, or the admin CLI's output after a run
//   with failures (refused connections, 500s, an opened breaker) on rotated channels.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "all_stores.h"
#include "cli.h"
#include "http_get.h"
#include "mock_provider.h"
#include "node_process.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AllStores;
using testing::CliTest;
using testing::CommandResult;
using testing::NodeProcess;
using testing::QueryValue;

class SecretRotationTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    tenant_ = testing::CreateTenant(db(), "acme", "default");
  }

  std::string Secret(int64_t channel) {
    return QueryValue<std::string>(
        db(), "SELECT secret FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  // `bulkhead channel rotate-secret CHANNEL ARGS…`; returns the new secret it printed.
  std::string Rotate(int64_t channel, std::vector<std::string> extra) {
    std::vector<std::string> args = {"channel", "rotate-secret", std::to_string(channel)};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    cli_output_ += r.out + r.err;
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("\nsecret (whsec_\\S+)\n"))) {
      ADD_FAILURE() << "no secret printed: " << r.out;
      return "";
    }
    EXPECT_EQ(m[1].str(), Secret(channel));
    return m[1].str();
  }

  // Enqueues `n` deliveries to `channel` and waits until every job of the test is completed.
  void DeliverAndWait(int64_t channel, int n, const NodeProcess& node) {
    Enqueue(channel, n);
    ASSERT_TRUE(WaitFor("count(*) FILTER (WHERE state <> 'completed') = 0 FROM bulkhead.jobs"))
        << node.Log();
  }

  static nlohmann::json Tier(int workers, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json tier = {
        {"workers", workers},          {"channel_share", 1},      {"tenant_share", 1},
        {"failure_threshold", 1000},   {"slow_call_ms", 3600000}, {"connect_timeout_ms", 2000},
        {"request_timeout_ms", 10000}, {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
    tier.update(extra);
    return tier;
  }

  // Loopback allowed: the mock and 127.0.0.1:9 are on it (testing::TestNodeConfig).
  static nlohmann::json NodeConfig() { return testing::TestNodeConfig("node-a"); }

  static mock::MockOptions MockOptions() {
    mock::MockOptions o;
    o.port = 0;
    o.seed = 7;
    return o;
  }

  static std::string MockUrl(const mock::MockProvider& mock, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(mock.port()) + path;
  }

  // The mock's signature verdicts on `route`: {valid, invalid}.
  static std::pair<int64_t, int64_t> Verdicts(mock::MockProvider& mock, const std::string& route) {
    nlohmann::json signatures = mock.log().Stats()["routes"][route]["signatures"];
    return {signatures.value("valid", int64_t{0}), signatures.value("invalid", int64_t{0})};
  }

  int64_t tenant_ = 0;
  std::string cli_output_;  // everything the CLI printed, for the leak check
};

// ---- The claim and the prune ---------------------------------------------------------------

TEST_F(SecretRotationTest, TheClaimCarriesOldSecretsOnlyInsideTheirWindowsNewestFirst) {
  int64_t ch = testing::CreateChannel(db(), tenant_);
  AllStores store(db());
  Enqueue(ch, 1);
  std::vector<ClaimedJob> jobs = store.Claim("default", 10, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].old_secrets.empty());  // never rotated
  const std::string first = jobs[0].secret;

  SecretRotation r1 = store.RotateSecret(ch, "", 3600);
  ASSERT_EQ(r1.outcome, SecretRotation::kRotated);
  EXPECT_EQ(r1.old_secrets, 1);
  SecretRotation r2 = store.RotateSecret(ch, "", 3600);
  EXPECT_EQ(r2.old_secrets, 2);
  Enqueue(ch, 1);
  jobs = store.Claim("default", 10, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].secret, r2.secret);
  EXPECT_EQ(jobs[0].old_secrets, (std::vector<std::string>{r1.secret, first}));

  // The first window ends: the claim drops it at once, before any prune.
  Exec(
      "UPDATE bulkhead.channel_secrets SET retired_at = now() - interval '2 hours', "
      "expires_at = now() - interval '1 second' WHERE secret = '" +
      first + "'");
  Enqueue(ch, 1);
  jobs = store.Claim("default", 10, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].old_secrets, std::vector<std::string>{r1.secret});
  EXPECT_EQ(store.PruneOldSecrets(), 1);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 1);
  EXPECT_TRUE(QueryValue<bool>(db(), "SELECT old_secrets_until > now() FROM bulkhead.channels"));

  // --keep-old 0: every old secret goes, and the gate with them.
  SecretRotation r3 = store.RotateSecret(ch, "", 0);
  EXPECT_EQ(r3.old_secrets, 0);
  EXPECT_EQ(r3.old_secrets_until, "");
  Enqueue(ch, 1);
  jobs = store.Claim("default", 10, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].secret, r3.secret);
  EXPECT_TRUE(jobs[0].old_secrets.empty());
  EXPECT_TRUE(QueryValue<bool>(db(), "SELECT old_secrets_until IS NULL FROM bulkhead.channels"));
}

TEST_F(SecretRotationTest, TheProbeClaimCarriesOldSecretsToo) {
  int64_t ch = testing::CreateChannel(db(), tenant_);
  AllStores store(db());
  const std::string first = Secret(ch);
  SecretRotation r = store.RotateSecret(ch, "", 3600);
  Enqueue(ch, 3);
  ASSERT_TRUE(store.OpenBreaker(ch, 30000, "test").done);
  Exec("UPDATE bulkhead.channels SET breaker_probe_at = now() - interval '1 ms'");
  std::vector<ClaimedJob> probes = store.ClaimProbes("default", 5, "node-a", 15000);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_TRUE(probes[0].probe);
  EXPECT_EQ(probes[0].secret, r.secret);
  EXPECT_EQ(probes[0].old_secrets, std::vector<std::string>{first});
}

TEST_F(SecretRotationTest, ThePruneClearsTheGateOnlyOnceItsTimeHasPassed) {
  int64_t a = testing::CreateChannel(db(), tenant_);
  int64_t b = testing::CreateChannel(db(), tenant_);
  AllStores store(db());
  store.RotateSecret(a, "", 3600);
  store.RotateSecret(b, "", 3600);
  // a: everything past; b: its row past, but the gate still ahead (as after a rotation that
  // raced the prune): the row goes, the gate stays until its own time.
  Exec(
      "UPDATE bulkhead.channel_secrets SET retired_at = now() - interval '2 hours', "
      "expires_at = now() - interval '1 second'");
  Exec("UPDATE bulkhead.channels SET old_secrets_until = now() - interval '1 second' WHERE id = " +
       std::to_string(a));
  Enqueue(b, 1);
  std::vector<ClaimedJob> jobs = store.Claim("default", 10, "node-a");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].old_secrets.empty());  // the gate is open but the only row expired
  EXPECT_EQ(store.PruneOldSecrets(), 2);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 0);
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT old_secrets_until IS NULL FROM bulkhead.channels "
                               "WHERE id = " +
                                   std::to_string(a)));
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT old_secrets_until > now() FROM bulkhead.channels "
                               "WHERE id = " +
                                   std::to_string(b)));
  EXPECT_EQ(store.PruneOldSecrets(), 0);
}

// ---- End to end: a node, the mock provider, the CLI ---------------------------------------

TEST_F(SecretRotationTest, AReceiverKnowingEitherSecretVerifiesDuringTheWindowAndOnlyTheNewAfter) {
  mock::MockProvider mock(MockOptions());
  mock.Start();
  const std::string route = "/hook/rotation";
  int64_t ch = testing::CreateChannel(db(), tenant_, MockUrl(mock, route));
  const std::string first = Secret(ch);
  NodeProcess node(NodeConfig(), {{"default", Tier(10)}});
  node.Start(url());

  // Before any rotation: one secret, and the receiver knows it.
  mock.log().SetSecrets({first});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{5}, int64_t{0}));

  // Rotated with an hour's window; the receiver has not switched yet: still verified.
  const std::string second = Rotate(ch, {"--keep-old", "1h"});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{10}, int64_t{0}));

  // The receiver switched to the new secret only: verified too.
  mock.log().SetSecrets({second});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{15}, int64_t{0}));
  // And a receiver that knows neither would refuse these requests: the check can fail.
  mock.log().SetSecrets({"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"});
  DeliverAndWait(ch, 1, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{15}, int64_t{1}));

  // --keep-old 0: the old secrets are no longer sent at all.
  const std::string third = Rotate(ch, {"--keep-old", "0"});
  mock.log().SetSecrets({second});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{15}, int64_t{6}));
  mock.log().SetSecrets({third});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{20}, int64_t{6}));

  // A 2 s window: once it has passed, the old secret is not sent, prune or no prune, and the
  // leader's prune (its first runs about 2 s after it is elected, then every minute) deletes
  // it and clears the channel's gate.
  const std::string fourth = Rotate(ch, {"--keep-old", "2s"});
  ASSERT_TRUE(
      WaitFor("now() > (SELECT max(expires_at) FROM bulkhead.channel_secrets) OR "
              "NOT EXISTS (SELECT FROM bulkhead.channel_secrets)",
              seconds(10)));
  mock.log().SetSecrets({third});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{20}, int64_t{11}));
  mock.log().SetSecrets({fourth});
  DeliverAndWait(ch, 5, node);
  EXPECT_EQ(Verdicts(mock, route), std::make_pair(int64_t{25}, int64_t{11}));

  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
}

TEST_F(SecretRotationTest, TheLeaderPrunesExpiredSecretsAndClearsTheGate) {
  int64_t ch = testing::CreateChannel(db(), tenant_);
  Rotate(ch, {});
  Exec(
      "UPDATE bulkhead.channel_secrets SET retired_at = now() - interval '2 hours', "
      "expires_at = now() - interval '1 second'");
  Exec("UPDATE bulkhead.channels SET old_secrets_until = now() - interval '1 second'");
  NodeProcess node(NodeConfig(), {{"default", Tier(2)}});
  node.Start(url());
  // The first prune follows the leader's election by one rescue interval (2 s).
  EXPECT_TRUE(
      WaitFor("NOT EXISTS (SELECT FROM bulkhead.channel_secrets) AND (SELECT "
              "old_secrets_until IS NULL FROM bulkhead.channels)",
              seconds(20)))
      << node.Log();
  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
  EXPECT_NE(node.Log().find("\"old_secrets_pruned\""), std::string::npos) << node.Log();
}

// After a run with failures on rotated channels, every secret the database holds (current and
// old) is searched for, whole and as its key part, in the node's log, its /metrics and every
// admin verb's output.
TEST_F(SecretRotationTest, NoSecretLeaksIntoLogsMetricsOrTheCli) {
  mock::MockProvider mock(MockOptions());
  mock.Start();
  int64_t ok = testing::CreateChannel(db(), tenant_, MockUrl(mock, "/hook/fast"));
  int64_t failing = testing::CreateChannel(db(), tenant_, MockUrl(mock, "/hook/bad?status=500"));
  int64_t refused = testing::CreateChannel(db(), tenant_, "http://127.0.0.1:9/refused");
  std::vector<std::string> retired;  // the secrets the rotations made old
  for (int64_t ch : {ok, failing, refused}) {
    retired.push_back(Secret(ch));
    Rotate(ch, {"--keep-old", "1h"});
  }
  const std::string rotations = cli_output_;
  NodeProcess node(NodeConfig(), {{"default", Tier(10, {{"failure_threshold", 3},
                                                        {"retry_delays_ms", {20, 20}},
                                                        {"cooldown_ms", 600000}})}});
  node.Start(url());
  Enqueue(ok, 10);
  Enqueue(failing, 10);
  Enqueue(refused, 10);
  ASSERT_TRUE(WaitFor("count(*) = 10 FROM bulkhead.jobs WHERE state = 'completed'")) << node.Log();
  // Both broken channels fail until their breakers open and park their backlog.
  ASSERT_TRUE(WaitFor("count(*) = 2 FROM bulkhead.channels WHERE breaker_state = 'open'"))
      << node.Log();
  ASSERT_TRUE(WaitFor("count(*) = 0 FROM bulkhead.jobs WHERE state = 'executing'")) << node.Log();

  std::string seen;
  testing::HttpAnswer metrics =
      testing::HttpGet("http://127.0.0.1:" + std::to_string(node.metrics_port()) + "/metrics");
  EXPECT_EQ(metrics.status, 200);
  seen += metrics.body;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"status"},
           {"status", "--json"},
           {"breakers"},
           {"breakers", "--json"},
           {"jobs", "--limit", "100"},
           {"jobs", "--json", "--limit", "100"},
           {"tenant", "show", "acme"},
           {"channel", "show", std::to_string(failing)},
           {"channel", "show", std::to_string(refused), "--json"}}) {
    CommandResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    seen += r.out + r.err;
  }
  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
  seen += node.Log();
  // The attempt logs in the database carry no secret either.
  seen +=
      QueryValue<std::string>(db(), "SELECT string_agg(attempts::text, ' ') FROM bulkhead.jobs");
  ASSERT_NE(node.Log().find("\"breaker_opened\""), std::string::npos) << node.Log();

  pqxx::work tx(db());
  pqxx::result secrets = tx.exec(
      "SELECT secret FROM bulkhead.channels UNION ALL SELECT secret FROM bulkhead.channel_secrets");
  tx.commit();
  ASSERT_EQ(secrets.size(), 6u);
  for (const auto& row : secrets) {
    // Searched for by a part of its key, in case something cut off the prefix; the secrets
    // themselves are not printed by the test either.
    const std::string key_part = row[0].as<std::string>().substr(6, 24);
    EXPECT_EQ(seen.find(key_part), std::string::npos) << "a secret leaked after the rotations";
    const bool is_retired =
        std::find(retired.begin(), retired.end(), row[0].as<std::string>()) != retired.end();
    // rotate-secret printed each new secret exactly once, and never an old one.
    if (is_retired) {
      EXPECT_EQ(rotations.find(key_part), std::string::npos) << "rotate-secret printed an old one";
    } else {
      EXPECT_NE(rotations.find(key_part), std::string::npos);
      EXPECT_EQ(rotations.find(key_part), rotations.rfind(key_part));
    }
  }
  EXPECT_EQ(seen.find("whsec_"), std::string::npos);
}

}  // namespace
}  // namespace bulkhead
