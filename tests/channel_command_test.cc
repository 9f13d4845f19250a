// `bulkhead channel add | show | disable | enable | rotate-secret | set` as an operator runs them:
// the real binary against a real database, the rows they change, what enqueue does afterwards, and
// their bad input — including that no secret is ever echoed back. (pause and resume are in
// admin_command_test.cc.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "claim_store.h"
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

// `channel set` changes what it is given and keeps the rest; `show` and publish see the result.
TEST_F(ChannelCommandTest, SetChangesSubscriptionsAndRateLimitAndShowShowsThem) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  auto column = [&](const std::string& expr) {
    return QueryValue<std::string>(
        db(),
        "SELECT coalesce(" + expr + "::text, 'NULL') FROM bulkhead.channels WHERE id = " + id);
  };
  auto published = [&](const std::string& type) {
    return QueryValue<int>(
        db(), "SELECT bulkhead.publish(" + std::to_string(acme_) + ", '" + type + "', '{}')");
  };
  // A new channel: every type, no limit, nothing held.
  CommandResult show = Run({"channel", "show", id});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("\nevents    all\nrate      none\nordering  nothing held\n"),
            std::string::npos)
      << show.out;
  nlohmann::json json = nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out);
  EXPECT_EQ(json["event_types"], nullptr);
  EXPECT_EQ(json["rate_limit_per_s"], nullptr);
  EXPECT_EQ(json["ordering"],
            (nlohmann::json{{"held", 0}, {"held_capped", false}, {"held_keys", 0}}));

  // Spaces around a name are dropped and a repeated name kept once.
  CommandResult set = Run({"channel", "set", id, "--event-types",
                           "invoice.paid, invoice.failed,invoice.paid", "--rate-limit", "2.5"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out,
            "channel " + id + ": event types invoice.paid, invoice.failed; rate limit 2.5/s\n");
  EXPECT_EQ(set.err, "");
  EXPECT_EQ(column("event_types"), "{invoice.paid,invoice.failed}");
  EXPECT_EQ(column("rate_limit_per_s"), "2.5");
  EXPECT_EQ(published("invoice.paid"), 1);
  EXPECT_EQ(published("user.created"), 0);
  json = nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out);
  EXPECT_EQ(json["event_types"], nlohmann::json::array({"invoice.paid", "invoice.failed"}));
  EXPECT_EQ(json["rate_limit_per_s"], 2.5);
  show = Run({"channel", "show", id});
  EXPECT_NE(show.out.find("\nevents    invoice.paid, invoice.failed\nrate      2.5/s\n"),
            std::string::npos)
      << show.out;

  // Only the rate limit: the types stay.
  set = Run({"channel", "set", id, "--no-rate-limit"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out,
            "channel " + id + ": event types invoice.paid, invoice.failed; rate limit none\n");
  EXPECT_EQ(column("rate_limit_per_s"), "NULL");
  EXPECT_EQ(column("event_types"), "{invoice.paid,invoice.failed}");

  // None: publish skips the channel ({} , not NULL); all again: NULL. The rate stays.
  ASSERT_EQ(Run({"channel", "set", id, "--rate-limit", "1000000"}).exit_code, 0);
  set = Run({"channel", "set", id, "--no-event-types"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, "channel " + id + ": event types none; rate limit 1000000/s\n");
  EXPECT_EQ(column("event_types"), "{}");
  EXPECT_EQ(published("invoice.paid"), 0);
  EXPECT_NE(Run({"channel", "show", id}).out.find("\nevents    none\n"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out)["event_types"],
            nlohmann::json::array());
  set = Run({"channel", "set", id, "--all-event-types", "--rate-limit=0.5"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, "channel " + id + ": event types all; rate limit 0.5/s\n");
  EXPECT_EQ(column("event_types"), "NULL");
  EXPECT_EQ(published("user.created"), 1);
}

TEST_F(ChannelCommandTest, SetOfAnUnknownChannelExitsOneAndChangesNothing) {
  int64_t channel = CreateChannel(db(), acme_);
  CommandResult r = Run({"channel", "set", "999999", "--rate-limit", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead channel set: no channel with id 999999\n");
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.channels "
                                "WHERE rate_limit_per_s IS NOT NULL"),
            0);
  (void)channel;
}

// Deliveries waiting behind an earlier live one of their ordering key: counted with the keys
// they wait on, parked ones too, and among the scheduled and parked jobs (not the available).
TEST_F(ChannelCommandTest, ShowCountsTheDeliveriesHeldBehindOrderingKeys) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  // Key a: 3 (1 goes, 2 held); key b: 2 (1 held); key c: 1 (goes); and 1 without a key.
  Exec("SELECT bulkhead.enqueue(" + id +
       ", '{}', NULL, now(), k) FROM unnest('{a,a,a,b,b,c}'"
       "::text[]) AS k");
  Enqueue(channel, 1);
  CommandResult show = Run({"channel", "show", id});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("jobs      4 available, 3 scheduled, 0 executing, 0 parked"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("\nordering  3 held deliveries (of the scheduled and parked) waiting "
                          "on 2 ordering keys\n"),
            std::string::npos)
      << show.out;
  nlohmann::json json = nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out);
  EXPECT_EQ(json["ordering"],
            (nlohmann::json{{"held", 3}, {"held_capped", false}, {"held_keys", 2}}));

  // Paused: the held ones are parked and still held (they keep scheduled_at 'infinity').
  ASSERT_EQ(Run({"channel", "pause", id}).exit_code, 0);
  json = nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out);
  EXPECT_EQ(json["jobs"]["parked"], 7);
  EXPECT_EQ(json["ordering"]["held"], 3);
  EXPECT_EQ(json["ordering"]["held_keys"], 2);

  // Key b's head ends: its held one goes (due now), so one key and two deliveries are left.
  ASSERT_EQ(Run({"channel", "resume", id}).exit_code, 0);
  Exec(
      "UPDATE bulkhead.jobs SET state = 'cancelled', finished_at = now() WHERE id = "
      "(SELECT min(id) FROM bulkhead.jobs WHERE ordering_key = 'b')");
  show = Run({"channel", "show", id});
  EXPECT_NE(show.out.find("\nordering  2 held deliveries (of the scheduled and parked) waiting "
                          "on 1 ordering key\n"),
            std::string::npos)
      << show.out;
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

