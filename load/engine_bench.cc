// bulkhead-engine-bench: measures the delivery engine on this machine, with the real
// `bulkhead run` binary, a real PostgreSQL and a loopback HTTP receiver. Run it through
// load/engine_bench.sh, which starts an embedded PostgreSQL and builds.
//
//   throughput  enqueue a burst (--jobs, default 100000) over --channels (20) channels, each
//               of its own tenant unless --tenants T puts channel i on tenant i mod T, then
//               start one node with --workers (200) slots and time the drain to `completed`
//               against a receiver that answers 200 at once. --share S (0.5, the shipped
//               default) sets both channel_share and tenant_share in the tier file; 1 means no
//               caps. Prints deliveries/s, the node's CPU seconds and peak resident memory, the
//               most rows `executing` in one 100 ms sample (in flight, plus delivered ones
//               whose result the node has not written yet), and the node's claim count.
//               --old-secrets N (0) gives every channel N old secrets in their rotation window
//               (migration 0004), so that every claimed row signs with N + 1 secrets.
//               --nodes N (1) starts N nodes of workers / N each. Also prints WAL bytes per
//               delivery (enqueue, and claim + result), PostgreSQL's CPU per delivery while
//               draining, and how often sessions waited for a heavyweight lock.
//   latency     start a node (the shipped tier's workers unless --workers), then enqueue
//               --rate (50) deliveries a second for --seconds (20), each in its own
//               transaction; the latency of one delivery is the time from its COMMIT returning
//               to the receiver reading the request. Prints p50/p95/p99/max, the rows
//               executing (250 ms samples) and the node's peak memory. --background N first
//               enqueues a burst of N deliveries over --background-channels (20) channels of
//               --background-tenants (1) other tenants, whose endpoint answers after
//               --background-delay-ms (0): the node is busy with them throughout (it prints
//               how many still waited when the traffic ended), and with a delay, N requests
//               can be held in flight at once (the tier's request_timeout_ms is then raised
//               to the delay + 10 s). --background-tier NAME puts the other tenants on a tier
//               of their own, NAME, with the same settings as `default` (the node runs both,
//               each with its own claim loop, connection and slots), as an operator separates
//               a bulk sender. Slow start
//               lets a channel whose answers are not quick hold only its first window (10):
//               holding N requests open takes N / 10 channels.
//   isolation   the caps alone against two offenders (the breaker kept out of the way:
//               failure_threshold 1000, slow_call_ms 3600000; request_timeout_ms 10000), on
//               tier default with --workers (20) slots. Tenants: `healthy`, one channel whose
//               receiver answers after 25 ms; `dead`, one channel to a path that never
//               answers; `many`, 40 channels to such paths. Phase baseline: healthy alone at
//               --rate (50) a second for --seconds (10), as in latency. Phase broken: a backlog
//               of 1,000 to dead and 25 to each of many's channels (enqueue_many), a wait until
//               the two hold every slot the caps let them (min(workers, dead's cap + many's
//               cap); all of them without caps), then the same healthy traffic. Each phase
//               waits up to 12 s after its last enqueue for stragglers; a delivery not received
//               by then ranks above every received one in the percentiles ("not received").
//               A sampler reads the jobs executing per tenant every 100 ms from the backlog to
//               the end. The broken phase is also shown by the second in which each delivery
//               was committed. Runs once per share in --shares (0.5,1: with the shipped caps,
//               then without), each from an empty schema with a node of its own, and ends with
//               a table of all of them side by side.
//
//   table, shape  the engine's cost against what the table keeps (--finished 10000000 and
//               --parked 1000000 jobs beside the burst, statistics stale and fresh) and how the
//               work is spread (20 tenants, --jobs tenants of one delivery, and a mix), --jobs
//               60000 by default: load/table_bench.h.
//
// Every mode runs tier `default` as tiers/default.json ships it (read from the file), overriding
// only the keys it varies: `workers`, `channel_share` and `tenant_share` (Tier below), and in
// isolation `failure_threshold` and `slow_call_ms`.
// Every run prints the 1-minute load average before and after: the machine is shared.
// Every run starts from an empty bulkhead schema in the given database (it migrates down and
// up), so do not point it at a database you care about.
#include <curl/curl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cap_ledger.h"
#include "http_receiver.h"
#include "node_process.h"
#include "process_usage.h"
#include "schema_reset.h"
#include "shipped_tier.h"
#include "table_bench.h"

