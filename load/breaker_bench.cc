// bulkhead-breaker-bench: measures the circuit breaker on this machine, with a real PostgreSQL,
// the real `bulkhead run` binary (dead) and the stores' own statements (park, claim). Run it
// through load/breaker_bench.sh, which starts an embedded PostgreSQL and builds.
//
//   dead   one tenant on tier `default`, one channel to a loopback path that accepts requests
//          and never answers. One node runs the tier as tiers/default.json ships it, read
//          from the file with no key overridden (DefaultTier below). Once it has started, 10
//          connections (--concurrency) each enqueue 1,000 deliveries (--backlog 10000 in all)
//          with `SELECT bulkhead.enqueue(…)`, one per transaction, like an application. A
//          sampler on its own connection reads the channel's breaker and its jobs by state
//          every 100 ms. t = 0 is the first enqueue's COMMIT returning. Prints when the
//          breaker opened (sampled, and exactly from breaker_changed_at in SQL), when no job
//          of the channel was available any more, how many stayed available behind the open
//          breaker (enqueues that raced the opening statement), when the whole backlog was
//          parked, the requests that reached the endpoint by t = 12 s (after the first attempts' 10
//          s timeout) and in all, the most deliveries in flight, and the per-second timeline.
//          Watches for --seconds (15) or until the backlog is parked, whichever is later.
//   park   --jobs (100000) available jobs of one channel (enqueue_many, 1,000 per call),
//          VACUUM ANALYZE, then per round (--rounds, 5): BreakerStore::OpenBreaker (the park in
//          one statement), VACUUM ANALYZE, AdminChannelStore::ResetBreaker (the unpark), VACUUM
//          ANALYZE. Prints each round and the median and range of both, in ms.
//   claim  ClaimStore::Claim("default", 10, …) until --available (5000) jobs of a healthy
//          channel are drained, timing each claim, in three schemas side by side:
//          (a) nothing else in bulkhead.jobs; (b) plus --extra (1000000) `parked` jobs of
//          another channel in the same queue; (c) plus as many `completed` jobs instead.
//          Each case has its own database beside --database (<name>_claim_a, _b, _c, made
//          with the same host, port and user, and dropped at the end), and the three take
//          turns claim by claim, so that the rest of the machine's load weighs on all alike.
//          --drains (5) times: --available fresh jobs in each, VACUUM ANALYZE, drain. Prints
//          p50/p95/p99/mean in µs, the buffers one claim touched (EXPLAIN ANALYZE, rolled
//          back) and the ratios b/a and c/a. The claim index (jobs_claim, WHERE state =
//          'available') is what should keep those ratios near 1.
//
// Every mode starts from an empty bulkhead schema in the given database (it migrates down and
// up), so do not point it at a database you care about.
#include <curl/curl.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <latch>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "admin_channel_store.h"
#include "breaker_store.h"
#include "claim_store.h"
#include "http_receiver.h"
#include "node_process.h"
#include "process_usage.h"
#include "schema_reset.h"
#include "shipped_tier.h"

