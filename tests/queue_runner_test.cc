// QueueRunner built directly, from real parts — its own StoreConnection to the throwaway
// PostgreSQL, a CompletionWriter, a BreakerKeeper, an HttpSender whose guard lets loopback
// through — sending to the loopback HttpReceiver of tests/harness. No node process, no mocks.
//
// - an enqueue and a Wake() make a signed delivery that completes;
// - a 410 disables the channel (EndpointAnswers, on the runner's connection);
// - a 503 with Retry-After pushes the job and its channel's waiting jobs later;
// - a wake-up's claim lends nothing, and the claim right after it lends; after three such
//   claims that took nothing, wake-ups lend at once for a poll interval;
// - a request still in flight at a stop is handed back without spending its attempt.
#include "queue_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "breaker_keeper.h"
#include "claim_store.h"
#include "completion_writer.h"
#include "database_test.h"
#include "fleet_store.h"
#include "http_receiver.h"
#include "http_sender.h"
#include "network_guard.h"
#include "poll.h"
#include "store_connection.h"
#include "tenancy.h"
#include "webhook_signature.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::HttpReceiver;
using testing::QueryValue;
using testing::Reply;

constexpr const char* kNode = "runner-test";

class QueueRunnerTest : public testing::DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    tenant_ = testing::CreateTenant(db(), "acme", "default");
    tier_.name = "default";
    tier_.workers = 4;
  }

  // Builds the runner and its collaborators in the order the node does; the poll is a minute,
  // so only the start and Wake() make it claim.
  void Start() {
    writer_ = std::make_unique<CompletionWriter>(CompletionWriter::Options{conninfo(), kNode});
    keeper_ = std::make_unique<BreakerKeeper>(BreakerKeeper::Options{conninfo(), {tier_}});
    store_ = std::make_unique<StoreRunnerStore>(conninfo(), "claim:default");
    HttpSender::Options sender_options;
    sender_options.guard = NetworkGuard({std::get<Network>(ParseCidr("127.0.0.0/8"))});
    sender_ = std::make_unique<HttpSender>(std::move(sender_options));
    runner_ =
        std::make_unique<QueueRunner>(QueueRunner::Options{tier_, kNode, seconds(60), nullptr},
                                      *store_, *sender_, *writer_, *keeper_);
  }

  // The node's shutdown order: stop claiming, then the sender before the runner.
  void TearDown() override {
    if (runner_) runner_->StopClaiming();
    sender_.reset();
    runner_.reset();
    store_.reset();
    keeper_.reset();
    writer_.reset();
    DatabaseTest::TearDown();
  }

  // Waits until no claim has run for 300 ms and nothing is in flight, or `in_flight` is;
  // returns the claims run by then. A claim may follow the last end or wake-up (it takes
  // nothing), so the count is read only once it stands still.
  uint64_t Settled(size_t in_flight = 0) {
    uint64_t claims = 0;
    EXPECT_TRUE(testing::PollUntil(
        [&] {
          claims = Claims();
          std::this_thread::sleep_for(milliseconds(300));
          return runner_->in_flight() == in_flight && Claims() == claims;
        },
        seconds(10)));
    return claims;
  }

  // For the lending tests: a receiver that answers at once until `hang_` is set and then never,
  // a channel to it, a tier of `workers` where nothing stalls, the runner started, and `quick`
  // jobs delivered, whose quick answers grew the channel's window (so it is lent to). Returns
  // the channel, with nothing in flight and the claims settled.
  int64_t LentToChannel(int workers, int quick) {
    receiver_ = std::make_unique<HttpReceiver>([this](const testing::ReceivedRequest&) {
      Reply reply;
      reply.hang = hang_.load();
      return reply;
    });
    const int64_t channel = testing::CreateChannel(db(), tenant_, receiver_->Url("/hook"));
    tier_.workers = workers;
    tier_.stalled_after_ms = tier_.request_timeout_ms = 600000;  // nothing stalls meanwhile
    tier_.slow_call_ms = 600000;  // and no breaker opens on the hanging requests
    Start();
    WaitForFirstClaim();
    for (int i = 0; i < quick; ++i) Enqueue(channel);
    runner_->Wake();
    EXPECT_TRUE(WaitFor("count(*) = " + std::to_string(quick) +
                        " FROM bulkhead.jobs WHERE state = 'completed'"));
    return channel;
  }

  // A channel to `receiver` at `path` (in *channel), the runner started, and one job enqueued
  // and woken for, whose request has reached the receiver; returns the job, 0 if none arrived.
  int64_t StartAndSendOne(const HttpReceiver& receiver, const std::string& path, int64_t* channel) {
    *channel = testing::CreateChannel(db(), tenant_, receiver.Url(path));
    Start();
    WaitForFirstClaim();
    const int64_t job = Enqueue(*channel);
    runner_->Wake();
    return receiver.WaitForRequests(1, seconds(10)) ? job : 0;
  }

  // The claims a runner that took work and then found nothing adds on its way to sleep: the one
  // right after it marks itself asleep (SleepMark, ADR 0019). Its horizon's claims (ADR 0030)
  // depend on other tests' transactions on the cluster and are not counted: see Claims().
  static constexpr uint64_t kSleepClaims = 1;

  // The runner's claims less those its sleeping horizon started.
  uint64_t Claims() const { return runner_->claims() - runner_->horizon_claims(); }

  // Waits until the runner's first claim (at start, of an empty queue) has run.
  void WaitForFirstClaim() {
    testing::PollUntil([&] { return runner_->claims() >= 1u; }, seconds(10));
    ASSERT_GE(runner_->claims(), 1u);
  }

  int64_t Enqueue(int64_t channel) {
    return QueryValue<int64_t>(
        db(), "SELECT bulkhead.enqueue(" + std::to_string(channel) + ", '{\"n\": 1}'::jsonb)");
  }

  std::string Job(int64_t id, const std::string& column) {
    return QueryValue<std::string>(
        db(), "SELECT " + column + "::text FROM bulkhead.jobs WHERE id = " + std::to_string(id));
  }

  int64_t tenant_ = 0;
  TierOptions tier_;
  std::atomic<bool> hang_{false};
  std::unique_ptr<HttpReceiver> receiver_;  // LentToChannel's; outlives the sender
  std::unique_ptr<CompletionWriter> writer_;
  std::unique_ptr<BreakerKeeper> keeper_;
  std::unique_ptr<StoreRunnerStore> store_;
  std::unique_ptr<HttpSender> sender_;
  std::unique_ptr<QueueRunner> runner_;
};