TEST_F(ChannelCommandTest, ResumeOfADisabledChannelIsRefusedAndItsBacklogStaysParked) {
  // Issue 17.9: resume lifted the pause that disable set, and with it sent the backlog of a
  // channel enqueue still refused. Resume now wants the channel enabled first.
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  Enqueue(channel, 3);
  ASSERT_EQ(Run({"channel", "disable", id, "--reason", "ops: endpoint retired"}).exit_code, 0);
  CommandResult r = Run({"channel", "resume", id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "bulkhead channel resume: channel " + id +
                       " is disabled (ops: endpoint retired); it stays paused with 3 parked "
                       "deliveries: enable it first with `bulkhead channel enable " +
                       id + "`, then resume it\n");
  EXPECT_EQ(Count("state = 'parked'"), 3);
  EXPECT_TRUE(QueryValue<bool>(db(), "SELECT paused FROM bulkhead.channels WHERE id = " + id));
  ClaimStore claim(db());
  EXPECT_TRUE(claim.Claim("bulk", 10, "node-a").empty());

  ASSERT_EQ(Run({"channel", "enable", id}).exit_code, 0);
  CommandResult resumed = Run({"channel", "resume", id});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(claim.Claim("bulk", 10, "node-a").size(), 3u);
}

TEST_F(ChannelCommandTest, DisableAndEnableOfAnUnknownChannelExitOne) {
  CommandResult d = Run({"channel", "disable", "999999", "--reason", "x"});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(d.err, "bulkhead channel disable: no channel with id 999999\n");
  CommandResult e = Run({"channel", "enable", "999999"});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.err, "bulkhead channel enable: no channel with id 999999\n");
}

// ---- rotate-secret -------------------------------------------------------------------------

// Padded base64 of 32 key bytes, valid for --secret-file.
constexpr const char* kGivenSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

