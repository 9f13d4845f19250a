// Pooled connections: a connection that goes through a pooler in *transaction* mode (PgBouncer's
// `pool_mode = transaction`), where each transaction may run on a different server connection,
// and nothing a session keeps — a prepared statement, a SET, a LISTEN, a session advisory lock —
// is there for the next one.
//
// So on a pooled connection (a PooledMark on it):
// - each named statement is prepared on each *server* connection it runs on, once, with SQL
//   PREPARE under a name that carries a hash of its text and parameter types
//   (`bulkhead_claim_1f0c…`), and run with EXECUTE and its arguments as literals (ExecPooled).
//   Whether the server connection has it is asked in the same round trip that makes the
//   transaction's settings; a server connection prepares it at most once, and every node of a
//   release that reaches that server connection through the pooler uses it. A release whose
//   SQL differs prepares its own name, so two releases side by side never run each other's.
//   So the claim keeps its generic plan (ADR 0016), as on a session, instead of being planned
//   for every call: measured, planning every statement cost a node through the pooler about
//   half its deliveries a second (load/pool_bench.sh).
// - the session settings of the connection string (statement_timeout above all) and any a store
//   adds (the claim's planner switches, AddPooledSettings) are made for each transaction instead,
//   with `set_config(name, value, true)`;
// - every statement must run inside a transaction block (pqxx::work): a setting made LOCAL outside
//   one is gone at once, and the pooler may hand the next statement another server connection.
//   ApplyPooledSettings throws std::logic_error for a nontransaction, and stores run their single
//   statements through Atomically, which is autocommit on a session connection (one round trip)
//   and BEGIN … COMMIT on a pooled one.
// Which work needs a session, and so never goes through the pool: the LISTEN for wake-ups, the
// leader's session advisory lock, and the node's start and stop (docs/operations.md).
//
// Threads: the registry is one process-wide map under a mutex; an entry is added and removed by
// the thread that owns the connection (PooledMark, held beside it), and read by that thread.
// While no connection of the process is pooled, IsPooled reads one atomic and takes no lock.
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

// On a pooled connection, makes its settings for the transaction `tx` and, when `prepared` is not
// empty, says whether that named statement is prepared on the server connection serving it (one
// statement). Nothing, and false, otherwise. Throws std::logic_error when `tx` is not a
// transaction block on a pooled connection.
bool ApplyPooledSettings(pqxx::transaction_base& tx, std::string_view prepared = {});

// A named statement as a pooled connection prepares it: its server-side name, and the PREPARE.
struct PooledStatement {
  std::string name;     // bulkhead_<statement>_<16 hex digits of FNV-1a of types and text>
  std::string prepare;  // PREPARE <name>(<types>) AS <sql>
};
// The one for the statement whose prepared name is `statement` (claim_probes). Throws
// std::logic_error when the build embedded none.
const PooledStatement& PooledStatementOf(std::string_view statement);

// Runs `statement` on a pooled connection: the transaction's settings, PREPARE if the server
// connection lacks it, then EXECUTE with `literals` (each already a SQL literal or NULL).
pqxx::result ExecPooled(pqxx::transaction_base& tx, std::string_view statement,
                        const std::vector<std::string>& literals);

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
