// `bulkhead jobs`, `bulkhead replay` and `bulkhead cancel` as an operator runs them: the real
// binary against a real database, the rows they change, the NOTIFY a replay sends, and their
// bad input (exit 2, one line, the database untouched).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

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
using testing::QueryValue;

// The NOTIFY bulkhead_jobs payloads (queue names) one connection receives.
struct Wakes : pqxx::notification_receiver {
  explicit Wakes(pqxx::connection_base& conn) : notification_receiver(conn, "bulkhead_jobs") {}
  void operator()(const std::string& payload, int) override { queues.push_back(payload); }
  std::vector<std::string> queues;
};

class JobsCommandTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    acme_ = CreateTenant(db(), "acme");
    beta_ = CreateTenant(db(), "beta");
    channel_ = CreateChannel(db(), acme_);
    other_ = CreateChannel(db(), beta_);
  }

  // A job of `channel` discarded `ago` ago after using up its 3 attempts.
  int64_t Discarded(int64_t channel, const std::string& ago = "0 s") {
    int64_t id = EnqueueOne(channel);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'discarded', attempt = 3, max_attempts = 3,"
        " attempted_by = 'n', attempted_at = now(), last_error = 'HTTP 500',"
        " finished_at = now() - interval '" +
        ago + "' WHERE id = " + std::to_string(id));
    return id;
  }

  std::string State(int64_t job) {
    return QueryValue<std::string>(
        db(),
        "SELECT state || ' ' || attempt || ' ' || priority || ' ' || queue ||"
        " ' ' || (finished_at IS NULL) FROM bulkhead.jobs WHERE id = " +
            std::to_string(job));
  }

  int64_t acme_ = 0, beta_ = 0, channel_ = 0, other_ = 0;
};

// ---- jobs -------------------------------------------------------------------------------------

TEST_F(JobsCommandTest, JobsListsNewestFirstWithoutPayloads) {
  int64_t first = EnqueueOne(channel_, R"({"card": "4111-1111-1111-1111", "note": "secret"})");
  int64_t dead = Discarded(channel_);
  int64_t last = EnqueueOne(other_);
  CommandResult r = Run({"jobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto cells = Cells(r.out);
  ASSERT_EQ(cells.size(), 4u) << r.out;
  EXPECT_EQ(cells[0][0], "ID");
  EXPECT_EQ(cells[1][0], std::to_string(last));
  EXPECT_EQ(cells[2][0], std::to_string(dead));
  EXPECT_EQ(cells[3][0], std::to_string(first));
  EXPECT_EQ(cells[2][4], "discarded");
  EXPECT_EQ(cells[2][6], "3/3");
  EXPECT_EQ(cells[2].back(), "HTTP 500");
  EXPECT_EQ(r.out.find("4111"), std::string::npos) << "payload printed: " << r.out;
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
}

TEST_F(JobsCommandTest, JobsFiltersAndBounds) {
  Enqueue(channel_, 5);
  Enqueue(other_, 2);
  int64_t dead = Discarded(channel_);

  CommandResult by_channel = Run({"jobs", "--channel", std::to_string(other_), "--json"});
  ASSERT_EQ(by_channel.exit_code, 0) << by_channel.err;
  nlohmann::json list = nlohmann::json::parse(by_channel.out);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["tenant"], "beta");
  EXPECT_EQ(list[0]["finished_at"], nullptr);
  EXPECT_GT(list[0]["payload_bytes"].get<int64_t>(), 0);

  CommandResult by_tenant = Run({"jobs", "--tenant=" + std::to_string(acme_), "--limit", "3"});
  ASSERT_EQ(by_tenant.exit_code, 0) << by_tenant.err;
  EXPECT_EQ(Cells(by_tenant.out).size(), 4u) << by_tenant.out;  // header + 3

  CommandResult by_state = Run({"jobs", "--state", "discarded", "--json"});
  list = nlohmann::json::parse(by_state.out);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], dead);
  EXPECT_EQ(list[0]["state"], "discarded");
  EXPECT_TRUE(list[0]["finished_at"].is_string());

  CommandResult none = Run({"jobs", "--state", "cancelled"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "no jobs match\n");
}

// ---- replay -----------------------------------------------------------------------------------

