#include "table_bench.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "burst.h"
#include "fleet_store.h"
#include "http_receiver.h"
#include "node_process.h"
#include "process_usage.h"
#include "schema_reset.h"
#include "shipped_tier.h"
#include "statement_cost.h"

namespace bulkhead::bench {
namespace {

using testing::HttpReceiver;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using Clock = std::chrono::steady_clock;

struct Drained {
  std::string label;
  int64_t expected = 0;
  int64_t delivered = 0;
  double seconds = 0;
  double node_cpu_s = 0;
  StatementCost claim, record;
  bool autovacuumed = false;  // autovacuum vacuumed or analyzed the jobs table during the drain
  // Vacuums seen running in the cluster while the drain ran (pg_stat_progress_vacuum, sampled
  // every 100 ms): "database table-oid phase", each once.
  std::set<std::string> vacuums;
  std::string load_before, load_after;
  double PerSecond() const { return seconds > 0 ? double(delivered) / seconds : 0; }
};

// Jobs completed since `since` (the database's clock). Counted by finish time, not as all the
// completed rows: the leader prunes the history's oldest rows (a week's retention) meanwhile.
int64_t CompletedSince(pqxx::connection& conn, const std::string& since) {
  pqxx::work tx(conn);
  return tx
      .exec_params1(
          "SELECT count(*) FROM bulkhead.jobs "
          "WHERE state = 'completed' AND finished_at >= $1::timestamptz",
          since)[0]
      .as<int64_t>();
}

// When autovacuum last vacuumed and analyzed any range of the jobs table ("" for never).
std::string LastAutovacuum(pqxx::connection& conn) {
  pqxx::work tx(conn);
  return tx
      .exec1(
          "SELECT coalesce(max(last_autovacuum)::text, '') || ' ' || "
          "       coalesce(max(last_autoanalyze)::text, '') FROM pg_stat_user_tables "
          "WHERE relid IN (SELECT relid FROM pg_partition_tree('bulkhead.job_rows') "
          "WHERE isleaf)")[0]
      .as<std::string>();
}

// One node drains everything available; `expected` more jobs end completed.
Drained Drain(const std::string& database, pqxx::connection& conn, const std::string& label,
              int64_t expected) {
  Drained d;
  d.label = label;
  d.expected = expected;
  const std::string since = pqxx::work(conn).exec1("SELECT now()::text")[0].as<std::string>();
  const std::string autovacuum_before = LastAutovacuum(conn);
  ResetStatementCosts(conn);
  {
    pqxx::nontransaction tx(conn);
    // The watch below reads the partial indexes only, whatever the statistics say.
    tx.exec("SET enable_seqscan = off");
    tx.exec("SET enable_bitmapscan = off");
  }
  d.load_before = testing::LoadAverage();
  NodeProcess node(
      {{"node", "bench"}, {"poll_interval_ms", 1000}, {"allowed_networks", LoopbackNetworks()}},
      {{"default", testing::ShippedTier("default")}});
  const auto start = Clock::now();
  node.Start(database);
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (auto code = node.Wait(std::chrono::milliseconds(0))) {
      std::cerr << label << ": the node exited with " << *code << ":\n" << node.Log();
      return d;
    }
    d.node_cpu_s = testing::ReadProcessUsage(node.pid()).cpu_s;
    pqxx::work tx(conn);
    pqxx::row row = tx.exec1(
        "SELECT EXISTS (SELECT FROM bulkhead.jobs"
        "                WHERE state = 'available' AND priority BETWEEN 1 AND 3),"
        "       EXISTS (SELECT FROM bulkhead.jobs WHERE state = 'executing')");
    for (const auto& v : tx.exec("SELECT datname || ' ' || relid || ' ' || phase"
                                 "  FROM pg_stat_progress_vacuum")) {
      d.vacuums.insert(v[0].as<std::string>());
    }
    if (!row[0].as<bool>() && !row[1].as<bool>()) break;
  }
  d.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  d.load_after = testing::LoadAverage();
  node.Signal(SIGTERM);
  node.Wait(std::chrono::seconds(30));
  d.delivered = CompletedSince(conn, since);
  d.claim = ClaimCost(conn);
  d.record = ResultWriteCost(conn);
  d.autovacuumed = LastAutovacuum(conn) != autovacuum_before;
  return d;
}

// `tenants` tenants of one channel each to `url`; returns the channel ids in tenant order.
std::vector<int64_t> Tenants(pqxx::connection& conn, int tenants, const std::string& prefix,
                             const std::string& url) {
  pqxx::work tx(conn);
  pqxx::result rows = tx.exec_params(
      "WITH t AS (INSERT INTO bulkhead.tenants (name)"
      "           SELECT $1 || g FROM generate_series(1, $2) g RETURNING id)"
      "INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, $3 FROM t ORDER BY id "
      "RETURNING id",
      prefix, tenants, url);
  tx.commit();
  std::vector<int64_t> ids;
  for (const auto& r : rows) ids.push_back(r[0].as<int64_t>());
  std::sort(ids.begin(), ids.end());
  return ids;
}

// `jobs` deliveries through bulkhead.enqueue_many, 1,000 a transaction, item i to
// channels[i mod N].
void Burst(pqxx::connection& conn, const std::vector<int64_t>& channels, int jobs) {
  const std::string array = load::BigintArray(channels);
  for (int done = 0; done < jobs;) {
    const int n = std::min(1000, jobs - done);
    pqxx::work tx(conn);
    tx.exec_params(
        "SELECT bulkhead.enqueue_many("
        "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
        "          FROM generate_series($2::int, $2::int + $3 - 1) i),"
        "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a hundred bytes,"
        " like an order notification') FROM generate_series(1, $3) i))",
        array, done, n);
    tx.commit();
    done += n;
  }
}

void RaiseClaimFloor(pqxx::connection& conn, int64_t jobs);

// `count` ranges of `size` ids each from the next id to be drawn, or the end of the highest
// range (migration 0021), as a leader that has run keeps them: the week's history in ranges of
// a day, the bursts in a range of their own ahead. Without them every row lands in the default
// range, one table as before 0021.
void AddRanges(pqxx::connection& conn, int count, int64_t size) {
  pqxx::nontransaction tx(conn);
  int64_t low = tx.exec1(
                      "SELECT greatest((SELECT CASE WHEN is_called THEN last_value + 1 ELSE "
                      "last_value END FROM bulkhead.jobs_id_seq), (SELECT coalesce(max(high), "
                      "1) FROM bulkhead.job_ranges()))")[0]
                    .as<int64_t>();
  for (int i = 0; i < count; ++i, low += size) {
    tx.exec_params("SELECT bulkhead.add_job_range($1, $2)", low, low + size);
  }
}

// A week of history: `finished` completed jobs on `channels`, finished over the last 7 days,
// each with one attempt logged; `parked` parked jobs on 1,000 paused channels of 100 tenants.
void History(pqxx::connection& conn, const std::vector<int64_t>& channels, int64_t finished,
             int64_t parked, const std::string& url) {
  const std::string array = load::BigintArray(channels);
  constexpr int64_t kChunk = 1'000'000;
  const auto start = Clock::now();
  // The last twentieth, the history's most recent hours, is written after the vacuum (below).
  const int64_t recent = finished / 20;
  auto write = [&](int64_t from, int64_t to) {
    for (int64_t done = from; done < to; done += kChunk) {
      pqxx::work tx(conn);
      tx.exec_params(
          "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, payload, attempt,"
          "                           created_at, scheduled_at, attempted_at, attempted_by,"
          "                           finished_at, attempts)"
          "SELECT 'default', c.tenant_id, c.id, 'completed',"
          "       jsonb_build_object('n', g, 'text', 'a message of about a hundred bytes, like an"
          " order notification'), 1, f.at, f.at, f.at, 'history', f.at,"
          "       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', f.at, 'node', 'history',"
          "                                            'duration_ms', 21.5, 'status', 200))"
          "  FROM generate_series($2::bigint, $2::bigint + $3 - 1) g"
          "  JOIN bulkhead.channels c ON c.id = ($1::bigint[])[1 + g % cardinality($1::bigint[])]"
          " CROSS JOIN LATERAL (SELECT now() - interval '7 days' * (g::float8 / $4)) AS f(at)",
          array, done, std::min(kChunk, to - done), finished);
      tx.commit();
    }
  };
  write(recent, finished);
  if (parked > 0) {
    std::vector<int64_t> paused;
    {
      pqxx::work tx(conn);
      pqxx::result rows = tx.exec_params(
          "WITH t AS (INSERT INTO bulkhead.tenants (name)"
          "           SELECT 'parked-' || g FROM generate_series(1, 100) g RETURNING id)"
          "INSERT INTO bulkhead.channels (tenant_id, url, paused)"
          "SELECT t.id, $1, true FROM t, generate_series(1, 10) RETURNING id",
          url);
      tx.commit();
      for (const auto& r : rows) paused.push_back(r[0].as<int64_t>());
    }
    const std::string parr = load::BigintArray(paused);
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, payload,"
        "                           scheduled_at)"
        "SELECT 'default', c.tenant_id, c.id, 'parked', 3,"
        "       jsonb_build_object('n', g, 'text', 'a parked message'),"
        "       now() - interval '1 hour'"
        "  FROM generate_series(1, $2::bigint) g"
        "  JOIN bulkhead.channels c ON c.id = ($1::bigint[])[1 + g % cardinality($1::bigint[])]",
        parr, parked);
    tx.commit();
  }
  const double written_s = std::chrono::duration<double>(Clock::now() - start).count();
  // A week-old table has long been vacuumed (autovacuum's insert threshold: 5 % of the table)
  // and checkpointed; a vacuum of the fresh 10,000,000 rows, or the checkpoint after them,
  // running beside the drain would measure the fill, not the table. And the free space that
  // vacuum found (the tail of nearly every page: rows of one size leave 160–224 bytes) has
  // been written into since, as rows kept coming: the history's most recent twentieth is
  // written after the vacuum. Without that the burst's rows, one or two in each of 50,000
  // pages across 3 GB, cost the drain a page read, a dirty write and a full-page image each,
  // which a table in service has long spent.
  const auto settle = Clock::now();
  {
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM bulkhead.job_rows");
  }
  write(0, recent);
  // Vacuumed again, as autovacuum would after the recent twentieth (its insert threshold is 5 %
  // of the table): left to autovacuum, that vacuum of the whole table ran among the drains (in
  // a run without this one it finished during the fresh drain).
  {
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM bulkhead.job_rows");
    tx.exec("CHECKPOINT");
  }
  std::printf(
      "  history: %lld finished and %lld parked jobs written in %.0f s, vacuumed, the "
      "most recent twentieth written, vacuumed again and checkpointed in %.0f s\n",
      static_cast<long long>(finished), static_cast<long long>(parked), written_s,
      std::chrono::duration<double>(Clock::now() - settle).count());
  RaiseClaimFloor(conn, finished + parked);
}