TEST_F(QueueRunnerTest, AnEnqueueAndAWakeMakeASignedDeliveryThatCompletes) {
  HttpReceiver receiver;
  const int64_t channel = testing::CreateChannel(db(), tenant_, receiver.Url("/hook"));
  Start();
  WaitForFirstClaim();
  const int64_t job = Enqueue(channel);
  runner_->Wake();
  ASSERT_TRUE(WaitFor("state = 'completed' FROM bulkhead.jobs WHERE id = " + std::to_string(job)));
  EXPECT_EQ(Job(job, "attempt"), "1");
  EXPECT_EQ(runner_->claimed(), 1u);
  EXPECT_EQ(runner_->in_flight(), 0u);

  ASSERT_EQ(receiver.request_count(), 1u);
  const testing::ReceivedRequest request = receiver.Requests()[0];
  EXPECT_EQ(request.path, "/hook");
  EXPECT_EQ(request.headers.at("webhook-id"), std::to_string(job));
  const std::string secret = QueryValue<std::string>(
      db(), "SELECT secret FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  EXPECT_EQ(request.headers.at("webhook-signature"),
            SignWebhook(secret, std::to_string(job),
                        std::stoll(request.headers.at("webhook-timestamp")), request.body));
}

TEST_F(QueueRunnerTest, A410DisablesTheChannelAndParksTheJobWithItsAttemptNotSpent) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    Reply reply;
    reply.status = 410;
    return reply;
  });
  const int64_t channel = testing::CreateChannel(db(), tenant_, receiver.Url("/gone"));
  Start();
  WaitForFirstClaim();
  const int64_t job = Enqueue(channel);
  runner_->Wake();
  ASSERT_TRUE(WaitFor("NOT enabled FROM bulkhead.channels WHERE id = " + std::to_string(channel)));
  EXPECT_TRUE(
      WaitFor("state = 'parked' AND attempt = 0 AND last_error = 'HTTP 410' "
              "FROM bulkhead.jobs WHERE id = " +
              std::to_string(job)));
  // Counted after DisableGone commits (EndpointAnswers::Run): under ThreadSanitizer the test
  // read 0 here once, right after seeing the channel disabled. Polled for that reason.
  EXPECT_TRUE(testing::PollUntil([&] { return runner_->channels_gone() == 1u; }, seconds(10)));
  EXPECT_EQ(runner_->channels_gone(), 1u);
}