TEST_F(JobsCommandTest, ReplayByIdGivesAFreshBudgetAndWakesTheQueue) {
  int64_t dead = Discarded(channel_);
  int64_t untouched = Discarded(channel_);
  auto listener = Connect();
  Wakes wakes(*listener);
  CommandResult r = Run({"replay", "--id", std::to_string(dead)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "replayed 1 discarded job: 1 available, 0 parked\n");
  EXPECT_EQ(State(dead), "available 0 3 default true");
  EXPECT_EQ(State(untouched), "discarded 3 1 default false");
  for (int i = 0; i < 50 && wakes.queues.empty(); ++i) listener->await_notification(0, 100000);
  EXPECT_EQ(wakes.queues, std::vector<std::string>{"default"}) << "NOTIFY bulkhead_jobs";
}

TEST_F(JobsCommandTest, ReplayParksJobsOfABrokenOrPausedChannel) {
  int64_t open_job = Discarded(channel_);
  int64_t paused_job = Discarded(other_);
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_trips = 1,"
      " breaker_probe_at = now() + interval '30 s' WHERE id = " +
      std::to_string(channel_));
  Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(other_));
  CommandResult r = Run({"replay", "--since", "1h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "replayed 2 discarded jobs: 0 available, 2 parked (breaker not closed, or channel "
            "paused or disabled)\n");
  EXPECT_EQ(State(open_job), "parked 0 3 default true");
  EXPECT_EQ(State(paused_job), "parked 0 3 default true");
}

TEST_F(JobsCommandTest, ReplayGoesToTheTenantsTierNow) {
  int64_t dead = Discarded(channel_);
  Exec("UPDATE bulkhead.tenants SET tier = 'bulk' WHERE id = " + std::to_string(acme_));
  ASSERT_EQ(Run({"replay", "--tenant", std::to_string(acme_)}).exit_code, 0);
  EXPECT_EQ(State(dead), "available 0 3 bulk true");
}

TEST_F(JobsCommandTest, ReplaySelectsByTimeRangeAndIsBounded) {
  int64_t old_job = Discarded(channel_, "3 hours");
  int64_t mid1 = Discarded(channel_, "90 minutes");
  int64_t mid2 = Discarded(channel_, "80 minutes");
  int64_t mid3 = Discarded(channel_, "70 minutes");
  int64_t fresh = Discarded(channel_, "1 minute");
  // Discarded between 2 h and 1 h ago, at most 2 per run: the oldest two first.
  CommandResult r = Run({"replay", "--since", "2h", "--until", "1h", "--limit", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "replayed 2 discarded jobs: 2 available, 0 parked; more match: run it again for the "
            "next 2\n");
  EXPECT_EQ(State(mid1).substr(0, 9), "available");
  EXPECT_EQ(State(mid2).substr(0, 9), "available");
  EXPECT_EQ(State(mid3).substr(0, 9), "discarded");
  CommandResult again = Run({"replay", "--since", "2h", "--until", "1h", "--limit", "2"});
  EXPECT_EQ(again.out, "replayed 1 discarded job: 1 available, 0 parked\n");
  EXPECT_EQ(State(old_job).substr(0, 9), "discarded");
  EXPECT_EQ(State(fresh).substr(0, 9), "discarded");
  // An absolute time with a zone.
  std::string since =
      QueryValue<std::string>(db(),
                              "SELECT to_char((now() - interval '4 hours') AT TIME ZONE "
                              "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
  CommandResult by_time = Run({"replay", "--since", since, "--until", "2h"});
  ASSERT_EQ(by_time.exit_code, 0) << by_time.err;
  EXPECT_EQ(State(old_job).substr(0, 9), "available");
  EXPECT_EQ(State(fresh).substr(0, 9), "discarded");
}

TEST_F(JobsCommandTest, ReplayOfAJobThatIsNotDiscardedExitsOne) {
  int64_t waiting = EnqueueOne(channel_);
  CommandResult r = Run({"replay", "--id", std::to_string(waiting)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "bulkhead replay: job " + std::to_string(waiting) + " is available, not discarded\n");
  CommandResult missing = Run({"replay", "--id", "999999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "bulkhead replay: no job with id 999999\n");
  CommandResult nothing = Run({"replay", "--channel", std::to_string(other_)});
  EXPECT_EQ(nothing.exit_code, 0);
  EXPECT_EQ(nothing.out, "no discarded jobs match\n");
}

// ---- cancel -----------------------------------------------------------------------------------

TEST_F(JobsCommandTest, CancelByChannelCancelsWaitingJobsOnly) {
  Enqueue(channel_, 3);
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) +
       ", '{}', NULL, now() + interval '1 hour')");  // a retry waiting: waiting too
  int64_t running = EnqueueOne(channel_);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_by = 'n',"
      " attempted_at = now() WHERE id = " +
      std::to_string(running));
  Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(channel_));
  Enqueue(channel_, 2);  // parked
  Enqueue(other_, 2);    // another channel
  CommandResult r = Run({"cancel", "--channel", std::to_string(channel_)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled 6 waiting jobs\n");
  EXPECT_EQ(Count("state = 'cancelled' AND finished_at IS NOT NULL"), 6);
  EXPECT_EQ(State(running).substr(0, 9), "executing");
  EXPECT_EQ(Count("channel_id = " + std::to_string(other_) + " AND state = 'available'"), 2);
}

TEST_F(JobsCommandTest, CancelByTenantIsBounded) {
  Enqueue(channel_, 5);
  CommandResult r = Run({"cancel", "--tenant", std::to_string(acme_), "--limit", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled 3 waiting jobs; more match: run it again for the next 3\n");
  EXPECT_EQ(Count("state = 'cancelled'"), 3);
  EXPECT_EQ(Run({"cancel", "--tenant", std::to_string(acme_)}).out, "cancelled 2 waiting jobs\n");
  EXPECT_EQ(Run({"cancel", "--tenant", std::to_string(acme_)}).out, "no waiting jobs match\n");
}

TEST_F(JobsCommandTest, CancelOfAJobInFlightIsRefused) {
  int64_t running = EnqueueOne(channel_);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 2, attempted_by = 'node-7',"
      " attempted_at = now() WHERE id = " +
      std::to_string(running));
  CommandResult r = Run({"cancel", "--id", std::to_string(running)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead cancel: job " + std::to_string(running) +
                       " is executing (attempt 2 on node node-7): a delivery in flight cannot "
                       "be cancelled; its result is recorded when it ends\n");
  EXPECT_EQ(State(running).substr(0, 9), "executing");
  int64_t dead = Discarded(channel_);
  CommandResult finished = Run({"cancel", "--id", std::to_string(dead)});
  EXPECT_EQ(finished.exit_code, 1);
  EXPECT_EQ(finished.err,
            "bulkhead cancel: job " + std::to_string(dead) + " is discarded, not waiting\n");
  int64_t waiting = EnqueueOne(channel_);
  CommandResult ok = Run({"cancel", "--id", std::to_string(waiting)});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "cancelled 1 waiting job\n");
}

// ---- bad input --------------------------------------------------------------------------------

TEST(JobsCli, UsageErrorsExitTwoWithOneLine) {
  ExpectUsageError({"jobs", "--state", "done"}, "--state must be available, executing");
  ExpectUsageError({"jobs", "--limit", "0"}, "--limit must be a number from 1 to 1000, not '0'");
  ExpectUsageError({"jobs", "--limit", "1001"}, "not '1001'");
  ExpectUsageError({"jobs", "--channel", "x"}, "--channel must be a positive integer");
  ExpectUsageError({"jobs", "--tenant"}, "--tenant needs a tenant id");
  ExpectUsageError({"jobs", "7"}, "unexpected argument '7'");
  ExpectUsageError({"replay"}, "refusing to replay every discarded job");
  ExpectUsageError({"replay", "--limit", "10"}, "refusing to replay every discarded job");
  ExpectUsageError({"replay", "--since", "yesterday"}, "--since must be a time");
  ExpectUsageError({"replay", "--until", "2026-13"}, "--until must be a time");
  ExpectUsageError({"replay", "--since", "5w"}, "--since must be a time");
  ExpectUsageError({"replay", "--id", "-1"}, "--id must be a positive integer");
  ExpectUsageError({"replay", "--channel", "1", "--limit", "100001"}, "from 1 to 100000");
  ExpectUsageError({"cancel"}, "refusing to cancel every waiting job");
  ExpectUsageError({"cancel", "--since", "1h"}, "unknown option '--since'");
  ExpectUsageError({"cancel", "--id"}, "--id needs a job id");
}

TEST(JobsCli, HelpAndUnreachableDatabase) {
  for (const char* verb : {"jobs", "replay", "cancel"}) {
    CommandResult help = Bulkhead({verb, "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find(std::string("usage: bulkhead ") + verb), std::string::npos);
  }
  testing::ExpectUnreachableDatabaseError(
      {{"jobs"}, {"replay", "--id", "1"}, {"cancel", "--channel", "1"}});
}

TEST(JobsCli, TimeAndDurationWordsParse) {
  // Through the binary: a well-formed time reaches the database (none here: exit 1, not 2).
  for (const char* time : {"2026-11-30", "2026-11-30T14:05", "2026-11-30 14:05:09",
                           "2026-11-30T14:05:09.5+01:00", "2026-11-30T14:05Z", "90s", "7d"}) {
    CommandResult r =
        Bulkhead({"replay", "--since", time, "--database", "postgresql:///nope?host=/nonexistent"});
    EXPECT_EQ(r.exit_code, 1) << time << ": " << r.err;
  }
}

}  // namespace
}  // namespace bulkhead
