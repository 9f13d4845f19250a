// What PostgreSQL spent on the node's two hot statements during a drain, from
// pg_stat_statements: the claim and the result write. The `table`, `shape` and throughput-based
// modes of `bulkhead-load engine` reset it before a drain (ResetStatementCosts) and read it
// after (ClaimCost, ResultWriteCost), so that each figure is one drain's.
//
// pg_stat_statements must be in the cluster's shared_preload_libraries (load/embedded_postgres.sh
// puts it there); ResetStatementCosts creates the extension in the database when it is missing.
// Everything here runs on the bench's main thread, on the connection it is given.
#pragma once

#include <cstdint>
#include <pqxx/pqxx>

namespace bulkhead::bench {

struct StatementCost {
  int64_t calls = 0;
  int64_t rows = 0;
  double buffers = 0;                 // shared blocks hit + read
  double read = 0;                    // of those, read from the kernel (not in shared buffers)
  double wal_bytes = 0, wal_fpi = 0;  // WAL written, and the full-page images in it
  double ms = 0;                      // execution time, all calls (a wait for a lock included)
  double RowsPerCall() const { return calls > 0 ? double(rows) / double(calls) : 0; }
  double BuffersPerRow() const { return rows > 0 ? buffers / double(rows) : 0; }
  double PerRow(double total) const { return rows > 0 ? total / double(rows) : 0; }
  double MsPerCall() const { return calls > 0 ? ms / double(calls) : 0; }
};

// Creates the extension if need be and forgets every statement's figures, cluster-wide.
void ResetStatementCosts(pqxx::connection& conn);
// The claim's (ClaimStore's Claim and ClaimFront together) and the result write's
// (CompletionStore's) figures since the last reset, every node's together.
StatementCost ClaimCost(pqxx::connection& conn);
StatementCost ResultWriteCost(pqxx::connection& conn);
// One line, "  <name>: N calls, R rows a call, B buffers a row (…), M ms a call, W WAL bytes a
// row (F full-page images)", on stdout.
void PrintCost(const char* name, const StatementCost& cost);

}  // namespace bulkhead::bench
