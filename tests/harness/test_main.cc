// main() of every test binary that touches SQL: GoogleTest plus the throwaway PostgreSQL.
#include <gtest/gtest.h>

#include "database_test.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new bulkhead::testing::PostgresEnvironment);
  return RUN_ALL_TESTS();
}