namespace {

using bulkhead::BreakerTransition;
using bulkhead::testing::HttpReceiver;
using bulkhead::testing::LoadAverage;
using bulkhead::testing::LoopbackNetworks;
using bulkhead::testing::NodeProcess;
using bulkhead::testing::ResetSchema;
using bulkhead::testing::SiblingDatabase;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: bulkhead-breaker-bench dead|park|claim --database URL [--backlog N] "
    "[--concurrency N] [--seconds N] [--jobs N] [--rounds N] [--available N] [--extra N] "
    "[--drains N]\n";

struct Args {
  std::string mode;
  std::string database;
  int backlog = 10000;   // dead
  int concurrency = 10;  // dead
  int seconds = 15;      // dead: the least time watched after t = 0
  int jobs = 100000;     // park
  int rounds = 5;        // park
  int available = 5000;  // claim
  int extra = 1000000;   // claim: parked (b) or completed (c) rows
  int drains = 3;        // claim
};

int Usage(const std::string& message) {
  std::cerr << "bulkhead-breaker-bench: " << message << "\n" << kUsage;
  return 2;
}

// The tier `default` exactly as tiers/default.json ships it, read from the file: the figures are
// measured with the shipped settings, and the bench cannot drift from them. No key is overridden.
nlohmann::json DefaultTier() { return bulkhead::testing::ShippedTier("default"); }

constexpr const char* kPayload =
    R"({"type": "invoice.paid", "text": "a message of about a hundred bytes, like a chat note"})";

struct Channel {
  int64_t tenant = 0;
  int64_t id = 0;
};

Channel MakeChannel(pqxx::connection& conn, const std::string& tenant, const std::string& url) {
  pqxx::work tx(conn);
  Channel c;
  c.tenant = tx.exec_params1(
                   "INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, 'default') RETURNING id",
                   tenant)[0]
                 .as<int64_t>();
  c.id = tx.exec_params1(
               "INSERT INTO bulkhead.channels (tenant_id, url) VALUES ($1, $2) "
               "RETURNING id",
               c.tenant, url)[0]
             .as<int64_t>();
  tx.commit();
  return c;
}

// Enqueues `n` deliveries to `channel` with enqueue_many, 1,000 per call and transaction.
void EnqueueMany(pqxx::connection& conn, int64_t channel, int n) {
  for (int done = 0; done < n;) {
    int batch = std::min(1000, n - done);
    pqxx::work tx(conn);
    tx.exec_params(
        "SELECT bulkhead.enqueue_many(ARRAY(SELECT $1::bigint FROM generate_series(1, $2::int)),"
        "  ARRAY(SELECT $3::jsonb FROM generate_series(1, $2::int)))",
        channel, batch, kPayload);
    tx.commit();
    done += batch;
  }
}

void Sql(pqxx::connection& conn, const std::string& statement) {
  pqxx::nontransaction tx(conn);
  tx.exec(statement);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Nearest-rank percentile of a sorted, non-empty vector.
double Percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// ---- dead -------------------------------------------------------------------------------------

struct Sample {
  Clock::time_point at;
  std::string breaker;
  int64_t available = 0;
  int64_t executing = 0;
  int64_t parked = 0;
};

// Samples the channel every 100 ms on its own connection until stopped.
class Sampler {
 public:
  Sampler(const std::string& database, int64_t channel)
      : conn_(database), channel_(channel), thread_([this] { Run(); }) {}
  ~Sampler() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Sample> samples() {
    std::lock_guard lock(mu_);
    return samples_;
  }

 private:
  void Run() {
    // Counts by state through the partial indexes of the backlog (jobs_channel_waiting) and
    // of jobs in flight (jobs_executing): a few ms per sample at 10,000 jobs.
    conn_.prepare("sample",
                  "SELECT ch.breaker_state,"
                  " (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id"
                  "     AND j.state = 'available'),"
                  " (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id"
                  "     AND j.state = 'executing'),"
                  " (SELECT count(*) FROM bulkhead.jobs j WHERE j.channel_id = ch.id"
                  "     AND j.state = 'parked')"
                  "  FROM bulkhead.channels ch WHERE ch.id = $1");
    auto next = Clock::now();
    while (!stop_) {
      Sample s;
      s.at = Clock::now();
      {
        pqxx::work tx(conn_);
        pqxx::row row = tx.exec_prepared1("sample", channel_);
        s.breaker = row[0].as<std::string>();
        s.available = row[1].as<int64_t>();
        s.executing = row[2].as<int64_t>();
        s.parked = row[3].as<int64_t>();
      }
      {
        std::lock_guard lock(mu_);
        samples_.push_back(s);
      }
      next += std::chrono::milliseconds(100);
      std::this_thread::sleep_until(next);
    }
  }

  pqxx::connection conn_;  // only touched by thread_
  const int64_t channel_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Sample> samples_;  // guarded by mu_
  std::thread thread_;           // started last
};

// The node's log lines with the given event, parsed.
std::vector<nlohmann::json> LogEvents(const std::string& log, const std::string& event) {
  std::vector<nlohmann::json> events;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"" + event + "\"") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == event) events.push_back(j);
  }
  return events;
}