TEST_F(QueueRunnerTest, A503WithRetryAfterPushesTheJobAndItsChannelsWaitingJobsLater) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    // After 200 ms: the runner's claims after the first (one that brings the channel to its cap
    // claims again at once) are over, so the snooze, not a claim, is what meets the waiting job.
    Reply reply;
    reply.status = 503;
    reply.headers = {{"Retry-After", "120"}};
    reply.delay = milliseconds(200);
    return reply;
  });
  const int64_t channel = testing::CreateChannel(db(), tenant_, receiver.Url("/busy"));
  tier_.workers = 2;  // a channel's cap is 1 at the default share: one job sent, one waits
  Start();
  WaitForFirstClaim();
  const int64_t answering = Enqueue(channel);
  const int64_t waiting = Enqueue(channel);
  runner_->Wake();
  ASSERT_TRUE(receiver.WaitForRequests(1, seconds(10)));
  // Both wait the asked 120 s: the answering job's retry (not the schedule's first 5 s), and
  // the waiting one by its channel's snooze.
  for (int64_t job : {answering, waiting}) {
    EXPECT_TRUE(
        WaitFor("state = 'available' AND scheduled_at > now() + interval '100 seconds' "
                "FROM bulkhead.jobs WHERE id = " +
                std::to_string(job)))
        << job;
  }
  EXPECT_EQ(receiver.request_count(), 1u);
  EXPECT_GE(runner_->snoozed(), 2u);  // the answering job's own wait, and its channel's
}

// ADR 0015: the claim an enqueue's wake-up starts takes what the caps let through and lends
// nothing; the claim right after it lends. A lone tenant's channel that has answered quickly
// (so it is lent to) then hangs: the wake-up's claim takes its cap of 10, the next claim lends
// 8 more (20 workers less the reserve of 2), and nothing else claims. One claim used to take
// all 18, and a 50/s tenant's job waited for it to lock and write the lent ones.
TEST_F(QueueRunnerTest, AWakeUpsClaimLendsNothingAndTheClaimRightAfterItLends) {
  // Caps of 10 for the channel and the tenant, a reserve of 2.
  const int64_t channel = LentToChannel(20, 12);
  const uint64_t settled = Settled();

  hang_ = true;
  for (int i = 0; i < 30; ++i) Enqueue(channel);
  runner_->Wake();
  ASSERT_TRUE(receiver_->WaitForRequests(12 + 18, seconds(10)));
  EXPECT_EQ(runner_->tenant_in_flight(tenant_), 18);
  EXPECT_EQ(Settled(18), settled + 2 + kSleepClaims);
  EXPECT_EQ(runner_->claimed(), 12u + 18u);
  EXPECT_EQ(receiver_->request_count(), 12u + 18u);
}

// A lone borrower's own enqueues are held by its cap: a wake-up's claim then takes nothing, and
// the claim after it lends. After three such claims in a row, wake-ups claim as any claim does
// (lending at once, one claim) for a poll interval (NewsClaims).
TEST_F(QueueRunnerTest, AfterThreeWakeUpClaimsThatTookNothingAWakeUpLendsAtOnce) {
  // Caps of 20 for the channel and the tenant, a reserve of 4.
  const int64_t channel = LentToChannel(40, 30);
  uint64_t claims = Settled();

  hang_ = true;
  for (int i = 0; i < 20; ++i) Enqueue(channel);
  runner_->Wake();  // takes the tenant's cap of 20; nothing held back, nothing to lend
  ASSERT_TRUE(receiver_->WaitForRequests(30 + 20, seconds(10)));
  EXPECT_EQ(Settled(20), claims + 1 + kSleepClaims);
  claims += 1 + kSleepClaims;
  for (int n = 1; n <= 4; ++n) {
    Enqueue(channel);
    runner_->Wake();
    ASSERT_TRUE(receiver_->WaitForRequests(50 + n, seconds(10))) << n;
    const uint64_t now = Settled(20 + n);
    // Wake-ups 1–3: a claim that takes nothing, then one that lends the job. Wake-up 4: one.
    EXPECT_EQ(now - claims, (n <= 3 ? 2u : 1u) + kSleepClaims) << "wake-up " << n;
    claims = now;
  }
  EXPECT_EQ(runner_->tenant_in_flight(tenant_), 24);
}

