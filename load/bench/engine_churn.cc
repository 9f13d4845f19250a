// `bulkhead-load engine churn`: table health over rounds of bursts (load/bench/benches.h).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

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
using Clock = std::chrono::steady_clock;

// The jobs table and its indexes, and what autovacuum has done to them.
struct TableHealth {
  std::vector<std::pair<std::string, double>> mib;  // "jobs (heap)", "jobs (toast + maps)",
                                                    // then each index, in name order
  int64_t live = 0, dead = 0, autovacuums = 0, autoanalyzes = 0;
};

TableHealth ReadTableHealth(pqxx::connection& conn) {
  TableHealth health;
  pqxx::work tx(conn);
  // Every range's together (migration 0021: a partitioned table has no storage of its own).
  const std::string ranges =
      "SELECT relid FROM pg_partition_tree('bulkhead.job_rows') WHERE isleaf";
  auto heap = tx.exec1(
      "SELECT sum(pg_relation_size(r.relid)),"
      "       sum(pg_table_size(r.relid) - pg_relation_size(r.relid))"
      "  FROM (" +
      ranges + ") r");
  health.mib.emplace_back("jobs (heap)", heap[0].as<double>() / 1048576.0);
  health.mib.emplace_back("jobs (toast, free space and visibility maps)",
                          heap[1].as<double>() / 1048576.0);
  for (const auto& row :
       tx.exec("SELECT c.relname, (SELECT sum(pg_relation_size(t.relid)) "
               "FROM pg_partition_tree(c.oid) t WHERE t.isleaf) FROM pg_index i "
               "JOIN pg_class c ON c.oid = i.indexrelid "
               "WHERE i.indrelid = 'bulkhead.job_rows'::regclass ORDER BY c.relname")) {
    health.mib.emplace_back(row[0].as<std::string>(), row[1].as<double>() / 1048576.0);
  }
  auto stats = tx.exec1(
      "SELECT sum(n_live_tup), sum(n_dead_tup), sum(autovacuum_count), sum(autoanalyze_count) "
      "FROM pg_stat_user_tables WHERE relid IN (" +
      ranges + ")");
  health.live = stats[0].as<int64_t>();
  health.dead = stats[1].as<int64_t>();
  health.autovacuums = stats[2].as<int64_t>();
  health.autoanalyzes = stats[3].as<int64_t>();
  return health;
}

}  // namespace

// churn: `rounds` bursts of `jobs` deliveries through one node, each enqueued while the node
// drains (no manual VACUUM: autovacuum and 0003's settings for the table are what is
// measured), and the jobs table's size after each round. Finished rows stay (the retention is
// 7 days): the heap grows with them, the partial indexes on the hot path should not.
int Churn(const EngineArgs& args) {
  HttpReceiver receiver;
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  std::vector<int64_t> channels = MakeChannels(conn, args.channels, receiver.Url("/fast"));
  NodeProcess node(
      {{"node", "bench"}, {"poll_interval_ms", 1000}, {"allowed_networks", LoopbackNetworks()}},
      {{"default", Tier(args.workers, args.share)}});
  if (!StartNode(node, args.database)) return 1;
  const std::string load_before = LoadAverage();
  std::printf("churn: %d rounds of %d deliveries over %d channels, %d workers, one node\n",
              args.rounds, args.jobs, args.channels, args.workers);
  std::printf(
      "| round | deliveries | heap MiB | all indexes MiB | hot indexes MiB (%s) | live rows | dead "
      "rows | autovacuums | drain s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      "jobs_claim, jobs_channel_available, jobs_executing, jobs_parked");
  TableHealth health;
  for (int round = 1; round <= args.rounds; ++round) {
    auto start = Clock::now();
    EnqueueBurst(conn, channels, args.jobs);
    while (true) {
      if (auto code = node.Wait(std::chrono::milliseconds(200))) {
        std::cerr << "the node exited with " << *code << ":\n" << node.Log();
        return 1;
      }
      pqxx::work tx(conn);
      pqxx::row row = tx.exec1(
          "SELECT EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'available'),"
          "       EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'executing')");
      if (!row[0].as<bool>() && !row[1].as<bool>()) break;
    }
    double drain_s = std::chrono::duration<double>(Clock::now() - start).count();
    health = ReadTableHealth(conn);
    double indexes = 0, hot = 0;
    for (size_t i = 2; i < health.mib.size(); ++i) {
      indexes += health.mib[i].second;
      const std::string& name = health.mib[i].first;
      if (name == "jobs_claim" || name == "jobs_channel_available" || name == "jobs_executing" ||
          name == "jobs_parked") {
        hot += health.mib[i].second;
      }
    }
    std::printf("| %d | %lld | %.1f | %.1f | %.2f | %lld | %lld | %lld | %.1f |\n", round,
                static_cast<long long>(round) * args.jobs, health.mib[0].second, indexes, hot,
                static_cast<long long>(health.live), static_cast<long long>(health.dead),
                static_cast<long long>(health.autovacuums), drain_s);
    std::fflush(stdout);
  }
  node.Signal(SIGTERM);
  node.Wait(std::chrono::seconds(30));
  std::printf(
      "\nafter %lld deliveries (%lld completed rows kept):\n\n| relation | MiB |\n|---|---:|\n",
      static_cast<long long>(args.rounds) * args.jobs, static_cast<long long>(health.live));
  for (const auto& [name, mib] : health.mib) std::printf("| %s | %.2f |\n", name.c_str(), mib);
  std::printf(
      "\nautovacuum runs %lld, autoanalyze runs %lld; requests received %zu\n"
      "load average (1, 5, 15 min) before %s, after %s\n",
      static_cast<long long>(health.autovacuums), static_cast<long long>(health.autoanalyzes),
      receiver.request_count(), load_before.c_str(), LoadAverage().c_str());
  return receiver.request_count() >= static_cast<size_t>(args.rounds) * args.jobs ? 0 : 1;
}

}  // namespace bulkhead::bench