int Dead(const Args& args) {
  HttpReceiver receiver([](const bulkhead::testing::ReceivedRequest&) {
    bulkhead::testing::Reply reply;
    reply.hang = true;
    return reply;
  });
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  Channel dead = MakeChannel(conn, "dead", receiver.Url("/hang-dead"));

  NodeProcess node({{"node", "breaker-bench"},
                    {"poll_interval_ms", 1000},
                    {"allowed_networks", LoopbackNetworks()}},
                   {{"default", DefaultTier()}});
  node.Start(args.database);
  if (!node.WaitForLog("node_started", std::chrono::seconds(30))) {
    if (auto code = node.Wait(std::chrono::milliseconds(0))) {
      std::cerr << "the node exited with " << *code << ":\n" << node.Log();
    } else {
      std::cerr << "the node did not start within 30 s:\n" << node.Log();
    }
    return 1;
  }
  // Let its LISTEN connection come up, so the first enqueue wakes it rather than the poll.
  std::this_thread::sleep_for(std::chrono::seconds(1));

  Sampler sampler(args.database, dead.id);
  const int per_thread = args.backlog / args.concurrency;
  const int total = per_thread * args.concurrency;
  std::vector<Clock::time_point> first(args.concurrency), last(args.concurrency);
  std::latch ready(args.concurrency + 1);
  std::vector<std::thread> enqueuers;
  std::atomic<int> failures{0};
  for (int t = 0; t < args.concurrency; ++t) {
    enqueuers.emplace_back([&, t] {
      try {
        pqxx::connection c(args.database);
        c.prepare("enqueue", "SELECT bulkhead.enqueue($1, $2::jsonb)");
        ready.arrive_and_wait();
        for (int i = 0; i < per_thread; ++i) {
          pqxx::work tx(c);
          tx.exec_prepared1("enqueue", dead.id, kPayload);
          tx.commit();
          auto now = Clock::now();
          if (i == 0) first[t] = now;
          last[t] = now;
        }
      } catch (const std::exception& e) {
        std::cerr << "enqueuer " << t << ": " << e.what() << "\n";
        ++failures;
      }
    });
  }
  ready.arrive_and_wait();
  for (auto& t : enqueuers) t.join();
  if (failures > 0) return 1;
  const Clock::time_point t0 = *std::min_element(first.begin(), first.end());
  const Clock::time_point backlog_done = *std::max_element(last.begin(), last.end());

  // Requests by t = 12 s: every attempt sent before the breaker opened has timed out (10 s).
  std::this_thread::sleep_until(t0 + std::chrono::seconds(12));
  const size_t requests_12s = receiver.request_count();

  // Watch until --seconds have passed and the whole backlog is parked, at most 120 s.
  auto all_parked = [&](const Sample& s) {
    return s.at >= backlog_done && s.available == 0 && s.executing == 0;
  };
  for (auto give_up = t0 + std::chrono::seconds(120);;) {
    auto samples = sampler.samples();
    bool parked = std::any_of(samples.begin(), samples.end(), all_parked);
    if ((parked && Clock::now() >= t0 + std::chrono::seconds(args.seconds)) ||
        Clock::now() >= give_up) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  sampler.Stop();
  const size_t requests_end = receiver.request_count();
  const double watched_s = Seconds(Clock::now() - t0);

  // The same moments from the database's clock: when the breaker opened, relative to the
  // first job's created_at (its enqueue transaction's start) and to the first attempt.
  pqxx::row sql;
  {
    pqxx::work tx(conn);
    sql = tx.exec_params1(
        "SELECT ch.breaker_state, ch.breaker_state <> 'closed',"
        "       extract(epoch FROM ch.breaker_changed_at - f.first_created)::float8,"
        "       extract(epoch FROM ch.breaker_changed_at - f.first_attempt)::float8,"
        "       extract(epoch FROM f.last_created - f.first_created)::float8,"
        "       f.attempted, f.jobs, coalesce(ch.breaker_reason, '')"
        "  FROM bulkhead.channels ch, LATERAL ("
        "       SELECT min(created_at) AS first_created, max(created_at) AS last_created,"
        "              min(attempted_at) AS first_attempt,"
        "              count(*) FILTER (WHERE attempt > 0) AS attempted, count(*) AS jobs"
        "         FROM bulkhead.jobs WHERE channel_id = ch.id) f"
        " WHERE ch.id = $1",
        dead.id);
  }

  node.Signal(SIGTERM);
  auto code = node.Wait(std::chrono::seconds(30));
  std::string log = node.Log();

  std::vector<Sample> samples = sampler.samples();
  auto since = [&](Clock::time_point at) { return Seconds(at - t0); };
  std::optional<double> opened_sampled, no_available, whole_parked;
  int64_t max_executing = 0;
  std::optional<int64_t> stranded;  // available once the backlog was complete and the breaker open
  for (const auto& s : samples) {
    if (!stranded && s.at >= backlog_done && s.breaker != "closed") stranded = s.available;
    if (!opened_sampled && s.breaker != "closed") opened_sampled = since(s.at);
    if (!no_available && s.at >= backlog_done && s.available == 0) no_available = since(s.at);
    if (!whole_parked && all_parked(s)) whole_parked = since(s.at);
    max_executing = std::max(max_executing, s.executing);
  }
  auto or_never = [](const std::optional<double>& v) {
    char buf[32];
    if (!v) return std::string("never");
    std::snprintf(buf, sizeof(buf), "%.2f s", *v);
    return std::string(buf);
  };

  const nlohmann::json tier = DefaultTier();
  std::printf(
      "dead: %d deliveries to a channel that never answers, enqueued by %d connections "
      "(bulkhead.enqueue, one per transaction); one node, tier default as shipped (%d workers, "
      "failure_threshold %d, slow_call_ms %lld, request_timeout_ms %lld, cooldown_ms %lld)\n",
      total, args.concurrency, tier["workers"].get<int>(), tier["failure_threshold"].get<int>(),
      tier["slow_call_ms"].get<long long>(), tier["request_timeout_ms"].get<long long>(),
      tier["cooldown_ms"].get<long long>());
  std::printf("  t = 0: the first enqueue's COMMIT returned; watched for %.1f s, %zu samples\n",
              watched_s, samples.size());
  std::printf(
      "  backlog_created_s    %.2f s (last COMMIT; %.2f s between the first and last "
      "created_at in SQL)\n",
      Seconds(backlog_done - t0), sql[4].as<double>());
  if (sql[1].as<bool>()) {
    std::printf(
        "  opened_after_s       %.3f s (SQL: breaker_changed_at - first created_at); "
        "first sample not closed at %s; %.3f s after the first attempt was claimed\n",
        sql[2].as<double>(), or_never(opened_sampled).c_str(), sql[3].as<double>());
  } else {
    std::printf("  opened_after_s       never (breaker %s at the end)\n",
                sql[0].as<std::string>().c_str());
  }
  std::printf(
      "  parked_after_s       %s (first sample after the backlog was complete with no "
      "job available)\n",
      or_never(no_available).c_str());
  std::printf("  all_parked_after_s   %s (no job available or executing: all %lld parked)\n",
              or_never(whole_parked).c_str(), static_cast<long long>(sql[6].as<int64_t>()));
  std::printf("  dead_requests        %zu by t = 12 s, %zu by the end (%lld jobs attempted)\n",
              requests_12s, requests_end, static_cast<long long>(sql[5].as<int64_t>()));
  if (stranded && *stranded > 0) {
    std::printf(
        "  left available       %lld jobs once the backlog was complete and the breaker "
        "open (enqueues that read it closed and committed after the opening statement)\n",
        static_cast<long long>(*stranded));
  }
  std::printf("  max_inflight_dead    %lld (most jobs executing in one sample)\n",
              static_cast<long long>(max_executing));
  std::printf("  breaker reason       %s\n", sql[7].as<std::string>().c_str());
  for (const auto& e : LogEvents(log, "breaker_opened")) {
    std::printf("  node: breaker_opened, parked %s in the opening statement\n",
                e.value("parked", nlohmann::json()).dump().c_str());
  }
  for (const auto& e : LogEvents(log, "node_stopped")) {
    std::printf("  node: stopped, claims %s\n", e.value("claims", nlohmann::json()).dump().c_str());
  }
  std::printf("  node exit code %s\n", code ? std::to_string(*code).c_str() : "(still running)");

  std::printf("\n  %6s  %-9s  %9s  %9s  %7s\n", "t (s)", "breaker", "executing", "available",
              "parked");
  size_t i = 0;
  for (int second = 0;; ++second) {
    auto at = t0 + std::chrono::seconds(second);
    while (i < samples.size() && samples[i].at < at) ++i;
    if (i == samples.size()) break;
    const Sample& s = samples[i];
    std::printf("  %6.1f  %-9s  %9lld  %9lld  %7lld\n", since(s.at), s.breaker.c_str(),
                static_cast<long long>(s.executing), static_cast<long long>(s.available),
                static_cast<long long>(s.parked));
  }
  return sql[1].as<bool>() && whole_parked ? 0 : 1;
}

// ---- park -------------------------------------------------------------------------------------

int Park(const Args& args) {
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  Channel channel = MakeChannel(conn, "backlog", "http://127.0.0.1:9/backlog");
  auto fill_start = Clock::now();
  EnqueueMany(conn, channel.id, args.jobs);
  double fill_s = Seconds(Clock::now() - fill_start);
  Sql(conn, "VACUUM ANALYZE bulkhead.jobs");
  bulkhead::BreakerStore breakers(conn);
  bulkhead::AdminChannelStore admin(conn);

  std::printf(
      "park: %d available jobs of one channel (enqueued in %.1f s with enqueue_many), "
      "%d rounds; VACUUM ANALYZE before every timed statement\n",
      args.jobs, fill_s, args.rounds);
  std::printf("  %5s  %12s  %12s\n", "round", "park (ms)", "unpark (ms)");
  std::vector<double> park_ms, unpark_ms;
  for (int r = 1; r <= args.rounds; ++r) {
    auto start = Clock::now();
    BreakerTransition opened = breakers.OpenBreaker(channel.id, 30000, "bench");
    park_ms.push_back(Millis(Clock::now() - start));
    if (!opened.done || opened.jobs != args.jobs) {
      std::cerr << "OpenBreaker parked " << opened.jobs << " of " << args.jobs << "\n";
      return 1;
    }
    Sql(conn, "VACUUM ANALYZE bulkhead.jobs");
    start = Clock::now();
    auto reset = admin.ResetBreaker(channel.id);
    unpark_ms.push_back(Millis(Clock::now() - start));
    if (!reset || reset->before != "open" || reset->jobs != args.jobs) {
      std::cerr << "ResetBreaker unparked " << (reset ? reset->jobs : -1) << " of " << args.jobs
                << "\n";
      return 1;
    }
    Sql(conn, "VACUUM ANALYZE bulkhead.jobs");
    std::printf("  %5d  %12.1f  %12.1f\n", r, park_ms.back(), unpark_ms.back());
  }
  auto range = [](const std::vector<double>& v) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return std::make_pair(*lo, *hi);
  };
  auto [park_lo, park_hi] = range(park_ms);
  auto [unpark_lo, unpark_hi] = range(unpark_ms);
  std::printf("  park   (OpenBreaker): median %.1f ms, range %.1f-%.1f ms, %.0f jobs/s\n",
              Median(park_ms), park_lo, park_hi, args.jobs / Median(park_ms) * 1000);
  std::printf("  unpark (ResetBreaker): median %.1f ms, range %.1f-%.1f ms, %.0f jobs/s\n",
              Median(unpark_ms), unpark_lo, unpark_hi, args.jobs / Median(unpark_ms) * 1000);
  return 0;
}