TEST_F(QueueRunnerTest, ARequestInFlightAtAStopIsHandedBackWithItsAttemptNotSpent) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    Reply reply;
    reply.hang = true;
    return reply;
  });
  int64_t channel = 0;
  const int64_t job = StartAndSendOne(receiver, "/hang", &channel);
  ASSERT_NE(job, 0);
  EXPECT_EQ(runner_->in_flight(), 1u);
  EXPECT_EQ(runner_->channel_in_flight(channel), 1);
  runner_->StopClaiming();
  EXPECT_EQ(runner_->HandBackInFlight(), 1);
  EXPECT_EQ(runner_->in_flight(), 0u);
  EXPECT_EQ(Job(job, "state"), "available");
  EXPECT_EQ(Job(job, "attempt"), "0");
}

// Issue 31, defect 2. After a database outage longer than the lease, the leader (this very node,
// re-elected) rescues the node's own jobs before its heartbeat lands, and the runner claims one
// again while its first request is still in flight. The request on the wire answers for the new
// attempt: the job is not sent twice, counted in the caps once, and completes. Before, the
// second claim sent it again and counted it again, the first answer was dropped, and the
// channel's and tenant's counts stayed one too high for the life of the process.
TEST_F(QueueRunnerTest, AJobRescuedWhileItsAttemptIsInFlightHereIsNeitherSentNorCountedTwice) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    Reply reply;
    reply.delay = milliseconds(1500);
    return reply;
  });
  int64_t channel = 0;
  const int64_t job = StartAndSendOne(receiver, "/slow", &channel);
  ASSERT_NE(job, 0);
  // This node has no lease row: the rescue takes it for lost.
  FleetStore fleet(db());
  ASSERT_EQ(fleet.RescueLost().jobs, 1);
  // No check of the state here: the runner's own poll may claim the job again at once (a TSan
  // build once read it `executing` already); the wake-up below makes sure it does.
  runner_->Wake();
  ASSERT_TRUE(WaitFor("attempt = 2 FROM bulkhead.jobs WHERE id = " + std::to_string(job)));
  EXPECT_EQ(runner_->channel_in_flight(channel), 1);
  EXPECT_EQ(runner_->tenant_in_flight(tenant_), 1);

  ASSERT_TRUE(WaitFor("state = 'completed' FROM bulkhead.jobs WHERE id = " + std::to_string(job)));
  Settled();
  EXPECT_EQ(receiver.request_count(), 1u);
  EXPECT_EQ(runner_->in_flight(), 0u);
  EXPECT_EQ(runner_->channel_in_flight(channel), 0);
  EXPECT_EQ(runner_->tenant_in_flight(tenant_), 0);
  EXPECT_EQ(Job(job, "attempt"), "2");
}

// Issue 31, defect 3. The board trips a failing channel at once, but the keeper's open commits
// only later: here it waits for a lock another session holds on the channel's row, as it would
// behind a long transition. Meanwhile the channel reads closed in the database, and the runner
// handed its jobs back as it claimed them. With no ledger entry for the channel it counted
// itself below its caps and claimed them again at once: claim and hand back in a tight loop for
// as long as the open took. Now a channel the board knows open is left out of the claims.
TEST_F(QueueRunnerTest, AChannelTheBoardTrippedIsNotClaimedWhileItsOpenIsUnderWay) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    Reply reply;
    reply.status = 500;
    return reply;
  });
  const int64_t channel = testing::CreateChannel(db(), tenant_, receiver.Url("/fail"));
  for (int i = 0; i < 50; ++i) Enqueue(channel);
  auto holder = Connect();
  pqxx::work hold(*holder);
  hold.exec("SELECT 1 FROM bulkhead.channels WHERE id = " + std::to_string(channel) +
            " FOR UPDATE");
  tier_.failure_threshold = 5;
  Start();
  // Five failures trip the board; the keeper's open waits for the lock.
  ASSERT_TRUE(receiver.WaitForRequests(5, seconds(10)));
  std::this_thread::sleep_for(milliseconds(300));  // the hand-backs of the claims after the trip
  const uint64_t before = Claims();
  std::this_thread::sleep_for(seconds(1));
  const uint64_t during = Claims() - before;
  EXPECT_LE(during, 5u) << "claims in the second the open waited";
  hold.abort();
  ASSERT_TRUE(WaitFor("breaker_state = 'open' FROM bulkhead.channels WHERE id = " +
                      std::to_string(channel)));
}

}  // namespace
}  // namespace bulkhead