// A file holding `text` (readable by its owner only, as a secret's file should be), removed
// when it goes out of scope.
class SecretFile {
 public:
  explicit SecretFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() / "bulkhead-secret-XXXXXX").string();
    int fd = mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~SecretFile() { std::filesystem::remove(path_); }
  SecretFile(const SecretFile&) = delete;
  SecretFile& operator=(const SecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(ChannelCommandTest, RotateSecretPrintsTheNewSecretOnceAndKeepsTheOldOneForADay) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  const std::string old_secret = Secret(channel);
  CommandResult r = Run({"channel", "rotate-secret", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      r.out, m,
      std::regex("channel " + id +
                 R"(: secret rotated; requests are signed with the new secret and 1 old one )"
                 R"(until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\n)"
                 R"(secret (whsec_\S+)\nThe secret is shown only this once: give it to the )"
                 R"(receiver now\.\n)")))
      << r.out;
  const std::string new_secret = m[2].str();
  EXPECT_EQ(new_secret, Secret(channel));
  EXPECT_NE(new_secret, old_secret);
  EXPECT_EQ(r.out.find(old_secret), std::string::npos);  // only the new secret, once
  EXPECT_EQ(r.out.find(new_secret), r.out.rfind(new_secret));
  // The old secret is kept for 24 h, and the claim's gate says until when.
  EXPECT_TRUE(QueryValue<bool>(db(), "SELECT secret = '" + old_secret +
                                         "' AND expires_at - retired_at = interval '24 hours' FROM "
                                         "bulkhead.channel_secrets WHERE channel_id = " +
                                         id));
  EXPECT_TRUE(QueryValue<bool>(
      db(),
      "SELECT old_secrets_until = (SELECT expires_at FROM bulkhead.channel_secrets) "
      "FROM bulkhead.channels WHERE id = " +
          id));

  // `channel show` says how many old secrets and until when, never which.
  CommandResult show = Run({"channel", "show", id});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("secrets   current + 1 old (rotation), signed with until " + m[1].str()),
            std::string::npos)
      << show.out;
  EXPECT_EQ(show.out.find("whsec_"), std::string::npos);
  CommandResult json = Run({"channel", "show", id, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.find("whsec_"), std::string::npos);
  nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["old_secrets"], 1);
  EXPECT_EQ(out["old_secrets_until"], m[1].str());

  // A second rotation keeps both old secrets, each with its own window.
  CommandResult again = Run({"channel", "rotate-secret", id, "--keep-old", "90s"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("the new secret and 2 old ones until " + m[1].str()), std::string::npos)
      << again.out;
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 2);
  EXPECT_TRUE(QueryValue<bool>(db(),
                               "SELECT expires_at - retired_at = interval '90 seconds' FROM "
                               "bulkhead.channel_secrets WHERE secret = '" +
                                   new_secret + "'"));
}

TEST_F(ChannelCommandTest, RotateSecretWithKeepOldZeroRetiresEveryOldSecretAtOnce) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  ASSERT_EQ(Run({"channel", "rotate-secret", id}).exit_code, 0);
  ASSERT_EQ(Run({"channel", "rotate-secret", id, "--keep-old=7d"}).exit_code, 0);
  ASSERT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 2);
  CommandResult r = Run({"channel", "rotate-secret", id, "--keep-old", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("channel " + id +
                                ": secret rotated; old secrets retired: requests are signed "
                                "with the new secret only\nsecret whsec_"))
      << r.out;
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 0);
  EXPECT_TRUE(QueryValue<bool>(
      db(), "SELECT old_secrets_until IS NULL FROM bulkhead.channels WHERE id = " + id));
  CommandResult show = Run({"channel", "show", id});
  EXPECT_NE(show.out.find("secrets   current only\n"), std::string::npos) << show.out;
  EXPECT_EQ(nlohmann::json::parse(Run({"channel", "show", id, "--json"}).out)["old_secrets_until"],
            nullptr);
}

