// `bulkhead-load breaker dead`: a backlog to an endpoint that never answers, and when the
// breaker opened and the backlog was parked (load/bench/benches.h).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <latch>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_stack.h"
#include "breaker_bench.h"
#include "http_receiver.h"
#include "node_process.h"
#include "schema_reset.h"
#include "shipped_tier.h"

namespace bulkhead::bench {
namespace {

using testing::HttpReceiver;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::ResetSchema;
using Clock = std::chrono::steady_clock;

// The tier `default` exactly as tiers/default.json ships it, read from the file: the figures are
// measured with the shipped settings, and the bench cannot drift from them. No key is overridden.
nlohmann::json DefaultTier() { return testing::ShippedTier("default"); }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

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

}  // namespace

int Dead(const BreakerArgs& args) {
  HttpReceiver receiver([](const testing::ReceivedRequest&) {
    testing::Reply reply;
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
  // Once started, a second more for its LISTEN connection: the first enqueue wakes it.
  if (!StartNode(node, args.database)) return 1;

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

}  // namespace bulkhead::bench
