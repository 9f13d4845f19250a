// The operator console (worker/console/, docs/console.md) against the real PostgreSQL, served
// by the real server over loopback: the security rules each by name, bad input, the reads and
// the actions with their audit log, the breaker history, the rates, TLS, and the verb's checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "console_app.h"
#include "console_pool.h"
#include "console_server.h"
#include "fleet_store.h"
#include "http_call.h"
#include "rate_sampler.h"
#include "tenancy.h"

namespace bulkhead::testing {
namespace {

using nlohmann::json;

constexpr const char* kAdmin = "admin-token-for-the-console-test";
constexpr const char* kViewer = "viewer-token-for-the-console-test";

class ConsoleTest : public DeliveryTest {
 protected:
  void SetUp() override {
    DeliveryTest::SetUp();
    tenant_ = CreateTenant(db(), "acme");
    channel_ = CreateChannel(db(), tenant_, "http://acme.example/hook");
    other_ = CreateChannel(db(), tenant_, "http://other.example/hook");
    pool_ = std::make_unique<console::ConsolePool>(conninfo());
    rates_ = std::make_unique<console::RateSampler>(
        *pool_, console::RateSampler::Options{.every = std::chrono::milliseconds(100),
                                              .settle = std::chrono::milliseconds(300)});
    app_ = std::make_unique<console::ConsoleApp>(console::TokenCheck(kAdmin, kViewer), *pool_,
                                                 *rates_);
    server_ = std::make_unique<console::ConsoleServer>(
        console::ConsoleServer::Options{.listen = "127.0.0.1:0"},
        [this](const console::Request& r) { return app_->Handle(r); });
    ASSERT_TRUE(server_->ok()) << server_->error();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  void TearDown() override {
    server_.reset();
    app_.reset();
    rates_.reset();
    pool_.reset();
    DeliveryTest::TearDown();
  }

  HttpReply Call(const std::string& method, const std::string& path, const std::string& token,
                 const std::string& body = "", std::vector<std::string> headers = {}) {
    if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
    return Send({.method = method, .url = base_ + path, .headers = headers, .body = body});
  }
  json Read(const std::string& path, const std::string& token = kAdmin) {
    HttpReply reply = Call("GET", path, token);
    EXPECT_EQ(reply.status, 200) << path << ": " << reply.body;
    return json::parse(reply.body);
  }

  // Logs in through the form; returns the session cookie ("bulkhead_session=…") and the
  // session's CSRF token.
  std::pair<std::string, std::string> LogIn(const std::string& token) {
    HttpReply login = Send({.method = "POST",
                            .url = base_ + "/login",
                            .headers = {"Content-Type: application/x-www-form-urlencoded"},
                            .body = "token=" + token});
    EXPECT_EQ(login.status, 303) << login.body;
    const std::string set_cookie = login.Header("set-cookie");
    const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
    HttpReply session = Send({.url = base_ + "/api/session", .headers = {"Cookie: " + cookie}});
    EXPECT_EQ(session.status, 200) << session.body;
    return {cookie, json::parse(session.body)["csrf"].get<std::string>()};
  }

  // Discards `n` deliveries of `channel`, each with a two-attempt log.
  std::vector<int64_t> Discard(int64_t channel, int n) {
    std::vector<int64_t> ids = EnqueueMany(channel, n);
    Exec(
        "UPDATE bulkhead.jobs SET state = 'discarded', finished_at = now(), attempt = 2, "
        "last_error = 'HTTP 503', attempted_by = 'n1', attempted_at = now(), attempts = "
        "'[{\"attempt\": 1, \"node\": \"n1\", \"status\": 503, \"duration_ms\": 12.5}, "
        "{\"attempt\": 2, \"node\": \"n1\", \"error\": \"timeout\", \"duration_ms\": 200}]' "
        "WHERE channel_id = " +
        std::to_string(channel));
    return ids;
  }

  bool Paused(int64_t channel) {
    return QueryValue<bool>(
        db(), "SELECT paused FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  int64_t tenant_ = 0, channel_ = 0, other_ = 0;
  std::unique_ptr<console::ConsolePool> pool_;
  std::unique_ptr<console::RateSampler> rates_;
  std::unique_ptr<console::ConsoleApp> app_;
  std::unique_ptr<console::ConsoleServer> server_;
  std::string base_;
};

// ---- Security, each rule by name ----

TEST_F(ConsoleTest, ARequestWithoutATokenIsRefused) {
  for (const char* path : {"/api/channels", "/api/overview", "/api/deliveries/1"}) {
    HttpReply reply = Call("GET", path, "");
    EXPECT_EQ(reply.status, 401) << path;
    EXPECT_NE(reply.Header("www-authenticate").find("Bearer"), std::string::npos);
  }
  HttpReply page = Call("GET", "/channels", "");
  EXPECT_EQ(page.status, 401);
  EXPECT_NE(page.body.find("action=\"/login\""), std::string::npos) << "the login form";
  EXPECT_EQ(Call("GET", "/assets/app.js", "").status, 401);
  EXPECT_EQ(Call("POST", "/api/channels/" + std::to_string(channel_) + "/pause", "").status, 401);
  EXPECT_FALSE(Paused(channel_));
}

TEST_F(ConsoleTest, AWrongTokenIsRefused) {
  EXPECT_EQ(Call("GET", "/api/channels", "admin-token-for-the-console-tesT").status, 401);
  EXPECT_EQ(Call("GET", "/api/channels", std::string(kAdmin) + "x").status, 401);
  EXPECT_EQ(Call("GET", "/api/channels", "", "", {"Authorization: Basic YWRtaW46eA=="}).status,
            401);
  EXPECT_EQ(Send({.url = base_ + "/api/channels",
                  .headers = {"Cookie: bulkhead_session=" + std::string(64, 'a')}})
                .status,
            401);
  HttpReply login = Send({.method = "POST", .url = base_ + "/login", .body = "token=wrong"});
  EXPECT_EQ(login.status, 401);
  EXPECT_EQ(login.Header("set-cookie"), "");
  EXPECT_NE(login.body.find("That token is not valid."), std::string::npos);
}

TEST_F(ConsoleTest, TheViewerMayReadButNotAct) {
  const std::string c = std::to_string(channel_);
  Discard(channel_, 2);
  EXPECT_EQ(Read("/api/channels", kViewer).size(), 2u);
  EXPECT_EQ(Read("/api/session", kViewer)["role"], "viewer");
  for (const std::string& path :
       std::vector<std::string>{"/api/channels/" + c + "/pause", "/api/channels/" + c + "/reset",
                                "/api/deliveries/replay", "/api/deliveries/cancel"}) {
    EXPECT_EQ(Call("POST", path, kViewer, "{\"channel\": " + c + "}").status, 403) << path;
  }
  const int64_t job = QueryValue<int64_t>(db(), "SELECT min(id) FROM bulkhead.jobs");
  EXPECT_EQ(Call("GET", "/api/deliveries/" + std::to_string(job) + "/payload", kViewer).status,
            403);
  EXPECT_FALSE(Paused(channel_));
  EXPECT_EQ(Count("state = 'discarded'"), 2);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.console_actions"), 0);
}

TEST_F(ConsoleTest, ACrossSitePostIsRefused) {
  const auto [cookie, csrf] = LogIn(kAdmin);
  const std::string pause = base_ + "/api/channels/" + std::to_string(channel_) + "/pause";
  // What another site's form or script can send: the cookie (were SameSite not to hold it
  // back), but not our CSRF token, or the token from a foreign origin.
  EXPECT_EQ(Send({.method = "POST", .url = pause, .headers = {"Cookie: " + cookie}}).status, 403);
  EXPECT_EQ(Send({.method = "POST",
                  .url = pause,
                  .headers = {"Cookie: " + cookie, "X-CSRF-Token: " + std::string(64, '0')}})
                .status,
            403);
  EXPECT_EQ(Send({.method = "POST",
                  .url = pause,
                  .headers = {"Cookie: " + cookie, "X-CSRF-Token: " + csrf,
                              "Origin: https://evil.example"}})
                .status,
            403);
  EXPECT_FALSE(Paused(channel_));
  // The console's own page: the token and its own origin.
  const std::string host = base_.substr(std::string("http://").size());
  EXPECT_EQ(Send({.method = "POST",
                  .url = pause,
                  .headers = {"Cookie: " + cookie, "X-CSRF-Token: " + csrf, "Origin: " + base_,
                              "Host: " + host}})
                .status,
            200);
  EXPECT_TRUE(Paused(channel_));
}

TEST_F(ConsoleTest, LoginSetsAStrictHttpOnlyCookieAndLogoutEndsIt) {
  HttpReply login =
      Send({.method = "POST", .url = base_ + "/login", .body = "token=" + std::string(kViewer)});
  ASSERT_EQ(login.status, 303);
  EXPECT_EQ(login.Header("location"), "/");
  const std::string set_cookie = login.Header("set-cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos) << set_cookie;
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos) << set_cookie;
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  EXPECT_EQ(cookie.size(), std::string("bulkhead_session=").size() + 64);
  HttpReply page = Send({.url = base_ + "/channels", .headers = {"Cookie: " + cookie}});
  EXPECT_EQ(page.status, 200);
  const auto session =
      json::parse(Send({.url = base_ + "/api/session", .headers = {"Cookie: " + cookie}}).body);
  EXPECT_EQ(session["role"], "viewer");
  // Logging out (an action like any other POST: it needs the CSRF token) ends the session.
  const auto [admin_cookie, csrf] = LogIn(kViewer);
  EXPECT_EQ(
      Send({.method = "POST", .url = base_ + "/logout", .headers = {"Cookie: " + admin_cookie}})
          .status,
      403);
  HttpReply logout = Send({.method = "POST",
                           .url = base_ + "/logout",
                           .headers = {"Cookie: " + admin_cookie, "X-CSRF-Token: " + csrf}});
  EXPECT_EQ(logout.status, 200);
  EXPECT_NE(logout.Header("set-cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(Send({.url = base_ + "/api/session", .headers = {"Cookie: " + admin_cookie}}).status,
            401);
}

TEST_F(ConsoleTest, AHeadIsAnsweredWithTheHeadersOfItsGetAndNoBody) {
  HttpReply get = Call("GET", "/api/session", kAdmin);
  HttpReply head = Call("HEAD", "/api/session", kAdmin);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.Header("content-length"), std::to_string(get.body.size()));
  EXPECT_EQ(Call("HEAD", "/api/channels", "").status, 401);
}

TEST_F(ConsoleTest, EveryAnswerCarriesTheSecurityHeaders) {
  for (const auto& [path, token] :
       std::vector<std::pair<std::string, std::string>>{{"/", kAdmin},
                                                        {"/api/channels", kAdmin},
                                                        {"/api/channels", ""},
                                                        {"/nope", kAdmin},
                                                        {"/login", ""}}) {
    HttpReply reply = Call("GET", path, token);
    EXPECT_NE(reply.Header("content-security-policy").find("frame-ancestors 'none'"),
              std::string::npos)
        << path;
    EXPECT_NE(reply.Header("content-security-policy").find("script-src 'self'"), std::string::npos);
    EXPECT_EQ(reply.Header("x-frame-options"), "DENY") << path;
    EXPECT_EQ(reply.Header("x-content-type-options"), "nosniff") << path;
    EXPECT_EQ(reply.Header("cache-control"), "no-store") << path;
  }
}

TEST_F(ConsoleTest, SecretsAndPayloadsNeverAppearInAnswers) {
  EnqueueOne(channel_, R"({"card": "4111-1111"})");
  Discard(other_, 1);
  const std::string c = std::to_string(channel_);
  const int64_t job = QueryValue<int64_t>(db(), "SELECT min(id) FROM bulkhead.jobs");
  for (const std::string& path :
       std::vector<std::string>{"/api/channels", "/api/channels/" + c, "/api/overview",
                                "/api/deliveries", "/api/deliveries?channel=" + c,
                                "/api/deliveries/" + std::to_string(job), "/api/actions"}) {
    HttpReply reply = Call("GET", path, kAdmin);
    EXPECT_EQ(reply.status, 200) << path;
    EXPECT_EQ(reply.body.find("whsec_"), std::string::npos) << path;
    EXPECT_EQ(reply.body.find("4111"), std::string::npos) << path;
  }
  // Only when the admin asks for that one payload.
  EXPECT_NE(Call("GET", "/api/deliveries/" + std::to_string(job) + "/payload", kAdmin)
                .body.find("4111-1111"),
            std::string::npos);
}

TEST_F(ConsoleTest, BadInputGetsA4xxAndChangesNothing) {
  Discard(channel_, 3);
  const std::string c = std::to_string(channel_);
  EXPECT_EQ(Call("GET", "/api/channels/999999", kAdmin).status, 404);
  EXPECT_EQ(Call("GET", "/api/channels/abc", kAdmin).status, 404);
  EXPECT_EQ(Call("GET", "/api/deliveries/999999", kAdmin).status, 404);
  EXPECT_EQ(Call("POST", "/api/channels/999999/pause", kAdmin).status, 404);
  EXPECT_EQ(Call("GET", "/api/deliveries?state=lost", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/deliveries?channel=-1", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/deliveries?colour=red", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/deliveries?since=yesterday-ish&state=completed", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/deliveries?limit=100000", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/channels?q=%zz", kAdmin).status, 400);
  EXPECT_EQ(Call("GET", "/api/channels/" + c + "/pause", kAdmin).status, 405);
  EXPECT_EQ(Call("POST", "/api/channels", kAdmin).status, 405);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin, "not json").status, 400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin, "[1]").status, 400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin, "{}").status, 400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin, "{\"channel\": \"7\"}").status, 400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin, "{\"colour\": 1}").status, 400);
  EXPECT_EQ(Call("POST", "/api/deliveries/cancel", kAdmin,
                 "{\"channel\": " + c + ", \"since\": \"2026-01-01T00:00:00Z\"}")
                .status,
            400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin,
                 "{\"channel\": " + c + ", \"since\": \"the day before\"}")
                .status,
            400);
  EXPECT_EQ(Call("POST", "/api/deliveries/replay", kAdmin,
                 "{\"channel\": " + c + ", \"pad\": \"" + std::string(20000, 'x') + "\"}")
                .status,
            413);
  EXPECT_EQ(Count("state = 'discarded'"), 3);
  EXPECT_FALSE(Paused(channel_));
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.console_actions"), 0);
}

