// Ordering keys end to end (issue 33, part 3): `bulkhead run` nodes (the real binary) against
// real PostgreSQL and a loopback receiver. Of a channel's deliveries with one ordering key, one
// goes at a time, in enqueue order, and the next starts only once the one before was answered;
// deliveries without a key, and those of other keys, flow beside it. A failing head holds only
// its key; a node killed with the head in flight loses nothing and the rescued head still goes
// first; a breaker that opens mid-sequence keeps the held deliveries held through parking,
// failed probes and unparking.
//
// How order is checked (ExpectDeliveredInOrder): the receiver notes every request it answers —
// the job (webhook-id), when its last byte arrived, what it answered and after what delay. For
// a key, walked in arrival order, every request must be the current head's (an earlier one
// again, or a later one, fails), the head moves on only at its 200, and a request of the next
// delivery must arrive no sooner than the head's 200 was sent (its arrival + the reply's
// delay): no two requests of a key overlap. Each delivery of the key has exactly one 200.
//
// Time: no assertion bounds how fast anything goes. Where a test needs "while X still fails",
// the receiver keeps failing X until the test has seen, in the database, what must happen
// meanwhile; waits are on database conditions with generous timeouts.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "delivery_test.h"
#include "http_receiver.h"
#include "node_process.h"
#include "poll.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::DeliveryTest;
using testing::HttpReceiver;
using testing::NodeProcess;
using testing::QueryValue;
using testing::ReceivedRequest;
using testing::Reply;
using Clock = std::chrono::system_clock;

std::string Str(int64_t n) { return std::to_string(n); }

// One request the receiver answered (or hung): the job, when it arrived, and the answer.
struct Answered {
  int64_t job = 0;
  Clock::time_point at;
  int status = 0;  // 0: hung, never answered
  milliseconds delay{0};
};

// The receiver's notes, shared with its handler (which runs on the receiver's thread).
class Answers {
 public:
  // Notes `reply` as the answer to `r` and returns it.
  Reply Note(const ReceivedRequest& r, Reply reply) {
    std::lock_guard lock(mu_);
    answered_.push_back({std::stoll(r.headers.at("webhook-id")), r.received_at,
                         reply.hang ? 0 : reply.status, reply.delay});
    ++attempts_[answered_.back().job];
    return reply;
  }
  // Requests so far for `job`, counted when they were answered (before the reply went).
  int AttemptsOf(int64_t job) const {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(job);
    return it == attempts_.end() ? 0 : it->second;
  }
  std::vector<Answered> All() const {
    std::lock_guard lock(mu_);
    return answered_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Answered> answered_;  // in order of arrival
  std::map<int64_t, int> attempts_;
};

Reply Ok(milliseconds delay = milliseconds(0)) {
  Reply reply;
  reply.delay = delay;
  return reply;
}

Reply Status(int status) {
  Reply reply;
  reply.status = status;
  return reply;
}

Reply Hang() {
  Reply reply;
  reply.hang = true;
  return reply;
}

// Checks that the deliveries `ids` (one key's, in enqueue order) went one at a time in that
// order, each answered 200 exactly once (see the header). `what` names the key in messages.
void ExpectDeliveredInOrder(const std::vector<Answered>& answers, const std::vector<int64_t>& ids,
                            const std::string& what) {
  std::map<int64_t, size_t> position;
  for (size_t i = 0; i < ids.size(); ++i) position[ids[i]] = i;
  size_t head = 0;                         // index in ids of the delivery that may go now
  std::optional<Clock::time_point> freed;  // when the 200 of ids[head - 1] was sent
  std::string trace;
  for (const Answered& a : answers) {
    auto it = position.find(a.job);
    if (it == position.end()) continue;
    trace.append(" #").append(Str(static_cast<int64_t>(it->second)));
    trace.append("(").append(Str(a.status)).append(")");
    ASSERT_LT(head, ids.size()) << what << ": job " << a.job << " (#" << it->second
                                << ") arrived after every delivery of the key had its 200:"
                                << trace;
    ASSERT_EQ(it->second, head) << what << ": job " << a.job << " (#" << it->second
                                << ") arrived while #" << head << " was the head:" << trace;
    if (freed) {
      EXPECT_GE(a.at - *freed, milliseconds(0))
          << what << ": #" << head << " arrived before #" << head - 1 << " was answered:" << trace;
    }
    if (a.status == 200) {
      freed = a.at + a.delay;
      ++head;
    }
  }
  EXPECT_EQ(head, ids.size()) << what << ": not every delivery of the key had its 200:" << trace;
}

class OrderingNodeTest : public DeliveryTest {
 protected:
  int64_t Channel(const std::string& url) {
    int64_t tenant = testing::CreateTenant(db(), "tenant-" + Str(++tenants_));
    return testing::CreateChannel(db(), tenant, url);
  }

