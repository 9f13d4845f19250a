#include "named_queries.h"

#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

namespace bulkhead {

const NamedQuery& FindQuery(std::string_view name) {
  for (const NamedQuery& query : EmbeddedQueries()) {
    if (query.name == name) return query;
  }
  throw std::logic_error("no statement named " + std::string(name) +
                         " in worker/store/*.sql (a `-- name: " + std::string(name) +
                         "` entry): rebuild, or fix the store that asks for it");
}

void PrepareQueries(pqxx::connection_base& conn, std::span<const std::string_view> names) {
  for (std::string_view name : names) {
    const NamedQuery& query = FindQuery(name);
    conn.prepare(std::string(query.statement), std::string(query.sql));
  }
}

}  // namespace bulkhead
