// The named queries of worker/store/*.sql against real PostgreSQL: every store starts, and the
// server accepts each of its statements as the build embedded it (fragments substituted); every
// embedded statement belongs to exactly one store; a name the build did not embed stops a store
// from starting, with the name in the error.
#include "named_queries.h"

#include <gtest/gtest.h>

#include <map>
#include <pqxx/pqxx>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "admin_channel_store.h"
#include "admin_jobs_store.h"
#include "breaker_store.h"
#include "claim_store.h"
#include "completion_store.h"
#include "console_store.h"
#include "database_test.h"
#include "fleet_store.h"
#include "role_store.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;

class NamedQueriesTest : public DatabaseTest {
 protected:
  // Constructs `Store` on a connection of its own and has the server prepare each of its
  // statements now (libpqxx would otherwise wait for the first use).
  template <typename Store>
  void PrepareEveryStatement(const char* store) {
    SCOPED_TRACE(store);
    std::unique_ptr<pqxx::connection> conn = Connect();
    Store instance(*conn);
    for (std::string_view name : Store::kStatements) {
      SCOPED_TRACE(std::string(name));
      EXPECT_NO_THROW(conn->prepare_now(std::string(FindQuery(name).statement)));
    }
  }
};

TEST_F(NamedQueriesTest, EveryStoreStartsAndPostgresAcceptsEachOfItsStatements) {
  PrepareEveryStatement<ClaimStore>("ClaimStore");
  PrepareEveryStatement<CompletionStore>("CompletionStore");
  PrepareEveryStatement<BreakerStore>("BreakerStore");
  PrepareEveryStatement<FleetStore>("FleetStore");
  PrepareEveryStatement<AdminChannelStore>("AdminChannelStore");
  PrepareEveryStatement<AdminJobsStore>("AdminJobsStore");
  PrepareEveryStatement<RoleStore>("RoleStore");
  PrepareEveryStatement<ConsoleStore>("ConsoleStore");
}

TEST_F(NamedQueriesTest, EveryEmbeddedStatementBelongsToExactlyOneStore) {
  std::map<std::string, int> owners;
  for (std::span<const std::string_view> names :
       {std::span<const std::string_view>(ClaimStore::kStatements),
        std::span<const std::string_view>(CompletionStore::kStatements),
        std::span<const std::string_view>(BreakerStore::kStatements),
        std::span<const std::string_view>(FleetStore::kStatements),
        std::span<const std::string_view>(AdminChannelStore::kStatements),
        std::span<const std::string_view>(AdminJobsStore::kStatements),
        std::span<const std::string_view>(RoleStore::kStatements),
        std::span<const std::string_view>(ConsoleStore::kStatements)}) {
    for (std::string_view name : names) ++owners[std::string(name)];
  }
  for (const NamedQuery& query : EmbeddedQueries()) {
    EXPECT_EQ(owners[std::string(query.name)], 1) << query.file << ": " << query.name;
  }
  EXPECT_EQ(owners.size(), EmbeddedQueries().size());
  EXPECT_EQ(FindQuery("ClaimProbes").statement, "claim_probes");
  EXPECT_EQ(FindQuery("ClaimProbes").file, "claim_store.sql");
}

TEST_F(NamedQueriesTest, AMissingNameStopsTheStoreWithTheName) {
  try {
    FindQuery("NoSuchStatement");
    ADD_FAILURE() << "FindQuery found a statement that no .sql file has";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchStatement"), std::string::npos) << e.what();
  }
  constexpr std::string_view kNames[] = {"Claim", "NoSuchStatement"};
  EXPECT_THROW(PrepareQueries(db(), kNames), std::logic_error);
}

}  // namespace
}  // namespace bulkhead
