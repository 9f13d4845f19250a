// `bulkhead-load engine latency`: the pick-up latency at a steady rate, alone or beside a busy
// tenant (load/bench/benches.h).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
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

using testing::HttpReceiver;
using testing::LoadAverage;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::ResetSchema;

int Latency(const EngineArgs& args) {
  Arrivals arrivals;
  const auto busy_delay = std::chrono::milliseconds(args.background_delay_ms);
  std::atomic<int64_t> busy_seen{0};
  HttpReceiver receiver([&](const testing::ReceivedRequest& r) {
    testing::Reply reply;
    if (r.path.rfind("/busy", 0) == 0) {
      ++busy_seen;
      reply.delay = busy_delay;
    } else {
      arrivals.Record(r.headers.at("webhook-id"), Clock::now());
    }
    return reply;
  });
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  int64_t channel = MakeChannels(conn, 1, receiver.Url("/fast"))[0];
  nlohmann::json tier = Tier(args.workers);
  if (args.background > 0) {
    std::vector<int64_t> busy = MakeChannels(conn, args.background_channels, receiver.Url("/busy"),
                                             args.background_tenants, "busy-");
    if (!args.background_tier.empty()) {
      // Before the burst is enqueued: enqueue routes a job to its tenant's tier of the moment.
      pqxx::work tx(conn);
      tx.exec_params("UPDATE bulkhead.tenants SET tier = $1 WHERE name LIKE 'busy-%'",
                     args.background_tier);
      tx.commit();
    }
    EnqueueBurst(conn, busy, args.background);
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM ANALYZE bulkhead.job_rows");
    // A held request must outlive the run, not time out: the request timeout is raised past
    // the busy endpoints' delay (the one key overridden for this, and only when it is needed).
    tier["request_timeout_ms"] = std::max(tier["request_timeout_ms"].get<int64_t>(),
                                          static_cast<int64_t>(args.background_delay_ms) + 10000);
  }
  const std::string load_before = LoadAverage();
  std::map<std::string, nlohmann::json> tiers{{"default", tier}};
  nlohmann::json node_config = {
      {"node", "bench"}, {"poll_interval_ms", 1000}, {"allowed_networks", LoopbackNetworks()}};
  if (!args.background_tier.empty()) {
    tiers[args.background_tier] = tier;  // the same settings, slots of its own
    node_config["tiers"] = {"default", args.background_tier};
  }
  NodeProcess node(node_config, tiers);
  node.Start(args.database);
  // Idle, let it start and go idle; with a background, let it fill its slots with the burst.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // Held requests (a delay of a second or more): wait, up to 60 s, until the receiver has seen
  // no new one for 5 s, so that the traffic meets a node that holds them all rather than one
  // still opening their connections. While a node opens 10,000 connections to one host at
  // once, its I/O thread spends seconds inside libcurl 7.88 (perf; why inside it, not found),
  // and requests queued behind that count as slow calls of their own channel.
  int64_t held = 0;
  if (args.background > 0 && args.background_delay_ms >= 1000) {
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    for (int64_t before = -1; Clock::now() < give_up;) {
      held = busy_seen.load();
      if (held == before) break;
      before = held;
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
  }

  // What an idle node costs the database: transactions committed in 10 s with nothing to do
  // (its fallback poll's claim and sleeping mark, heartbeat, leader's work; issue 30, goal 1),
  // less the two of this count. Backends report their counts within about a second of going
  // idle, so the figure is good to about a tenth.
  double idle_tps = -1;
  if (args.background == 0) {
    auto commits = [&] {
      pqxx::nontransaction tx(conn);
      return tx
          .exec1("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")[0]
          .as<int64_t>();
    };
    const int64_t before = commits();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    idle_tps = static_cast<double>(commits() - before - 2) / 10.0;
  }

  // Sampled every 250 ms while the traffic runs: the rows executing (in flight, or delivered
  // and not yet written) and the node's memory.
  std::atomic<bool> sampling{true};
  int64_t max_executing = 0, min_executing = std::numeric_limits<int64_t>::max();
  double peak_mib = 0;
  std::thread sampler([&] {
    pqxx::connection watch(args.database);
    while (sampling.load()) {
      pqxx::work tx(watch);
      const int64_t n =
          tx.exec1("SELECT count(*) FROM bulkhead.jobs WHERE state = 'executing'")[0].as<int64_t>();
      tx.commit();
      max_executing = std::max(max_executing, n);
      min_executing = std::min(min_executing, n);
      peak_mib = testing::ReadProcessUsage(node.pid()).peak_rss_mib;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  const int total = args.rate * args.seconds;
  auto committed = SteadyTraffic(conn, channel, args.rate, args.seconds);
  int64_t background_left = 0;
  {
    pqxx::work tx(conn);
    background_left = tx.exec1(
                            "SELECT count(*) FROM bulkhead.jobs WHERE state = 'available' "
                            "AND channel_id <> " +
                            std::to_string(channel))[0]
                          .as<int64_t>();
  }
  arrivals.WaitFor(committed, std::chrono::seconds(30));
  sampling = false;
  sampler.join();
  const double cpu_s = testing::ReadProcessUsage(node.pid()).cpu_s;
  const std::string load_after = LoadAverage();
  node.Signal(SIGTERM);
  node.Wait(std::chrono::seconds(60));

  Latencies l = arrivals.Of(committed);
  std::printf(
      "latency: %d deliveries at %d/s, each enqueued in its own transaction, one node, %d "
      "workers\n",
      total, args.rate, tier["workers"].get<int>());
  if (args.background > 0) {
    std::printf(
        "  beside a background of %d deliveries over %d channels of %d other tenant(s), "
        "enqueued before the node started, their endpoint answering after %d ms\n"
        "  background still waiting when the traffic ended: %lld (0: the node was not "
        "saturated the whole time)\n"
        "  background requests held open when the traffic began: %lld (0 unless they are "
        "delayed 1 s or more)\n",
        args.background, args.background_channels, args.background_tenants,
        args.background_delay_ms, static_cast<long long>(background_left),
        static_cast<long long>(held));
  }
  std::printf(
      "  received %zu of %d\n"
      "  commit -> request at the receiver: p50 %s, p95 %s, p99 %s, max %s\n"
      "  rows executing during the traffic (250 ms samples): %lld to %lld\n"
      "  node peak resident memory %.1f MiB, CPU %.2f s since start\n"
      "  load average (1, 5, 15 min) before %s, after %s\n",
      l.received, total, FormatMs(l.Percentile(0.50)).c_str(), FormatMs(l.Percentile(0.95)).c_str(),
      FormatMs(l.Percentile(0.99)).c_str(), FormatMs(l.Max()).c_str(),
      static_cast<long long>(min_executing == std::numeric_limits<int64_t>::max() ? 0
                                                                                  : min_executing),
      static_cast<long long>(max_executing), peak_mib, cpu_s, load_before.c_str(),
      load_after.c_str());
  if (idle_tps >= 0) {
    std::printf("  idle node before the traffic: %.1f database transactions/s\n", idle_tps);
  }
  return l.received == static_cast<size_t>(total) ? 0 : 1;
}

}  // namespace bulkhead::bench
