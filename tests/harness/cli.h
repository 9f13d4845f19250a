// Helpers for the tests of the `bulkhead` admin verbs: run the real binary, check what a usage
// error looks like, and a fixture that points the binary at the test's own database.
//
// Everything here runs on the test's main thread (RunCommand blocks it).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "delivery_test.h"
#include "subprocess.h"

namespace bulkhead::testing {

// Runs build/bin/bulkhead with `args`, and `env` on top of this process's environment;
// `input`, if any, is its stdin.
CommandResult Bulkhead(std::vector<std::string> args,
                       const std::map<std::string, std::string>& env = {},
                       const std::optional<std::string>& input = std::nullopt);

// Newlines in `text`.
int Lines(const std::string& text);

// What a usage error must look like: exit 2, nothing on stdout, one line on stderr containing
// `fragment`. The binary is pointed at a database that does not exist, so the test also proves
// that a usage error never reaches the database.
void ExpectUsageError(const std::vector<std::string>& args, const std::string& fragment);

// Every verb in `verbs`, pointed at a database that does not exist, exits 1 with one line on
// stderr that says "database error" and libpq's reason, and prints nothing on stdout.
void ExpectUnreachableDatabaseError(const std::vector<std::vector<std::string>>& verbs);

// A table as printed by cli::PrintTable, split into cells (columns are 2+ spaces apart).
std::vector<std::vector<std::string>> Cells(const std::string& table);

// A test database and the binary pointed at it.
class CliTest : public DeliveryTest {
 protected:
  using DeliveryTest::DeliveryTest;

  // Runs the binary with this test's database as --database (and `input` on stdin).
  CommandResult Run(std::vector<std::string> args,
                    const std::optional<std::string>& input = std::nullopt);
};

}  // namespace bulkhead::testing
