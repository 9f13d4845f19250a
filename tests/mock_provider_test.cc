// The load harness's mock provider (load/mock/) over real loopback HTTP: each route's answer
// and timing, hanging requests, duplicate counting, signature checks and the control routes.
// The server runs in-process; requests go through libcurl, or raw sockets where a test needs
// thousands of connections.
#include "mock_provider.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "request_log.h"
#include "route_behaviour.h"
#include "webhook_signature.h"

namespace bulkhead::mock {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A Standard Webhooks secret of 32 key bytes (base64 of "0123456789abcdef0123456789abcdef").
constexpr const char* kSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

class CurlEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK); }
};
const auto* const kCurl = ::testing::AddGlobalTestEnvironment(new CurlEnvironment);

struct Response {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::string headers;  // the response's header lines, as received
  std::chrono::milliseconds took{0};
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Response Send(const std::string& url, const std::string& method = "GET",
              const std::string& body = {}, std::vector<std::string> headers = {},
              long timeout_ms = 10000) {
  Response r;
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.headers);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  auto start = Clock::now();
  r.code = curl_easy_perform(curl);
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return r;
}

class MockProviderTest : public ::testing::Test {
 protected:
  MockProviderTest() : mock_(Options()) { mock_.Start(); }

  static MockOptions Options() {
    MockOptions o;
    o.port = 0;
    o.seed = 42;
    return o;
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(mock_.port()) + path;
  }
  nlohmann::json Stats() {
    Response r = Send(Url("/_mock/stats"));
    EXPECT_EQ(r.status, 200);
    return nlohmann::json::parse(r.body);
  }
  nlohmann::json Route(const std::string& route) { return Stats()["routes"][route]; }
  // Waits for a route's in-flight count to reach `n`; false after 10 s.
  bool WaitForInFlight(const std::string& route, int64_t n) {
    for (auto deadline = Clock::now() + 10s; Clock::now() < deadline;
         std::this_thread::sleep_for(10ms)) {
      auto r = Route(route);
      if (!r.is_null() && r["in_flight"] == n) return true;
    }
    return false;
  }

  MockProvider mock_;
};

TEST_F(MockProviderTest, HealthyAnswers200AfterTwentyToThirtyMilliseconds) {
  for (int i = 0; i < 5; ++i) {
    Response r = Send(Url("/hook/healthy"), "POST", "{}");
    ASSERT_EQ(r.code, CURLE_OK);
    EXPECT_EQ(r.status, 200);
    EXPECT_GE(r.took, 20ms);
    EXPECT_LT(r.took, 1000ms);  // 30 ms and scheduling; generous for a loaded machine
  }
}

TEST_F(MockProviderTest, FastAnswersAtOnce) {
  Response r = Send(Url("/hook/fast"), "POST", "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_LT(r.took, 1000ms);
}

TEST_F(MockProviderTest, HangDeadNeverAnswersAndIsInFlightUntilTheClientCloses) {
  Response r = Send(Url("/hook/hang-dead"), "POST", "{}", {"webhook-id: 7"}, 300);
  EXPECT_EQ(r.code, CURLE_OPERATION_TIMEDOUT);
  auto route = Route("/hook/hang-dead");
  EXPECT_EQ(route["requests"], 1);
  EXPECT_EQ(route["answers"]["hang"], 1);
  EXPECT_EQ(route["max_in_flight"], 1);
  EXPECT_TRUE(WaitForInFlight("/hook/hang-dead", 0));  // curl closed the connection
}

TEST_F(MockProviderTest, StatusAndDelayComeFromTheQuery) {
  Response r = Send(Url("/hook/x?status=503&delay_ms=100"), "POST", "{}");
  EXPECT_EQ(r.status, 503);
  EXPECT_GE(r.took, 100ms);
  EXPECT_EQ(Send(Url("/hook/x?status=204")).status, 204);
  EXPECT_EQ(Route("/hook/x")["answers"]["503"], 1);
}

TEST_F(MockProviderTest, FailFractionZeroNeverFailsAndOneAlwaysDoes) {
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Send(Url("/hook/f?fail=0")).status, 200);
    EXPECT_EQ(Send(Url("/hook/f?fail=1&fail_status=429")).status, 429);
  }
}