TEST_F(ChannelCommandTest, RotateSecretTakesAGivenSecretFromStdinOrAFileWithoutPrintingIt) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  const std::string first = Secret(channel);
  // From stdin, with the newline `echo` or a here-string leaves after it.
  CommandResult r =
      Run({"channel", "rotate-secret", id, "--secret-file", "-"}, std::string(kGivenSecret) + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Secret(channel), kGivenSecret);
  EXPECT_EQ(r.out.find("whsec_"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nsecret as given with --secret-file\n"), std::string::npos) << r.out;

  // The current secret again: refused, nothing changes.
  SecretFile same_file(kGivenSecret);
  CommandResult same = Run({"channel", "rotate-secret", id, "--secret-file", same_file.path()});
  EXPECT_EQ(same.exit_code, 1);
  EXPECT_EQ(same.out, "");
  EXPECT_EQ(same.err,
            "bulkhead channel rotate-secret: the secret of --secret-file is already "
            "channel " +
                id + "'s current secret; nothing changed\n");
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 1);

  // Back to the first secret, from a file (no newline), still in its window: it becomes
  // current and is no longer old.
  SecretFile first_file(first);
  CommandResult back = Run({"channel", "rotate-secret", id, "--secret-file=" + first_file.path()});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(Secret(channel), first);
  EXPECT_EQ(QueryValue<std::string>(db(),
                                    "SELECT string_agg(secret, ' ') FROM "
                                    "bulkhead.channel_secrets"),
            kGivenSecret);

  CommandResult missing = Run({"channel", "rotate-secret", "999999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "bulkhead channel rotate-secret: no channel with id 999999\n");
}

// Issue 17.10a: a secret on the command line is in every `ps` and in the shell's history. The
// old --secret VALUE is refused before anything runs, without quoting the value, and says
// what to use instead.
TEST(ChannelCli, RotateSecretRefusesASecretInArgv) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"channel", "rotate-secret", "7", "--secret", kGivenSecret},
        std::vector<std::string>{"channel", "rotate-secret", "7",
                                 "--secret=" + std::string(kGivenSecret)},
        std::vector<std::string>{"channel", "rotate-secret", "--secret", kGivenSecret, "7"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    CommandResult r = Bulkhead(args, {{"DATABASE_URL", "postgresql:///nope?host=/nonexistent"}});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err,
              "bulkhead channel rotate-secret: --secret would put the secret in the process list "
              "and the shell's history; give it with --secret-file FILE, or --secret-file - to "
              "read it from stdin (the value is not repeated here) (try: bulkhead channel "
              "rotate-secret --help)\n");
  }
}

TEST(ChannelCli, RotateSecretRefusesBadInputWithoutEchoingASecret) {
  const std::vector<std::string> bad = {
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa",                    // not whole groups
      "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY",       // padding left out
      "whsec_QUJDREVGR0hJSktMTU5PUFFS",                          // 18 bytes: too short
      "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",            // no prefix
      "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n\n",  // a blank line after
      " whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",     // a space before
      "whsec_" + std::string(120, 'A'),                          // 90 bytes: too long
      "whsec_MDEyMzQ1Njc4OWFiY2RlZjAx-jM0NTY3ODlhYmNkZWY=",      // URL-safe alphabet
  };
  for (const std::string& secret : bad) {
    SecretFile file(secret);
    for (const auto& [args, input] :
         {std::pair{std::vector<std::string>{"channel", "rotate-secret", "7", "--secret-file", "-"},
                    std::optional<std::string>(secret)},
          std::pair{std::vector<std::string>{"channel", "rotate-secret", "7", "--secret-file",
                                             file.path()},
                    std::optional<std::string>()}}) {
      CommandResult r =
          Bulkhead(args, {{"DATABASE_URL", "postgresql:///nope?host=/nonexistent"}}, input);
      EXPECT_EQ(r.exit_code, 2) << secret;
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(testing::Lines(r.err), 1) << r.err;
      EXPECT_NE(r.err.find("the secret of --secret-file must be whsec_ followed by padded "
                           "standard base64"),
                std::string::npos)
          << r.err;
      // Neither the secret nor its key part comes back.
      EXPECT_EQ(r.err.find(secret.substr(6, 20)), std::string::npos) << r.err;
    }
  }
  // A secret in the wrong place (as CHANNEL, or after it) is not quoted either.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"channel", "rotate-secret", "7", kGivenSecret},
        std::vector<std::string>{"channel", "rotate-secret", kGivenSecret},
        std::vector<std::string>{"channel", "rotate-secret", "--", "7", kGivenSecret}}) {
    CommandResult r = Bulkhead(args, {{"DATABASE_URL", "postgresql:///nope?host=/nonexistent"}});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(testing::Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.find("MDEyMzQ1"), std::string::npos) << r.err;
  }
  ExpectUsageError({"channel", "rotate-secret"}, "missing CHANNEL");
  ExpectUsageError({"channel", "rotate-secret", "7", "--keep-old", "forever"},
                   "--keep-old must be 0 or a duration like 90s");
  ExpectUsageError({"channel", "rotate-secret", "7", "--keep-old", "-1h"}, "--keep-old must be");
  ExpectUsageError({"channel", "rotate-secret", "7", "--secret-file"},
                   "--secret-file needs a file holding the secret (- for stdin)");
  ExpectUsageError({"channel", "rotate-secret", "7", "--secret-file", "/nonexistent/secret"},
                   "cannot read --secret-file /nonexistent/secret: No such file or directory");
  ExpectUsageError({"channel", "rotate-secret", "7", "--secret-file", "-"},  // stdin is empty
                   "the secret of --secret-file is empty");
  // The wrong file: an endless one is not read to its end.
  ExpectUsageError({"channel", "rotate-secret", "7", "--secret-file", "/dev/zero"},
                   "the secret of --secret-file is over 4 KiB");
}

