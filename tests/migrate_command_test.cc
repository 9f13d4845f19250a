// `bulkhead` and `bulkhead migrate` as an operator runs them: the real binary, a real database,
// exit codes 0 / 1 / 2 and what lands on stdout and stderr.
#include <gtest/gtest.h>

#include "database_test.h"
#include "migrations.h"
#include "subprocess.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::CommandResult;
using testing::DatabaseTest;
using testing::QueryValue;

CommandResult Bulkhead(std::vector<std::string> args,
                       const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), BULKHEAD_BIN);
  return testing::RunCommand(args, env);
}

// One line on stderr, nothing on stdout: what a usage error must look like.
void ExpectUsageError(const CommandResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(BulkheadCli, HelpAndVersionExitZero) {
  CommandResult help = Bulkhead({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("migrate up | down [N] | status"), std::string::npos) << help.out;
  CommandResult migrate_help = Bulkhead({"migrate", "--help"});
  EXPECT_EQ(migrate_help.exit_code, 0);
  EXPECT_NE(migrate_help.out.find("usage: bulkhead migrate"), std::string::npos);
  CommandResult version = Bulkhead({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.out.starts_with("bulkhead ")) << version.out;
}

TEST(BulkheadCli, UsageErrorsExitTwoWithOneLine) {
  ExpectUsageError(Bulkhead({}), "missing command");
  ExpectUsageError(Bulkhead({"frobnicate"}), "unknown command 'frobnicate'");
  ExpectUsageError(Bulkhead({"migrate"}), "missing action");
  ExpectUsageError(Bulkhead({"migrate", "sideways"}), "unknown action 'sideways'");
  ExpectUsageError(Bulkhead({"migrate", "down", "0"}), "positive number");
  ExpectUsageError(Bulkhead({"migrate", "down", "two"}), "positive number");
  ExpectUsageError(Bulkhead({"migrate", "up", "extra"}), "unexpected argument 'extra'");
  ExpectUsageError(Bulkhead({"migrate", "up", "--database"}), "--database needs a URL");
  ExpectUsageError(Bulkhead({"migrate", "up", "--verbose"}), "unknown option '--verbose'");
}

class MigrateCommandTest : public DatabaseTest {
 protected:
  MigrateCommandTest() : DatabaseTest(Start::kEmpty) {}
  int Version() {
    return QueryValue<int>(db(), "SELECT coalesce(max(version), 0) FROM bulkhead.migrations");
  }
};

TEST_F(MigrateCommandTest, UpStatusDownOverAUrl) {
  CommandResult up = Bulkhead({"migrate", "up", "--database", url()});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_NE(up.out.find("applied 0001_init"), std::string::npos) << up.out;
  EXPECT_EQ(Version(), static_cast<int>(EmbeddedMigrations().size()));

  CommandResult again = Bulkhead({"migrate", "up", "--database=" + url()});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, "nothing to do\n");

  CommandResult status = Bulkhead({"migrate", "status", "--database", url()});
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_NE(status.out.find("0001_init"), std::string::npos);
  EXPECT_NE(status.out.find("applied 20"), std::string::npos) << status.out;

  CommandResult down = Bulkhead({"migrate", "down", "--database", url()});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(Version(), static_cast<int>(EmbeddedMigrations().size()) - 1);
}

TEST_F(MigrateCommandTest, TakesDatabaseUrlFromTheEnvironment) {
  CommandResult up = Bulkhead({"migrate", "up"}, {{"DATABASE_URL", url()}});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_GT(Version(), 0);
}

TEST_F(MigrateCommandTest, FallsBackToLibpqsPgVariables) {
  const auto& cluster = testing::PostgresEnvironment::Cluster();
  CommandResult up = Bulkhead({"migrate", "up"}, {{"DATABASE_URL", ""},
                                                  {"PGHOST", "127.0.0.1"},
                                                  {"PGPORT", std::to_string(cluster.port())},
                                                  {"PGUSER", "bulkhead"},
                                                  {"PGDATABASE", dbname()}});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_GT(Version(), 0);
}

TEST_F(MigrateCommandTest, RefusesANewerSchemaWithExitOne) {
  ASSERT_EQ(Bulkhead({"migrate", "up", "--database", url()}).exit_code, 0);
  {
    pqxx::work tx(db());
    tx.exec("INSERT INTO bulkhead.migrations (version, name) VALUES (999, 'future')");
    tx.commit();
  }
  CommandResult up = Bulkhead({"migrate", "up", "--database", url()});
  EXPECT_EQ(up.exit_code, 1);
  EXPECT_NE(up.err.find("version 999, newer than this binary"), std::string::npos) << up.err;
}

TEST(BulkheadCli, UnreachableDatabaseIsOneLineWithTheReason) {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  CommandResult r = Bulkhead({"migrate", "status", "--database", "postgresql://x@127.0.0.1:1/x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("database error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace bulkhead