TEST_F(MockProviderTest, FailFractionFailsAboutThatShare) {
  int failed = 0;
  for (int i = 0; i < 200; ++i) failed += Send(Url("/hook/f?fail=0.5")).status == 503;
  EXPECT_GT(failed, 60);  // binomial(200, 0.5): 60..140 holds but for 1 in 10^8
  EXPECT_LT(failed, 140);
}

TEST_F(MockProviderTest, HugeBodyArrivesWhole) {
  Response r = Send(Url("/hook/big?body_bytes=5000000"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 5000000u);
}

TEST_F(MockProviderTest, SlowDripBodyTakesItsTime) {
  Response r = Send(Url("/hook/drip?body_bytes=10&drip_ms=30&drip_bytes=2"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, std::string(10, 'x'));
  EXPECT_GE(r.took, 150ms);  // 5 drips, 30 ms apart
}

TEST_F(MockProviderTest, RetryAfterAndLocationAreSentAsHeaders) {
  Response seconds = Send(Url("/hook/x?status=429&retry_after=120"));
  EXPECT_EQ(seconds.status, 429);
  EXPECT_NE(seconds.headers.find("\r\nRetry-After: 120\r\n"), std::string::npos) << seconds.headers;
  Response date =
      Send(Url("/hook/x?status=503&retry_after=Sun,%2006%20Nov%201994%2008:49:37%20GMT"));
  EXPECT_EQ(date.status, 503);
  EXPECT_NE(date.headers.find("\r\nRetry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n"),
            std::string::npos)
      << date.headers;
  Response moved = Send(Url("/hook/r?status=302&location=http://127.0.0.1:1/elsewhere"));
  EXPECT_EQ(moved.status, 302);  // Send does not follow redirects
  EXPECT_NE(moved.headers.find("\r\nLocation: http://127.0.0.1:1/elsewhere\r\n"), std::string::npos)
      << moved.headers;
  EXPECT_EQ(Send(Url("/hook/x")).headers.find("Retry-After"), std::string::npos);
}

TEST_F(MockProviderTest, HeaderParametersRefuseLineBreaks) {
  Response injected = Send(Url("/hook/x?status=429&retry_after=1%0D%0AX-Evil:%201"));
  EXPECT_EQ(injected.status, 400);
  EXPECT_NE(injected.body.find("retry_after"), std::string::npos);
  EXPECT_EQ(Send(Url("/hook/x?location=")).status, 400);
  EXPECT_EQ(Send(Url("/hook/x?location=%zz")).status, 400);
}

TEST_F(MockProviderTest, GarbageIsNotHttp) {
  Response r = Send(Url("/hook/g?garbage=1"), "POST", "{}");
  EXPECT_NE(r.code, CURLE_OK);
  EXPECT_NE(r.code, CURLE_OPERATION_TIMEDOUT);  // it answers at once, with nonsense
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(Route("/hook/g")["requests"], 1);
}

TEST_F(MockProviderTest, AnEndlessBodyRunsUntilTheClientGivesUp) {
  Response r = Send(Url("/hook/e?endless=1&drip_ms=10&drip_bytes=5"), "POST", "{}", {}, 500);
  EXPECT_EQ(r.code, CURLE_OPERATION_TIMEDOUT);
  EXPECT_EQ(r.status, 200);
  EXPECT_GT(r.body.size(), 0u);
  EXPECT_EQ(r.body.size() % 5, 0u);
  EXPECT_TRUE(WaitForInFlight("/hook/e", 0));  // the mock saw the client go
}

TEST_F(MockProviderTest, BadParametersAre400AndOtherPaths404) {
  Response bad = Send(Url("/hook/x?delay_ms=abc"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("delay_ms"), std::string::npos);
  EXPECT_EQ(Send(Url("/hook/x?nope=1")).status, 400);
  EXPECT_EQ(Send(Url("/elsewhere")).status, 404);
  EXPECT_EQ(Send(Url("/_mock/nothing")).status, 404);
}

TEST_F(MockProviderTest, CountsDuplicatesByWebhookId) {
  for (const char* id : {"1", "2", "1", "1"}) {
    Send(Url("/hook/fast"), "POST", "{}", {std::string("webhook-id: ") + id});
  }
  auto route = Route("/hook/fast");
  EXPECT_EQ(route["requests"], 4);
  EXPECT_EQ(route["unique_ids"], 2);
  EXPECT_EQ(route["duplicates"], 2);
}

TEST_F(MockProviderTest, RecordsCarryTheSendTimeAndPageBySince) {
  Send(Url("/hook/fast"), "POST", R"({"n": 1, "sent_at_us": 1700000000000001})", {"webhook-id: 5"});
  Send(Url("/hook/healthy"), "POST", R"({"n": 2})", {"webhook-id: 6"});
  auto all = nlohmann::json::parse(Send(Url("/_mock/records")).body);
  ASSERT_EQ(all["records"].size(), 2u);
  EXPECT_EQ(all["records"][0]["sent_at_us"], 1700000000000001);
  EXPECT_EQ(all["records"][0]["webhook_id"], "5");
  EXPECT_EQ(all["records"][1]["sent_at_us"], -1);
  EXPECT_GT(all["records"][1]["received_at_us"].get<int64_t>(), 1700000000000000);
  auto later = nlohmann::json::parse(Send(Url("/_mock/records?since=1")).body);
  ASSERT_EQ(later["records"].size(), 1u);
  EXPECT_EQ(later["records"][0]["route"], "/hook/healthy");
  auto healthy = nlohmann::json::parse(Send(Url("/_mock/records?route=%2Fhook%2Fhealthy")).body);
  EXPECT_EQ(healthy["records"].size(), 1u);
  EXPECT_EQ(Send(Url("/_mock/reset"), "POST").status, 200);
  EXPECT_EQ(Stats()["records"], 0);
}

TEST_F(MockProviderTest, VerifiesSignaturesAgainstTheGivenSecrets) {
  std::string body = R"({"n": 1})";
  std::string signature = *SignWebhook(kSecret, "9", 1700000000, body);
  auto send = [&](const std::string& sig) {
    Send(Url("/hook/fast"), "POST", body,
         {"webhook-id: 9", "webhook-timestamp: 1700000000", "webhook-signature: " + sig});
  };
  send(signature);  // no secret known yet: unchecked
  ASSERT_EQ(Send(Url("/_mock/secrets"), "POST", std::string("[\"") + kSecret + "\"]").status, 200);
  send(signature);                                           // valid
  send("v1,AAAA " + signature);                              // valid: one of several matches
  send("v1,Zm9yZ2VkIHNpZ25hdHVyZQ==");                       // invalid
  Send(Url("/hook/fast"), "POST", body, {"webhook-id: 9"});  // missing
  auto signatures = Route("/hook/fast")["signatures"];
  EXPECT_EQ(signatures["unchecked"], 1);
  EXPECT_EQ(signatures["valid"], 2);
  EXPECT_EQ(signatures["invalid"], 1);
  EXPECT_EQ(signatures["missing"], 1);
  EXPECT_EQ(Send(Url("/_mock/secrets"), "POST", "[\"not a secret\"]").status, 400);
}

// The receiver's rule during a rotation: the worker's header (SignWebhookAll: new secret first,
// then the old one) verifies with either secret alone, and with neither it does not.
TEST_F(MockProviderTest, AcceptsARotationHeaderWhenAnyOfItsSignaturesVerifies) {
  const std::string old_secret = kSecret;
  const std::string new_secret = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=";
  const std::string other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string body = R"({"n": 2})";
  const std::vector<std::string> old_secrets = {old_secret};
  const std::string header = *SignWebhookAll(new_secret, old_secrets, "10", 1700000000, body);
  auto check = [&](const std::string& secret) {
    EXPECT_EQ(Send(Url("/_mock/secrets"), "POST", "[\"" + secret + "\"]").status, 200);
    Send(Url("/hook/rotation"), "POST", body,
         {"webhook-id: 10", "webhook-timestamp: 1700000000", "webhook-signature: " + header});
  };
  check(old_secret);  // a receiver that has not switched yet: the second signature verifies
  check(new_secret);  // one that has: the first verifies
  check(other);       // neither
  auto signatures = Route("/hook/rotation")["signatures"];
  EXPECT_EQ(signatures["valid"], 2);
  EXPECT_EQ(signatures["invalid"], 1);
}

TEST_F(MockProviderTest, HoldsTwoThousandUnansweredConnections) {
  // Both ends live in this process: two descriptors a connection, under the limit the mock
  // raised to the hard one. A machine with a lower hard limit tests fewer.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const int kConnections = static_cast<int>(std::min<rlim_t>(2000, (limit.rlim_cur - 200) / 2));
  std::vector<int> sockets;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(mock_.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string request = "POST /hook/hang-dead HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  for (int i = 0; i < kConnections; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    sockets.push_back(fd);
  }
  EXPECT_TRUE(WaitForInFlight("/hook/hang-dead", kConnections));
  // The server still answers others at once while it holds them.
  Response r = Send(Url("/hook/fast"));
  EXPECT_EQ(r.status, 200);
  EXPECT_LT(r.took, 1000ms);
  for (int fd : sockets) close(fd);
  EXPECT_TRUE(WaitForInFlight("/hook/hang-dead", 0));
  EXPECT_EQ(Route("/hook/hang-dead")["max_in_flight"], kConnections);
}

TEST(RouteBehaviour, PresetsAndParameters) {
  auto healthy = ParseRoute("/hook/healthy").behaviour;
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->delay_min, 20ms);
  EXPECT_EQ(healthy->delay_max, 30ms);
  auto dead = ParseRoute("/hook/hang-dead?hang=0&status=500").behaviour;
  ASSERT_TRUE(dead);
  EXPECT_FALSE(dead->hang);
  EXPECT_EQ(dead->status, 500);
  EXPECT_EQ(ParseRoute("/hook/x?delay_ms=30-20").error.find("delay_ms"), 0u);
  EXPECT_FALSE(ParseRoute("/hook/").behaviour);
  EXPECT_FALSE(ParseRoute("/hook/x?fail=1.5").behaviour);
  auto hostile =
      ParseRoute("/hook/h?retry_after=5&location=%2Fthere&garbage=1&endless=1").behaviour;
  ASSERT_TRUE(hostile);
  EXPECT_EQ(hostile->retry_after, "5");
  EXPECT_EQ(hostile->location, "/there");
  EXPECT_TRUE(hostile->garbage);
  EXPECT_TRUE(hostile->endless);
  EXPECT_FALSE(ParseRoute("/hook/x?garbage=2").behaviour);
  EXPECT_FALSE(ParseRoute("/hook/x?retry_after=%0A").behaviour);
}

TEST(SentAtFromBody, FindsTheNumberOrSaysNone) {
  EXPECT_EQ(SentAtFromBody(R"({"a": 1, "sent_at_us": 123, "b": 2})"), 123);
  EXPECT_EQ(SentAtFromBody(R"({"sent_at_us":456})"), 456);
  EXPECT_EQ(SentAtFromBody(R"({"sent_at_us": "x"})"), -1);
  EXPECT_EQ(SentAtFromBody(R"({"other": 1})"), -1);
}

}  // namespace
}  // namespace bulkhead::mock