// ---- Reads ----

TEST_F(ConsoleTest, ChannelsListsTheDesignedFields) {
  Enqueue(channel_, 3);
  Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(other_));
  const json channels = Read("/api/channels");
  ASSERT_EQ(channels.size(), 2u);
  const json& first = channels[0];
  for (const char* field :
       {"id", "tenant", "url", "breaker_state", "paused", "available", "executing", "parked"}) {
    EXPECT_TRUE(first.contains(field)) << field;
  }
  EXPECT_EQ(first["id"], channel_);
  EXPECT_EQ(first["tenant"], "acme");
  EXPECT_EQ(first["available"], 3);
  EXPECT_EQ(channels[1]["paused"], true);
  // Search: by URL, by tenant name, by id; paging.
  EXPECT_EQ(Read("/api/channels?q=OTHER").size(), 1u);
  EXPECT_EQ(Read("/api/channels?q=acm").size(), 2u);
  EXPECT_EQ(Read("/api/channels?q=" + std::to_string(other_))[0]["id"], other_);
  EXPECT_EQ(Read("/api/channels?after=" + std::to_string(channel_)).size(), 1u);
  EXPECT_EQ(Read("/api/channels?q=nobody").size(), 0u);
}

TEST_F(ConsoleTest, AChannelShowsItsBreakerHistoryBacklogAndLastErrors) {
  const std::string c = std::to_string(channel_);
  Discard(channel_, 1);
  Enqueue(channel_, 2);
  // Transitions as a node writes them: open, half_open (a probe), open again. The trigger keeps
  // the history; only the newest 50 per channel stay.
  for (int i = 0; i < 30; ++i) {
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_reason = 'HTTP 503', "
        "breaker_changed_at = now(), breaker_probe_at = now() + interval '30 s' WHERE id = " +
        c);
    Exec(
        "UPDATE bulkhead.channels SET breaker_state = 'closed', breaker_probe_at = NULL "
        "WHERE id = " +
        c);
  }
  Exec(
      "UPDATE bulkhead.channels SET breaker_state = 'open', breaker_reason = 'timeout', "
      "breaker_changed_at = now(), breaker_probe_at = now() + interval '30 s' WHERE id = " +
      c);
  EXPECT_EQ(QueryValue<int64_t>(db(),
                                "SELECT count(*) FROM bulkhead.breaker_events "
                                "WHERE channel_id = " +
                                    c),
            50);
  const json channel = Read("/api/channels/" + c);
  EXPECT_EQ(channel["breaker"]["state"], "open");
  ASSERT_EQ(channel["breaker"]["history"].size(), 20u);
  EXPECT_EQ(channel["breaker"]["history"][0]["to"], "open");
  EXPECT_EQ(channel["breaker"]["history"][0]["reason"], "timeout");
  EXPECT_EQ(channel["breaker"]["history"][1]["to"], "closed");
  EXPECT_EQ(channel["available"], 2);
  ASSERT_EQ(channel["last_errors"].size(), 1u);
  EXPECT_EQ(channel["last_errors"][0]["error"], "HTTP 503");
  EXPECT_EQ(channel["gone"], false);
  // The overview lists it among the breakers.
  const json overview = Read("/api/overview");
  ASSERT_EQ(overview["breakers"].size(), 1u);
  EXPECT_EQ(overview["breakers"][0]["channel"], channel_);
}