namespace {

using bulkhead::testing::HttpReceiver;
using bulkhead::testing::LoadAverage;
using bulkhead::testing::LoopbackNetworks;
using bulkhead::testing::NodeProcess;
using bulkhead::testing::ResetSchema;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: bulkhead-engine-bench throughput|latency|isolation|churn --database URL [--jobs N] "
    "[--channels N] [--tenants N] [--workers N] [--share S] [--shares S,S,…] [--rate N] "
    "[--seconds N] [--rounds N] [--nodes N] [--old-secrets N] [--background N] "
    "[--background-tenants N] "
    "[--background-channels N] [--background-delay-ms N] [--background-tier NAME]\n"
    "       bulkhead-engine-bench table|shape --database URL [--jobs N] [--finished N] "
    "[--parked N]\n";

struct Args {
  std::string mode;
  std::string database;
  int jobs = 100000;                        // throughput
  int channels = 20;                        // throughput
  int tenants = 0;                          // throughput: 0 is one tenant per channel
  int workers = 0;                          // 0: the mode's default (throughput 200, else 20)
  double share = 0.5;                       // throughput
  std::vector<double> shares = {0.5, 1.0};  // isolation
  int rate = 50;                            // latency, isolation
  int seconds = 0;                          // 0: the mode's default (latency 20, isolation 10)
  int rounds = 10;                          // churn: rounds of `jobs` deliveries
  int old_secrets = 0;                      // throughput: old secrets per channel
  int nodes = 1;                            // throughput: nodes sharing `workers` evenly
  int background = 0;                       // latency: a busy tenant's burst, enqueued first
  int background_tenants = 1;               // latency: the busy tenants
  int background_channels = 20;             // latency: the busy tenants' channels, in all
  int background_delay_ms = 0;              // latency: how long the busy endpoints take
  std::string background_tier;              // latency: the busy tenants' tier ("": default)
  int64_t finished = 10'000'000;            // table: finished jobs beside the burst
  int64_t parked = 1'000'000;               // table: parked jobs beside the burst
  bool jobs_given = false;                  // table, shape: --jobs given (else 60,000)
};

int Usage(const std::string& message) {
  std::cerr << "bulkhead-engine-bench: " << message << "\n" << kUsage;
  return 2;
}

// `n` channels to `url`; channel i belongs to tenant i mod `tenants` (0: a tenant each), the
// tenants named `prefix` + their number.
std::vector<int64_t> MakeChannels(pqxx::connection& conn, int n, const std::string& url,
                                  int tenants = 0, const std::string& prefix = "bench-") {
  if (tenants <= 0) tenants = n;
  std::vector<int64_t> channels, tenant_ids;
  pqxx::work tx(conn);
  for (int i = 0; i < tenants; ++i) {
    tenant_ids.push_back(
        tx.exec_params1("INSERT INTO bulkhead.tenants (name) VALUES ($1) RETURNING id",
                        prefix + std::to_string(i))[0]
            .as<int64_t>());
  }
  for (int i = 0; i < n; ++i) {
    channels.push_back(tx.exec_params1("INSERT INTO bulkhead.channels (tenant_id, url) "
                                       "VALUES ($1, $2) RETURNING id",
                                       tenant_ids[i % tenants], url)[0]
                           .as<int64_t>());
  }
  tx.commit();
  return channels;
}

// "{1,2,3}": a bigint[] literal.
std::string PgArray(const std::vector<int64_t>& ids) {
  std::string s = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "}";
}

// Enqueues `jobs` deliveries with enqueue_many, 1,000 per call and transaction; item i goes to
// channels[i mod N], so every channel gets an equal share.
void EnqueueBurst(pqxx::connection& conn, const std::vector<int64_t>& channels, int jobs) {
  conn.prepare("burst",
               "SELECT bulkhead.enqueue_many("
               "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
               "          FROM generate_series(1, $2) i),"
               "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a "
               "hundred bytes, like a chat notification') FROM generate_series(1, $2) i))");
  const std::string array = PgArray(channels);
  for (int done = 0; done < jobs;) {
    int n = std::min(1000, jobs - done);
    pqxx::work tx(conn);
    tx.exec_prepared("burst", array, n);
    tx.commit();
    done += n;
  }
  conn.unprepare("burst");
}

// tiers/default.json as shipped, with the keys the bench varies overridden: `workers` (--workers;
// 0 keeps the shipped value) and both shares, `channel_share` and `tenant_share` (--share; 1: no
// caps). Every other key is the shipped file's.
nlohmann::json Tier(int workers, double share = 0.5) {
  nlohmann::json tier = bulkhead::testing::ShippedTier("default");
  if (workers > 0) tier["workers"] = workers;  // override: --workers (0: as shipped)
  tier["channel_share"] = share;               // override: --share
  tier["tenant_share"] = share;                // override: --share
  return tier;
}

// The caps a tier of `workers` slots gets at `share`, by the node's own rule.
bulkhead::CapLedger::Caps CapsAt(int workers, double share) {
  return bulkhead::CapLedger::For(workers, share, share);
}

// Starts the node and waits for its node_started line, then a second more for its LISTEN
// connection, so that the first enqueue wakes it rather than the poll. False if it failed.
bool StartNode(NodeProcess& node, const std::string& database) {
  node.Start(database);
  if (!node.WaitForLog("node_started", std::chrono::seconds(30))) {
    if (auto code = node.Wait(std::chrono::milliseconds(0))) {
      std::cerr << "the node exited with " << *code << ":\n" << node.Log();
    } else {
      std::cerr << "the node did not start within 30 s:\n" << node.Log();
    }
    return false;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return true;
}

// The server's WAL insert position, in bytes.
int64_t WalPosition(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  return tx.exec1("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")[0]
      .as<int64_t>();
}

// The server's postmaster, from the first line of its postmaster.pid (the bench runs on the
// same machine as the embedded PostgreSQL).
pid_t Postmaster(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  std::ifstream pid_file(tx.exec1("SHOW data_directory")[0].as<std::string>() + "/postmaster.pid");
  pid_t pid = 0;
  pid_file >> pid;
  return pid;
}

int Throughput(const Args& args) {
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
    tx.exec("VACUUM ANALYZE bulkhead.jobs");
  }
  // From here to the end of the drain: the claims, the results and whatever autovacuum and
  // checkpoints they cause, in WAL and in the server's CPU.
  const int64_t wal_before_drain = WalPosition(conn);
  const double server_cpu_before = bulkhead::testing::ReadServerCpu(postmaster);

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
      bulkhead::testing::ProcessUsage usage = bulkhead::testing::ReadProcessUsage(node->pid());
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
  const double server_cpu = bulkhead::testing::ReadServerCpu(postmaster) - server_cpu_before;
  const int64_t wal_drain = WalPosition(conn) - wal_before_drain;
  const std::string load_after = LoadAverage();
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
  return completed == args.jobs ? 0 : 1;
}

// The jobs table and its indexes, and what autovacuum has done to them.
struct TableHealth {
  std::vector<std::pair<std::string, double>> mib;  // "jobs (heap)", "jobs (toast + maps)",
                                                    // then each index, in name order
  int64_t live = 0, dead = 0, autovacuums = 0, autoanalyzes = 0;
};

TableHealth ReadTableHealth(pqxx::connection& conn) {
  TableHealth health;
  pqxx::work tx(conn);
  auto heap = tx.exec1(
      "SELECT pg_relation_size('bulkhead.jobs'),"
      "       pg_table_size('bulkhead.jobs') - pg_relation_size('bulkhead.jobs')");
  health.mib.emplace_back("jobs (heap)", heap[0].as<double>() / 1048576.0);
  health.mib.emplace_back("jobs (toast, free space and visibility maps)",
                          heap[1].as<double>() / 1048576.0);
  for (const auto& row :
       tx.exec("SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i "
               "JOIN pg_class c ON c.oid = i.indexrelid "
               "WHERE i.indrelid = 'bulkhead.jobs'::regclass ORDER BY c.relname")) {
    health.mib.emplace_back(row[0].as<std::string>(), row[1].as<double>() / 1048576.0);
  }
  auto stats = tx.exec1(
      "SELECT n_live_tup, n_dead_tup, autovacuum_count, autoanalyze_count "
      "FROM pg_stat_user_tables WHERE relid = 'bulkhead.jobs'::regclass");
  health.live = stats[0].as<int64_t>();
  health.dead = stats[1].as<int64_t>();
  health.autovacuums = stats[2].as<int64_t>();
  health.autoanalyzes = stats[3].as<int64_t>();
  return health;
}

// churn: `rounds` bursts of `jobs` deliveries through one node, each enqueued while the node
// drains (no manual VACUUM: autovacuum and 0003's settings for the table are what is
// measured), and the jobs table's size after each round. Finished rows stay (the retention is
// 7 days): the heap grows with them, the partial indexes on the hot path should not.
int Churn(const Args& args) {
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

// Commit -> receipt latencies of a phase, sorted, in ms; a delivery not received counts as
// +infinity, so that it ranks above every received one.
struct Latencies {
  std::vector<double> ms;
  size_t received = 0;

  // As the latency mode has always ranked: the element at floor(p × n).
  double Percentile(double p) const {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  }
  double Max() const { return ms.empty() ? 0.0 : ms.back(); }
};

std::string FormatMs(double ms) {
  if (std::isinf(ms)) return "not received";
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms < 1000 ? "%.2f ms" : "%.0f ms", ms);
  return buf;
}

// The receiver's arrival time of each delivery, by webhook-id; filled on its thread.
class Arrivals {
 public:
  void Record(const std::string& id, Clock::time_point at) {
    std::lock_guard lock(mu_);
    at_.emplace(id, at);
  }
  // How many of `committed` have arrived.
  size_t Count(const std::map<std::string, Clock::time_point>& committed) const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& [id, at] : committed) n += at_.count(id);
    return n;
  }
  // Waits until every one of `committed` has arrived or `timeout` passed.
  void WaitFor(const std::map<std::string, Clock::time_point>& committed,
               std::chrono::milliseconds timeout) const {
    for (auto deadline = Clock::now() + timeout; Clock::now() < deadline;) {
      if (Count(committed) == committed.size()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  Latencies Of(const std::map<std::string, Clock::time_point>& committed) const {
    return BySecond(committed).all;
  }
  // The same, and split by the second of the phase in which each was committed.
  struct Split {
    Latencies all;
    std::vector<Latencies> seconds;
  };
  Split BySecond(const std::map<std::string, Clock::time_point>& committed) const {
    Split split;
    if (committed.empty()) return split;
    Clock::time_point first = committed.begin()->second;
    for (const auto& [id, at] : committed) first = std::min(first, at);
    std::lock_guard lock(mu_);
    for (const auto& [id, at] : committed) {
      auto second = static_cast<size_t>(std::chrono::duration<double>(at - first).count());
      if (split.seconds.size() <= second) split.seconds.resize(second + 1);
      auto it = at_.find(id);
      double ms = it == at_.end()
                      ? std::numeric_limits<double>::infinity()
                      : std::chrono::duration<double, std::milli>(it->second - at).count();
      for (Latencies* l : {&split.all, &split.seconds[second]}) {
        l->ms.push_back(ms);
        if (it != at_.end()) ++l->received;
      }
    }
    std::sort(split.all.ms.begin(), split.all.ms.end());
    for (auto& l : split.seconds) std::sort(l.ms.begin(), l.ms.end());
    return split;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, Clock::time_point> at_;  // guarded by mu_
};

// Enqueues `rate` deliveries a second to `channel` for `seconds`, each in its own
// transaction, like an application. Returns webhook-id → when its COMMIT returned.
std::map<std::string, Clock::time_point> SteadyTraffic(pqxx::connection& conn, int64_t channel,
                                                       int rate, int seconds) {
  std::map<std::string, Clock::time_point> committed;
  const int total = rate * seconds;
  const auto interval = std::chrono::nanoseconds(1'000'000'000 / rate);
  auto next = Clock::now();
  for (int i = 0; i < total; ++i) {
    std::this_thread::sleep_until(next);
    next += interval;
    pqxx::work tx(conn);
    std::string id = tx.exec1("SELECT bulkhead.enqueue(" + std::to_string(channel) +
                              ", '{\"n\": " + std::to_string(i) + "}')")[0]
                         .as<std::string>();
    tx.commit();
    committed.emplace(id, Clock::now());
  }
  return committed;
}

int Latency(const Args& args) {
  Arrivals arrivals;
  const auto busy_delay = std::chrono::milliseconds(args.background_delay_ms);
  std::atomic<int64_t> busy_seen{0};
  HttpReceiver receiver([&](const bulkhead::testing::ReceivedRequest& r) {
    bulkhead::testing::Reply reply;
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
    tx.exec("VACUUM ANALYZE bulkhead.jobs");
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
      peak_mib = bulkhead::testing::ReadProcessUsage(node.pid()).peak_rss_mib;
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
  const double cpu_s = bulkhead::testing::ReadProcessUsage(node.pid()).cpu_s;
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

// ---- isolation --------------------------------------------------------------------------------

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
  bulkhead::CapLedger::Caps caps;
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

std::optional<IsolationCase> RunIsolation(const Args& args, double share) {
  IsolationCase c;
  c.share = share;
  c.workers = args.workers;
  c.caps = CapsAt(args.workers, share);
  const int64_t dead_hold = std::min(c.caps.channel, c.caps.tenant);
  const int64_t many_hold =
      std::min<int64_t>(c.caps.tenant, static_cast<int64_t>(kManyChannels) * c.caps.channel);
  c.target = std::min<int64_t>(args.workers, dead_hold + many_hold);

  Arrivals arrivals;
  HttpReceiver receiver([&](const bulkhead::testing::ReceivedRequest& r) {
    bulkhead::testing::Reply reply;
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

int Isolation(const Args& args) {
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

std::vector<double> ParseShares(const std::string& list) {
  std::vector<double> shares;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) shares.push_back(std::stod(item));
  return shares;
}

bool ShareInRange(double s) { return s > 0.0 && s <= 1.0; }

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
  if (args.mode != "throughput" && args.mode != "latency" && args.mode != "isolation" &&
      args.mode != "churn" && args.mode != "table" && args.mode != "shape") {
    return Usage("unknown mode");
  }
  if (words.size() % 2 == 0) return Usage("an option lacks its value");
  try {
    for (size_t i = 1; i + 1 < words.size(); i += 2) {
      const std::string& key = words[i];
      const std::string& value = words[i + 1];
      if (key == "--database") {
        args.database = value;
      } else if (key == "--jobs") {
        args.jobs = std::stoi(value);
        args.jobs_given = true;
      } else if (key == "--finished") {
        args.finished = std::stoll(value);
        if (args.finished < 0) return Usage("--finished must be 0 or more");
      } else if (key == "--parked") {
        args.parked = std::stoll(value);
        if (args.parked < 0) return Usage("--parked must be 0 or more");
      } else if (key == "--channels") {
        args.channels = std::stoi(value);
      } else if (key == "--tenants") {
        args.tenants = std::stoi(value);
      } else if (key == "--workers") {
        args.workers = std::stoi(value);
      } else if (key == "--share") {
        args.share = std::stod(value);
        if (!ShareInRange(args.share)) return Usage("--share must be in (0, 1]");
      } else if (key == "--shares") {
        args.shares = ParseShares(value);
        if (args.shares.empty() ||
            !std::all_of(args.shares.begin(), args.shares.end(), ShareInRange)) {
          return Usage("--shares must list shares in (0, 1], comma-separated");
        }
      } else if (key == "--rate") {
        args.rate = std::stoi(value);
      } else if (key == "--seconds") {
        args.seconds = std::stoi(value);
      } else if (key == "--rounds") {
        args.rounds = std::stoi(value);
      } else if (key == "--background") {
        args.background = std::stoi(value);
      } else if (key == "--background-tenants") {
        args.background_tenants = std::stoi(value);
      } else if (key == "--background-channels") {
        args.background_channels = std::stoi(value);
      } else if (key == "--background-tier") {
        args.background_tier = value;
      } else if (key == "--background-delay-ms") {
        args.background_delay_ms = std::stoi(value);
      } else if (key == "--nodes") {
        args.nodes = std::stoi(value);
        if (args.nodes < 1 || args.nodes > 16) return Usage("--nodes must be 1 to 16");
      } else if (key == "--old-secrets") {
        args.old_secrets = std::stoi(value);
        if (args.old_secrets < 0 || args.old_secrets > 10) {
          return Usage("--old-secrets must be 0 to 10");
        }
      } else {
        return Usage("unknown option " + key);
      }
    }
  } catch (const std::logic_error&) {
    return Usage("a value is not a number");
  }
  // latency keeps the shipped tier's workers unless --workers is given.
  if (args.workers == 0 && args.mode != "latency")
    args.workers = args.mode == "throughput" || args.mode == "churn" ? 200 : 20;
  if (args.seconds == 0) args.seconds = args.mode == "latency" ? 20 : 10;
  if (args.database.empty()) return Usage("--database is required");
  if (args.jobs < 1 || args.channels < 1 || args.tenants < 0 || args.workers < 0 ||
      (args.workers == 0 && args.mode != "latency") || args.rate < 1 || args.seconds < 1 ||
      args.rounds < 1 || args.background < 0 || args.background_tenants < 1 ||
      args.background_channels < args.background_tenants || args.background_delay_ms < 0) {
    return Usage("a count is out of range");
  }
  if (args.workers % args.nodes != 0) return Usage("--workers must be a multiple of --nodes");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  try {
    if (args.mode == "table" || args.mode == "shape") {
      bulkhead::bench::TableArgs table{args.database, args.jobs_given ? args.jobs : 60'000,
                                       args.finished, args.parked};
      if (table.jobs < 40) return Usage("--jobs must be at least 40 for table and shape");
      return args.mode == "table" ? bulkhead::bench::TableBench(table)
                                  : bulkhead::bench::ShapeBench(table);
    }
    if (args.mode == "throughput") return Throughput(args);
    if (args.mode == "latency") return Latency(args);
    if (args.mode == "churn") return Churn(args);
    return Isolation(args);
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-engine-bench: " << e.what() << "\n";
    return 1;
  }
}
