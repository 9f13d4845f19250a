// `bulkhead channel add | show | disable | enable` as an operator runs them: the real binary
// against a real database, the rows they change, what enqueue does afterwards, and their bad
// input. (pause and resume are in admin_command_test.cc.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::Bulkhead;
using testing::CliTest;
using testing::CommandResult;
using testing::CreateChannel;
using testing::CreateTenant;
using testing::ExpectUsageError;
using testing::QueryValue;

class ChannelCommandTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    acme_ = CreateTenant(db(), "acme", "bulk");
  }

  std::string Secret(int64_t channel) {
    return QueryValue<std::string>(
        db(), "SELECT secret FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  int64_t Count(const std::string& where) {
    return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE " + where);
  }

  int64_t acme_ = 0;
};

TEST_F(ChannelCommandTest, AddPrintsTheIdAndTheSecretOnce) {
  CommandResult r = Run({"channel", "add", "--tenant", "acme", "--url", "https://example.com/h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(^channel (\d+) added for tenant acme \(tier bulk\)\nsecret (whsec_\S+)\n)")))
      << r.out;
  int64_t id = std::stoll(m[1].str());
  EXPECT_EQ(m[2].str(), Secret(id));
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT url FROM bulkhead.channels WHERE id = " + std::to_string(id)),
            "https://example.com/h");
  // The tenant by id works too, and each channel gets its own secret.
  CommandResult by_id =
      Run({"channel", "add", "--tenant", std::to_string(acme_), "--url", "http://10.0.0.1/x"});
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  EXPECT_EQ(by_id.out.find(m[2].str()), std::string::npos);
}

TEST_F(ChannelCommandTest, AddForAnUnknownTenantExitsOne) {
  CommandResult r = Run({"channel", "add", "--tenant", "nobody", "--url", "http://a/b"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead channel add: no tenant named or numbered 'nobody'\n");
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channels"), 0);
}

TEST_F(ChannelCommandTest, ShowNeverPrintsTheSecret) {
  int64_t channel = CreateChannel(db(), acme_);
  Enqueue(channel, 2);
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel) +
       ", '{}', NULL, now() + interval '1 hour')");
  const std::string secret = Secret(channel);
  CommandResult text = Run({"channel", "show", std::to_string(channel)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("tenant    acme (id " + std::to_string(acme_) + ", tier bulk)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("jobs      2 available, 1 scheduled, 0 executing, 0 parked"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find(secret), std::string::npos);
  EXPECT_EQ(text.out.find("whsec_"), std::string::npos);

  CommandResult json = Run({"channel", "show", std::to_string(channel), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.find("whsec_"), std::string::npos);
  nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["id"], channel);
  EXPECT_EQ(out["tier"], "bulk");
  EXPECT_EQ(out["enabled"], true);
  EXPECT_EQ(out["disabled_reason"], nullptr);
  EXPECT_EQ(out["breaker"]["state"], "closed");
  EXPECT_EQ(out["jobs"]["available"], 2);
  EXPECT_EQ(out["jobs"]["scheduled"], 1);
  EXPECT_FALSE(out.contains("secret"));

  CommandResult missing = Run({"channel", "show", "999999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "bulkhead channel show: no channel with id 999999\n");
}

TEST_F(ChannelCommandTest, DisableRefusesEnqueueAndHoldsTheBacklogParked) {
  int64_t channel = CreateChannel(db(), acme_);
  Enqueue(channel, 3);
  CommandResult r =
      Run({"channel", "disable", std::to_string(channel), "--reason", "ops: endpoint retired"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "channel " + std::to_string(channel) +
                       " disabled: enqueue refuses it; 3 waiting deliveries parked and kept "
                       "until it is enabled and resumed\n");
  EXPECT_EQ(Count("state = 'parked'"), 3);
  EXPECT_EQ(Count("state = 'available'"), 0);
  // The application's enqueue now fails with the reason, and inserts nothing.
  try {
    EnqueueOne(channel);
    ADD_FAILURE() << "enqueue accepted a disabled channel";
  } catch (const pqxx::sql_error& e) {
    EXPECT_NE(std::string(e.what()).find("is disabled: ops: endpoint retired"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(Count("true"), 3);

  CommandResult enabled = Run({"channel", "enable", std::to_string(channel)});
  ASSERT_EQ(enabled.exit_code, 0) << enabled.err;
  EXPECT_EQ(enabled.out, "channel " + std::to_string(channel) +
                             " enabled: enqueue accepts it; 3 parked deliveries wait until "
                             "`bulkhead channel resume " +
                             std::to_string(channel) + "` (or cancel them)\n");
  EnqueueOne(channel);  // accepted again, parked behind the pause
  EXPECT_EQ(Count("state = 'parked'"), 4);
  CommandResult resumed = Run({"channel", "resume", std::to_string(channel)});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Count("state = 'available'"), 4);

  CommandResult again = Run({"channel", "enable", std::to_string(channel)});
  EXPECT_EQ(again.out,
            "channel " + std::to_string(channel) + " was not disabled: enqueue accepts it\n");
}

TEST_F(ChannelCommandTest, DisableAndEnableOfAnUnknownChannelExitOne) {
  CommandResult d = Run({"channel", "disable", "999999", "--reason", "x"});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(d.err, "bulkhead channel disable: no channel with id 999999\n");
  CommandResult e = Run({"channel", "enable", "999999"});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.err, "bulkhead channel enable: no channel with id 999999\n");
}

TEST(ChannelCli, UsageErrorsExitTwoWithOneLine) {
  ExpectUsageError({"channel", "add", "--url", "http://a/b"}, "missing --tenant TENANT");
  ExpectUsageError({"channel", "add", "--tenant", "acme"}, "missing --url URL");
  ExpectUsageError({"channel", "add", "--tenant", "acme", "--url", "ftp://a/b"},
                   "--url must be an http:// or https:// URL");
  ExpectUsageError({"channel", "add", "--tenant", "acme", "--url", "http://a b"},
                   "--url must be an http:// or https:// URL");
  ExpectUsageError({"channel", "add", "--tenant", "acme", "--url", "http://"}, "--url must be");
  ExpectUsageError({"channel", "show"}, "bulkhead channel show: missing CHANNEL");
  ExpectUsageError({"channel", "show", "x"}, "CHANNEL must be a positive integer");
  ExpectUsageError({"channel", "show", "7", "--yaml"}, "unknown option '--yaml'");
  ExpectUsageError({"channel", "disable", "7"}, "missing --reason TEXT");
  ExpectUsageError({"channel", "disable", "7", "--reason", ""}, "--reason must be 1 to 500");
  ExpectUsageError({"channel", "disable", "--reason", "x"}, "missing CHANNEL");
  ExpectUsageError({"channel", "enable", "0"}, "not '0'");
}

TEST(ChannelCli, HelpAndUnreachableDatabase) {
  for (const char* sub : {"add", "show", "disable", "enable"}) {
    CommandResult help = Bulkhead({"channel", sub, "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find(std::string("usage: bulkhead channel ") + sub), std::string::npos);
  }
  testing::ExpectUnreachableDatabaseError(
      {{"channel", "add", "--tenant", "a", "--url", "http://a/"},
       {"channel", "show", "7"},
       {"channel", "disable", "7", "--reason", "x"},
       {"channel", "enable", "7"}});
}

}  // namespace
}  // namespace bulkhead