// The claim floor (ADR 0027) where a leader that ran beside the history has left it: the
// leader's own statements, 100,000 ids a round as it takes them, until the floor stops rising
// (at the first parked job). Left at 0, the node's leader would spend the drains catching up,
// a walk of 0.3-0.6 s (its execution time) every 2 s for 100 rounds: a first run's cost beside
// the measured one, which a table a week in service has long paid.
void RaiseClaimFloor(pqxx::connection& conn, int64_t jobs) {
  const auto start = Clock::now();
  FleetStore store(conn);
  int rounds = 0;
  // Bounded by the ids it can pass, and by 3 rounds more for the settling of the bound.
  while (rounds < jobs / 100'000 + 3) {
    ++rounds;
    if (store.RaiseClaimFloor(100'000) == 0 && rounds > 2) break;
  }
  pqxx::nontransaction tx(conn);
  const auto floor = tx.exec1("SELECT floor_id FROM bulkhead.claim_floor")[0].as<int64_t>();
  std::printf("  claim floor raised to %lld in %d rounds, %.0f s\n", static_cast<long long>(floor),
              rounds, std::chrono::duration<double>(Clock::now() - start).count());
}

void Analyze(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  tx.exec("ANALYZE bulkhead.job_rows");
}

// What the last drain left behind it cleared as autovacuum clears it within its next round (a
// minute; a range's threshold is 1 % of its rows, migration 0003): the burst's rows, completed,
// still hold their entries at the front of jobs_claim until a vacuum, and every claim of the
// next burst walks them (about 300 buffers a claim after one burst, auto_explain). The empty
// table starts each burst truncated, so without this each history drain after the first paid
// for the drains before it, not for the history: 1.31x the empty drains' buffers a row behind
// two bursts, 1.11x behind none (2026-12-06). A vacuum sets no statistics of the columns, so
// stale stays stale; it skips the history's all-visible pages.
void Vacuum(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  tx.exec("VACUUM bulkhead.job_rows");
}

void PrintDrain(const Drained& d) {
  std::printf("%s: %lld of %lld delivered in %.2f s: %.0f deliveries/s; node CPU %.1f s\n",
              d.label.c_str(), static_cast<long long>(d.delivered),
              static_cast<long long>(d.expected), d.seconds, d.PerSecond(), d.node_cpu_s);
  PrintCost("claim", d.claim);
  PrintCost("result write", d.record);
  std::string vacuums;
  for (const std::string& v : d.vacuums) vacuums += (vacuums.empty() ? "" : ", ") + v;
  std::printf("  vacuums running beside the drain: %s\n",
              vacuums.empty() ? "none" : vacuums.c_str());
  std::printf(
      "  autovacuum vacuumed or analyzed the jobs table during the drain: %s\n"
      "  load average (1, 5, 15 min) before %s, after %s\n",
      d.autovacuumed ? "yes" : "no", d.load_before.c_str(), d.load_after.c_str());
  std::fflush(stdout);
}

// The side-by-side table. Each drain against the first; or, when `around`, each drain after the
// first against the mean of the drains just before and after it (the empty-table drains, which
// are then against themselves: 1.00).
int Summary(const std::string& title, const std::vector<Drained>& drains, bool around = false) {
  std::printf(
      "\n%s\n| drain | deliveries/s | vs %s | claim ms | claim buffers/row | "
      "result buffers/row | claim + result WAL bytes/row |\n|---|---:|---:|---:|---:|---:|---:|\n",
      title.c_str(), around ? "empty around" : "first");
  bool all = true;
  for (size_t i = 0; i < drains.size(); ++i) {
    const Drained& d = drains[i];
    double base = drains[0].PerSecond();
    if (around && i % 2 == 1 && i + 1 < drains.size()) {
      base = (drains[i - 1].PerSecond() + drains[i + 1].PerSecond()) / 2;
    } else if (around) {
      base = d.PerSecond();
    }
    std::printf("| %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.0f |\n", d.label.c_str(),
                d.PerSecond(), base > 0 ? d.PerSecond() / base : 0, d.claim.MsPerCall(),
                d.claim.BuffersPerRow(), d.record.BuffersPerRow(),
                d.claim.PerRow(d.claim.wal_bytes) + d.record.PerRow(d.record.wal_bytes));
    all = all && d.delivered == d.expected;
  }
  return all ? 0 : 1;
}

void PrepareDatabase(const std::string& database) {
  testing::ResetSchema(database);
  pqxx::connection conn(database);
  pqxx::nontransaction tx(conn);
  tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  pqxx::row durability = tx.exec1(
      "SELECT current_setting('fsync'), "
      "current_setting('synchronous_commit'), "
      "current_setting('full_page_writes')");
  std::printf("PostgreSQL: fsync %s, synchronous_commit %s, full_page_writes %s\n",
              durability[0].c_str(), durability[1].c_str(), durability[2].c_str());
}

}  // namespace

int TableBench(const TableArgs& args) {
  HttpReceiver receiver;
  const std::string url = receiver.Url("/fast");
  PrepareDatabase(args.database);
  pqxx::connection conn(args.database);
  std::vector<int64_t> channels = Tenants(conn, 20, "bench-", url);
  std::vector<Drained> drains;

  // The empty table is a database of its own beside this one, emptied and drained again
  // between the history's drains: this machine's pace drifts by a third within minutes, so
  // each history drain is held against the empty drains around it, not one taken long before.
  const std::string empty_name = std::string(conn.dbname()) + "_empty";
  pqxx::nontransaction(conn).exec("DROP DATABASE IF EXISTS " + empty_name);
  pqxx::nontransaction(conn).exec("CREATE DATABASE " + empty_name);
  const std::string empty_database = testing::SiblingDatabase(conn, empty_name);
  PrepareDatabase(empty_database);
  pqxx::connection empty(empty_database);
  const std::vector<int64_t> empty_channels = Tenants(empty, 20, "bench-", url);
  int empty_drains = 0;
  // Room for the drains' bursts in a range of their own, and past what the leader adds a range
  // for (at least 100,000 ids left), so that it adds none during a drain.
  const int64_t burst_range = std::max<int64_t>(8LL * args.jobs, 200'000);
  AddRanges(empty, 1, burst_range);
  auto drain_empty = [&] {
    pqxx::nontransaction(empty).exec("TRUNCATE bulkhead.job_rows");
    Burst(empty, empty_channels, args.jobs);
    Analyze(empty);
    drains.push_back(
        Drain(empty_database, empty, "empty table " + std::to_string(++empty_drains), args.jobs));
    PrintDrain(drains.back());
  };

  drain_empty();
  AddRanges(conn, 7, (args.finished + args.parked) / 7 + 1);  // a week in ranges of a day
  History(conn, channels, args.finished, args.parked, url);
  AddRanges(conn, 1, burst_range);
  Analyze(conn);  // before the burst: the statistics see no available job
  Burst(conn, channels, args.jobs);
  drains.push_back(Drain(args.database, conn, "beside the history, statistics stale", args.jobs));
  PrintDrain(drains.back());
  drain_empty();

  Vacuum(conn);
  Burst(conn, channels, args.jobs);
  Analyze(conn);  // after the burst
  drains.push_back(Drain(args.database, conn, "beside the history, statistics fresh", args.jobs));
  PrintDrain(drains.back());
  drain_empty();

  // Stale again, after two bursts: statistics that see their 120,000 completed rows in the
  // bursts' range and no available one. Vacuumed first, as every history burst (Vacuum): the
  // dead entries they leave at the front of jobs_claim until autovacuum comes are the cost of
  // the last minute's drain, not of the history, and the empty table never has them.
  Vacuum(conn);
  Analyze(conn);  // before the burst again
  Burst(conn, channels, args.jobs);
  drains.push_back(
      Drain(args.database, conn, "beside the history, statistics stale, second", args.jobs));
  PrintDrain(drains.back());
  drain_empty();
  empty.disconnect();
  pqxx::nontransaction(conn).exec("DROP DATABASE " + empty_name);
  return Summary("table: " + std::to_string(args.jobs) + " deliveries, 20 tenants; history " +
                     std::to_string(args.finished) + " finished + " + std::to_string(args.parked) +
                     " parked; each history drain against the mean of the empty drains before "
                     "and after it",
                 drains, /*around=*/true);
}

int ShapeBench(const TableArgs& args) {
  HttpReceiver receiver;
  const std::string url = receiver.Url("/fast");
  std::vector<Drained> drains;
  auto run = [&](const std::string& label, auto enqueue) {
    PrepareDatabase(args.database);
    pqxx::connection conn(args.database);
    enqueue(conn);
    Analyze(conn);
    drains.push_back(Drain(args.database, conn, label, args.jobs));
    PrintDrain(drains.back());
  };
  const int per = args.jobs / 20;
  run("20 tenants x " + std::to_string(per),
      [&](pqxx::connection& conn) { Burst(conn, Tenants(conn, 20, "busy-", url), args.jobs); });
  run(std::to_string(args.jobs) + " tenants x 1",
      [&](pqxx::connection& conn) { Burst(conn, Tenants(conn, args.jobs, "t-", url), args.jobs); });
  const int half = args.jobs / 2;
  run("4 busy tenants x " + std::to_string(half / 4) + ", then " + std::to_string(half) +
          " tenants x 1",
      [&](pqxx::connection& conn) {
        Burst(conn, Tenants(conn, 4, "busy-", url), half);
        Burst(conn, Tenants(conn, half, "t-", url), half);
      });
  return Summary("shape: " + std::to_string(args.jobs) + " deliveries, one node", drains);
}

}  // namespace bulkhead::bench
