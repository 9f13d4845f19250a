// `bulkhead-load engine throughput`: a burst drained by one node or several (load/bench/benches.h).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_stack.h"
#include "engine_bench.h"
#include "http_receiver.h"
#include "node_process.h"
#include "process_usage.h"
#include "schema_reset.h"
#include "statement_cost.h"

namespace bulkhead::bench {

using testing::HttpReceiver;
using testing::LoadAverage;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::ResetSchema;
using Clock = std::chrono::steady_clock;

int Throughput(const EngineArgs& args) {
  HttpReceiver receiver;
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  std::vector<int64_t> channels =
      MakeChannels(conn, args.channels, receiver.Url("/fast"), args.tenants);
  const int tenants = args.tenants > 0 ? args.tenants : args.channels;
  if (args.old_secrets > 0) {
    // As `bulkhead channel rotate-secret --keep-old 1d` run N times leaves it.
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at) "
        "SELECT c.id, bulkhead.new_secret(), now() + interval '1 day' "
        "  FROM bulkhead.channels c, generate_series(1, $1)",
        args.old_secrets);
    tx.exec("UPDATE bulkhead.channels SET old_secrets_until = now() + interval '1 day'");
    tx.commit();
  }
  const pid_t postmaster = Postmaster(conn);
  const int64_t wal_before_enqueue = WalPosition(conn);
  auto enqueue_start = Clock::now();
  EnqueueBurst(conn, channels, args.jobs);
  double enqueue_s = std::chrono::duration<double>(Clock::now() - enqueue_start).count();
  const int64_t wal_enqueue = WalPosition(conn) - wal_before_enqueue;
  {
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM ANALYZE bulkhead.job_rows");
  }
  // From here to the end of the drain: the claims, the results and whatever autovacuum and
  // checkpoints they cause, in WAL and in the server's CPU.
  const int64_t wal_before_drain = WalPosition(conn);
  const double server_cpu_before = testing::ReadServerCpu(postmaster);
  ResetStatementCosts(conn);

  const std::string load_before = LoadAverage();
  // --nodes N: N nodes of workers / N each, so that the fleet's slots add up to the same.
  const int node_workers = args.workers / args.nodes;
  std::vector<std::unique_ptr<NodeProcess>> nodes;
  for (int i = 1; i <= args.nodes; ++i) {
    const std::string name = args.nodes == 1 ? "bench" : "bench-" + std::to_string(i);
    nodes.push_back(std::make_unique<NodeProcess>(
        nlohmann::json{
            {"node", name}, {"poll_interval_ms", 1000}, {"allowed_networks", LoopbackNetworks()}},
        std::map<std::string, nlohmann::json>{{"default", Tier(node_workers, args.share)}}));
  }
  auto start = Clock::now();
  for (auto& node : nodes) node->Start(args.database);
  // Done when nothing is available or executing: both read only the small partial indexes
  // (jobs_claim, jobs_executing), so watching costs the database little, unlike a count of
  // the growing `completed` rows. A job stays executing until its result is written. Each
  // sample also counts the sessions waiting for a heavyweight lock (a row or a relation).
  double cpu_s = 0, peak_mib = 0;
  int64_t max_executing = 0, samples = 0, lock_samples = 0, max_lock_waiters = 0;
  std::set<std::string> lock_kinds;  // wait_event of the waits seen: tuple, transactionid, …
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cpu_s = 0;
    for (auto& node : nodes) {
      if (auto code = node->Wait(std::chrono::milliseconds(0))) {
        std::cerr << "a node exited with " << *code << ":\n" << node->Log();
        return 1;
      }
      testing::ProcessUsage usage = testing::ReadProcessUsage(node->pid());
      cpu_s += usage.cpu_s;
      peak_mib = std::max(peak_mib, usage.peak_rss_mib);
    }
    pqxx::work tx(conn);
    pqxx::row row = tx.exec1(
        "SELECT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'available'),"
        "       (SELECT count(*) FROM bulkhead.jobs WHERE state = 'executing'),"
        "       (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'),"
        "       (SELECT string_agg(DISTINCT wait_event, ' ') FROM pg_stat_activity"
        "         WHERE wait_event_type = 'Lock')");
    const int64_t executing = row[1].as<int64_t>();
    const int64_t lock_waiters = row[2].as<int64_t>();
    max_executing = std::max(max_executing, executing);
    ++samples;
    if (lock_waiters > 0) {
      ++lock_samples;
      std::istringstream kinds(row[3].as<std::string>());
      for (std::string kind; kinds >> kind;) lock_kinds.insert(kind);
    }
    max_lock_waiters = std::max(max_lock_waiters, lock_waiters);
    if (!row[0].as<bool>() && executing == 0) break;
  }
  double drain_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double server_cpu = testing::ReadServerCpu(postmaster) - server_cpu_before;
  const int64_t wal_drain = WalPosition(conn) - wal_before_drain;
  const std::string load_after = LoadAverage();
  const StatementCost claim = ClaimCost(conn), result_write = ResultWriteCost(conn);
  for (auto& node : nodes) node->Signal(SIGTERM);
  std::string claims;
  for (auto& node : nodes) {
    node->Wait(std::chrono::seconds(30));
    std::string these = "?";
    std::istringstream log(node->Log());
    for (std::string line; std::getline(log, line);) {
      if (line.find("\"node_stopped\"") != std::string::npos) {
        these = nlohmann::json::parse(line)["claims"].dump();
      }
    }
    claims += (claims.empty() ? "" : " ") + these;
  }
  size_t requests = receiver.request_count();
  int completed = 0;
  {
    pqxx::work tx(conn);
    completed =
        tx.exec1("SELECT count(*) FROM bulkhead.jobs WHERE state = 'completed'")[0].as<int>();
  }
  const auto caps = CapsAt(args.workers, args.share);
  std::printf(
      "throughput: %d deliveries over %d channels of %d tenants, %d workers, %d node(s) of %d\n"
      "  channel_share = tenant_share = %g: caps %d per channel, %d per tenant%s\n"
      "  enqueued in %.2f s (enqueue_many, 1000 per call)\n"
      "  drained in %.2f s: %.0f deliveries/s (node start to the last `completed`)\n"
      "  node CPU %.2f s (%.0f%% of one core; all nodes), peak resident memory %.1f MiB\n"
      "  completed %d, requests received %zu (duplicates %zd)\n"
      "  rows executing at most %lld (100 ms samples; in flight or result not yet written)\n"
      "  sessions waiting for a lock: in %lld of %lld samples, at most %lld at once (%s)\n"
      "  WAL per delivery: %.0f bytes to enqueue (enqueue_many), %.0f to claim and record\n"
      "  PostgreSQL CPU per delivery while draining: %.3f ms (%.2f s in all; this bench's\n"
      "    watching, one small query every 100 ms, included)\n"
      "  claim statements per tier: %s\n"
      "  old secrets per channel: %d\n"
      "  load average (1, 5, 15 min) before %s, after %s\n",
      args.jobs, args.channels, tenants, args.workers, args.nodes, node_workers, args.share,
      caps.channel, caps.tenant, args.share >= 1.0 ? " (no caps)" : "", enqueue_s, drain_s,
      args.jobs / drain_s, cpu_s, 100.0 * cpu_s / drain_s, peak_mib, completed, requests,
      static_cast<ssize_t>(requests) - args.jobs, static_cast<long long>(max_executing),
      static_cast<long long>(lock_samples), static_cast<long long>(samples),
      static_cast<long long>(max_lock_waiters),
      std::accumulate(lock_kinds.begin(), lock_kinds.end(), std::string(),
                      [](std::string all, const std::string& kind) {
                        return all.empty() ? kind : all + " " + kind;
                      })
          .c_str(),
      static_cast<double>(wal_enqueue) / args.jobs, static_cast<double>(wal_drain) / args.jobs,
      1000.0 * server_cpu / args.jobs, server_cpu, claims.c_str(), args.old_secrets,
      load_before.c_str(), load_after.c_str());
  // Every node's claims and result writes together; ms a call includes waits for locks.
  PrintCost("claim", claim);
  PrintCost("result write", result_write);
  return completed == args.jobs ? 0 : 1;
}

}  // namespace bulkhead::bench
