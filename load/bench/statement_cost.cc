#include "statement_cost.h"

#include <cstdio>
#include <string>

namespace bulkhead::bench {
namespace {

// The statements whose text is like `like` or `or_like` (pg_stat_statements keeps the prepared
// text).
StatementCost CostOf(pqxx::connection& conn, const std::string& like,
                     const std::string& or_like = "") {
  pqxx::work tx(conn);
  pqxx::row row = tx.exec_params1(
      "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(rows), 0)::bigint,"
      "       coalesce(sum(shared_blks_hit + shared_blks_read), 0)::float8,"
      "       coalesce(sum(total_exec_time), 0)::float8,"
      "       coalesce(sum(shared_blks_read), 0)::float8,"
      "       coalesce(sum(wal_bytes), 0)::float8, coalesce(sum(wal_fpi), 0)::float8"
      "  FROM pg_stat_statements WHERE query LIKE $1 OR query LIKE $2",
      like, or_like.empty() ? like : or_like);
  StatementCost cost;
  cost.calls = row[0].as<int64_t>();
  cost.rows = row[1].as<int64_t>();
  cost.buffers = row[2].as<double>();
  cost.ms = row[3].as<double>();
  cost.read = row[4].as<double>();
  cost.wal_bytes = row[5].as<double>();
  cost.wal_fpi = row[6].as<double>();
  return cost;
}

}  // namespace

void ResetStatementCosts(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  tx.exec("SELECT pg_stat_statements_reset()");
}

StatementCost ClaimCost(pqxx::connection& conn) {
  // Claim, and ClaimFront (ADR 0031), whose CTE `unused` no other statement has.
  return CostOf(conn, "WITH RECURSIVE flying AS%", "WITH flying AS%), unused AS (%");
}

StatementCost ResultWriteCost(pqxx::connection& conn) {
  return CostOf(conn,
                "UPDATE bulkhead.job_rows AS j%jsonb_to_recordset($1::jsonb) AS r(id bigint, "
                "attempt smallint, delivered boolean%");
}

void PrintCost(const char* name, const StatementCost& c) {
  std::printf(
      "  %s: %lld calls, %.1f rows a call, %.1f buffers a row (%.2f read from the kernel), "
      "%.2f ms a call, %.0f WAL bytes a row (%.3f full-page images)\n",
      name, static_cast<long long>(c.calls), c.RowsPerCall(), c.BuffersPerRow(), c.PerRow(c.read),
      c.MsPerCall(), c.PerRow(c.wal_bytes), c.PerRow(c.wal_fpi));
}

}  // namespace bulkhead::bench
