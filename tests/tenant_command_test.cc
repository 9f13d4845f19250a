// `bulkhead tenant set-tier` as an operator runs it: the real binary against a real database,
// the rows it changes (tenants.tier, jobs.queue), and what lands on stdout and stderr with exit
// codes 0 / 1 / 2.
//
// Deliveries are made with bulkhead.enqueue (parked when their channel is paused); jobs in
// flight and finished ones with plain SQL, as a node would leave them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "completion_store.h"
#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::Bulkhead;
using testing::CliTest;
using testing::CommandResult;
using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::ExpectUsageError;
using testing::Lines;
using testing::QueryValue;

class TenantCommandTest : public CliTest {
 protected:
  // acme (default tier) has two channels: `flowing_` with 3 available deliveries, one in flight
  // and one completed, and `paused_` with 2 parked. beta, also on default, has 4 available.
  void SetUp() override {
    CliTest::SetUp();
    acme_ = CreateTenant(db(), "acme");
    beta_ = CreateTenant(db(), "beta");
    flowing_ = CreateChannel(db(), acme_);
    paused_ = CreateChannel(db(), acme_);
    beta_channel_ = CreateChannel(db(), beta_);
    Enqueue(flowing_, 3);
    in_flight_ = EnqueueOne(flowing_);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_by = 'n',"
        " attempted_at = now() WHERE id = " +
        std::to_string(in_flight_));
    finished_ = EnqueueOne(flowing_);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'completed', attempt = 1, attempted_by = 'n',"
        " attempted_at = now(), finished_at = now() WHERE id = " +
        std::to_string(finished_));
    Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(paused_));
    Enqueue(paused_, 2);
    Enqueue(beta_channel_, 4);
    ASSERT_EQ(Jobs(flowing_, "available", "default"), 3);
    ASSERT_EQ(Jobs(paused_, "parked", "default"), 2);
  }

  // The channel's jobs in `state` whose queue is `queue`.
  int64_t Jobs(int64_t channel, const std::string& state, const std::string& queue) {
    return QueryValue<int64_t>(
        db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " + std::to_string(channel) +
                  " AND state = '" + state + "' AND queue = '" + queue + "'");
  }

  std::string Tier(int64_t tenant) {
    return QueryValue<std::string>(
        db(), "SELECT tier FROM bulkhead.tenants WHERE id = " + std::to_string(tenant));
  }

  std::string QueueOf(int64_t job) {
    return QueryValue<std::string>(
        db(), "SELECT queue || ' ' || state FROM bulkhead.jobs WHERE id = " + std::to_string(job));
  }

  // acme's jobs moved to bulk and nothing else changed.
  void ExpectAcmeOnBulk() {
    EXPECT_EQ(Tier(acme_), "bulk");
    EXPECT_EQ(Jobs(flowing_, "available", "bulk"), 3);
    EXPECT_EQ(Jobs(paused_, "parked", "bulk"), 2);  // moved, and still parked
    EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id IN (" +
                                            std::to_string(flowing_) + ", " +
                                            std::to_string(paused_) + ") AND queue = 'default'"),
              2);
    // In flight: finishes where it is (and retries in bulk); finished: history stays put.
    EXPECT_EQ(QueueOf(in_flight_), "default executing");
    EXPECT_EQ(QueueOf(finished_), "default completed");
    // Another tenant on the same tier is untouched.
    EXPECT_EQ(Tier(beta_), "default");
    EXPECT_EQ(Jobs(beta_channel_, "available", "default"), 4);
  }

  // acme and its jobs exactly as SetUp left them.
  void ExpectNothingChanged() {
    EXPECT_EQ(Tier(acme_), "default");
    EXPECT_EQ(Tier(beta_), "default");
    EXPECT_EQ(QueryValue<int64_t>(db(),
                                  "SELECT count(*) FROM bulkhead.jobs WHERE queue <> "
                                  "'default'"),
              0);
    EXPECT_EQ(Jobs(flowing_, "available", "default"), 3);
    EXPECT_EQ(Jobs(paused_, "parked", "default"), 2);
  }

  int64_t acme_ = 0, beta_ = 0;
  int64_t flowing_ = 0, paused_ = 0, beta_channel_ = 0;
  int64_t in_flight_ = 0, finished_ = 0;
};

