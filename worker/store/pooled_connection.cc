#include "pooled_connection.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "named_queries.h"

namespace bulkhead {
namespace {

struct Registry {
  std::mutex mu;
  // Guarded by mu. Per pooled connection: its settings, and the select list that makes them.
  struct Entry {
    SessionSettings settings;
    std::string statement;            // set_config($1, $2, true), … for each setting
    std::vector<std::string> values;  // its parameters: name, value, name, value, …
  };
  std::map<const pqxx::connection_base*, Entry> entries;
  // entries.size(), readable without mu: a process with no pooled connection (a node without
  // database_pool, every CLI verb) answers IsPooled from it and never takes the lock, on every
  // statement of every thread.
  std::atomic<size_t> count{0};
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

// The statement that makes `settings` for one transaction, and its parameters.
void Describe(Registry::Entry& entry) {
  entry.statement.clear();
  entry.values.clear();
  for (const auto& [name, value] : entry.settings) {
    if (!entry.statement.empty()) entry.statement += ", ";
    entry.statement += "set_config($" + std::to_string(entry.values.size() + 1) + ", $" +
                       std::to_string(entry.values.size() + 2) + ", true)";
    entry.values.push_back(name);
    entry.values.push_back(value);
  }
}

}  // namespace

PooledMark::PooledMark(const pqxx::connection_base& conn, SessionSettings settings) : conn_(&conn) {
  Registry& r = TheRegistry();
  Registry::Entry entry{std::move(settings), {}, {}};
  Describe(entry);
  std::lock_guard lock(r.mu);
  r.entries[conn_] = std::move(entry);
  r.count.store(r.entries.size(), std::memory_order_release);
}

PooledMark::~PooledMark() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  r.entries.erase(conn_);
  r.count.store(r.entries.size(), std::memory_order_release);
}

bool IsPooled(const pqxx::connection_base& conn) {
  Registry& r = TheRegistry();
  // A connection is marked by the thread that uses it, before its first statement: a count of 0
  // read here cannot miss this connection's own mark.
  if (r.count.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(r.mu);
  return r.entries.contains(&conn);
}

void AddPooledSettings(const pqxx::connection_base& conn, const SessionSettings& settings) {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.entries.find(&conn);
  if (it == r.entries.end()) return;
  SessionSettings& kept = it->second.settings;
  for (const auto& setting : settings) {
    std::erase_if(kept, [&](const auto& s) { return s.first == setting.first; });
    kept.push_back(setting);
  }
  Describe(it->second);
}

namespace {

// FNV-1a, 64 bits: the same on every build, so nodes of one release share their statements.
uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

bool ApplyPooledSettings(pqxx::transaction_base& tx, std::string_view prepared) {
  std::string settings;
  std::vector<std::string> values;
  {
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    auto it = r.entries.find(&tx.conn());
    if (it == r.entries.end()) return false;
    settings = it->second.statement;
    values = it->second.values;
  }
  if (dynamic_cast<pqxx::nontransaction*>(&tx) != nullptr) {
    throw std::logic_error(
        "a statement on a pooled connection ran outside a transaction block, where its settings "
        "(statement_timeout) cannot be made: run it through Atomically (pooled_connection.h)");
  }
  std::string sql = "SELECT " + settings;
  if (!prepared.empty()) {
    values.emplace_back(prepared);
    if (!settings.empty()) sql += ", ";
    sql += "EXISTS (SELECT FROM pg_prepared_statements WHERE name = $" +
           std::to_string(values.size()) + ")";
  }
  if (sql == "SELECT ") return false;
  const pqxx::row row = tx.exec_params1(sql, pqxx::prepare::make_dynamic_params(values));
  return !prepared.empty() && row.back().as<bool>();
}

const PooledStatement& PooledStatementOf(std::string_view statement) {
  // Built once, on first use (thread-safe static initialisation); immutable after.
  static const std::unordered_map<std::string_view, PooledStatement> by_statement = [] {
    std::unordered_map<std::string_view, PooledStatement> map;
    for (const NamedQuery& query : EmbeddedQueries()) {
      std::string types;
      for (const NamedQueryField& param : query.params) {
        types += types.empty() ? "(" : ", ";
        types += param.type;
      }
      if (!types.empty()) types += ")";
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(Fnv1a(types + " " + std::string(query.sql))));
      PooledStatement s;
      s.name = "bulkhead_" + std::string(query.statement.substr(0, 30)) + "_" + hash;
      s.prepare = "PREPARE " + s.name + types + " AS " + std::string(query.sql);
      map.emplace(query.statement, std::move(s));
    }
    return map;
  }();
  auto it = by_statement.find(statement);
  if (it == by_statement.end()) {
    throw std::logic_error("no named statement " + std::string(statement) +
                           " in worker/store/*.sql: rebuild");
  }
  return it->second;
}

pqxx::result ExecPooled(pqxx::transaction_base& tx, std::string_view statement,
                        const std::vector<std::string>& literals) {
  const PooledStatement& s = PooledStatementOf(statement);
  if (!ApplyPooledSettings(tx, s.name)) tx.exec0(s.prepare);
  std::string execute = "EXECUTE " + s.name;
  for (size_t i = 0; i < literals.size(); ++i) {
    execute += i == 0 ? "(" : ", ";
    execute += literals[i];
  }
  if (!literals.empty()) execute += ")";
  return tx.exec(execute);
}

}  // namespace bulkhead