  // One bulkhead.enqueue in `tx`, with `key` as the ordering key (none if empty) and a payload
  // that names the key and the sequence number. Returns the job id.
  static int64_t Enqueue(pqxx::transaction_base& tx, int64_t channel, const std::string& key,
                         int seq) {
    const std::string payload = nlohmann::json{
        {"key", key.empty() ? nlohmann::json() : nlohmann::json(key)},
        {"seq", seq}}.dump();
    if (key.empty()) {
      return tx.exec_params1("SELECT bulkhead.enqueue($1, $2::jsonb)", channel, payload)[0]
          .as<int64_t>();
    }
    return tx
        .exec_params1("SELECT bulkhead.enqueue($1, $2::jsonb, NULL, now(), $3)", channel, payload,
                      key)[0]
        .as<int64_t>();
  }

  // `keys` keys ("k0", …) × `per_key` deliveries each, enqueued interleaved (k0#0, k1#0, …,
  // k0#1, …) with `unkeyed` deliveries without a key spread among them, in one transaction as
  // an application's loop would make them. Fills keyed_ (per key, in enqueue order) and
  // unkeyed_.
  void EnqueueInterleaved(int64_t channel, int keys, int per_key, int unkeyed) {
    pqxx::work tx(db());
    int unkeyed_made = 0;
    for (int seq = 0; seq < per_key; ++seq) {
      for (int k = 0; k < keys; ++k) {
        const std::string key = std::string("k").append(std::to_string(k));
        keyed_[key].push_back(Enqueue(tx, channel, key, seq));
      }
      // Spread the unkeyed ones evenly over the rounds.
      while (unkeyed_made < unkeyed * (seq + 1) / per_key) {
        unkeyed_.push_back(Enqueue(tx, channel, "", unkeyed_made++));
      }
    }
    tx.commit();
  }

  static nlohmann::json Tier(nlohmann::json extra = nlohmann::json::object()) {
    // No caps (channel_share 1): ordering alone holds a key back. A breaker that only a test
    // meaning to open it can open. No stall rule (stalled_after_ms at the request timeout):
    // under it, a hung head marks its channel stalled after 500 ms and caps it at 1, which the
    // head itself holds, so another key of the channel would wait the head's 30 s timeout
    // whenever it had not finished within those 500 ms (it did not, about one run in three on
    // a loaded machine); that is the stall rule at work, not ordering.
    nlohmann::json tier = {{"workers", 8},
                           {"channel_share", 1},
                           {"tenant_share", 1},
                           {"failure_threshold", 1000},
                           {"slow_call_ms", 3600000},
                           {"cooldown_ms", 60000},
                           {"cooldown_max_ms", 60000},
                           {"connect_timeout_ms", 2000},
                           {"request_timeout_ms", 30000},
                           {"stalled_after_ms", 30000},
                           {"retry_delays_ms", {200}},
                           {"retry_jitter", 0}};
    tier.update(extra);
    return tier;
  }

  static nlohmann::json Node(const std::string& name) {
    // A 3 s lease (the shortest allowed): a killed node's jobs come back within seconds.
    return testing::TestNodeConfig(name, {{"lease_ms", 3000}, {"shutdown_grace_ms", 1000}});
  }

  static std::string InList(const std::vector<int64_t>& ids, size_t from = 0) {
    std::string list;
    for (size_t i = from; i < ids.size(); ++i) {
      if (!list.empty()) list.append(",");
      list.append(Str(ids[i]));
    }
    return "(" + list + ")";
  }

