// `bulkhead breakers`, `bulkhead breaker reset` and `bulkhead channel pause | resume` as an
// operator runs them: the real binary against a real database, the rows they change, and what
// lands on stdout and stderr with exit codes 0 / 1 / 2.
//
// Breaker states are set up with plain SQL (what the nodes' transitions would leave behind),
// deliveries with bulkhead.enqueue, which inserts them parked behind an open breaker or a pause.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::Bulkhead;
using testing::Cells;
using testing::CliTest;
using testing::CommandResult;
using testing::CreateChannel;
using testing::CreateTenant;
using testing::DatabaseTest;
using testing::ExpectUsageError;
using testing::Lines;
using testing::QueryValue;

class AdminCommandTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    acme_ = CreateTenant(db(), "acme");
  }

  // The channel's breaker opened `ago` ago (an interval), its probe due in 30 s.
  void Open(int64_t channel, const std::string& reason, const std::string& ago = "0 s") {
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_trips = 1,"
        " breaker_changed_at = now() - interval '" +
        ago + "', breaker_probe_at = now() + interval '30 s', breaker_reason = '" + reason +
        "' WHERE id = " + std::to_string(channel));
  }

  // Half-open: one of its jobs claimed as the probe, with 20 s left. Returns the probe's id.
  int64_t HalfOpen(int64_t channel, const std::string& ago) {
    int64_t probe = QueryValue<int64_t>(
        db(), "SELECT bulkhead.enqueue(" + std::to_string(channel) + ", '{}'::jsonb)");
    Exec(
        "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_at = now(),"
        " attempted_by = 'test-node' WHERE id = " +
        std::to_string(probe));
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'half_open', breaker_trips = 2,"
        " breaker_changed_at = now() - interval '" +
        ago + "', breaker_probe_at = now() + interval '20 s', breaker_probe_job = " +
        std::to_string(probe) +
        ", breaker_reason = 'timeout after 10 s' WHERE id = " + std::to_string(channel));
    return probe;
  }

  void Pause(int64_t channel) {
    Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(channel));
  }

  int64_t Jobs(int64_t channel, const std::string& state) {
    return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " +
                                         std::to_string(channel) + " AND state = '" + state + "'");
  }

  std::string Column(int64_t channel, const std::string& column) {
    return QueryValue<std::string>(
        db(), "SELECT coalesce(" + column +
                  "::text, 'NULL') FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  int64_t acme_ = 0;
};

// ---- bulkhead breakers ------------------------------------------------------------------------

TEST_F(AdminCommandTest, BreakersSaysSoWhenNoBreakerIsOpenAndNoChannelPaused) {
  int64_t channel = CreateChannel(db(), acme_);
  Enqueue(channel, 3);  // a flowing channel with work is not listed

  CommandResult table = Run({"breakers"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out, "no open breakers or paused channels\n");
  EXPECT_EQ(table.err, "");

  CommandResult json = Run({"breakers", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out), nlohmann::json::array());
}

// An open, a half-open and a paused channel, each with its own parked backlog, and a flowing
// one that must not appear.
class BreakersListTest : public AdminCommandTest {
 protected:
  void SetUp() override {
    AdminCommandTest::SetUp();
    int64_t bulk_tenant = CreateTenant(db(), "beta", "bulk");
    open_ = CreateChannel(db(), acme_);
    half_open_ = CreateChannel(db(), bulk_tenant);
    paused_ = CreateChannel(db(), acme_);
    flowing_ = CreateChannel(db(), acme_);
    Open(open_, "5 failures in a row, last: HTTP 503", "5 min");
    Enqueue(open_, 3);
    probe_ = HalfOpen(half_open_, "1 min");
    Enqueue(half_open_, 4);
    Pause(paused_);
    // Its breaker closed long before the others opened: broken breakers still come first.
    Exec(
        "UPDATE bulkhead.channels SET breaker_changed_at = now() - interval '1 hour'"
        " WHERE id = " +
        std::to_string(paused_));
    Enqueue(paused_, 2);
    Enqueue(flowing_, 5);
    ASSERT_EQ(Jobs(open_, "parked"), 3);
    ASSERT_EQ(Jobs(half_open_, "parked"), 4);
    ASSERT_EQ(Jobs(paused_, "parked"), 2);
    ASSERT_EQ(Jobs(flowing_, "available"), 5);
  }

  int64_t open_ = 0, half_open_ = 0, paused_ = 0, flowing_ = 0, probe_ = 0;
};

TEST_F(BreakersListTest, TableShowsEachChannelWithItsStateProbeAndParkedCount) {
  CommandResult r = Run({"breakers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto rows = Cells(r.out);
  // The header, then the broken breakers by age of their state, then the channel only paused.
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"CHANNEL", "TENANT", "TIER", "STATE", "PAUSED", "SINCE",
                                      "AGE", "TRIPS", "PARKED", "PROBE", "REASON"}));
  for (const auto& row : rows) ASSERT_EQ(row.size(), 11u) << r.out;
  const std::regex utc(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");

  const auto& open = rows[1];
  EXPECT_EQ(open[0], std::to_string(open_));
  EXPECT_EQ(open[1], "acme");
  EXPECT_EQ(open[2], "default");
  EXPECT_EQ(open[3], "open");
  EXPECT_EQ(open[4], "no");
  EXPECT_TRUE(std::regex_match(open[5], utc)) << open[5];
  EXPECT_TRUE(open[6].starts_with("5m")) << open[6];
  EXPECT_EQ(open[7], "1");
  EXPECT_EQ(open[8], "3");
  EXPECT_TRUE(std::regex_match(open[9], std::regex("in (29|30)s"))) << open[9];
  EXPECT_EQ(open[10], "5 failures in a row, last: HTTP 503");

  const auto& half = rows[2];
  EXPECT_EQ(half[0], std::to_string(half_open_));
  EXPECT_EQ(half[1], "beta");
  EXPECT_EQ(half[2], "bulk");
  EXPECT_EQ(half[3], "half_open");
  EXPECT_EQ(half[4], "no");
  EXPECT_TRUE(half[6].starts_with("1m")) << half[6];
  EXPECT_EQ(half[7], "2");
  EXPECT_EQ(half[8], "4");  // the probe itself is executing, not parked
  EXPECT_TRUE(
      std::regex_match(half[9], std::regex("job " + std::to_string(probe_) + ", (19|20)s left")))
      << half[9];
  EXPECT_EQ(half[10], "timeout after 10 s");

  const auto& paused = rows[3];
  EXPECT_EQ(paused[0], std::to_string(paused_));
  EXPECT_EQ(paused[3], "closed");
  EXPECT_EQ(paused[4], "yes");
  EXPECT_TRUE(paused[6].starts_with("1h00m")) << paused[6];
  EXPECT_EQ(paused[7], "0");
  EXPECT_EQ(paused[8], "2");
  EXPECT_EQ(paused[9], "-");
  EXPECT_EQ(paused[10], "-");

  // Aligned: every column starts where its header does.
  std::istringstream lines(r.out);
  std::vector<std::string> text;
  for (std::string line; std::getline(lines, line);) text.push_back(line);
  for (const char* header : {"STATE", "PARKED", "REASON"}) {
    size_t at = text[0].find(header);
    for (size_t i = 1; i < text.size(); ++i) {
      EXPECT_NE(text[i][at], ' ') << header << " in: " << text[i];
      EXPECT_EQ(text[i][at - 1], ' ') << header << " in: " << text[i];
    }
  }
}

TEST_F(BreakersListTest, JsonIsAnArrayOfObjectsWithStableKeys) {
  CommandResult r = Run({"breakers", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json list = nlohmann::json::parse(r.out);
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 3u) << r.out;
  const std::set<std::string> keys = {"channel", "tenant", "tier",       "state",
                                      "paused",  "since",  "since_s",    "trips",
                                      "reason",  "parked", "probe_in_s", "probe_job"};
  for (const auto& item : list) {
    std::set<std::string> got;
    for (const auto& [key, value] : item.items()) got.insert(key);
    EXPECT_EQ(got, keys) << item.dump();
  }

  const auto& open = list[0];
  EXPECT_EQ(open["channel"], open_);
  EXPECT_EQ(open["tenant"], "acme");
  EXPECT_EQ(open["tier"], "default");
  EXPECT_EQ(open["state"], "open");
  EXPECT_EQ(open["paused"], false);
  EXPECT_TRUE(std::regex_match(open["since"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_GE(open["since_s"].get<double>(), 300.0);
  EXPECT_LT(open["since_s"].get<double>(), 330.0);
  EXPECT_EQ(open["trips"], 1);
  EXPECT_EQ(open["reason"], "5 failures in a row, last: HTTP 503");
  EXPECT_GT(open["probe_in_s"].get<double>(), 25.0);
  EXPECT_LE(open["probe_in_s"].get<double>(), 30.0);
  EXPECT_TRUE(open["probe_job"].is_null());
  EXPECT_EQ(open["parked"], 3);

  const auto& half = list[1];
  EXPECT_EQ(half["channel"], half_open_);
  EXPECT_EQ(half["tier"], "bulk");
  EXPECT_EQ(half["state"], "half_open");
  EXPECT_EQ(half["trips"], 2);
  EXPECT_EQ(half["probe_job"], probe_);
  EXPECT_GT(half["probe_in_s"].get<double>(), 15.0);
  EXPECT_EQ(half["parked"], 4);

  const auto& paused = list[2];
  EXPECT_EQ(paused["channel"], paused_);
  EXPECT_EQ(paused["state"], "closed");
  EXPECT_EQ(paused["paused"], true);
  EXPECT_EQ(paused["reason"], "");
  EXPECT_EQ(paused["probe_in_s"], 0.0);
  EXPECT_TRUE(paused["probe_job"].is_null());
  EXPECT_EQ(paused["parked"], 2);
}

TEST_F(AdminCommandTest, BreakersTakesTheDatabaseFromDatabaseUrl) {
  int64_t channel = CreateChannel(db(), acme_);
  Pause(channel);
  CommandResult r = Bulkhead({"breakers", "--json"}, {{"DATABASE_URL", url()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at(0).at("channel"), channel);
}

// ---- bulkhead breaker reset -------------------------------------------------------------------

TEST_F(AdminCommandTest, ResetUnparksTheWholeBacklogOfThatChannelOnly) {
  int64_t dead = CreateChannel(db(), acme_);
  int64_t other = CreateChannel(db(), acme_);
  Open(dead, "connection refused");
  Open(other, "connection refused");
  Enqueue(dead, 500);
  Enqueue(other, 7);

  CommandResult r = Run({"breaker", "reset", std::to_string(dead)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(dead) +
                       ": breaker open → closed, 500 parked deliveries back in the queue\n");
  EXPECT_EQ(r.err, "");

  EXPECT_EQ(Jobs(dead, "parked"), 0);
  EXPECT_EQ(Jobs(dead, "available"), 500);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE channel_id = " +
                                          std::to_string(dead) + " AND priority <> 3"),
            0);  // behind fresh work
  EXPECT_EQ(Column(dead, "breaker_state"), "closed");
  EXPECT_EQ(Column(dead, "breaker_probe_at"), "NULL");
  EXPECT_EQ(Column(dead, "breaker_trips"), "0");

  EXPECT_EQ(Jobs(other, "parked"), 7);
  EXPECT_EQ(Column(other, "breaker_state"), "open");
}

TEST_F(AdminCommandTest, ResetClosesAHalfOpenBreaker) {
  int64_t channel = CreateChannel(db(), acme_);
  int64_t probe = HalfOpen(channel, "10 s");
  Enqueue(channel, 2);

  CommandResult r = Run({"breaker", "reset", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       ": breaker half_open → closed, 2 parked deliveries back in the queue\n");
  EXPECT_EQ(Column(channel, "breaker_state"), "closed");
  EXPECT_EQ(Column(channel, "breaker_probe_job"), "NULL");
  EXPECT_EQ(Jobs(channel, "available"), 2);
  // The probe in flight is left to finish.
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT state FROM bulkhead.jobs WHERE id = " + std::to_string(probe)),
            "executing");
}

TEST_F(AdminCommandTest, ResetOfAClosedBreakerSaysItWasAlreadyClosed) {
  int64_t channel = CreateChannel(db(), acme_);
  Enqueue(channel, 1);
  CommandResult r = Run({"breaker", "reset", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       ": breaker was already closed, nothing was parked\n");
  EXPECT_EQ(Jobs(channel, "available"), 1);
}

TEST_F(AdminCommandTest, ResetOfAPausedChannelKeepsItsBacklogParked) {
  int64_t channel = CreateChannel(db(), acme_);
  Open(channel, "HTTP 500");
  Pause(channel);
  Enqueue(channel, 5);

  CommandResult r = Run({"breaker", "reset", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = std::to_string(channel);
  EXPECT_EQ(r.out, "channel " + id +
                       ": breaker open → closed, but the channel is paused: its 5 parked "
                       "deliveries stay parked until `bulkhead channel resume " +
                       id + "`\n");
  EXPECT_EQ(Column(channel, "breaker_state"), "closed");
  EXPECT_EQ(Column(channel, "paused"), "true");
  EXPECT_EQ(Jobs(channel, "parked"), 5);
  EXPECT_EQ(Jobs(channel, "available"), 0);
}

TEST_F(AdminCommandTest, ResetOfAnUnknownChannelExitsOneWithTheReason) {
  CommandResult r = Run({"breaker", "reset", "999999"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead breaker reset: no channel with id 999999\n");
}

// ---- bulkhead channel pause | resume ----------------------------------------------------------

TEST_F(AdminCommandTest, PauseParksTheWaitingBacklogAndLaterDeliveries) {
  int64_t channel = CreateChannel(db(), acme_);
  int64_t other = CreateChannel(db(), acme_);
  Enqueue(channel, 3);
  // A retry waiting for later is part of the backlog too; a job in flight is left to finish.
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel) +
       ", '{}'::jsonb, NULL, now() + interval '1 hour')");
  int64_t in_flight = QueryValue<int64_t>(
      db(), "SELECT bulkhead.enqueue(" + std::to_string(channel) + ", '{}'::jsonb)");
  Exec(
      "UPDATE bulkhead.jobs SET state = 'executing', attempt = 1, attempted_at = now(),"
      " attempted_by = 'test-node' WHERE id = " +
      std::to_string(in_flight));
  Enqueue(other, 2);

  CommandResult r = Run({"channel", "pause", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       " paused: 4 waiting deliveries parked until it is resumed\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Column(channel, "paused"), "true");
  EXPECT_EQ(Jobs(channel, "parked"), 4);
  EXPECT_EQ(Jobs(channel, "available"), 0);
  EXPECT_EQ(Jobs(channel, "executing"), 1);
  EXPECT_EQ(Jobs(other, "available"), 2);
  EXPECT_EQ(Column(channel, "breaker_state"), "closed");  // the breaker is left alone

  Enqueue(channel, 2);
  EXPECT_EQ(Jobs(channel, "parked"), 6);
  EXPECT_EQ(Jobs(channel, "available"), 0);

  CommandResult again = Run({"channel", "pause", std::to_string(channel)});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "channel " + std::to_string(channel) + " already paused\n");
  EXPECT_EQ(Jobs(channel, "parked"), 6);
}

TEST_F(AdminCommandTest, PauseOfAChannelWithNothingWaitingSaysSo) {
  int64_t channel = CreateChannel(db(), acme_);
  CommandResult r = Run({"channel", "pause", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       " paused: nothing was waiting; new deliveries are parked until it is "
                       "resumed\n");
  EXPECT_EQ(Column(channel, "paused"), "true");
}

TEST_F(AdminCommandTest, ResumeReturnsTheParkedBacklogToTheQueue) {
  int64_t channel = CreateChannel(db(), acme_);
  int64_t other = CreateChannel(db(), acme_);
  Enqueue(channel, 4);
  Pause(other);
  Enqueue(other, 3);
  ASSERT_EQ(Run({"channel", "pause", std::to_string(channel)}).exit_code, 0);
  Enqueue(channel, 2);
  ASSERT_EQ(Jobs(channel, "parked"), 6);

  CommandResult r = Run({"channel", "resume", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       " resumed: 6 parked deliveries back in the queue\n");
  EXPECT_EQ(Column(channel, "paused"), "false");
  EXPECT_EQ(Jobs(channel, "parked"), 0);
  EXPECT_EQ(Jobs(channel, "available"), 6);
  EXPECT_EQ(Jobs(other, "parked"), 3);  // another paused channel stays paused

  Enqueue(channel, 1);
  EXPECT_EQ(Jobs(channel, "available"), 7);

  CommandResult again = Run({"channel", "resume", std::to_string(channel)});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "channel " + std::to_string(channel) + " was not paused\n");
}

TEST_F(AdminCommandTest, ResumeWhileTheBreakerIsOpenKeepsTheBacklogParked) {
  int64_t channel = CreateChannel(db(), acme_);
  Pause(channel);
  Enqueue(channel, 3);
  Open(channel, "HTTP 503");

  CommandResult r = Run({"channel", "resume", std::to_string(channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = std::to_string(channel);
  EXPECT_EQ(r.out, "channel " + id +
                       " resumed, but its breaker is open, so its 3 parked deliveries stay parked "
                       "until the breaker's probe succeeds (or `bulkhead breaker reset " +
                       id + "`)\n");
  EXPECT_EQ(Column(channel, "paused"), "false");
  EXPECT_EQ(Column(channel, "breaker_state"), "open");
  EXPECT_EQ(Jobs(channel, "parked"), 3);
  EXPECT_EQ(Jobs(channel, "available"), 0);
}

TEST_F(AdminCommandTest, PauseAndResumeOfAnUnknownChannelExitOne) {
  for (const char* verb : {"pause", "resume"}) {
    CommandResult r = Run({"channel", verb, "999999"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("bulkhead channel ") + verb + ": no channel with id 999999\n");
  }
}

// ---- What every verb shares -------------------------------------------------------------------

TEST(AdminCli, UsageErrorsExitTwoWithOneLine) {
  ExpectUsageError({"breakers", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"breakers", "--yaml"}, "unknown option '--yaml'");
  ExpectUsageError({"breakers", "--database"}, "--database needs a URL");

  ExpectUsageError({"breaker"}, "missing subcommand");
  ExpectUsageError({"breaker", "open", "7"}, "unknown subcommand 'open'");
  ExpectUsageError({"breaker", "reset"}, "missing CHANNEL");
  ExpectUsageError({"breaker", "reset", "abc"}, "positive integer (a channel id), not 'abc'");
  ExpectUsageError({"breaker", "reset", "0"}, "not '0'");
  ExpectUsageError({"breaker", "reset", "-3"}, "not '-3'");
  ExpectUsageError({"breaker", "reset", "7x"}, "not '7x'");
  ExpectUsageError({"breaker", "reset", "99999999999999999999"}, "positive integer");
  ExpectUsageError({"breaker", "reset", "7", "8"}, "unexpected argument '8'");
  ExpectUsageError({"breaker", "reset", "7", "--force"}, "unknown option '--force'");
  ExpectUsageError({"breaker", "reset", "7", "--database"}, "--database needs a URL");

  ExpectUsageError(
      {"channel"},
      "missing subcommand (add, show, disable, enable, pause, resume, rotate-secret, set)");
  ExpectUsageError({"channel", "frobnicate", "7"}, "unknown subcommand 'frobnicate'");
  ExpectUsageError({"channel", "--database", "x", "pause", "7"}, "expected a subcommand");
  for (const char* verb : {"pause", "resume"}) {
    const std::string command = std::string("bulkhead channel ") + verb + ": ";
    ExpectUsageError({"channel", verb}, command + "missing CHANNEL");
    ExpectUsageError({"channel", verb, "abc"}, command + "CHANNEL must be a positive integer");
    ExpectUsageError({"channel", verb, "0"}, "not '0'");
    ExpectUsageError({"channel", verb, "-3"}, "not '-3'");
    ExpectUsageError({"channel", verb, "7", "8"}, "unexpected argument '8'");
    ExpectUsageError({"channel", verb, "7", "--now"}, "unknown option '--now'");
    ExpectUsageError({"channel", verb, "7", "--database"}, "--database needs a URL");
  }
}

TEST(AdminCli, EveryVerbAnswersHelpWithExitZero) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--help"}, "breakers [--json]"},
      {{"breakers", "--help"}, "usage: bulkhead breakers [--json] [--database URL]"},
      {{"breaker", "--help"}, "usage: bulkhead breaker reset CHANNEL"},
      {{"breaker", "reset", "--help"}, "usage: bulkhead breaker reset CHANNEL"},
      {{"breaker", "reset", "7", "-h"}, "usage: bulkhead breaker reset CHANNEL"},
      {{"channel", "--help"}, "usage: bulkhead channel <subcommand>"},
      {{"channel", "pause", "--help"}, "usage: bulkhead channel pause CHANNEL [--database URL]"},
      {{"channel", "resume", "-h"}, "usage: bulkhead channel resume CHANNEL [--database URL]"},
  };
  for (const auto& [args, fragment] : cases) {
    CommandResult r = Bulkhead(args);
    EXPECT_EQ(r.exit_code, 0) << ::testing::PrintToString(args);
    EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(AdminCli, UnreachableDatabaseIsOneLineWithTheReason) {
  testing::ExpectUnreachableDatabaseError({{"breakers"},
                                           {"breakers", "--json"},
                                           {"breaker", "reset", "7"},
                                           {"channel", "pause", "7"},
                                           {"channel", "resume", "7"}});
}

class UnmigratedDatabaseTest : public DatabaseTest {
 protected:
  UnmigratedDatabaseTest() : DatabaseTest(Start::kEmpty) {}
};

TEST_F(UnmigratedDatabaseTest, BreakersOnADatabaseWithoutTheSchemaIsOneLine) {
  CommandResult r = Bulkhead({"breakers", "--database", url()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bulkhead breakers: database error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

}  // namespace
}  // namespace bulkhead