constexpr const char* kAcmeMoved =
    "tenant acme: tier default → bulk; 5 waiting deliveries moved (3 available, 2 parked); "
    "deliveries in flight finish in default\n";

TEST_F(TenantCommandTest, SetTierByNameMovesTheTenantAndItsWaitingDeliveries) {
  CommandResult r = Run({"tenant", "set-tier", "acme", "bulk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kAcmeMoved);
  EXPECT_EQ(r.err, "");
  ExpectAcmeOnBulk();

  // The delivery in flight fails after the move: its retry waits in the new tier's queue.
  CompletionStore store(db());
  AttemptResult failed;
  failed.id = in_flight_;
  failed.attempt = 1;
  failed.status = 503;
  failed.error = "HTTP 503";
  failed.retry_delay_ms = 1000;
  ASSERT_EQ(store.Record({failed}, "n"), 1);
  EXPECT_EQ(QueueOf(in_flight_), "bulk available");

  // Deliveries enqueued afterwards go to the new tier's queue.
  Enqueue(flowing_, 1);
  EXPECT_EQ(Jobs(flowing_, "available", "bulk"), 5);  // 3 moved, the retry, the new one
}

TEST_F(TenantCommandTest, SetTierByIdMovesTheTenantAndItsWaitingDeliveries) {
  CommandResult r = Run({"tenant", "set-tier", std::to_string(acme_), "bulk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kAcmeMoved);  // named by its name, however it was given
  ExpectAcmeOnBulk();
}

TEST_F(TenantCommandTest, SetTierTakesTheDatabaseFromDatabaseUrlAndOptionsInAnyOrder) {
  CommandResult r = Bulkhead({"tenant", "set-tier", "--database=" + url(), "acme", "bulk"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kAcmeMoved);

  CommandResult back =
      Bulkhead({"tenant", "set-tier", "acme", "default"}, {{"DATABASE_URL", url()}});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out,
            "tenant acme: tier bulk → default; 5 waiting deliveries moved (3 available, 2 "
            "parked); deliveries in flight finish in bulk\n");
  EXPECT_EQ(Tier(acme_), "default");
  EXPECT_EQ(Jobs(flowing_, "available", "default"), 3);
  EXPECT_EQ(Jobs(paused_, "parked", "default"), 2);
}

TEST_F(TenantCommandTest, ANameWinsOverAnIdThatSpellsTheSame) {
  // A tenant named like acme's id: the word means that tenant, not acme.
  int64_t named = CreateTenant(db(), std::to_string(acme_));
  CommandResult r = Run({"tenant", "set-tier", std::to_string(acme_), "bulk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tenant " + std::to_string(acme_) +
                       ": tier default → bulk; 0 waiting deliveries moved (0 available, 0 "
                       "parked); deliveries in flight finish in default\n");
  EXPECT_EQ(Tier(named), "bulk");
  ExpectNothingChanged();
}

TEST_F(TenantCommandTest, SetTierToTheSameTierSaysSoAndMovesNothing) {
  CommandResult r = Run({"tenant", "set-tier", "acme", "default"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tenant acme: already on tier default, 0 waiting deliveries moved\n");
  EXPECT_EQ(r.err, "");
  ExpectNothingChanged();
}

TEST_F(TenantCommandTest, SetTierToTheSameTierStillGathersAStragglerFromAnotherQueue) {
  // An enqueue that read acme's old tier while it was being moved leaves a job behind.
  int64_t straggler = EnqueueOne(flowing_);
  Exec("UPDATE bulkhead.jobs SET queue = 'bulk' WHERE id = " + std::to_string(straggler));
  CommandResult r = Run({"tenant", "set-tier", "acme", "default"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "tenant acme: already on tier default; 1 waiting delivery moved (1 available, 0 "
            "parked) to its queue\n");
  EXPECT_EQ(QueueOf(straggler), "default available");
  EXPECT_EQ(Tier(acme_), "default");
  EXPECT_EQ(Jobs(flowing_, "available", "default"), 4);
  EXPECT_EQ(
      QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE queue <> 'default'"), 0);
}

TEST_F(TenantCommandTest, SetTierToAnUnknownTierExitsOneAndChangesNothing) {
  CommandResult r = Run({"tenant", "set-tier", "acme", "gold"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead tenant set-tier: no tier named 'gold' (see bulkhead.tiers)\n");
  ExpectNothingChanged();
}

TEST_F(TenantCommandTest, SetTierOfAnUnknownTenantExitsOne) {
  for (const std::string tenant : {"globex", "999999"}) {
    CommandResult r = Run({"tenant", "set-tier", tenant, "bulk"});
    EXPECT_EQ(r.exit_code, 1) << tenant;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "bulkhead tenant set-tier: no tenant named or numbered '" + tenant + "'\n");
  }
  // An unknown tenant is reported as such even when the tier is unknown too.
  CommandResult both = Run({"tenant", "set-tier", "globex", "gold"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_EQ(both.err, "bulkhead tenant set-tier: no tenant named or numbered 'globex'\n");
  ExpectNothingChanged();
}

TEST_F(TenantCommandTest, DoubleDashLetsATenantNameStartWithADash) {
  int64_t dashed = CreateTenant(db(), "-dash");
  // After `--` every word is TENANT or TIER, so --database comes before it.
  CommandResult r = Bulkhead({"tenant", "set-tier", "--database", url(), "--", "-dash", "bulk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "tenant -dash: tier default → bulk; 0 waiting deliveries moved (0 available, 0 "
            "parked); deliveries in flight finish in default\n");
  EXPECT_EQ(Tier(dashed), "bulk");
}

// ---- tenant add and show ----------------------------------------------------------------------

TEST_F(TenantCommandTest, AddCreatesATenantOnATier) {
  CommandResult r = Run({"tenant", "add", "--name", "gamma", "--tier", "bulk"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t id = QueryValue<int64_t>(db(), "SELECT id FROM bulkhead.tenants WHERE name = 'gamma'");
  EXPECT_EQ(r.out, "tenant gamma added with id " + std::to_string(id) + " on tier bulk\n");
  EXPECT_EQ(Tier(id), "bulk");
  CommandResult dflt = Run({"tenant", "add", "--name", "delta"});
  ASSERT_EQ(dflt.exit_code, 0) << dflt.err;
  EXPECT_EQ(QueryValue<std::string>(db(), "SELECT tier FROM bulkhead.tenants WHERE name = 'delta'"),
            "default");
}

TEST_F(TenantCommandTest, AddOfATakenNameOrAnUnknownTierExitsOne) {
  CommandResult taken = Run({"tenant", "add", "--name", "acme"});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_EQ(taken.err, "bulkhead tenant add: a tenant named 'acme' exists already\n");
  CommandResult tier = Run({"tenant", "add", "--name", "gamma", "--tier", "gold"});
  EXPECT_EQ(tier.exit_code, 1);
  EXPECT_EQ(tier.err, "bulkhead tenant add: no tier named 'gold' (see bulkhead.tiers)\n");
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.tenants"), 2);
}

TEST_F(TenantCommandTest, ShowCountsChannelsAndWaitingJobs) {
  CommandResult r = Run({"tenant", "show", "acme"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tenant    acme (id " + std::to_string(acme_) +
                       ")\ntier      default\ncreated   " +
                       QueryValue<std::string>(db(),
                                               "SELECT to_char(created_at AT TIME ZONE 'UTC', "
                                               "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM "
                                               "bulkhead.tenants WHERE name = 'acme'") +
                       "\nchannels  2\njobs      3 available, 0 scheduled, 1 executing, 2 "
                       "parked\n");
  CommandResult json = Run({"tenant", "show", std::to_string(beta_), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["name"], "beta");
  EXPECT_EQ(out["channels"], 1);
  EXPECT_EQ(out["jobs"]["available"], 4);
  CommandResult missing = Run({"tenant", "show", "nobody"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "bulkhead tenant show: no tenant named or numbered 'nobody'\n");
}

TEST(TenantCli, AddAndShowBadInput) {
  ExpectUsageError({"tenant", "add"}, "bulkhead tenant add: missing --name NAME");
  ExpectUsageError({"tenant", "add", "--name", ""}, "--name must be 1 to 200 characters");
  ExpectUsageError({"tenant", "add", "--name", "x", "--tier", "Gold"}, "--tier must be a tier");
  ExpectUsageError({"tenant", "add", "x"}, "unexpected argument 'x'");
  ExpectUsageError({"tenant", "show"}, "bulkhead tenant show: missing TENANT");
  ExpectUsageError({"tenant", "show", "a", "b"}, "unexpected argument 'b'");
  testing::ExpectUnreachableDatabaseError(
      {{"tenant", "add", "--name", "x"}, {"tenant", "show", "x", "--json"}});
}

// ---- The command line -------------------------------------------------------------------------

TEST(TenantCli, UsageErrorsExitTwoWithOneLine) {
  ExpectUsageError({"tenant"}, "bulkhead tenant: missing subcommand (add, show, set-tier)");
  ExpectUsageError({"tenant", "move", "acme", "bulk"},
                   "unknown subcommand 'move' (add, show, set-tier)");
  ExpectUsageError({"tenant", "--database", "x", "set-tier", "acme", "bulk"},
                   "expected a subcommand");
  const std::string command = "bulkhead tenant set-tier: ";
  ExpectUsageError({"tenant", "set-tier"}, command + "missing TENANT and TIER");
  ExpectUsageError({"tenant", "set-tier", "acme"}, command + "missing TIER");
  ExpectUsageError({"tenant", "set-tier", "acme", "bulk", "extra"},
                   command + "unexpected argument 'extra'");
  ExpectUsageError({"tenant", "set-tier", "acme", "bulk", "--force"},
                   command + "unknown option '--force'");
  ExpectUsageError({"tenant", "set-tier", "-x", "bulk"}, command + "unknown option '-x'");
  ExpectUsageError({"tenant", "set-tier", "acme", "bulk", "--database"},
                   command + "--database needs a URL");
  const std::vector<std::string> bad_tiers = {
      "Gold", "2fast", "_x", "gold-tier", "gold tier", "", std::string(64, 'a')};
  for (const std::string& tier : bad_tiers) {
    ExpectUsageError({"tenant", "set-tier", "acme", tier},
                     command +
                         "TIER must be a tier name (a lowercase letter, then up to 62 "
                         "lowercase letters, digits or '_'), not '" +
                         tier + "'");
  }
  ExpectUsageError({"tenant", "set-tier", "acme", "bad\ntier"}, "not 'bad tier'");
}

TEST(TenantCli, LongestTierNameIsAccepted) {
  // 63 characters pass the syntax check and reach the database (here: none).
  CommandResult r = Bulkhead({"tenant", "set-tier", "acme", std::string(63, 'a'), "--database",
                              "postgresql:///nope?host=/nonexistent"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("database error"), std::string::npos) << r.err;
}

TEST(TenantCli, EveryFormOfHelpExitsZero) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--help"}, "tenant set-tier TENANT TIER"},
      {{"tenant", "--help"}, "usage: bulkhead tenant <subcommand>"},
      {{"tenant", "-h"}, "set-tier TENANT TIER"},
      {{"tenant", "set-tier", "--help"},
       "usage: bulkhead tenant set-tier TENANT TIER [--database URL]"},
      {{"tenant", "set-tier", "acme", "Bad!", "-h"}, "usage: bulkhead tenant set-tier"},
  };
  for (const auto& [args, fragment] : cases) {
    CommandResult r = Bulkhead(args);
    EXPECT_EQ(r.exit_code, 0) << ::testing::PrintToString(args);
    EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(TenantCli, UnreachableDatabaseIsOneLineWithTheReason) {
  CommandResult r = Bulkhead(
      {"tenant", "set-tier", "acme", "bulk", "--database", "postgresql:///nope?host=/nonexistent"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bulkhead tenant set-tier: database error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

}  // namespace
}  // namespace bulkhead