  // The rows of `ids`, one line each, for failure messages.
  std::string Rows(const std::vector<int64_t>& ids) {
    return QueryValue<std::string>(
        db(),
        "SELECT coalesce(string_agg(id || ' ' || coalesce(ordering_key, '-') || ' ' || state || "
        "' attempt ' || attempt || ' due ' || scheduled_at || ' ' || coalesce(last_error, ''), "
        "E'\\n' ORDER BY id), '') FROM bulkhead.jobs WHERE id IN " +
            InList(ids));
  }

  // Every job with its times, for failures that depend on when each step happened.
  std::string Timeline() {
    return QueryValue<std::string>(
        db(),
        "SELECT coalesce(string_agg(id || ' ' || coalesce(ordering_key, '-') || ' ' || state || "
        "' attempt ' || attempt || ' created ' || created_at || ' attempted ' || "
        "coalesce(attempted_at::text, '-') || ' finished ' || coalesce(finished_at::text, '-') || "
        "' due ' || scheduled_at, E'\\n' ORDER BY id), '') FROM bulkhead.jobs");
  }

  std::map<std::string, std::vector<int64_t>> keyed_;
  std::vector<int64_t> unkeyed_;
  int tenants_ = 0;
};

// 1. 10 keys × 20 deliveries, interleaved, and 40 without a key, to one channel of a node with
// 8 workers: each key's deliveries arrive in enqueue order, never two of a key at once; the
// unkeyed ones arrive too, several at a time.
TEST_F(OrderingNodeTest, EachKeysDeliveriesArriveOneAtATimeInEnqueueOrderBesideUnkeyedOnes) {
  const milliseconds keyed_delay(20), unkeyed_delay(300);
  Answers answers;
  std::set<int64_t> unkeyed_ids;  // written before the node starts, read-only after
  HttpReceiver receiver([&](const ReceivedRequest& r) {
    const bool unkeyed = unkeyed_ids.count(std::stoll(r.headers.at("webhook-id"))) > 0;
    return answers.Note(r, Ok(unkeyed ? unkeyed_delay : keyed_delay));
  });
  int64_t channel = Channel(receiver.Url("/hook"));
  EnqueueInterleaved(channel, 10, 20, 40);
  unkeyed_ids.insert(unkeyed_.begin(), unkeyed_.end());
  // Enqueued behind a live delivery of its key: held, 'infinity'; the first of each key due.
  ASSERT_EQ(Count("ordering_key IS NOT NULL AND scheduled_at = 'infinity'"), 10 * 19);
  ASSERT_EQ(Count("scheduled_at <= now()"), 10 + 40);

  NodeProcess node(Node("node-a"), {{"default", Tier()}});
  node.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 240 FROM bulkhead.jobs WHERE state = 'completed')", seconds(120)))
      << node.Log();

  const std::vector<Answered> all = answers.All();
  EXPECT_EQ(all.size(), 240u);  // nothing twice
  for (const auto& [key, ids] : keyed_) ExpectDeliveredInOrder(all, ids, "key " + key);
  // The body is the payload: each request of a key carries its key and sequence number.
  std::map<int64_t, std::pair<std::string, int>> expected;
  for (const auto& [key, ids] : keyed_) {
    for (size_t i = 0; i < ids.size(); ++i) expected[ids[i]] = {key, static_cast<int>(i)};
  }
  for (const ReceivedRequest& r : receiver.Requests()) {
    const int64_t job = std::stoll(r.headers.at("webhook-id"));
    const nlohmann::json body = nlohmann::json::parse(r.body);
    if (unkeyed_ids.count(job)) {
      EXPECT_TRUE(body.at("key").is_null()) << r.body;
      continue;
    }
    ASSERT_EQ(expected.count(job), 1u) << r.body;
    EXPECT_EQ(body.at("key"), expected[job].first) << r.body;
    EXPECT_EQ(body.at("seq"), expected[job].second) << r.body;
  }
  // Every unkeyed delivery arrived, and they flowed in parallel: at some point two were being
  // answered at once (each is answered 300 ms after it arrives, with 8 workers).
  std::vector<Clock::time_point> unkeyed_at;
  for (const Answered& a : all) {
    if (unkeyed_ids.count(a.job)) unkeyed_at.push_back(a.at);
  }
  EXPECT_EQ(unkeyed_at.size(), 40u);
  std::sort(unkeyed_at.begin(), unkeyed_at.end());
  bool overlapped = false;
  for (size_t i = 1; i < unkeyed_at.size(); ++i) {
    overlapped = overlapped || unkeyed_at[i] - unkeyed_at[i - 1] < unkeyed_delay;
  }
  EXPECT_TRUE(overlapped) << "no two unkeyed deliveries were in flight at once";
  // Every delivery went on its first attempt, and none is left held.
  EXPECT_EQ(Count("attempt = 1"), 240);
  EXPECT_EQ(Count("scheduled_at = 'infinity'"), 0);
}

