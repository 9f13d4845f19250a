// ResolveDatabase: the order of docs/cli.md ("Common rules") — flag, config, DATABASE_URL, then
// libpq's PG*.
#include "database_url.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace bulkhead {
namespace {

class ResolveDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("DATABASE_URL"); }
  void TearDown() override { unsetenv("DATABASE_URL"); }
};

TEST_F(ResolveDatabaseTest, FlagWinsOverEverything) {
  setenv("DATABASE_URL", "postgresql://env/db", 1);
  EXPECT_EQ(ResolveDatabase("postgresql://flag/db", "postgresql://config/db"),
            "postgresql://flag/db");
}

TEST_F(ResolveDatabaseTest, ConfigWinsOverTheEnvironment) {
  setenv("DATABASE_URL", "postgresql://env/db", 1);
  EXPECT_EQ(ResolveDatabase(std::nullopt, "postgresql://config/db"), "postgresql://config/db");
}

TEST_F(ResolveDatabaseTest, DatabaseUrlWhenNeitherFlagNorConfig) {
  setenv("DATABASE_URL", "postgresql://env/db", 1);
  EXPECT_EQ(ResolveDatabase(std::nullopt, std::nullopt), "postgresql://env/db");
}

TEST_F(ResolveDatabaseTest, EmptyLeavesItToLibpqsPgVariables) {
  EXPECT_EQ(ResolveDatabase(std::nullopt, std::nullopt), "");
  setenv("DATABASE_URL", "", 1);  // set but empty counts as unset
  EXPECT_EQ(ResolveDatabase(std::nullopt, std::nullopt), "");
}

}  // namespace
}  // namespace bulkhead
