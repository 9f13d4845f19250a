// Each named query's declared parameters and columns (`-- param`, `-- column` in
// worker/store/*.sql; worker/store/typed_statements.cmake) against what real PostgreSQL says of
// the prepared statement: for every statement, libpq's PQprepare and PQdescribePrepared on a
// connection of the test's own, then the count, the order, the names (of columns) and the types
// compared. The stores bind Params' fields in order and read Row's by position, so a
// declaration the server disagrees with is a field bound to the wrong $n or read from the wrong
// column: the failure names the statement and prints the declarations the server implies.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "database_test.h"
#include "named_queries.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;

struct PgConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgConn = std::unique_ptr<PGconn, PgConnCloser>;
using PgResult = std::unique_ptr<PGresult, PgResultClearer>;

// What the server says of one prepared statement, as declarations: (name, type) per parameter
// (the server names none: the declared name, or p<n>) and per column.
struct Described {
  std::vector<std::pair<std::string, std::string>> params, columns;
};

class StatementTypesTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    conn_.reset(PQconnectdb(conninfo().c_str()));
    ASSERT_EQ(PQstatus(conn_.get()), CONNECTION_OK) << PQerrorMessage(conn_.get());
    // Every type by OID, spelled as the declarations spell it (format_type).
    PgResult types(PQexec(conn_.get(), "SELECT oid::text, format_type(oid, NULL) FROM pg_type"));
    ASSERT_EQ(PQresultStatus(types.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn_.get());
    for (int i = 0; i < PQntuples(types.get()); ++i) {
      type_names_[static_cast<Oid>(std::stoul(PQgetvalue(types.get(), i, 0)))] =
          PQgetvalue(types.get(), i, 1);
    }
  }

  std::string TypeName(Oid oid) const {
    auto it = type_names_.find(oid);
    if (it != type_names_.end()) return it->second;
    std::string unknown = "oid ";
    unknown.append(std::to_string(oid));
    return unknown;
  }

  // Prepares `query` and describes it; false (with a failure) when the server refuses it.
  bool Describe(const NamedQuery& query, Described* out) {
    const std::string statement(query.statement);
    PgResult prepared(
        PQprepare(conn_.get(), statement.c_str(), std::string(query.sql).c_str(), 0, nullptr));
    if (PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
      ADD_FAILURE() << query.file << ": " << query.name
                    << ": the server refuses it: " << PQerrorMessage(conn_.get());
      return false;
    }
    PgResult described(PQdescribePrepared(conn_.get(), statement.c_str()));
    if (PQresultStatus(described.get()) != PGRES_COMMAND_OK) {
      ADD_FAILURE() << query.file << ": " << query.name
                    << ": cannot describe it: " << PQerrorMessage(conn_.get());
      return false;
    }
    for (int i = 0; i < PQnparams(described.get()); ++i) {
      // The server names no parameter: the declared name, or p<n>.
      std::string name = "p";
      if (static_cast<size_t>(i) < query.params.size()) {
        name = query.params[i].name;
      } else {
        name.append(std::to_string(i + 1));
      }
      out->params.emplace_back(name, TypeName(PQparamtype(described.get(), i)));
    }
    for (int i = 0; i < PQnfields(described.get()); ++i) {
      out->columns.emplace_back(PQfname(described.get(), i), TypeName(PQftype(described.get(), i)));
    }
    return true;
  }

 private:
  PgConn conn_;
  std::map<Oid, std::string> type_names_;
};

// The declarations the server implies, as they would be written in the .sql file (each
// declared `?` kept where the name and type agree).
std::string AsDeclarations(const NamedQuery& query, const Described& server) {
  std::ostringstream out;
  for (size_t i = 0; i < server.params.size(); ++i) {
    const bool nullable = i < query.params.size() && query.params[i].nullable;
    out << "-- param $" << i + 1 << ' ' << server.params[i].first << ' ' << server.params[i].second
        << (nullable ? "?" : "") << '\n';
  }
  for (size_t i = 0; i < server.columns.size(); ++i) {
    const bool nullable = i < query.columns.size() && query.columns[i].nullable &&
                          query.columns[i].name == server.columns[i].first;
    out << "-- column " << server.columns[i].first << ' ' << server.columns[i].second
        << (nullable ? "?" : "") << '\n';
  }
  return out.str();
}

// Where `declared` and what the server says part: "" when they agree.
std::string Disagreement(const char* kind, std::span<const NamedQueryField> declared,
                         const std::vector<std::pair<std::string, std::string>>& server,
                         bool names_matter) {
  std::ostringstream out;
  if (declared.size() != server.size()) {
    out << "declares " << declared.size() << ' ' << kind << "(s), the server says " << server.size()
        << ". ";
  }
  for (size_t i = 0; i < declared.size() && i < server.size(); ++i) {
    if (names_matter && declared[i].name != server[i].first) {
      out << kind << ' ' << i + 1 << " is declared " << declared[i].name << ", the server names it "
          << server[i].first << ". ";
    }
    if (declared[i].type != server[i].second) {
      out << kind << ' ' << declared[i].name << " is declared " << declared[i].type
          << ", the server says " << server[i].second << ". ";
    }
  }
  return out.str();
}

TEST_F(StatementTypesTest, EveryStatementDeclaresTheParamsAndColumnsPostgresInfers) {
  for (const NamedQuery& query : EmbeddedQueries()) {
    Described server;
    if (!Describe(query, &server)) continue;
    const std::string problems = Disagreement("param", query.params, server.params, false) +
                                 Disagreement("column", query.columns, server.columns, true);
    if (problems.empty()) continue;
    ADD_FAILURE() << "worker/store/" << query.file << ": " << query.name << ": " << problems
                  << "\nThe server implies:\n"
                  << AsDeclarations(query, server);
  }
}

TEST_F(StatementTypesTest, AStatementThatUsesAnUndeclaredParamFailsTheCheck) {
  // The check itself: a statement with a $2 it does not declare, and a column it misnames.
  constexpr NamedQueryField kParams[] = {{"id", "bigint", false}};
  constexpr NamedQueryField kColumns[] = {{"id", "bigint", false}};
  const NamedQuery query{
      "test.sql", "Probe", "statement_types_probe", "SELECT $1::bigint AS ident, $2::text AS name",
      kParams,    kColumns};
  Described server;
  ASSERT_TRUE(Describe(query, &server));
  EXPECT_EQ(Disagreement("param", query.params, server.params, false),
            "declares 1 param(s), the server says 2. ");
  EXPECT_EQ(Disagreement("column", query.columns, server.columns, true),
            "declares 1 column(s), the server says 2. column 1 is declared id, the server names "
            "it ident. ");
  EXPECT_EQ(AsDeclarations(query, server),
            "-- param $1 id bigint\n-- param $2 p2 text\n-- column ident bigint\n"
            "-- column name text\n");
}

}  // namespace
}  // namespace bulkhead