// 2. Key A's first delivery fails (500) at least three times, retried every 200 ms: meanwhile
// key B's deliveries and the unkeyed ones of the same channel all complete, and A's later ones
// wait, held and never sent. Once A's head gets its 200 the rest of A follow, in order.
TEST_F(OrderingNodeTest, AFailingHeadHoldsOnlyItsKeyAndItsLaterDeliveriesFollowItsSuccess) {
  Answers answers;
  std::atomic<int64_t> a_head{0};
  std::atomic<bool> let_a_head_through{false};
  HttpReceiver receiver([&](const ReceivedRequest& r) {
    const int64_t job = std::stoll(r.headers.at("webhook-id"));
    if (job == a_head && (answers.AttemptsOf(job) < 3 || !let_a_head_through)) {
      return answers.Note(r, Status(500));
    }
    return answers.Note(r, Ok(milliseconds(20)));
  });
  int64_t channel = Channel(receiver.Url("/hook"));
  std::vector<int64_t> a, b;
  {
    pqxx::work tx(db());
    for (int seq = 0; seq < 5; ++seq) {
      a.push_back(Enqueue(tx, channel, "A", seq));
      b.push_back(Enqueue(tx, channel, "B", seq));
      unkeyed_.push_back(Enqueue(tx, channel, "", seq));
    }
    tx.commit();
  }
  a_head = a[0];
  // Enough attempts for as many 200 ms retries as the rest of the channel takes on a loaded
  // machine: the head must not be discarded while the test waits.
  Exec("UPDATE bulkhead.jobs SET max_attempts = 100 WHERE id = " + Str(a[0]));

  NodeProcess node(Node("node-a"), {{"default", Tier()}});
  node.Start(conninfo());
  // While A's head still fails: B and the unkeyed ones all complete…
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 10 FROM bulkhead.jobs WHERE state = 'completed' AND "
              "(id IN " +
                  InList(b) + " OR id IN " + InList(unkeyed_) + "))",
              seconds(60)))
      << Rows(b) << "\n"
      << Rows(unkeyed_) << "\n"
      << node.Log();
  ASSERT_TRUE(
      WaitFor("(SELECT attempt >= 3 FROM bulkhead.jobs WHERE id = " + Str(a[0]) + ")", seconds(60)))
      << Rows(a) << "\n"
      << node.Log();
  // … (the receiver answers it 500 until told otherwise, so none of its attempts succeeded)
  EXPECT_EQ(Count("id = " + Str(a[0]) +
                  " AND state IN ('available', 'executing') AND "
                  "last_error = 'HTTP 500'"),
            1)
      << Rows(a);
  // … and A's later deliveries are held, untried and never sent.
  EXPECT_EQ(Count("id IN " + InList(a, 1) +
                  " AND state = 'available' AND scheduled_at = 'infinity' AND attempt = 0"),
            4)
      << Rows(a);
  for (const Answered& x : answers.All()) {
    EXPECT_EQ(std::count(a.begin() + 1, a.end(), x.job), 0) << "job " << x.job << " was sent";
  }
  // Every B and unkeyed delivery arrived before A's head was answered anything but 500.
  for (const Answered& x : answers.All()) {
    if (x.job == a[0]) {
      EXPECT_EQ(x.status, 500);
    }
  }

  let_a_head_through = true;
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 15 FROM bulkhead.jobs WHERE state = 'completed')", seconds(60)))
      << Rows(a) << "\n"
      << node.Log();
  const std::vector<Answered> all = answers.All();
  ExpectDeliveredInOrder(all, a, "key A");
  ExpectDeliveredInOrder(all, b, "key B");
  EXPECT_GE(answers.AttemptsOf(a[0]), 4);
  EXPECT_EQ(Count("state = 'completed' AND attempt = 1"), 14);  // all but A's head: first try
  EXPECT_EQ(Count("scheduled_at = 'infinity'"), 0);
}

