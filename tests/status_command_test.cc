// `bulkhead status [--json]` as an operator runs it: the real binary against a real database
// holding jobs in every state, a breaker that is open and nodes with running and expired
// leases; and its bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admin_jobs_store.h"
#include "cli.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::Bulkhead;
using testing::Cells;
using testing::CliTest;
using testing::CommandResult;
using testing::CreateChannel;
using testing::CreateTenant;
using testing::ExpectUsageError;

class StatusCommandTest : public CliTest {
 protected:
  // default: 3 due now (the oldest due 40 s ago), 2 scheduled in an hour, 1 executing on
  // node-a, 4 parked behind an open breaker, and 5 completed that status must not count.
  // bulk: empty. Nodes: node-a with a running lease, node-b whose lease ran out 30 s ago.
  void SetUp() override {
    CliTest::SetUp();
    int64_t acme = CreateTenant(db(), "acme");
    flowing_ = CreateChannel(db(), acme);
    broken_ = CreateChannel(db(), acme);
    Enqueue(flowing_, 3);
    Exec(
        "UPDATE bulkhead.jobs SET scheduled_at = now() - interval '40 s' WHERE id = "
        "(SELECT min(id) FROM bulkhead.jobs)");
    Exec("SELECT bulkhead.enqueue(" + std::to_string(flowing_) +
         ", '{}', NULL, now() + interval '1 hour') FROM generate_series(1, 2)");
    int64_t running = EnqueueOne(flowing_);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_by = 'node-a',"
        " attempted_at = now() WHERE id = " +
        std::to_string(running));
    Exec("SELECT bulkhead.enqueue(" + std::to_string(flowing_) +
         ", '{}') FROM generate_series(1, 5)");
    Exec(
        "UPDATE bulkhead.jobs SET state = 'completed', attempt = 1, attempted_by = 'node-a',"
        " attempted_at = now(), finished_at = now() WHERE id IN (SELECT id FROM bulkhead.jobs"
        " ORDER BY id DESC LIMIT 5)");
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_trips = 1,"
        " breaker_probe_at = now() + interval '30 s', breaker_reason = '5 failures' WHERE id = " +
        std::to_string(broken_));
    Enqueue(broken_, 4);  // inserted parked
    Exec(
        "INSERT INTO bulkhead.nodes (name, host, pid, version, tiers, heartbeat_at, lease_until)"
        " VALUES ('node-a', 'h1', 11, '0.1.0', '{default,bulk}', now() - interval '2 s',"
        " now() + interval '8 s'),"
        " ('node-b', 'h2', 22, '0.1.0', '{default}', now() - interval '40 s',"
        " now() - interval '30 s')");
  }

  int64_t flowing_ = 0, broken_ = 0;
};

