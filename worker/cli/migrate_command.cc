#include "migrate_command.h"

#include <charconv>
#include <iomanip>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "cli_common.h"
#include "database_url.h"
#include "exit_codes.h"
#include "logger.h"
#include "migrations.h"
#include "migrator.h"

namespace bulkhead {
namespace {

constexpr std::string_view kCommand = "bulkhead migrate";

constexpr const char* kUsage = R"(usage: bulkhead migrate up | down [N] | status [--database URL]

  up        apply every pending migration, each in its own transaction
  down [N]  reverse the N newest applied migrations (default 1)
  status    list the migrations, applied and pending

The database is --database URL, else DATABASE_URL, else libpq's PG* variables.
)";

// "bulkhead migrate: <message> (try: bulkhead migrate --help)", exit 2.
int UsageError(const std::string& message) { return cli::UsageError(kCommand, message); }

int PrintResult(const char* verb, const Migrator::Result& result) {
  for (const auto& step : result.steps) {
    std::cout << verb << " " << step.name << " (" << std::fixed << std::setprecision(1)
              << step.millis << " ms)\n";
  }
  if (!result.ok()) {
    std::cerr << "bulkhead migrate: " << result.error << "\n";
    return kExitFailure;
  }
  if (result.steps.empty()) std::cout << "nothing to do\n";
  return kExitOk;
}

int PrintStatus(const Migrator::Report& report) {
  std::cout << "database at version " << report.database_version << ", this binary knows "
            << report.binary_version << "\n";
  for (const auto& row : report.rows) {
    std::cout << "  " << std::left << std::setw(32)
              << (row.name.empty() ? std::to_string(row.version) + " (unknown to this binary)"
                                   : row.name)
              << (row.applied_at.empty() ? "pending" : "applied " + row.applied_at) << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunMigrateCommand(std::span<const std::string_view> args) {
  std::optional<std::string> database;
  std::string action;
  std::optional<int> steps;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (arg == "--database") {
      if (i + 1 == args.size()) return UsageError("--database needs a URL");
      database = std::string(args[++i]);
    } else if (arg.starts_with("--database=")) {
      database = std::string(arg.substr(sizeof("--database=") - 1));
    } else if (arg.starts_with("-")) {
      return UsageError("unknown option '" + std::string(arg) + "'");
    } else if (action.empty()) {
      if (arg != "up" && arg != "down" && arg != "status") {
        return UsageError("unknown action '" + std::string(arg) + "' (up, down [N], status)");
      }
      action = arg;
    } else if (action == "down" && !steps) {
      int n = 0;
      auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
      if (ec != std::errc() || end != arg.data() + arg.size() || n < 1) {
        return UsageError("down takes a positive number of migrations, not '" + std::string(arg) +
                          "'");
      }
      steps = n;
    } else {
      return UsageError("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (action.empty()) return UsageError("missing action (up, down [N], status)");

  try {
    pqxx::connection conn(ResolveDatabase(database, std::nullopt));
    Migrator migrator(conn, EmbeddedMigrations());
    if (action == "up") return PrintResult("applied", migrator.Up());
    if (action == "down") return PrintResult("reversed", migrator.Down(steps.value_or(1)));
    return PrintStatus(migrator.Status());
  } catch (const std::exception& e) {
    // libpq's messages span lines; the first has the reason.
    std::cerr << "bulkhead migrate: database error: " << FirstLine(e.what()) << "\n";
    return kExitFailure;
  }
}

}  // namespace bulkhead