// 3. A node is killed (SIGKILL) while key K's head is in flight (the receiver never answers
// it). Key L flows meanwhile. A second node rescues the head once the first's lease has run
// out; it arrives again, then the rest of K in order, each once: nothing lost, and no later
// delivery of K before the head's last arrival.
TEST_F(OrderingNodeTest, AHeadInFlightOnAKilledNodeIsRescuedAndItsKeyStillArrivesInOrder) {
  Answers answers;
  std::atomic<int64_t> k_head{0};
  HttpReceiver receiver([&](const ReceivedRequest& r) {
    const int64_t job = std::stoll(r.headers.at("webhook-id"));
    if (job == k_head && answers.AttemptsOf(job) == 0) return answers.Note(r, Hang());
    return answers.Note(r, Ok(milliseconds(20)));
  });
  int64_t channel = Channel(receiver.Url("/hook"));
  std::vector<int64_t> k, l;
  {
    pqxx::work tx(db());
    for (int seq = 0; seq < 6; ++seq) {
      k.push_back(Enqueue(tx, channel, "K", seq));
      l.push_back(Enqueue(tx, channel, "L", seq));
    }
    tx.commit();
  }
  k_head = k[0];

  NodeProcess a(Node("node-a"), {{"default", Tier()}});
  a.Start(conninfo());
  // K's head hangs on node-a; L, beside it, is all delivered.
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 6 FROM bulkhead.jobs WHERE state = 'completed' AND "
              "id IN " +
                  InList(l) + ")",
              seconds(60)))
      << Rows(l) << "\n"
      << a.Log();
  ASSERT_TRUE(
      WaitFor("(SELECT state = 'executing' FROM bulkhead.jobs WHERE id = " + Str(k[0]) + ")"))
      << Rows(k);
  ASSERT_TRUE(testing::PollUntil([&] { return answers.AttemptsOf(k[0]) == 1; }, seconds(30)))
      << Timeline() << "\n"
      << a.Log();
  a.Signal(SIGKILL);
  a.Wait(seconds(10));
  // The head is stranded on the dead node; the rest of K is held.
  EXPECT_EQ(Count("id = " + Str(k[0]) + " AND state = 'executing' AND attempted_by = 'node-a'"), 1)
      << Rows(k);
  EXPECT_EQ(Count("id IN " + InList(k, 1) +
                  " AND state = 'available' AND scheduled_at = 'infinity' AND attempt = 0"),
            5)
      << Rows(k);

  NodeProcess b(Node("node-b"), {{"default", Tier()}});
  b.Start(conninfo());
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 12 FROM bulkhead.jobs WHERE state = 'completed')", seconds(90)))
      << Rows(k) << "\n"
      << b.Log();
  EXPECT_TRUE(b.WaitForLog("jobs_rescued")) << b.Log();

  const std::vector<Answered> all = answers.All();
  // The head arrived twice (node-a's hung attempt, node-b's), then K in order, each once.
  EXPECT_EQ(answers.AttemptsOf(k[0]), 2);
  ExpectDeliveredInOrder(all, k, "key K");
  ExpectDeliveredInOrder(all, l, "key L");
  // The head's last arrival comes before any other delivery of K.
  Clock::time_point head_last{};
  for (const Answered& x : all) {
    if (x.job == k[0]) head_last = std::max(head_last, x.at);
  }
  for (const Answered& x : all) {
    if (std::count(k.begin() + 1, k.end(), x.job)) {
      EXPECT_GT(x.at, head_last) << x.job;
    }
  }
  EXPECT_EQ(Count("id = " + Str(k[0]) + " AND state = 'completed' AND attempt = 2"), 1) << Rows(k);
  EXPECT_EQ(Count("state = 'completed' AND attempt = 1"), 11);
  EXPECT_EQ(Count("scheduled_at = 'infinity'"), 0);
}