TEST_F(StatusCommandTest, TableShowsQueuesBreakersAndNodes) {
  CommandResult r = Run({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto cells = Cells(r.out);
  // Queues first, alphabetical: bulk, default.
  ASSERT_GE(cells.size(), 3u) << r.out;
  EXPECT_EQ(cells[0], (std::vector<std::string>{"QUEUE", "AVAILABLE", "SCHEDULED", "EXECUTING",
                                                "PARKED", "LAG", "HELD", "LIMITED"}));
  EXPECT_EQ(cells[1], (std::vector<std::string>{"bulk", "0", "0", "0", "0", "-", "0", "0"}));
  ASSERT_EQ(cells[2].size(), 8u) << r.out;
  EXPECT_EQ(std::vector<std::string>(cells[2].begin(), cells[2].begin() + 5),
            (std::vector<std::string>{"default", "3", "2", "1", "4"}));
  EXPECT_TRUE(cells[2][5] == "40s" || cells[2][5] == "41s" || cells[2][5] == "42s") << cells[2][5];
  EXPECT_EQ(cells[2][6], "0");
  EXPECT_EQ(cells[2][7], "0");
  // The breaker's row and the nodes follow.
  EXPECT_NE(r.out.find("5 failures"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NODE"), std::string::npos) << r.out;
  bool saw_a = false, saw_b = false;
  for (const auto& row : cells) {
    if (!row.empty() && row[0] == "node-a") {
      saw_a = true;
      EXPECT_EQ(row.back(), "1") << "in flight";
      EXPECT_NE(row[6].find("left"), std::string::npos) << row[6];
    }
    if (!row.empty() && row[0] == "node-b") {
      saw_b = true;
      EXPECT_NE(row[6].find("expired"), std::string::npos) << row[6];
    }
  }
  EXPECT_TRUE(saw_a && saw_b) << r.out;
}

TEST_F(StatusCommandTest, JsonHasTheDocumentedShape) {
  CommandResult r = Run({"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out["queues"].size(), 2u);
  const auto& d = out["queues"][1];
  EXPECT_EQ(d["queue"], "default");
  EXPECT_EQ(d["available"], 3);
  EXPECT_EQ(d["scheduled"], 2);
  EXPECT_EQ(d["executing"], 1);
  EXPECT_EQ(d["parked"], 4);
  EXPECT_GE(d["lag_s"].get<double>(), 39.0);
  EXPECT_LT(d["lag_s"].get<double>(), 60.0);
  EXPECT_EQ(out["queues"][0]["lag_s"], 0);
  EXPECT_EQ(d["held"], 0);
  EXPECT_EQ(d["held_capped"], false);
  EXPECT_EQ(d["rate_limited_channels"], 0);
  ASSERT_EQ(out["breakers"].size(), 1u);
  EXPECT_EQ(out["breakers"][0]["channel"], broken_);
  EXPECT_EQ(out["breakers"][0]["state"], "open");
  EXPECT_EQ(out["breakers"][0]["parked"], 4);
  ASSERT_EQ(out["nodes"].size(), 2u);
  EXPECT_EQ(out["nodes"][0]["name"], "node-a");
  EXPECT_EQ(out["nodes"][0]["tiers"], nlohmann::json::array({"default", "bulk"}));
  EXPECT_EQ(out["nodes"][0]["executing"], 1);
  EXPECT_GT(out["nodes"][0]["lease_left_s"].get<double>(), 0);
  EXPECT_GE(out["nodes"][0]["heartbeat_age_s"].get<double>(), 2.0);
  EXPECT_LT(out["nodes"][1]["lease_left_s"].get<double>(), -29.0);
}

// Deliveries held behind an ordering key are a figure of their own: never due (not in
// AVAILABLE nor the lag), counted among SCHEDULED or PARKED, and in HELD; channels with a rate
// limit are counted per tier of their tenant.
TEST_F(StatusCommandTest, ShowsHeldDeliveriesAndRateLimitedChannelsPerQueue) {
  // On flowing_ (default): key k three times (1 goes, 2 held). On broken_ (open breaker, so
  // inserted parked): key k twice (1 parked head, 1 parked and held).
  Exec("SELECT bulkhead.enqueue(" + std::to_string(flowing_) +
       ", '{}', NULL, now(), 'k') FROM generate_series(1, 3)");
  Exec("SELECT bulkhead.enqueue(" + std::to_string(broken_) +
       ", '{}', NULL, now(), 'k') FROM generate_series(1, 2)");
  Exec("UPDATE bulkhead.channels SET rate_limit_per_s = 10 WHERE id = " + std::to_string(flowing_));
  int64_t bulk_tenant = CreateTenant(db(), "bulky", "bulk");
  int64_t bulk_channel = CreateChannel(db(), bulk_tenant);
  Exec("UPDATE bulkhead.channels SET rate_limit_per_s = 0.5 WHERE id = " +
       std::to_string(bulk_channel));
  CreateChannel(db(), bulk_tenant);  // no limit: not counted

  CommandResult r = Run({"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  const auto& d = out["queues"][1];
  EXPECT_EQ(d["queue"], "default");
  EXPECT_EQ(d["available"], 4) << "the 3 of the fixture and key k's head, never a held one";
  EXPECT_EQ(d["scheduled"], 4) << "the 2 of the fixture and the 2 held";
  EXPECT_EQ(d["parked"], 6) << "the 4 of the fixture, the head and the held one";
  EXPECT_EQ(d["held"], 3);
  EXPECT_EQ(d["held_capped"], false);
  EXPECT_EQ(d["rate_limited_channels"], 1);
  EXPECT_GE(d["lag_s"].get<double>(), 39.0) << "a held job is never the oldest due";
  EXPECT_LT(d["lag_s"].get<double>(), 60.0);
  EXPECT_EQ(out["queues"][0]["held"], 0);
  EXPECT_EQ(out["queues"][0]["rate_limited_channels"], 1);

  auto cells = Cells(Run({"status"}).out);
  ASSERT_GE(cells.size(), 3u);
  EXPECT_EQ(cells[2][0], "default");
  EXPECT_EQ(cells[2][6], "3");
  EXPECT_EQ(cells[2][7], "1");
  EXPECT_EQ(cells[1][7], "1");
}

TEST_F(StatusCommandTest, EmptyFleetSaysSo) {
  Exec("DELETE FROM bulkhead.nodes");
  Exec("UPDATE bulkhead.channels SET breaker_state = 'closed', breaker_probe_at = NULL");
  CommandResult r = Run({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no open breakers or paused channels\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no nodes registered\n"), std::string::npos) << r.out;
}

// The statements of status read partial indexes of unfinished rows only. With sequential
// scans priced out, the plan of each (as AdminJobsStore prepared it) has an index for every part,
// and none of them is a scan of jobs, of its primary key or of jobs_finished.
TEST_F(StatusCommandTest, StatusStatementsReadNoFinishedRows) {
  AdminJobsStore store(db());
  store.QueueStatuses();  // prepares the statements on this session
  store.NodeStatuses();
  for (const char* statement : {"queue_status", "node_status"}) {
    SCOPED_TRACE(statement);
    pqxx::work tx(db());
    tx.exec0("SET LOCAL enable_seqscan = off");
    std::string plan;
    for (const auto& row : tx.exec(std::string("EXPLAIN EXECUTE ") + statement)) {
      plan += row[0].as<std::string>() + "\n";
    }
    EXPECT_EQ(plan.find("Seq Scan on jobs"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("jobs_pkey"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("jobs_finished"), std::string::npos) << plan;
    EXPECT_NE(plan.find("Index"), std::string::npos) << plan;
  }
}

// Design §2: --database, else the config file's "database", else DATABASE_URL. A config that
// does not load is a usage error naming the file and the key.
TEST_F(StatusCommandTest, TakesTheDatabaseFromTheConfigFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bulkhead-status-" + dbname());
  std::filesystem::create_directories(dir / "tiers");
  std::ofstream(dir / "tiers" / "default.json") << "{}";
  std::ofstream(dir / "node.json") << nlohmann::json{{"database", url()}}.dump();
  std::ofstream(dir / "bad.json") << R"({"database": 7})";
  const std::string nowhere = "postgresql:///nope?host=/nonexistent";

  CommandResult by_config = Bulkhead({"status", "--json", "--config", (dir / "node.json").string()},
                                     {{"DATABASE_URL", nowhere}});
  ASSERT_EQ(by_config.exit_code, 0) << by_config.err;
  EXPECT_EQ(nlohmann::json::parse(by_config.out)["queues"][1]["available"], 3);

  // --database wins over the config file.
  CommandResult flag_wins =
      Bulkhead({"status", "--config", (dir / "node.json").string(), "--database", nowhere});
  EXPECT_EQ(flag_wins.exit_code, 1) << flag_wins.err;

  CommandResult bad = Bulkhead({"status", "--config", (dir / "bad.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("bulkhead status: " + (dir / "bad.json").string() + ": database: "),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(testing::Lines(bad.err), 1) << bad.err;
  std::filesystem::remove_all(dir);
}

TEST(StatusCli, BadInputAndHelp) {
  ExpectUsageError({"status", "--yaml"}, "bulkhead status: unknown option '--yaml'");
  ExpectUsageError({"status", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"status", "--json=1"}, "--json takes no value");
  ExpectUsageError({"status", "--database"}, "--database needs a URL");
  CommandResult help = Bulkhead({"status", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: bulkhead status [--json]"), std::string::npos);
  testing::ExpectUnreachableDatabaseError({{"status"}, {"status", "--json"}});
}

}  // namespace
}  // namespace bulkhead
