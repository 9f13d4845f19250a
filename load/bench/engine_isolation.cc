// `bulkhead-load engine isolation`: the caps alone against two offenders, the breaker kept out
// of the way (load/bench/benches.h).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "arrivals.h"
#include "bench_stack.h"
#include "engine_bench.h"
#include "http_receiver.h"
#include "node_process.h"
#include "process_usage.h"
#include "schema_reset.h"

namespace bulkhead::bench {
namespace {

using testing::HttpReceiver;
using testing::LoadAverage;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::ResetSchema;

constexpr int kManyChannels = 40;
constexpr int kDeadBacklog = 1000;
constexpr int kManyBacklogEach = 25;
constexpr auto kHealthyReply = std::chrono::milliseconds(25);
constexpr auto kStragglers = std::chrono::seconds(12);

// Reads the jobs executing per tenant every 100 ms on its own connection, keeping the most.
class ExecutingSampler {
 public:
  ExecutingSampler(const std::string& database) : conn_(database), thread_([this] { Run(); }) {}
  ~ExecutingSampler() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // The most jobs of `tenant` executing in one sample; the samples taken.
  int64_t Max(const std::string& tenant) const {
    std::lock_guard lock(mu_);
    auto it = max_.find(tenant);
    return it == max_.end() ? 0 : it->second;
  }
  int samples() const { return samples_.load(); }

 private:
  void Run() {
    // Through jobs_executing (a partial index on executing rows): a few ms per sample.
    conn_.prepare("executing",
                  "SELECT t.name, count(*) FROM bulkhead.jobs j"
                  "  JOIN bulkhead.tenants t ON t.id = j.tenant_id"
                  " WHERE j.state = 'executing' GROUP BY t.name");
    for (auto next = Clock::now(); !stop_;) {
      std::map<std::string, int64_t> now;
      {
        pqxx::work tx(conn_);
        for (const auto& row : tx.exec_prepared("executing")) {
          now[row[0].as<std::string>()] = row[1].as<int64_t>();
        }
      }
      {
        std::lock_guard lock(mu_);
        for (const auto& [tenant, n] : now) max_[tenant] = std::max(max_[tenant], n);
      }
      ++samples_;
      next += std::chrono::milliseconds(100);
      std::this_thread::sleep_until(next);
    }
  }

