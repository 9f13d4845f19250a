// Pooled connections: a connection that goes through a pooler in *transaction* mode (PgBouncer's
// `pool_mode = transaction`), where each transaction may run on a different server connection,
// and nothing a session keeps — a prepared statement, a SET, a LISTEN, a session advisory lock —
// is there for the next one.
//
// So on a pooled connection (MarkPooled):
// - the stores' named statements go unprepared: typed::Exec (typed_statement.h) sends each with
//   its SQL text through the unnamed statement (libpq's PQexecParams: Parse, Bind, Execute, Sync
//   in one exchange), which the pooler passes as one unit. libpqxx registers a store's
//   statements lazily (named_queries.h) and never sends them when nothing executes them by name.
// - the session settings of the connection string (statement_timeout above all) and any a store
//   adds (the claim's planner switches, AddPooledSettings) are made for each transaction instead,
//   with `set_config(name, value, true)`, one extra round trip before each statement;
// - every statement must run inside a transaction block (pqxx::work): a setting made LOCAL outside
//   one is gone at once. typed::Exec throws std::logic_error for a nontransaction, and stores run
//   their single statements through Atomically, which is autocommit on a session connection (one
//   round trip) and BEGIN … COMMIT on a pooled one.
// Which work needs a session, and so never goes through the pool: the LISTEN for wake-ups, the
// leader's session advisory lock, and the node's start and stop (docs/operations.md).
//
// Threads: the registry is one process-wide map under a mutex; an entry is added and removed by
// the thread that owns the connection (PooledMark, held beside it), and read by that thread.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bulkhead {

using SessionSettings = std::vector<std::pair<std::string, std::string>>;

// Registers `conn` as pooled with the settings each of its transactions needs, for as long as the
// mark lives; it must not outlive the connection (declare it after the connection it marks).
class PooledMark {
 public:
  PooledMark(const pqxx::connection_base& conn, SessionSettings settings);
  ~PooledMark();
  PooledMark(const PooledMark&) = delete;
  PooledMark& operator=(const PooledMark&) = delete;

 private:
  const pqxx::connection_base* conn_;
};

// Whether `conn` is pooled.
bool IsPooled(const pqxx::connection_base& conn);

// Adds settings to every later transaction of a pooled `conn` (a later value of the same name
// wins). Nothing on a connection that is not pooled.
void AddPooledSettings(const pqxx::connection_base& conn, const SessionSettings& settings);

// On a pooled connection, makes its settings for the transaction `tx` (one statement); nothing
// otherwise. Throws std::logic_error when `tx` is not a transaction block on a pooled connection.
void ApplyPooledSettings(pqxx::transaction_base& tx);

// The SQL text of the named statement whose prepared name is `statement` (claim_probes). Throws
// std::logic_error when the build embedded none.
const std::string& StatementSql(std::string_view statement);

// Runs f(tx) as one atomic unit and returns what it returns: a pqxx::nontransaction (autocommit:
// one statement is atomic, one round trip) on a session connection, a pqxx::work on a pooled
// one. `f` runs one statement, or statements that need not be atomic together.
template <typename F>
auto Atomically(pqxx::connection_base& conn, const std::string& name, F&& f) {
  if (IsPooled(conn)) {
    pqxx::work tx(conn, name);
    auto result = f(static_cast<pqxx::transaction_base&>(tx));
    tx.commit();
    return result;
  }
  pqxx::nontransaction tx(conn, name);
  return f(static_cast<pqxx::transaction_base&>(tx));
}

}  // namespace bulkhead