TEST_F(ConsoleTest, TheOverviewShowsTiersNodesAndTheLeader) {
  Enqueue(channel_, 4);
  pqxx::connection leader(conninfo());
  FleetStore fleet(leader);
  fleet.RegisterNode("node-a", "host-a", 1, "test", {"default"}, 60000);
  fleet.RegisterNode("node-b", "host-b", 2, "test", {"default"}, 60000);
  ASSERT_TRUE(fleet.TryLead("node-b"));
  const json overview = Read("/api/overview");
  ASSERT_EQ(overview["nodes"].size(), 2u);
  EXPECT_EQ(overview["nodes"][0]["leader"], false);
  EXPECT_EQ(overview["nodes"][1]["leader"], true);
  EXPECT_GT(overview["nodes"][1]["lease_left_s"].get<double>(), 50);
  json tier;
  for (const json& t : overview["tiers"]) {
    if (t["queue"].get<std::string>() == "default") tier = t;
  }
  EXPECT_EQ(tier["available"], 4);
  EXPECT_EQ(tier["capped"], false);
}

TEST_F(ConsoleTest, TheRatesCountWhatFinishedSinceTheConsoleStarted) {
  // Let the sampler set where its windows begin, then finish 30 deliveries, 3 of them discarded.
  // (Its windows end 300 ms behind the database's now, so that the UPDATE has committed before
  // a window that holds its finished_at is counted: the settle of RateSampler::Options.)
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::vector<int64_t> ids = EnqueueMany(channel_, 30);
  // One statement, as a node's record is: a sampler's count between two statements would see
  // the first's rows completed and never learn that three of them were discarded after.
  const std::string discarded = "(" + std::to_string(ids[0]) + ", " + std::to_string(ids[1]) +
                                ", " + std::to_string(ids[2]) + ")";
  Exec(
      "UPDATE bulkhead.jobs SET finished_at = now(), attempt = 1, "
      "state = CASE WHEN id IN " +
      discarded +
      " THEN 'discarded' ELSE 'completed' END, "
      "last_error = CASE WHEN id IN " +
      discarded + " THEN 'x' END");
  json tier;
  for (int i = 0; i < 100; ++i) {
    const json overview = Read("/api/overview");
    SCOPED_TRACE(overview.dump());
    for (const json& t : overview["tiers"]) {
      if (t["queue"].get<std::string>() == "default") tier = t;
    }
    if (tier["completed_per_s"].get<double>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double window = tier["window_s"].get<double>();
  ASSERT_GT(window, 0);
  EXPECT_NEAR(tier["completed_per_s"].get<double>() * window, 27, 0.01);
  EXPECT_NEAR(tier["discarded_per_s"].get<double>() * window, 3, 0.01);
  EXPECT_NEAR(tier["failure_rate"].get<double>(), 0.1, 1e-9);
}

TEST_F(ConsoleTest, ADeliveryShowsItsAttemptLogAndAListFiltersByStateChannelAndTime) {
  std::vector<int64_t> ids = Discard(channel_, 3);
  Enqueue(other_, 2);
  const json delivery = Read("/api/deliveries/" + std::to_string(ids[0]));
  EXPECT_EQ(delivery["state"], "discarded");
  ASSERT_EQ(delivery["attempts"].size(), 2u);
  EXPECT_EQ(delivery["attempts"][0]["status"], 503);
  EXPECT_EQ(delivery["attempts"][1]["error"], "timeout");
  EXPECT_GT(delivery["payload_bytes"].get<int64_t>(), 0);
  EXPECT_FALSE(delivery.contains("payload"));

  const std::string c = std::to_string(channel_);
  json list = Read("/api/deliveries?state=discarded&channel=" + c);
  EXPECT_EQ(list["deliveries"].size(), 3u);
  EXPECT_EQ(list["exhaustive"], true);
  EXPECT_EQ(list["deliveries"][0]["id"], ids[2]) << "newest first";
  EXPECT_EQ(Read("/api/deliveries?state=available")["deliveries"].size(), 2u);
  EXPECT_EQ(Read("/api/deliveries?tenant=" + std::to_string(tenant_))["deliveries"].size(), 5u);
  EXPECT_EQ(Read("/api/deliveries?state=discarded&until=2000-01-01T00:00:00Z")["deliveries"].size(),
            0u);
  EXPECT_EQ(Read("/api/deliveries?limit=1")["deliveries"].size(), 1u);

  // A delivered job: its failed attempt from the log, then the delivering one from the row's
  // columns (migration 0016).
  Exec(
      "UPDATE bulkhead.jobs SET state = 'completed', delivered_status = 200, "
      "delivered_ms = 41.5, attempt = 2, attempts = '[{\"attempt\": 1, \"node\": \"n1\", "
      "\"status\": 503, \"duration_ms\": 12.5}]' WHERE id = " +
      std::to_string(ids[1]));
  const json delivered = Read("/api/deliveries/" + std::to_string(ids[1]));
  ASSERT_EQ(delivered["attempts"].size(), 2u) << delivered.dump();
  EXPECT_EQ(delivered["attempts"][0]["status"], 503);
  EXPECT_EQ(delivered["attempts"][1]["status"], 200);
  EXPECT_EQ(delivered["attempts"][1]["attempt"], 2);
  EXPECT_EQ(delivered["attempts"][1]["node"], "n1");
  EXPECT_EQ(delivered["attempts"][1]["duration_ms"], 41.5);
  EXPECT_TRUE(delivered["attempts"][1].contains("at"));
}

// ---- Actions ----

TEST_F(ConsoleTest, PauseResumeResetAndEnableAChannel) {
  const std::string c = std::to_string(channel_);
  Enqueue(channel_, 4);
  json paused = json::parse(Call("POST", "/api/channels/" + c + "/pause", kAdmin).body);
  EXPECT_EQ(paused["before"], "running");
  EXPECT_EQ(paused["jobs"], 4);
  EXPECT_EQ(Count("state = 'parked'"), 4);
  EXPECT_EQ(json::parse(Call("POST", "/api/channels/" + c + "/resume", kAdmin).body)["jobs"], 4);
  EXPECT_EQ(Count("state = 'available'"), 4);
  Exec(
      "UPDATE bulkhead.channels SET enabled = false, paused = true, "
      "disabled_reason = 'the endpoint answered 410 Gone at 2026-12-03T00:00:00Z' WHERE id = " +
      c);
  EXPECT_EQ(Read("/api/channels/" + c)["gone"], true);
  EXPECT_EQ(Call("POST", "/api/channels/" + c + "/resume", kAdmin).status, 409);
  EXPECT_EQ(Call("POST", "/api/channels/" + c + "/enable", kAdmin).status, 200);
  EXPECT_EQ(Call("POST", "/api/channels/" + c + "/resume", kAdmin).status, 200);
  EXPECT_EQ(Call("POST", "/api/channels/" + c + "/reset", kAdmin).status, 200);
  const json log = Read("/api/actions");
  ASSERT_EQ(log.size(), 5u);  // the refused resume is not an action carried out
  EXPECT_EQ(log[0]["action"], "reset");
  EXPECT_EQ(log[4]["action"], "pause");
  EXPECT_EQ(log[4]["jobs"], 4);
  EXPECT_EQ(log[4]["who"].get<std::string>().rfind("admin:", 0), 0u);
}

TEST_F(ConsoleTest, ReplayAFilteredSetAfterCountingIt) {
  Discard(channel_, 1200);  // more than one batch
  Discard(other_, 5);
  const std::string c = std::to_string(channel_);
  const json count = Read("/api/deliveries/count?action=replay&channel=" + c);
  EXPECT_EQ(count["count"], 1200);
  EXPECT_EQ(count["capped"], false);
  const json replayed =
      json::parse(Call("POST", "/api/deliveries/replay", kAdmin, "{\"channel\": " + c + "}").body);
  EXPECT_EQ(replayed["jobs"], 1200);
  EXPECT_EQ(replayed["available"], 1200);
  EXPECT_EQ(replayed["more"], false);
  EXPECT_EQ(Count("state = 'available' AND channel_id = " + c), 1200);
  EXPECT_EQ(Count("state = 'discarded'"), 5) << "the other channel's are left alone";
  const json log = Read("/api/actions");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["action"], "replay");
  EXPECT_EQ(log[0]["jobs"], 1200);
  EXPECT_EQ(log[0]["filter"]["channel"], channel_);
}

TEST_F(ConsoleTest, ReplayAndCancelOneDelivery) {
  const int64_t discarded = Discard(channel_, 1)[0];
  const int64_t waiting = EnqueueOne(other_);
  EXPECT_EQ(Call("POST", "/api/deliveries/" + std::to_string(waiting) + "/replay", kAdmin).status,
            409);
  EXPECT_EQ(Call("POST", "/api/deliveries/" + std::to_string(discarded) + "/replay", kAdmin).status,
            200);
  EXPECT_EQ(Call("POST", "/api/deliveries/" + std::to_string(waiting) + "/cancel", kAdmin).status,
            200);
  EXPECT_EQ(Count("state = 'cancelled'"), 1);
  EXPECT_EQ(Count("state = 'available'"), 1);
  EXPECT_EQ(Call("POST", "/api/deliveries/" + std::to_string(waiting) + "/cancel", kAdmin).status,
            409);
  EXPECT_EQ(Call("POST", "/api/deliveries/99999/cancel", kAdmin).status, 404);
  EXPECT_EQ(Read("/api/actions").size(), 2u);
}

// ---- TLS, and the verb's checks before it serves ----

TEST_F(ConsoleTest, ServesTlsWithTheGivenCertificate) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("console_tls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                         "-addext subjectAltName=IP:127.0.0.1 -keyout " +
                         key + " -out " + cert + " 2>/dev/null")
                            .c_str()),
            0);
  console::ConsoleServer tls({.listen = "127.0.0.1:0", .tls_cert = cert, .tls_key = key},
                             [this](const console::Request& r) { return app_->Handle(r); });
  ASSERT_TRUE(tls.ok()) << tls.error();
  const std::string url = "https://127.0.0.1:" + std::to_string(tls.port());
  HttpReply reply = Send({.url = url + "/api/session",
                          .headers = {"Authorization: Bearer " + std::string(kAdmin)},
                          .ca_file = cert});
  EXPECT_EQ(reply.status, 200);
  HttpReply login = Send({.method = "POST",
                          .url = url + "/login",
                          .body = "token=" + std::string(kAdmin),
                          .ca_file = cert});
  EXPECT_NE(login.Header("set-cookie").find("; Secure"), std::string::npos);
  EXPECT_EQ(Send({.url = "http://127.0.0.1:" + std::to_string(tls.port()) + "/login"}).status, 0)
      << "plain HTTP is not answered on the TLS port";
  std::filesystem::remove_all(dir);
}

