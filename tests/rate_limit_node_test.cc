// Rate limits end to end: `bulkhead run` nodes (the real binary) against real PostgreSQL and a
// loopback receiver. A channel's rate_limit_per_s holds across one and two nodes, with a burst
// of at most one second's worth; a limited channel holds no worker while it waits, so an
// unlimited one beside it is not slowed; a raised limit takes effect while the backlog drains;
// and nothing is lost or sent twice.
//
// Time: the assertions are bounds that a loaded machine cannot break — the limit is a ceiling
// on what arrives in any second (a slow machine sends less, never more), and the unlimited
// channel's work must be done while the limited one still has a backlog, which the limit, not
// the machine, makes long. One allowance: the limiter grants its tokens at the database, and
// the receiver counts arrivals, so a send or a read that a loaded (or sanitized) process
// delays moves a request from one second into the next. kArrivalJitter allows two such.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "delivery_test.h"
#include "http_receiver.h"
#include "node_process.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::seconds;
using testing::DeliveryTest;
using testing::HttpReceiver;
using testing::NodeProcess;
using testing::QueryValue;
using testing::ReceivedRequest;
using testing::Reply;

// Requests a delayed send or read may move into a second beside that second's grants. Far
// below what a broken limiter sends: at 10/s with a burst of 10, a node that ignored the limit
// sends all 60 at once, and two nodes that each kept their own bucket send 40 in the first
// second, against the 20 (+ 2) allowed.
constexpr int kArrivalJitter = 2;

class RateLimitNodeTest : public DeliveryTest {
 protected:
  int64_t Channel(const std::string& url, const std::string& rate = "NULL") {
    int64_t tenant = testing::CreateTenant(db(), "tenant-" + std::to_string(++tenants_));
    int64_t channel = testing::CreateChannel(db(), tenant, url);
    Exec("UPDATE bulkhead.channels SET rate_limit_per_s = " + rate +
         " WHERE id = " + std::to_string(channel));
    return channel;
  }

  static nlohmann::json Tier(int workers) {
    // Caps wide open: only the rate limit holds the limited channel back.
    return {{"workers", workers},       {"channel_share", 1},         {"tenant_share", 1},
            {"failure_threshold", 5},   {"slow_call_ms", 10000},      {"cooldown_ms", 60000},
            {"cooldown_max_ms", 60000}, {"connect_timeout_ms", 2000}, {"request_timeout_ms", 10000},
            {"retry_delays_ms", {50}},  {"retry_jitter", 0}};
  }

  static nlohmann::json Node(const std::string& name) {
    return testing::TestNodeConfig(name, {{"shutdown_grace_ms", 1000}});
  }

  // The most requests to `path` the receiver got within any `window` (a sliding window over
  // their arrival times).
  static int MostWithin(const std::vector<ReceivedRequest>& requests, const std::string& path,
                        std::chrono::milliseconds window) {
    std::vector<std::chrono::system_clock::time_point> times;
    for (const auto& r : requests) {
      if (r.path == path) times.push_back(r.received_at);
    }
    std::sort(times.begin(), times.end());
    int most = 0;
    size_t first = 0;
    for (size_t last = 0; last < times.size(); ++last) {
      while (times[last] - times[first] >= window) ++first;
      most = std::max(most, static_cast<int>(last - first + 1));
    }
    return most;
  }

  // Each job id the receiver got at `path`, and how often.
  static std::map<std::string, int> IdsAt(const std::vector<ReceivedRequest>& requests,
                                          const std::string& path) {
    std::map<std::string, int> ids;
    for (const auto& r : requests) {
      if (r.path == path) ++ids[r.headers.at("webhook-id")];
    }
    return ids;
  }

  int tenants_ = 0;
};

// 10/s and a backlog of 60: in any second the limiter grants at most one second's burst (10)
// plus what 10/s adds in that second (10), 20, and nothing goes twice.
TEST_F(RateLimitNodeTest, OneNodeSendsALimitedChannelNoFasterThanItsLimit) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t limited = Channel(receiver.Url("/limited"), "10");
  Enqueue(limited, 60);
  NodeProcess node(Node("node-a"), {{"default", Tier(10)}});
  node.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 60 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << node.Log();
  const auto requests = receiver.Requests();
  EXPECT_LE(MostWithin(requests, "/limited", std::chrono::milliseconds(1000)), 20 + kArrivalJitter);
  // 60 at 10/s after a burst of 10: the last goes no sooner than 5 s after the first.
  std::vector<std::chrono::system_clock::time_point> times;
  for (const auto& r : requests) times.push_back(r.received_at);
  std::sort(times.begin(), times.end());
  EXPECT_GE(times.back() - times.front(), std::chrono::milliseconds(4800));
  std::map<std::string, int> ids = IdsAt(requests, "/limited");
  EXPECT_EQ(ids.size(), 60u);
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << "job " << id << " sent " << n << " times";
}

