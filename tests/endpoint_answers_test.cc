// Endpoint answers end to end: a real `bulkhead run` node sending to the real mock provider
// (load/mock, in this process, on loopback) against the throwaway PostgreSQL. What an
// endpoint says — 429/503 with Retry-After, 410 Gone, a 3xx, a hostile body — and what the
// queue does about it (QueueRunner, ClaimStore::SnoozeChannel, ClaimStore::DisableGone); and
// EndpointAnswers on its own, with time passed in (its once-a-second throttle, its close).
#include "endpoint_answers.h"

#include <gtest/gtest.h>

#include <ctime>
#include <iostream>
#include <thread>

#include "claim_store.h"
#include "cli.h"
#include "completion_writer.h"
#include "mock_provider.h"
#include "node_process.h"
#include "store_connection.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::NodeProcess;
using testing::QueryValue;

class EndpointAnswersTest : public testing::CliTest {
 protected:
  EndpointAnswersTest() : mock_(MockOptions()) { mock_.Start(); }

  static mock::MockOptions MockOptions() {
    mock::MockOptions o;
    o.port = 0;
    o.seed = 7;
    return o;
  }

  std::string MockUrl(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(mock_.port()) + path;
  }

  // Requests the mock received on `route` (a path without the query).
  int64_t Requests(const std::string& route) {
    auto stats = mock_.log().Stats();
    if (!stats["routes"].contains(route)) return 0;
    return stats["routes"][route]["requests"].get<int64_t>();
  }

  // A tenant with one channel to the mock's `path`; returns the channel id.
  int64_t Channel(const std::string& path) {
    static int tenants = 0;
    int64_t tenant = testing::CreateTenant(db(), "answers-" + std::to_string(++tenants));
    return testing::CreateChannel(db(), tenant, MockUrl(path));
  }