// 4. The endpoint fails everything: the breaker opens (threshold 3) with two keys mid-sequence.
// Their held deliveries are parked and stay held — at 'infinity', never sent — through the
// opening and a failed probe. The endpoint recovers, a probe closes the breaker, and each
// key's rest arrives in order, each exactly once, after its predecessor's 200.
TEST_F(OrderingNodeTest, ABreakerOpeningMidSequenceKeepsTheHeldDeliveriesHeldAndInOrder) {
  Answers answers;
  std::atomic<bool> up{false};
  HttpReceiver receiver([&](const ReceivedRequest& r) {
    return answers.Note(r, up ? Ok(milliseconds(20)) : Status(500));
  });
  int64_t channel = Channel(receiver.Url("/hook"));
  std::vector<int64_t> k1, k2;
  {
    pqxx::work tx(db());
    for (int seq = 0; seq < 6; ++seq) {
      k1.push_back(Enqueue(tx, channel, "K1", seq));
      k2.push_back(Enqueue(tx, channel, "K2", seq));
      if (seq % 2 == 0) unkeyed_.push_back(Enqueue(tx, channel, "", seq));
    }
    tx.commit();
  }
  std::vector<int64_t> held(k1.begin() + 1, k1.end());
  held.insert(held.end(), k2.begin() + 1, k2.end());
  // Room for a few failed probes of a head before it would run out of attempts.
  Exec("UPDATE bulkhead.jobs SET max_attempts = 100");

  NodeProcess node(Node("node-a"), {{"default", Tier({{"failure_threshold", 3},
                                                      {"slow_call_ms", 10000},
                                                      {"cooldown_ms", 1000},
                                                      {"cooldown_max_ms", 1000}})}});
  node.Start(conninfo());
  const std::string open =
      "(SELECT breaker_state = 'open' FROM bulkhead.channels WHERE id = " + Str(channel) + ")";
  ASSERT_TRUE(WaitFor(open, seconds(60))) << node.Log();
  // Nothing of the channel waits available once the opening (and the leader's park_behind_open
  // for a result that overlapped it) has parked the backlog.
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 0 FROM bulkhead.jobs WHERE state = 'available')", seconds(30)))
      << Rows(held) << "\n"
      << node.Log();
  EXPECT_EQ(Count("id IN " + InList(held) +
                  " AND state = 'parked' AND scheduled_at = 'infinity' AND attempt = 0"),
            10)
      << Rows(held);
  // A probe fails (the breaker opens again, trips 2): still held.
  ASSERT_TRUE(
      WaitFor("(SELECT breaker_trips >= 2 AND breaker_state = 'open' FROM "
              "bulkhead.channels WHERE id = " +
                  Str(channel) + ")",
              seconds(60)))
      << node.Log();
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 0 FROM bulkhead.jobs WHERE state IN ('available', "
              "'executing'))",
              seconds(30)))
      << node.Log();
  EXPECT_EQ(Count("id IN " + InList(held) +
                  " AND state = 'parked' AND scheduled_at = 'infinity' AND attempt = 0"),
            10)
      << Rows(held);
  for (const Answered& x : answers.All()) {
    EXPECT_EQ(std::count(held.begin(), held.end(), x.job), 0) << "held job " << x.job << " sent";
  }

  up = true;
  ASSERT_TRUE(
      WaitFor("(SELECT count(*) = 15 FROM bulkhead.jobs WHERE state = 'completed')", seconds(90)))
      << Rows(k1) << "\n"
      << Rows(k2) << "\n"
      << node.Log();
  EXPECT_EQ(QueryValue<std::string>(
                db(), "SELECT breaker_state FROM bulkhead.channels WHERE id = " + Str(channel)),
            "closed");
  const std::vector<Answered> all = answers.All();
  ExpectDeliveredInOrder(all, k1, "key K1");
  ExpectDeliveredInOrder(all, k2, "key K2");
  // The held ones went once each, on their first attempt, after the recovery.
  for (int64_t id : held) {
    EXPECT_EQ(answers.AttemptsOf(id), 1) << id;
  }
  EXPECT_EQ(Count("id IN " + InList(held) + " AND state = 'completed' AND attempt = 1"), 10);
  for (const Answered& x : all) {
    if (x.status == 200) continue;
    EXPECT_EQ(std::count(held.begin(), held.end(), x.job), 0) << x.job;
  }
  EXPECT_EQ(Count("scheduled_at = 'infinity'"), 0);
}

}  // namespace
}  // namespace bulkhead