class ConsoleCommandTest : public CliTest {};

TEST_F(ConsoleCommandTest, RefusesWhatCannotBeServedSafely) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("console_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  const std::string good = write("good", "a-token-long-enough-1\n");
  const std::string shorter = write("short", "short\n");
  ExpectUsageError({"console", "--token-file", good}, "--listen HOST:PORT is required");
  ExpectUsageError({"console", "--listen", "127.0.0.1:0"}, "--token-file FILE is required");
  ExpectUsageError({"console", "--listen", "127.0.0.1:0", "--token-file", shorter},
                   "at least 16 characters");
  ExpectUsageError({"console", "--listen", "127.0.0.1:0", "--token-file", (dir / "none").string()},
                   "cannot read the file");
  ExpectUsageError({"console", "--listen", "0.0.0.0:8080", "--token-file", good},
                   "is not a loopback address");
  ExpectUsageError({"console", "--listen", "127.0.0.1:0", "--token-file", good, "--tls-cert", good},
                   "--tls-cert and --tls-key go together");
  ExpectUsageError(
      {"console", "--listen", "127.0.0.1:0", "--token-file", good, "--viewer-token-file", good},
      "must differ");
  ExpectUnreachableDatabaseError({{"console", "--listen", "127.0.0.1:0", "--token-file", good}});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bulkhead::testing
