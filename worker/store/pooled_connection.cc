#include "pooled_connection.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "named_queries.h"

namespace bulkhead {
namespace {

struct Registry {
  std::mutex mu;
  // Guarded by mu. Per pooled connection: its settings, and the one statement that makes them.
  struct Entry {
    SessionSettings settings;
    std::string statement;            // SELECT set_config($1, $2, true), … for each setting
    std::vector<std::string> values;  // its parameters: name, value, name, value, …
  };
  std::map<const pqxx::connection_base*, Entry> entries;
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
    entry.statement += entry.statement.empty() ? "SELECT " : ", ";
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
}

PooledMark::~PooledMark() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  r.entries.erase(conn_);
}

bool IsPooled(const pqxx::connection_base& conn) {
  Registry& r = TheRegistry();
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

void ApplyPooledSettings(pqxx::transaction_base& tx) {
  std::string statement;
  std::vector<std::string> values;
  {
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    auto it = r.entries.find(&tx.conn());
    if (it == r.entries.end()) return;
    statement = it->second.statement;
    values = it->second.values;
  }
  if (dynamic_cast<pqxx::nontransaction*>(&tx) != nullptr) {
    throw std::logic_error(
        "a statement on a pooled connection ran outside a transaction block, where its settings "
        "(statement_timeout) cannot be made: run it through Atomically (pooled_connection.h)");
  }
  if (!statement.empty()) tx.exec_params(statement, pqxx::prepare::make_dynamic_params(values));
}

const std::string& StatementSql(std::string_view statement) {
  // Built once, on first use (thread-safe static initialisation); immutable after.
  static const std::unordered_map<std::string_view, std::string> by_statement = [] {
    std::unordered_map<std::string_view, std::string> map;
    for (const NamedQuery& query : EmbeddedQueries()) map.emplace(query.statement, query.sql);
    return map;
  }();
  auto it = by_statement.find(statement);
  if (it == by_statement.end()) {
    throw std::logic_error("no named statement " + std::string(statement) +
                           " in worker/store/*.sql: rebuild");
  }
  return it->second;
}

}  // namespace bulkhead
