// `bulkhead-load breaker claim`: the store's claim beside a million parked or completed rows,
// three databases side by side (load/bench/benches.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <vector>

#include "breaker_bench.h"
#include "claim_store.h"
#include "phase_stats.h"
#include "schema_reset.h"

namespace bulkhead::bench {
namespace {

using load::Percentile;
using testing::ResetSchema;
using testing::SiblingDatabase;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// One case of the claim comparison: its own database, so that the three run side by side.
struct ClaimCase {
  std::string name;
  std::string extra_state;  // "", "parked" or "completed"
  std::string dbname;
  std::unique_ptr<pqxx::connection> conn;
  std::unique_ptr<ClaimStore> store;
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
void SetUpClaimCase(const BreakerArgs& args, pqxx::connection& admin, ClaimCase& c) {
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
  c.store = std::make_unique<ClaimStore>(*c.conn);
}

// One claim of `c`, halfway through the first drain, explained and rolled back.
void ExplainClaim(ClaimCase& c) {
  pqxx::work tx(*c.conn);
  // The arguments ClaimStore::Claim("default", 10, …) without caps sends (claim_store.cc):
  // caps of 1,000,000, no lending, the long look-ahead, the skip scan from the lowest head
  // bounded at ClaimLimits::HeadsFor(10), no claim floor.
  pqxx::result plan = tx.exec(
      "EXPLAIN (ANALYZE, BUFFERS) EXECUTE claim('default', 10, 'bench-explain', '{}', '{}', "
      "'{}', '{}', 1000000, 1000000, '{}', 1000000, 0, '{}', " +
      std::to_string(ClaimLimits::kLongLookAhead) + ", 0, 0, " +
      std::to_string(ClaimLimits::HeadsFor(10)) + ", 0)");
  for (const auto& row : plan) {
    std::string line = row[0].as<std::string>();
    if (c.buffers.empty() && line.find("Buffers:") != std::string::npos) {
      c.buffers = line.substr(line.find("Buffers:") + 9);
    }
    if (line.starts_with("Execution Time:")) c.explain_ms = std::stod(line.substr(16));
  }
  tx.abort();
}

}  // namespace

int Claim(const BreakerArgs& args) {
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
      Sql(*c.conn, "VACUUM ANALYZE bulkhead.job_rows");
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
        std::vector<ClaimedJob> jobs = c.store->Claim("default", 10, "bench-node");
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

}  // namespace bulkhead::bench