  // The breaker stays out of the way (a 429 and a 503 are breaker failures: breaker_node_test
  // covers that); one worker, so that after the first answer every other job is waiting.
  static nlohmann::json Tier(int workers, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json tier = {
        {"workers", workers},          {"channel_share", 1},      {"tenant_share", 1},
        {"failure_threshold", 1000},   {"slow_call_ms", 3600000}, {"connect_timeout_ms", 2000},
        {"request_timeout_ms", 10000}, {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
    tier.update(extra);
    return tier;
  }

  // Seconds from the first attempt of the first job of `channel` to the earliest scheduled_at
  // of the channel's jobs: how long the whole channel was pushed back.
  double EarliestWaitAfterFirstAttempt(int64_t channel) {
    return QueryValue<double>(
        db(),
        "SELECT extract(epoch FROM min(j.scheduled_at) - (SELECT min(attempted_at) FROM "
        "bulkhead.jobs WHERE channel_id = " +
            std::to_string(channel) +
            "))::float8 FROM bulkhead.jobs j WHERE channel_id = " + std::to_string(channel));
  }

  mock::MockProvider mock_;
};

// An IMF-fixdate `ahead` from now, percent-encoded for a mock URL.
std::string EncodedHttpDate(seconds ahead) {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + ahead);
  std::tm tm{};
  gmtime_r(&t, &tm);
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char text[64];
  std::snprintf(text, sizeof(text), "%s,%%20%02d%%20%s%%20%04d%%20%02d:%02d:%02d%%20GMT",
                kDays[tm.tm_wday], tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
                tm.tm_min, tm.tm_sec);
  return text;
}

// ---- The two statements on their own ------------------------------------------------------

TEST_F(EndpointAnswersTest, SnoozeChannelOnlyLengthensAndLeavesOtherChannelsAndParkedJobs) {
  int64_t ch = Channel("/hook/a");
  int64_t other = Channel("/hook/b");
  Enqueue(ch, 4);
  Enqueue(other, 2);
  int64_t first = QueryValue<int64_t>(db(), "SELECT min(id) FROM bulkhead.jobs");
  Exec("UPDATE bulkhead.jobs SET scheduled_at = now() + interval '1 hour' WHERE id = " +
       std::to_string(first));
  Exec("UPDATE bulkhead.jobs SET state = 'parked', priority = 3 WHERE id = " +
       std::to_string(first + 1));
  ClaimStore store(db());

  EXPECT_EQ(store.SnoozeChannel(ch, 5000), 2);  // the two due ones; not the later, not parked

  EXPECT_EQ(Count("channel_id = " + std::to_string(ch) +
                  " AND state = 'available' AND scheduled_at > now() + interval '4 s' AND "
                  "scheduled_at < now() + interval '6 s'"),
            2);
  EXPECT_EQ(Count("id = " + std::to_string(first) +
                  " AND scheduled_at > now() + "
                  "interval '59 min'"),
            1);
  EXPECT_EQ(Count("channel_id = " + std::to_string(other) + " AND scheduled_at <= now()"), 2);
  EXPECT_EQ(store.SnoozeChannel(ch, 1000), 0);  // shorter than what they wait: nothing moves
}

TEST_F(EndpointAnswersTest, DisableGoneIsFencedAndKeepsTheFirstReason) {
  int64_t ch = Channel("/hook/a");
  Enqueue(ch, 3);
  ClaimStore store(db());
  std::vector<ClaimedJob> claimed = store.Claim("default", 2, "node-x");
  ASSERT_EQ(claimed.size(), 2u);

  GoneOutcome gone = store.DisableGone({ch, claimed[0].id, 1, "HTTP 410", 12.5}, "node-x");
  EXPECT_TRUE(gone.disabled);
  EXPECT_EQ(gone.jobs, 2);  // the answering job and the one waiting; not the other in flight
  std::string reason = QueryValue<std::string>(
      db(), "SELECT disabled_reason FROM bulkhead.channels WHERE id = " + std::to_string(ch));

  // Another node's stale answer for the second job (not its claim): the job is not touched.
  GoneOutcome stale = store.DisableGone({ch, claimed[1].id, 1, "HTTP 410", 1}, "node-y");
  EXPECT_FALSE(stale.disabled);
  EXPECT_EQ(stale.jobs, 0);
  EXPECT_EQ(Count("id = " + std::to_string(claimed[1].id) + " AND state = 'executing'"), 1);
  // Its own answer parks it, and the reason stays the first one.
  GoneOutcome second = store.DisableGone({ch, claimed[1].id, 1, "HTTP 410", 1}, "node-x");
  EXPECT_FALSE(second.disabled);
  EXPECT_EQ(second.jobs, 1);
  EXPECT_EQ(
      QueryValue<std::string>(
          db(), "SELECT disabled_reason FROM bulkhead.channels WHERE id = " + std::to_string(ch)),
      reason);
  EXPECT_EQ(Count("state = 'parked' AND attempt = 0"), 3);
  EXPECT_EQ(
      Count("id = " + std::to_string(claimed[0].id) + " AND attempts->0->>'duration_ms' = '12.5'"),
      1);
}

// ---- EndpointAnswers on its own (the runner's side effects, time passed in) ----------------

TEST_F(EndpointAnswersTest, SnoozesAChannelAtMostOnceASecondAndALaterLongerAskWaitsForTheNext) {
  int64_t ch = Channel("/hook/a");
  Enqueue(ch, 2);
  StoreRunnerStore store(conninfo(), "claim:default");
  CompletionWriter writer({conninfo(), "node-x"});
  EndpointAnswers answers({"default", "node-x", nullptr}, store, writer);
  const auto never = EndpointAnswers::Clock::time_point::max();
  const auto t0 = EndpointAnswers::Clock::now();
  EXPECT_EQ(answers.due(), never);

  answers.Snooze(ch, t0 + seconds(60));
  EXPECT_LE(answers.due(), EndpointAnswers::Clock::now());
  answers.Apply(t0);
  EXPECT_EQ(answers.snoozed(), 2u);
  EXPECT_EQ(answers.due(), never);
  const std::string waiting = "channel_id = " + std::to_string(ch) + " AND state = 'available'";
  EXPECT_EQ(Count(waiting + " AND scheduled_at BETWEEN now() + interval '55 s' AND now() + "
                            "interval '61 s'"),
            2);

  // Within the channel's second: held back until it is over.
  answers.Snooze(ch, t0 + seconds(120));
  answers.Apply(t0 + milliseconds(500));
  EXPECT_EQ(answers.due(), t0 + seconds(1));
  EXPECT_EQ(answers.snoozed(), 2u);
  EXPECT_EQ(Count(waiting + " AND scheduled_at < now() + interval '61 s'"), 2);

  answers.Apply(t0 + seconds(1));
  EXPECT_EQ(answers.snoozed(), 4u);
  EXPECT_EQ(answers.due(), never);
  EXPECT_EQ(Count(waiting + " AND scheduled_at > now() + interval '110 s'"), 2);
}

TEST_F(EndpointAnswersTest, AGoneQueuedBeforeCloseDisablesTheChannelAndOneAfterIsRefused) {
  int64_t ch = Channel("/hook/a");
  Enqueue(ch, 2);
  ClaimStore claimer(db());
  std::vector<ClaimedJob> claimed = claimer.Claim("default", 1, "node-x");
  ASSERT_EQ(claimed.size(), 1u);
  StoreRunnerStore store(conninfo(), "claim:default");
  CompletionWriter writer({conninfo(), "node-x"});
  EndpointAnswers answers({"default", "node-x", nullptr}, store, writer);
  AttemptResult fallback;
  fallback.id = claimed[0].id;
  fallback.attempt = 1;
  fallback.status = 410;
  fallback.error = "HTTP 410";
  fallback.retry_delay_ms = 5000;

  EXPECT_TRUE(answers.Gone({ch, claimed[0].id, 1, "HTTP 410", 3.0}, fallback));
  EXPECT_LE(answers.due(), EndpointAnswers::Clock::now());
  answers.Close(EndpointAnswers::Clock::now());
  EXPECT_EQ(answers.channels_gone(), 1u);
  EXPECT_EQ(QueryValue<bool>(
                db(), "SELECT NOT enabled FROM bulkhead.channels WHERE id = " + std::to_string(ch)),
            true);
  EXPECT_EQ(Count("channel_id = " + std::to_string(ch) + " AND state = 'parked' AND attempt = 0"),
            2);
  // Closed: the caller writes the result itself.
  EXPECT_FALSE(answers.Gone({ch, claimed[0].id, 1, "HTTP 410", 3.0}, fallback));
}

TEST_F(EndpointAnswersTest, A429WithRetryAfterSnoozesTheJobAndItsChannelsWaitingJobs) {
  int64_t ch = Channel("/hook/throttled?status=429&retry_after=2");
  Enqueue(ch, 5);
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  // The answered job is rescheduled, and the four waiting ones pushed, 2 s past the attempt.
  ASSERT_TRUE(
      WaitFor("count(*) = 5 FROM bulkhead.jobs WHERE state = 'available' AND "
              "scheduled_at >= (SELECT min(attempted_at) FROM bulkhead.jobs) + "
              "interval '2 s'",
              seconds(20)))
      << node.Log();
  EXPECT_EQ(Count("attempt = 1 AND last_error = 'HTTP 429'"), 1);
  EXPECT_EQ(Count("attempt = 0"), 4);
  // The retry schedule alone (50 ms) would have sent them all again by now: one request only.
  EXPECT_EQ(Requests("/hook/throttled"), 1) << node.Log();
  EXPECT_GE(EarliestWaitAfterFirstAttempt(ch), 2.0);
}

TEST_F(EndpointAnswersTest, A503WithAnHttpDateSnoozesLikewise) {
  int64_t ch = Channel("/hook/maintenance?status=503&retry_after=" + EncodedHttpDate(seconds(5)));
  Enqueue(ch, 3);
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  // The date is 5 s ahead when the URL is made, in whole seconds: at least 3 s past the attempt.
  ASSERT_TRUE(
      WaitFor("count(*) = 3 FROM bulkhead.jobs WHERE state = 'available' AND "
              "scheduled_at >= (SELECT min(attempted_at) FROM bulkhead.jobs) + "
              "interval '3 s'",
              seconds(20)))
      << node.Log();
  EXPECT_EQ(Count("last_error = 'HTTP 503'"), 1);
  EXPECT_EQ(Requests("/hook/maintenance"), 1) << node.Log();
}

TEST_F(EndpointAnswersTest, ARetryAfterOverTheTiersCapIsCapped) {
  int64_t ch = Channel("/hook/greedy?status=429&retry_after=86400");  // a day
  Enqueue(ch, 3);
  NodeProcess node(testing::TestNodeConfig("node-a"),
                   {{"default", Tier(1, {{"retry_after_max_ms", 3000}})}});
  node.Start(url());

  ASSERT_TRUE(
      WaitFor("count(*) = 3 FROM bulkhead.jobs WHERE state = 'available' AND "
              "scheduled_at >= (SELECT min(attempted_at) FROM bulkhead.jobs) + "
              "interval '2.9 s'",
              seconds(20)))
      << node.Log();
  // Capped at 3 s, not a day: every job is due within seconds (10 s leaves room for a slow
  // machine between the attempt and the statements).
  EXPECT_EQ(Count("scheduled_at < (SELECT min(attempted_at) FROM bulkhead.jobs) + "
                  "interval '10 s'"),
            3);
  EXPECT_EQ(Requests("/hook/greedy"), 1);
}

TEST_F(EndpointAnswersTest, AGarbageRetryAfterKeepsTheRetrySchedule) {
  int64_t ch = Channel("/hook/confused?status=429&retry_after=soon");
  EnqueueOne(ch);
  Exec("UPDATE bulkhead.jobs SET max_attempts = 3");
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  // 50 ms between attempts, as the schedule says: all three are spent at once.
  ASSERT_TRUE(WaitFor("count(*) = 1 FROM bulkhead.jobs WHERE state = 'discarded'", seconds(20)))
      << node.Log();
  EXPECT_EQ(Requests("/hook/confused"), 3);
}

TEST_F(EndpointAnswersTest, A410DisablesTheChannelParksItsBacklogAndEnableResumeSendsIt) {
  int64_t ch = Channel("/hook/retired?status=410");
  Enqueue(ch, 3);
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  ASSERT_TRUE(WaitFor("NOT enabled FROM bulkhead.channels WHERE id = " + std::to_string(ch)))
      << node.Log();
  ASSERT_TRUE(WaitFor("count(*) = 3 FROM bulkhead.jobs WHERE state = 'parked'")) << node.Log();
  EXPECT_TRUE(QueryValue<bool>(
      db(),
      "SELECT paused AND disabled_reason ~ "
      "'^the endpoint answered 410 Gone at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ "
      "\\(job \\d+\\)$' FROM bulkhead.channels WHERE id = " +
          std::to_string(ch)))
      << QueryValue<std::string>(db(), "SELECT disabled_reason FROM bulkhead.channels");
  // The answering job: parked with the 410 logged, its attempt not spent.
  EXPECT_EQ(Count("attempt = 0 AND last_error = 'HTTP 410' AND jsonb_array_length(attempts) = 1 "
                  "AND (attempts->0->>'status')::int = 410"),
            1);
  EXPECT_EQ(Requests("/hook/retired"), 1);
  // The log line follows the statement's commit: wait for it, do not race it (a TSan run read
  // the log between the two).
  EXPECT_TRUE(node.WaitForLog("channel_disabled_gone", seconds(10))) << node.Log();

  // Later enqueues are refused, with the reason and SQLSTATE 55000.
  try {
    EnqueueOne(ch);
    ADD_FAILURE() << "enqueue to a channel disabled by a 410 succeeded";
  } catch (const pqxx::sql_error& e) {
    EXPECT_EQ(e.sqlstate(), "55000");
    EXPECT_NE(std::string(e.what()).find("410 Gone"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Count("true"), 3);

  // A job of the disabled channel that is `available` (a retry written by a node that had not
  // heard yet) is not sent: the claim parks it.
  Exec(
      "UPDATE bulkhead.jobs SET state = 'available' WHERE id = (SELECT min(id) FROM "
      "bulkhead.jobs)");
  ASSERT_TRUE(WaitFor("count(*) = 3 FROM bulkhead.jobs WHERE state = 'parked'")) << node.Log();
  EXPECT_EQ(Requests("/hook/retired"), 1);

  // The endpoint moved; the operator points the channel at it, enables and resumes it.
  Exec("UPDATE bulkhead.channels SET url = '" + MockUrl("/hook/moved-here") +
       "' WHERE id = " + std::to_string(ch));
  testing::CommandResult enabled = Run({"channel", "enable", std::to_string(ch)});
  ASSERT_EQ(enabled.exit_code, 0) << enabled.err;
  testing::CommandResult resumed = Run({"channel", "resume", std::to_string(ch)});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  ASSERT_TRUE(WaitFor("count(*) = 3 FROM bulkhead.jobs WHERE state = 'completed'")) << node.Log();
  EXPECT_EQ(Requests("/hook/moved-here"), 3);
  EnqueueOne(ch);  // accepted again
}

TEST_F(EndpointAnswersTest, A410OnTheLastAttemptStillParksTheJob) {
  int64_t ch = Channel("/hook/gone-late?status=410");
  EnqueueOne(ch);
  Exec("UPDATE bulkhead.jobs SET max_attempts = 1");
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  ASSERT_TRUE(WaitFor("count(*) = 1 FROM bulkhead.jobs WHERE state = 'parked' AND attempt = 0"))
      << node.Log();
  EXPECT_EQ(Count("state = 'discarded'"), 0);
}

TEST_F(EndpointAnswersTest, ARedirectIsAFailureAndIsNotFollowed) {
  int64_t ch = Channel("/hook/moved?status=302&location=" + MockUrl("/hook/target"));
  EnqueueOne(ch);
  Exec("UPDATE bulkhead.jobs SET max_attempts = 1");
  NodeProcess node(testing::TestNodeConfig("node-a"), {{"default", Tier(1)}});
  node.Start(url());

  ASSERT_TRUE(WaitFor("count(*) = 1 FROM bulkhead.jobs WHERE state = 'discarded'")) << node.Log();
  EXPECT_EQ(Count("last_error = 'HTTP 302'"), 1);
  EXPECT_EQ(Requests("/hook/moved"), 1);
  EXPECT_EQ(Requests("/hook/target"), 0);
}

TEST_F(EndpointAnswersTest, HostileBodiesAreBoundedAndAHealthyChannelDeliversMeanwhile) {
  // Each hostile channel gets 4 jobs with one attempt each; the healthy one 100.
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"/hook/huge", "/hook/huge?body_bytes=8388608"},           // 8 MiB: 128 times the cap
      {"/hook/endless", "/hook/endless?endless=1"},              // never ends, fast
      {"/hook/drip", "/hook/drip?body_bytes=100&drip_ms=1000"},  // 1 byte a second
      {"/hook/garbage", "/hook/garbage?garbage=1"},              // not HTTP
      {"/hook/endless-drip", "/hook/endless-drip?endless=1&drip_ms=1000"},  // forever, slowly
  };
  std::vector<int64_t> hostile_channels;
  for (const auto& [route, path] : hostile) {
    hostile_channels.push_back(Channel(path));
    Enqueue(hostile_channels.back(), 4);
  }
  Exec("UPDATE bulkhead.jobs SET max_attempts = 1");
  int64_t healthy = Channel("/hook/fast");
  // A quarter of the workers per channel and tenant: the hostile ones cannot take them all.
  NodeProcess node(testing::TestNodeConfig("node-a"),
                   {{"default", Tier(20, {{"channel_share", 0.25},
                                          {"tenant_share", 0.25},
                                          {"request_timeout_ms", 2000}})}});
  node.Start(url());
  Enqueue(healthy, 100);

  ASSERT_TRUE(
      WaitFor("count(*) = 100 FROM bulkhead.jobs WHERE state = 'completed' AND "
              "channel_id = " +
              std::to_string(healthy)))
      << node.Log();
  EXPECT_EQ(Requests("/hook/fast"), 100);  // each exactly once

  ASSERT_TRUE(
      WaitFor("count(*) = 120 FROM bulkhead.jobs WHERE state IN ('completed', "
              "'discarded')"))
      << node.Log();
  auto channel = [&](size_t i) { return "channel_id = " + std::to_string(hostile_channels[i]); };
  // A 2xx whose body goes past the cap is delivered: the status had arrived; the rest of the
  // body is never read, so 8 MiB or an endless stream cost 64 KiB each.
  EXPECT_EQ(Count(channel(0) + " AND state = 'completed'"), 4);
  EXPECT_EQ(Count(channel(1) + " AND state = 'completed'"), 4);
  // A body dripping a byte a second runs into the request timeout.
  EXPECT_EQ(Count(channel(2) + " AND state = 'discarded' AND last_error LIKE 'timeout: %'"), 4);
  EXPECT_EQ(Count(channel(3) + " AND state = 'discarded' AND last_error LIKE 'protocol: %'"), 4)
      << QueryValue<std::string>(db(),
                                 "SELECT string_agg(DISTINCT last_error, ' | ') FROM "
                                 "bulkhead.jobs WHERE " +
                                     channel(3));
  EXPECT_EQ(Count(channel(4) + " AND state = 'discarded' AND last_error LIKE 'timeout: %'"), 4);
  for (const auto& [route, path] : hostile) EXPECT_EQ(Requests(route), 4) << route;
  if (HasFailure()) {  // when the mock read each request, and what became of each job
    std::cerr << "mock: " << mock_.log().Records(0, 200, "").dump() << "\n"
              << node.Log() << "\n"
              << QueryValue<std::string>(
                     db(),
                     "SELECT string_agg(format('job %s channel %s %s attempted_at_us %s %s', id, "
                     "channel_id, state, (extract(epoch FROM attempted_at) * 1e6)::int8, "
                     "last_error), E'\\n' ORDER BY id) FROM bulkhead.jobs WHERE channel_id <> " +
                         std::to_string(healthy) + " OR last_error IS NOT NULL");
  }
}

}  // namespace
}  // namespace bulkhead