// ---- claim ------------------------------------------------------------------------------------

// One case of the claim comparison: its own database, so that the three run side by side.
struct ClaimCase {
  std::string name;
  std::string extra_state;  // "", "parked" or "completed"
  std::string dbname;
  std::unique_ptr<pqxx::connection> conn;
  std::unique_ptr<bulkhead::ClaimStore> store;
  Channel healthy;
  int claimed = 0;                // in the current drain
  std::vector<double> drain_us;   // the current drain's claims
  std::vector<double> us;         // every claim that returned jobs, all drains
  std::vector<double> drain_p50;  // per drain
  std::string buffers;            // of one claim, from EXPLAIN (ANALYZE, BUFFERS)
  double explain_ms = 0;
};

// Sets a case up in a new database: the schema, a healthy channel and another channel of the
// same queue with `extra` rows in extra_state.
void SetUpClaimCase(const Args& args, pqxx::connection& admin, ClaimCase& c) {
  Sql(admin, "DROP DATABASE IF EXISTS " + c.dbname);
  Sql(admin, "CREATE DATABASE " + c.dbname);
  std::string database = SiblingDatabase(admin, c.dbname);
  ResetSchema(database);
  c.conn = std::make_unique<pqxx::connection>(database);
  c.healthy = MakeChannel(*c.conn, "healthy", "http://127.0.0.1:9/healthy");
  Channel other = MakeChannel(*c.conn, "other", "http://127.0.0.1:9/other");
  if (!c.extra_state.empty() && args.extra > 0) {
    // Straight into the table, in the shape the states have: parked at priority 3 (as
    // OpenBreaker leaves them), completed with finished_at and one attempt.
    pqxx::work tx(*c.conn);
    tx.exec_params(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, attempt,"
        "                           attempted_at, attempted_by, finished_at, payload)"
        " SELECT 'default', $1::bigint, $2::bigint, $3::text,"
        "        CASE WHEN $3 = 'parked' THEN 3 ELSE 1 END,"
        "        CASE WHEN $3 = 'completed' THEN 1 ELSE 0 END,"
        "        CASE WHEN $3 = 'completed' THEN now() END,"
        "        CASE WHEN $3 = 'completed' THEN 'bench-node' END,"
        "        CASE WHEN $3 = 'completed' THEN now() END, '{}'"
        "   FROM generate_series(1, $4::int)",
        other.tenant, other.id, c.extra_state, args.extra);
    tx.commit();
  }
  c.store = std::make_unique<bulkhead::ClaimStore>(*c.conn);
}

