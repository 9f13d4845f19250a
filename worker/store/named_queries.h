// Named queries: the statements of worker/store/*.sql, embedded in the binary at configure time
// (worker/store/named_queries.cmake), and how a store prepares its own.
//
// Each store (ClaimStore, CompletionStore, BreakerStore, FleetStore, AdminChannelStore,
// AdminJobsStore, RoleStore) prepares every statement of its own .sql file, which the build
// lists (`sql::<file>::kStatements` in the generated <file>_statements.h), each under its
// snake_case name (ClaimProbes → claim_probes, as EXPLAIN EXECUTE names it).
// Fragments are already substituted; the contract and the reasons stay in the .sql file, beside
// the SQL. Each statement's parameters and columns are declared there too, and the stores call
// it through the struct generated from them (typed_statements.cmake).
//
// Immutable after static initialisation: safe for concurrent use.
#pragma once

#include <span>
#include <string_view>

namespace pqxx {
class connection_base;
}

namespace bulkhead {

// A declared parameter or column (`-- param $1 queue text`, `-- column id bigint?`;
// typed_statements.cmake): its name, its type as PostgreSQL spells it, and whether it may be NULL.
struct NamedQueryField {
  std::string_view name;
  std::string_view type;
  bool nullable;
};

struct NamedQuery {
  std::string_view file;       // the .sql file under worker/store/ that holds it
  std::string_view name;       // as in `-- name: ClaimProbes`
  std::string_view statement;  // the prepared statement's name: claim_probes
  std::string_view sql;
  std::span<const NamedQueryField> params;   // in $n order
  std::span<const NamedQueryField> columns;  // in the order it returns them
};

// Every statement of every worker/store/*.sql, in name order.
std::span<const NamedQuery> EmbeddedQueries();

// The statement named `name`. Throws std::logic_error naming it when no .sql file has one: a
// store that asks for a name the build did not embed cannot start.
const NamedQuery& FindQuery(std::string_view name);

// Defines each of `names` on `conn` under its statement name (libpqxx sends it to the server on
// first use). Throws std::logic_error for a missing name, as FindQuery.
void PrepareQueries(pqxx::connection_base& conn, std::span<const std::string_view> names);

}  // namespace bulkhead