TEST_F(RateLimitNodeTest, TwoNodesTogetherKeepTheLimitAndHandBackNothingTwice) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t limited = Channel(receiver.Url("/limited"), "10");
  Enqueue(limited, 60);
  NodeProcess a(Node("node-a"), {{"default", Tier(10)}});
  NodeProcess b(Node("node-b"), {{"default", Tier(10)}});
  a.Start(conninfo());
  b.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 60 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << a.Log() << b.Log();
  const auto requests = receiver.Requests();
  EXPECT_LE(MostWithin(requests, "/limited", std::chrono::milliseconds(1000)), 20 + kArrivalJitter);
  std::map<std::string, int> ids = IdsAt(requests, "/limited");
  EXPECT_EQ(ids.size(), 60u);
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << "job " << id << " sent " << n << " times";
  // What went back for want of a token kept its attempt: every job completed at attempt 1.
  EXPECT_EQ(Count("state = 'completed' AND attempt = 1"), 60);
}

TEST_F(RateLimitNodeTest, ALimitedChannelHoldsNoWorkerSoAnUnlimitedOneBesideItIsNotSlowed) {
  // Two workers: had the limited channel's jobs waited in slots for their turn, the other
  // channel would have had none.
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t limited = Channel(receiver.Url("/limited"), "2");
  int64_t free_channel = Channel(receiver.Url("/free"));
  Enqueue(limited, 40);  // 20 s of work at 2/s
  Enqueue(free_channel, 400);
  NodeProcess node(Node("node-a"), {{"default", Tier(2)}});
  node.Start(conninfo());
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 400 FROM bulkhead.jobs WHERE channel_id = " +
                          std::to_string(free_channel) + " AND state = 'completed')",
                      seconds(60)))
      << node.Log();
  // All of the free channel's work is done while most of the limited backlog still waits.
  EXPECT_GT(Count("channel_id = " + std::to_string(limited) + " AND state = 'available'"), 10);
  // Every limited job still arrives, once.
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 440 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << node.Log();
  EXPECT_EQ(IdsAt(receiver.Requests(), "/limited").size(), 40u);
}

TEST_F(RateLimitNodeTest, ARaisedLimitTakesEffectWhileTheBacklogDrains) {
  HttpReceiver receiver([](const ReceivedRequest&) { return Reply{}; });
  int64_t limited = Channel(receiver.Url("/limited"), "1");
  Enqueue(limited, 200);  // 200 s at 1/s
  NodeProcess node(Node("node-a"), {{"default", Tier(10)}});
  node.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) >= 2 FROM bulkhead.jobs WHERE state = 'completed')", seconds(30)))
      << node.Log();
  EXPECT_LT(Count("state = 'completed'"), 20);
  Exec("UPDATE bulkhead.channels SET rate_limit_per_s = 10000 WHERE id = " +
       std::to_string(limited));
  // At 1/s the rest would take over three minutes.
  EXPECT_TRUE(
      WaitFor("(SELECT count(*) = 200 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << node.Log();
}

TEST_F(RateLimitNodeTest, A429WithRetryAfterStillSlowsALimitedChannelFurther) {
  // 1/s: the limit alone spaces the requests a second apart. The first is answered 429 with
  // Retry-After: 3, which pushes the channel's waiting jobs (and that job's retry) 3 s on.
  std::atomic<int> answered{0};
  HttpReceiver receiver([&](const ReceivedRequest&) {
    Reply reply;
    if (answered++ == 0) {
      reply.status = 429;
      reply.headers = {{"Retry-After", "3"}};
    }
    return reply;
  });
  int64_t limited = Channel(receiver.Url("/limited"), "1");
  Enqueue(limited, 3);
  nlohmann::json tier = Tier(10);
  tier["retry_after_max_ms"] = 60000;
  NodeProcess node(Node("node-a"), {{"default", tier}});
  node.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 3 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << node.Log();
  std::vector<std::chrono::system_clock::time_point> times;
  for (const auto& r : receiver.Requests()) times.push_back(r.received_at);
  std::sort(times.begin(), times.end());
  ASSERT_EQ(times.size(), 4u);  // the 429, then three 200s
  // A bound a slow machine cannot break: nothing follows the 429 sooner than its Retry-After
  // (less the second's rounding of the time it was sent with).
  EXPECT_GE(times[1] - times[0], std::chrono::milliseconds(2000));
}

}  // namespace
}  // namespace bulkhead