// One claim of `c`, halfway through the first drain, explained and rolled back.
void ExplainClaim(ClaimCase& c) {
  pqxx::work tx(*c.conn);
  // The arguments ClaimStore::Claim("default", 10, …) without caps sends (claim_store.cc):
  // caps of 1,000,000, no lending, the long look-ahead, the skip scan from the lowest head
  // bounded at ClaimLimits::HeadsFor(10).
  pqxx::result plan = tx.exec(
      "EXPLAIN (ANALYZE, BUFFERS) EXECUTE claim('default', 10, 'bench-explain', '{}', '{}', "
      "'{}', '{}', 1000000, 1000000, '{}', 1000000, 0, '{}', " +
      std::to_string(bulkhead::ClaimLimits::kLongLookAhead) + ", 0, 0, " +
      std::to_string(bulkhead::ClaimLimits::HeadsFor(10)) + ")");
  for (const auto& row : plan) {
    std::string line = row[0].as<std::string>();
    if (c.buffers.empty() && line.find("Buffers:") != std::string::npos) {
      c.buffers = line.substr(line.find("Buffers:") + 9);
    }
    if (line.starts_with("Execution Time:")) c.explain_ms = std::stod(line.substr(16));
  }
  tx.abort();
}

int Claim(const Args& args) {
  pqxx::connection admin(args.database);
  const std::string base = admin.dbname();
  std::vector<ClaimCase> cases(3);
  cases[0].name = "(a) no other rows";
  cases[1].name = "(b) + parked rows";
  cases[1].extra_state = "parked";
  cases[2].name = "(c) + completed rows";
  cases[2].extra_state = "completed";
  const char* suffix[] = {"_claim_a", "_claim_b", "_claim_c"};
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].dbname = base + suffix[i];
    SetUpClaimCase(args, admin, cases[i]);
  }

  for (int d = 0; d < args.drains; ++d) {
    for (auto& c : cases) {
      EnqueueMany(*c.conn, c.healthy.id, args.available);
      Sql(*c.conn, "VACUUM ANALYZE bulkhead.jobs");
      c.claimed = 0;
      c.drain_us.clear();
    }
    // The cases take turns, one claim each, so that whatever else the machine does at a
    // moment weighs on all three alike.
    for (bool any = true; any;) {
      any = false;
      for (auto& c : cases) {
        if (c.claimed >= args.available) continue;
        if (d == 0 && c.claimed >= args.available / 2 && c.buffers.empty()) ExplainClaim(c);
        auto start = Clock::now();
        std::vector<bulkhead::ClaimedJob> jobs = c.store->Claim("default", 10, "bench-node");
        double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        if (jobs.empty()) {
          throw std::runtime_error(c.name + ": claimed " + std::to_string(c.claimed) + " of " +
                                   std::to_string(args.available));
        }
        c.claimed += static_cast<int>(jobs.size());
        c.drain_us.push_back(us);
        any = true;
      }
    }
    for (auto& c : cases) {
      c.us.insert(c.us.end(), c.drain_us.begin(), c.drain_us.end());
      c.drain_p50.push_back(Median(c.drain_us));
    }
  }

  std::printf(
      "claim: ClaimStore::Claim(\"default\", 10) until %d available jobs are drained, "
      "%d drains; three databases side by side, claims taking turns; (b) and (c) hold "
      "%d more rows of another channel in the same queue\n",
      args.available, args.drains, args.extra);
  std::printf("  %-22s  %7s  %7s  %7s  %7s  %7s  %-24s  %s\n", "case", "claims", "p50 µs", "p95 µs",
              "p99 µs", "mean µs", "p50 per drain (µs)", "one claim, EXPLAIN ANALYZE");
  for (auto& c : cases) {
    std::sort(c.us.begin(), c.us.end());
    std::string per_drain;
    for (double p : c.drain_p50) {
      if (!per_drain.empty()) per_drain += " ";
      per_drain += std::to_string(static_cast<int>(p + 0.5));
    }
    std::printf("  %-22s  %7zu  %7.0f  %7.0f  %7.0f  %7.0f  %-24s  %.3f ms, buffers %s\n",
                c.name.c_str(), c.us.size(), Percentile(c.us, 0.50), Percentile(c.us, 0.95),
                Percentile(c.us, 0.99), Mean(c.us), per_drain.c_str(), c.explain_ms,
                c.buffers.c_str());
  }
  const ClaimCase& a = cases[0];
  for (size_t i = 1; i < cases.size(); ++i) {
    std::string per_drain;
    for (int d = 0; d < args.drains; ++d) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%s%.2f", d > 0 ? " " : "",
                    cases[i].drain_p50[d] / a.drain_p50[d]);
      per_drain += buf;
    }
    std::printf("  ratio %s / (a): p50 %.2f, mean %.2f (p50 per drain: %s)\n",
                cases[i].name.substr(0, 3).c_str(),
                Percentile(cases[i].us, 0.50) / Percentile(a.us, 0.50),
                Mean(cases[i].us) / Mean(a.us), per_drain.c_str());
  }
  for (auto& c : cases) {
    c.store.reset();
    c.conn.reset();
    Sql(admin, "DROP DATABASE IF EXISTS " + c.dbname);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) return Usage("missing mode");
  if (words[0] == "-h" || words[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }
  args.mode = words[0];
  if (args.mode != "dead" && args.mode != "park" && args.mode != "claim") {
    return Usage("unknown mode " + args.mode);
  }
  if (words.size() % 2 == 0) return Usage("an option lacks its value");
  for (size_t i = 1; i + 1 < words.size(); i += 2) {
    const std::string& key = words[i];
    const std::string& value = words[i + 1];
    if (key == "--database") {
      args.database = value;
      continue;
    }
    int* target = key == "--backlog"       ? &args.backlog
                  : key == "--concurrency" ? &args.concurrency
                  : key == "--seconds"     ? &args.seconds
                  : key == "--jobs"        ? &args.jobs
                  : key == "--rounds"      ? &args.rounds
                  : key == "--available"   ? &args.available
                  : key == "--extra"       ? &args.extra
                  : key == "--drains"      ? &args.drains
                                           : nullptr;
    if (target == nullptr) return Usage("unknown option " + key);
    *target = std::stoi(value);
    if (*target < (key == "--extra" ? 0 : 1)) return Usage(key + " is out of range");
  }
  if (args.concurrency > args.backlog) return Usage("--concurrency is above --backlog");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  try {
    std::string load_before = LoadAverage();
    int code = args.mode == "dead" ? Dead(args) : args.mode == "park" ? Park(args) : Claim(args);
    std::printf("  load average (1, 5, 15 min) before %s, after %s\n", load_before.c_str(),
                LoadAverage().c_str());
    return code;
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-breaker-bench: " << e.what() << "\n";
    return 1;
  }
}