  pqxx::connection conn_;  // only touched by thread_
  std::atomic<bool> stop_{false};
  std::atomic<int> samples_{0};
  mutable std::mutex mu_;
  std::map<std::string, int64_t> max_;  // guarded by mu_
  std::thread thread_;                  // started last
};

struct IsolationCase {
  double share = 0;
  int workers = 0;
  CapLedger::Caps caps;
  int64_t target = 0;  // what dead and many can hold together
  Latencies baseline, broken;
  int64_t reached = 0;  // executing when the broken traffic started
  double reached_s = 0;
  int64_t max_dead = 0, max_many = 0, max_healthy = 0;
  std::string load_before, load_after;
};

int64_t Executing(pqxx::connection& conn) {
  pqxx::work tx(conn);
  return tx.exec1("SELECT count(*) FROM bulkhead.jobs WHERE state = 'executing'")[0].as<int64_t>();
}

std::optional<IsolationCase> RunIsolation(const EngineArgs& args, double share) {
  IsolationCase c;
  c.share = share;
  c.workers = args.workers;
  c.caps = CapsAt(args.workers, share);
  const int64_t dead_hold = std::min(c.caps.channel, c.caps.tenant);
  const int64_t many_hold =
      std::min<int64_t>(c.caps.tenant, static_cast<int64_t>(kManyChannels) * c.caps.channel);
  c.target = std::min<int64_t>(args.workers, dead_hold + many_hold);

  Arrivals arrivals;
  HttpReceiver receiver([&](const testing::ReceivedRequest& r) {
    testing::Reply reply;
    if (r.path == "/healthy") {
      arrivals.Record(r.headers.at("webhook-id"), Clock::now());
      reply.delay = kHealthyReply;
    } else {
      reply.hang = true;
    }
    return reply;
  });
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  int64_t healthy = 0, dead = 0;
  std::vector<int64_t> many;
  {
    pqxx::work tx(conn);
    auto tenant = [&](const std::string& name) {
      return tx
          .exec_params1("INSERT INTO bulkhead.tenants (name) VALUES ($1) RETURNING id", name)[0]
          .as<int64_t>();
    };
    auto channel = [&](int64_t tenant_id, const std::string& url) {
      return tx
          .exec_params1(
              "INSERT INTO bulkhead.channels (tenant_id, url) VALUES ($1, $2) RETURNING id",
              tenant_id, url)[0]
          .as<int64_t>();
    };
    healthy = channel(tenant("healthy"), receiver.Url("/healthy"));
    dead = channel(tenant("dead"), receiver.Url("/dead"));
    int64_t many_tenant = tenant("many");
    for (int i = 0; i < kManyChannels; ++i) {
      many.push_back(channel(many_tenant, receiver.Url("/many/" + std::to_string(i))));
    }
    tx.commit();
  }

  nlohmann::json tier = Tier(args.workers, share);
  tier["failure_threshold"] = 1000;  // override: the breaker kept out of the way
  tier["slow_call_ms"] = 3600000;    // override: likewise
  // No drain at the end: the hanging requests would hold the stop for the request timeout.
  NodeProcess node({{"node", "isolation-bench"},
                    {"poll_interval_ms", 1000},
                    {"shutdown_grace_ms", 0},
                    {"allowed_networks", LoopbackNetworks()}},
                   {{"default", tier}});
  c.load_before = LoadAverage();
  if (!StartNode(node, args.database)) return std::nullopt;

  auto baseline = SteadyTraffic(conn, healthy, args.rate, args.seconds);
  arrivals.WaitFor(baseline, kStragglers);
  c.baseline = arrivals.Of(baseline);

  ExecutingSampler sampler(args.database);
  const auto backlog_start = Clock::now();
  EnqueueBurst(conn, {dead}, kDeadBacklog);
  EnqueueBurst(conn, many, kManyBacklogEach * kManyChannels);
  for (auto give_up = Clock::now() + std::chrono::seconds(20);;) {
    c.reached = Executing(conn);
    if (c.reached >= c.target || Clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  c.reached_s = std::chrono::duration<double>(Clock::now() - backlog_start).count();
  auto broken = SteadyTraffic(conn, healthy, args.rate, args.seconds);
  arrivals.WaitFor(broken, kStragglers);
  sampler.Stop();
  Arrivals::Split broken_split = arrivals.BySecond(broken);
  c.broken = broken_split.all;
  c.load_after = LoadAverage();
  c.max_dead = sampler.Max("dead");
  c.max_many = sampler.Max("many");
  c.max_healthy = sampler.Max("healthy");

  size_t to_dead = 0, to_many = 0;
  for (const auto& r : receiver.Requests()) {
    if (r.path == "/dead") ++to_dead;
    if (r.path.starts_with("/many/")) ++to_many;
  }
  node.Signal(SIGTERM);
  if (!node.Wait(std::chrono::seconds(30))) node.Signal(SIGKILL);

  auto line = [&](const char* phase, const Latencies& l) {
    std::printf(
        "  %-8s healthy %d/s for %d s: received %zu of %zu; p50 %s, p95 %s, p99 %s, max %s\n",
        phase, args.rate, args.seconds, l.received, l.ms.size(),
        FormatMs(l.Percentile(0.50)).c_str(), FormatMs(l.Percentile(0.95)).c_str(),
        FormatMs(l.Percentile(0.99)).c_str(), FormatMs(l.Max()).c_str());
  };
  std::printf(
      "isolation: tier default, %d workers, channel_share = tenant_share = %g: caps %d per "
      "channel, %d per tenant%s; breaker out of the way; request_timeout_ms 10000\n",
      args.workers, share, c.caps.channel, c.caps.tenant, share >= 1.0 ? " (no caps)" : "");
  line("baseline", c.baseline);
  std::printf(
      "  backlog  dead %d (1 channel), many %d (%d channels x %d); %lld executing %.2f s after "
      "it began (waited for %lld)\n",
      kDeadBacklog, kManyChannels * kManyBacklogEach, kManyChannels, kManyBacklogEach,
      static_cast<long long>(c.reached), c.reached_s, static_cast<long long>(c.target));
  line("broken", c.broken);
  for (size_t i = 0; i < broken_split.seconds.size(); ++i) {
    const Latencies& l = broken_split.seconds[i];
    std::printf("    committed in second %2zu: received %2zu of %2zu; p50 %s, max %s\n", i,
                l.received, l.ms.size(), FormatMs(l.Percentile(0.50)).c_str(),
                FormatMs(l.Max()).c_str());
  }
  std::printf(
      "  executing at most (%d samples, 100 ms apart): dead %lld, many %lld, healthy %lld\n"
      "  requests that reached the hanging paths: dead %zu, many %zu\n"
      "  load average (1, 5, 15 min) before %s, after %s\n\n",
      sampler.samples(), static_cast<long long>(c.max_dead), static_cast<long long>(c.max_many),
      static_cast<long long>(c.max_healthy), to_dead, to_many, c.load_before.c_str(),
      c.load_after.c_str());
  std::fflush(stdout);
  return c;
}

}  // namespace

int Isolation(const EngineArgs& args) {
  std::vector<IsolationCase> cases;
  for (double share : args.shares) {
    auto c = RunIsolation(args, share);
    if (!c) return 1;
    cases.push_back(*c);
  }
  std::printf(
      "isolation, side by side (%d workers; healthy's commit -> request latency, ms; "
      "'-' not received within %lld s):\n",
      args.workers, static_cast<long long>(kStragglers.count()));
  std::printf("  %5s  %9s  %-28s  %-34s  %9s  %9s  %5s\n", "share", "caps ch/t",
              "baseline p50/p95/p99/max", "broken p50/p95/p99/max", "received", "max dead", "many");
  auto ms = [](double v) {
    char buf[16];
    if (std::isinf(v)) return std::string("-");
    std::snprintf(buf, sizeof(buf), v < 100 ? "%.1f" : "%.0f", v);
    return std::string(buf);
  };
  auto four = [&](const Latencies& l) {
    return ms(l.Percentile(0.50)) + "/" + ms(l.Percentile(0.95)) + "/" + ms(l.Percentile(0.99)) +
           "/" + ms(l.Max());
  };
  for (const auto& c : cases) {
    std::string caps = std::to_string(c.caps.channel) + "/" + std::to_string(c.caps.tenant);
    std::string received =
        std::to_string(c.broken.received) + "/" + std::to_string(c.broken.ms.size());
    std::printf("  %5g  %9s  %-28s  %-34s  %9s  %9lld  %5lld\n", c.share, caps.c_str(),
                four(c.baseline).c_str(), four(c.broken).c_str(), received.c_str(),
                static_cast<long long>(c.max_dead), static_cast<long long>(c.max_many));
  }
  return 0;
}

}  // namespace bulkhead::bench
