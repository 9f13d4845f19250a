// WebhookRequest: a claimed job becomes a signed POST — the headers in order, the signature a
// receiver verifies with any one secret of a rotation, and the secret that cannot sign.
#include "webhook_request.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "version.h"
#include "webhook_signature.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;

const std::string kCurrent = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const std::string kOld = "whsec_dGhlIG9sZCBzZWNyZXQsIHN0aWxsIGluIGl0cyB3aW5kb3c=";
const std::string kOlder = "whsec_YW4gZXZlbiBvbGRlciBvbmUsIHJldGlyZWQgZmlyc3Q=";
// 2021-02-25T15:02:10.750Z: the timestamp is its whole seconds.
const auto kNow = std::chrono::system_clock::time_point(milliseconds(1614265330750));

ClaimedJob Job() {
  ClaimedJob job;
  job.id = 4242;
  job.channel_id = 7;
  job.attempt = 2;
  job.max_attempts = 8;
  job.url = "http://127.0.0.1:8080/hook";
  job.payload = R"({"event":"invoice.paid"})";
  job.secret = kCurrent;
  return job;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> parts;
  std::istringstream in(s);
  for (std::string part; in >> part;) parts.push_back(part);
  return parts;
}

TEST(WebhookRequest, CarriesTheStandardWebhooksHeadersInOrder) {
  ClaimedJob job = Job();
  std::optional<HttpRequest> request =
      BuildWebhookRequest(job, kNow, {milliseconds(1500), milliseconds(7000)});
  ASSERT_TRUE(request);
  EXPECT_EQ(request->url, "http://127.0.0.1:8080/hook");
  EXPECT_EQ(request->body, R"({"event":"invoice.paid"})");
  EXPECT_EQ(request->connect_timeout, milliseconds(1500));
  EXPECT_EQ(request->request_timeout, milliseconds(7000));
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"content-type", "application/json"},
      {"user-agent", std::string("Bulkhead/") + kVersion},
      {"webhook-id", "4242"},
      {"webhook-timestamp", "1614265330"},
      {"webhook-signature",
       *SignWebhook(kCurrent, "4242", 1614265330, R"({"event":"invoice.paid"})")}};
  EXPECT_EQ(request->headers, expected);
}

TEST(WebhookRequest, SignsWithEverySecretOfARotationCurrentFirst) {
  ClaimedJob job = Job();
  job.old_secrets = {kOld, kOlder};
  std::optional<HttpRequest> request = BuildWebhookRequest(job, kNow, {});
  ASSERT_TRUE(request);
  ASSERT_EQ(request->headers.size(), 5u);
  ASSERT_EQ(request->headers[4].first, "webhook-signature");
  const std::vector<std::string> signatures = Split(request->headers[4].second);
  const std::string body = R"({"event":"invoice.paid"})";
  EXPECT_EQ(signatures, (std::vector<std::string>{*SignWebhook(kCurrent, "4242", 1614265330, body),
                                                  *SignWebhook(kOld, "4242", 1614265330, body),
                                                  *SignWebhook(kOlder, "4242", 1614265330, body)}));
}

TEST(WebhookRequest, TheIdStaysAndTheTimestampMovesAcrossAttempts) {
  ClaimedJob first = Job();
  ClaimedJob second = Job();
  second.attempt = 3;
  auto a = BuildWebhookRequest(first, kNow, {});
  auto b = BuildWebhookRequest(second, kNow + std::chrono::seconds(5), {});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->headers[2], b->headers[2]);
  EXPECT_EQ(b->headers[3].second, "1614265335");
  EXPECT_NE(a->headers[4], b->headers[4]);
}

TEST(WebhookRequest, ASecretThatCannotSignGivesNoRequest) {
  ClaimedJob job = Job();
  job.secret = "not-a-secret";
  EXPECT_FALSE(BuildWebhookRequest(job, kNow, {}));
}

}  // namespace
}  // namespace bulkhead
