// RoleStore: what `bulkhead grant` runs — give a PostgreSQL role exactly what one part of a
// deployment needs (the application, a node, the console), and read back what a role may do.
// Its SQL is worker/store/role_store.sql; the lists of privileges themselves live in the schema
// (bulkhead.grant_role, migration 0009), so they change with the tables they name.
//
// Used by one thread, the CLI's, on a connection of its own (cli::WithStore). Database errors
// throw pqxx exceptions (a missing role is SQLSTATE 42704, a caller that does not own the schema
// 42501), which the verb prints as one line. Construction throws std::logic_error when the build
// embedded no statement of a name it needs (named_queries.h).
#pragma once

#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bulkhead {

// One object of schema bulkhead (a table, a sequence, a function with its argument types) and
// what a role may do with it: "SELECT, UPDATE (url)".
struct RolePrivilege {
  std::string object;
  std::string privileges;
};

class RoleStore {
 public:
  // The parts a role can be granted, as `--as` spells them.
  static constexpr std::string_view kParts[] = {"app", "node", "console"};

  // Every statement of role_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit RoleStore(pqxx::connection_base& conn);

  // Revokes what `role` held in the schema and grants what `part` needs, in one transaction:
  // on failure the role keeps what it had.
  void Grant(const std::string& role, std::string_view part);

  // What `role` may do in the schema now, by object name; empty for a role with nothing there.
  std::vector<RolePrivilege> Privileges(const std::string& role);

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