// PostgreSQL puts the failing row, secret included, in the DETAIL of a check violation. The CLI
// prints only the first line of a database error: a constraint of the operator's own that
// refuses the new secret must not make the CLI print it.
TEST_F(ChannelCommandTest, ADatabaseErrorNeverQuotesTheSecret) {
  int64_t channel = CreateChannel(db(), acme_);
  const std::string id = std::to_string(channel);
  const std::string before = Secret(channel);
  Exec(
      "ALTER TABLE bulkhead.channels ADD CONSTRAINT channels_no_test_keys "
      "CHECK (secret NOT LIKE 'whsec_MDEy%')");
  // The premise: libpq's message does carry the row, secret and all.
  try {
    Exec("UPDATE bulkhead.channels SET secret = '" + std::string(kGivenSecret) + "'");
    ADD_FAILURE() << "the constraint did not refuse the secret";
  } catch (const pqxx::check_violation& e) {
    ASSERT_NE(std::string(e.what()).find(kGivenSecret), std::string::npos) << e.what();
  }
  CommandResult r = Run({"channel", "rotate-secret", id, "--secret-file", "-"}, kGivenSecret);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "bulkhead channel rotate-secret: database error: ERROR:  new row for relation "
            "\"channels\" violates check constraint \"channels_no_test_keys\"\n");
  EXPECT_EQ(r.err.find("MDEy"), std::string::npos);
  EXPECT_EQ(r.err.find(before), std::string::npos);
  // Rolled back as a whole: the old secret is current and nothing was retired.
  EXPECT_EQ(Secret(channel), before);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.channel_secrets"), 0);
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
  // set: something to set, one choice of each kind, and values the schema would take.
  ExpectUsageError({"channel", "set", "7"}, "bulkhead channel set: nothing to set: give");
  ExpectUsageError({"channel", "set", "--rate-limit", "5"}, "missing CHANNEL");
  ExpectUsageError({"channel", "set", "x", "--rate-limit", "5"}, "CHANNEL must be a positive");
  for (const char* bad : {"0", "-5", "abc", "5x", "nan", "inf", "1e7", "1000000.5", ""}) {
    SCOPED_TRACE(bad);
    ExpectUsageError({"channel", "set", "7", "--rate-limit", bad},
                     "--rate-limit must be a number of requests a second above 0 and at most "
                     "1000000, not '" +
                         std::string(bad) + "'");
  }
  ExpectUsageError({"channel", "set", "7", "--rate-limit"}, "--rate-limit needs a number");
  for (const char* bad : {"", "a,,b", "a,", ",a", " , a"}) {
    SCOPED_TRACE(bad);
    ExpectUsageError({"channel", "set", "7", "--event-types", bad},
                     "--event-types has an empty type name");
  }
  ExpectUsageError({"channel", "set", "7", "--event-types", std::string(256, 'x')},
                   "a type name is 1 to 255 characters, not 256");
  ExpectUsageError({"channel", "set", "7", "--event-types", "a", "--no-event-types"},
                   "give one of --event-types, --all-event-types and --no-event-types");
  ExpectUsageError({"channel", "set", "7", "--all-event-types", "--no-event-types"},
                   "give one of --event-types");
  ExpectUsageError({"channel", "set", "7", "--rate-limit", "5", "--no-rate-limit"},
                   "give --rate-limit or --no-rate-limit, not both");
  ExpectUsageError({"channel", "set", "7", "--no-rate-limit=1"}, "--no-rate-limit takes no value");
}

TEST(ChannelCli, HelpAndUnreachableDatabase) {
  for (const char* sub : {"add", "show", "disable", "enable", "rotate-secret", "set"}) {
    CommandResult help = Bulkhead({"channel", sub, "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find(std::string("usage: bulkhead channel ") + sub), std::string::npos);
  }
  SecretFile secret(kGivenSecret);
  testing::ExpectUnreachableDatabaseError(
      {{"channel", "add", "--tenant", "a", "--url", "http://a/"},
       {"channel", "show", "7"},
       {"channel", "disable", "7", "--reason", "x"},
       {"channel", "enable", "7"},
       {"channel", "rotate-secret", "7", "--secret-file", secret.path()},
       {"channel", "set", "7", "--rate-limit", "5"}});
}

}  // namespace
}  // namespace bulkhead
