#include "tenant_command.h"

#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>
#include <vector>

#include "database_url.h"
#include "exit_codes.h"
#include "job_store.h"
#include "logger.h"

namespace bulkhead {
namespace {

constexpr const char* kDatabaseNote =
    "The database is --database URL, else DATABASE_URL, else libpq's PG* variables.\n";

constexpr const char* kTenantNote =
    "TENANT is a tenant's name, or its id (bulkhead.tenants.id) when no tenant has that name;\n"
    "after `--` a word is TENANT or TIER even if it starts with '-'.\n";

// One subcommand of `bulkhead tenant`: its name, its usage and help, and its handler, which
// gets the words after the subcommand's name. `bulkhead tenant --help` lists the table.
struct Subcommand {
  const char* name;
  const char* synopsis;  // the words after "bulkhead tenant"
  const char* summary;   // one line for `bulkhead tenant --help`
  const char* details;   // the rest of `bulkhead tenant <name> --help`
  int (*run)(const Subcommand& self, std::span<const std::string_view> args);
};

// A usage error of `bulkhead tenant[ <name>]`: one line on stderr, exit 2.
int UsageError(std::string_view command, const std::string& message) {
  std::cerr << command << ": " << message << " (try: " << command << " --help)\n";
  return kExitUsage;
}

std::string CommandName(const Subcommand& sub) {
  return std::string("bulkhead tenant ") + sub.name;
}

void PrintHelp(const Subcommand& sub) {
  std::cout << "usage: bulkhead tenant " << sub.synopsis << "\n\n"
            << sub.details << "\n"
            << kTenantNote << kDatabaseNote;
}

// A word as it appears inside one line of output: control characters (a newline in a tenant's
// name or in a mistyped argument) become spaces, so that the outcome stays on one line.
std::string OneLine(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line;
}

// "1 waiting delivery", "1200 waiting deliveries".
std::string Deliveries(int64_t n, std::string_view adjective) {
  return std::to_string(n) + " " + std::string(adjective) + (n == 1 ? " delivery" : " deliveries");
}

// The words of a subcommand that takes positional words and [--database URL], in any order.
struct Words {
  std::vector<std::string_view> positional;
  std::optional<std::string> database;
};

// The words, or the exit code to return at once (help printed, or a usage error). At most
// `max_positional` positional words; `--` makes every later word positional.
std::variant<Words, int> ParseWords(const Subcommand& sub, std::span<const std::string_view> args,
                                    size_t max_positional) {
  const std::string command = CommandName(sub);
  for (std::string_view arg : args) {
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") {
      PrintHelp(sub);
      return kExitOk;
    }
  }
  Words parsed;
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (!options_ended && arg == "--") {
      options_ended = true;
    } else if (!options_ended && arg == "--database") {
      if (i + 1 == args.size()) return UsageError(command, "--database needs a URL");
      parsed.database = std::string(args[++i]);
    } else if (!options_ended && arg.starts_with("--database=")) {
      parsed.database = std::string(arg.substr(sizeof("--database=") - 1));
    } else if (!options_ended && arg.starts_with("-")) {
      return UsageError(command, "unknown option '" + OneLine(arg) + "'");
    } else if (parsed.positional.size() < max_positional) {
      parsed.positional.push_back(arg);
    } else {
      return UsageError(command, "unexpected argument '" + OneLine(arg) + "'");
    }
  }
  return parsed;
}

// Connects, hands `act` a JobStore, and turns a database error into one line and exit 1.
template <typename Act>
int WithStore(const std::string& command, const std::optional<std::string>& database, Act act) {
  try {
    pqxx::connection conn(ResolveDatabase(database, std::nullopt));
    JobStore store(conn);
    return act(store);
  } catch (const std::exception& e) {
    // libpq's messages span lines; the first has the reason.
    std::cerr << command << ": database error: " << FirstLine(e.what()) << "\n";
    return kExitFailure;
  }
}

// The outcome line of a set-tier that found the tenant.
std::string DescribeMove(const JobStore::TierMove& move, const std::string& tier) {
  const int64_t moved = move.available + move.parked;
  const std::string counts = Deliveries(moved, "waiting") + " moved (" +
                             std::to_string(move.available) + " available, " +
                             std::to_string(move.parked) + " parked)";
  std::string line = "tenant " + OneLine(move.tenant) + ": ";
  if (move.before == tier) {
    line += "already on tier " + tier;
    // The statement still moves a waiting job left in another queue (an enqueue that read the
    // tenant's old tier while an earlier set-tier ran): say so rather than "0 moved".
    line += moved == 0 ? ", 0 waiting deliveries moved" : "; " + counts + " to its queue";
    return line;
  }
  line += "tier " + OneLine(move.before) + " → " + tier + "; " + counts +
          "; deliveries in flight finish in " + OneLine(move.before);
  return line;
}

int RunSetTier(const Subcommand& sub, std::span<const std::string_view> args) {
  auto parsed = ParseWords(sub, args, 2);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const Words& words = std::get<Words>(parsed);
  const std::string command = CommandName(sub);
  if (words.positional.empty()) return UsageError(command, "missing TENANT and TIER");
  if (words.positional.size() == 1) return UsageError(command, "missing TIER");
  const std::string tenant(words.positional[0]);
  const std::string tier(words.positional[1]);
  if (!IsTierName(tier)) {
    return UsageError(command,
                      "TIER must be a tier name (a lowercase letter, then up to 62 lowercase "
                      "letters, digits or '_'), not '" +
                          OneLine(tier) + "'");
  }
  return WithStore(command, words.database, [&](JobStore& store) {
    std::optional<JobStore::TierMove> move;
    try {
      move = store.SetTenantTier(tenant, tier);
    } catch (const pqxx::foreign_key_violation&) {
      // tenants.tier references bulkhead.tiers: the statement changed nothing.
      std::cerr << command << ": no tier named '" << tier << "' (see bulkhead.tiers)\n";
      return kExitFailure;
    }
    if (!move) {
      std::cerr << command << ": no tenant named or numbered '" << OneLine(tenant) << "'\n";
      return kExitFailure;
    }
    std::cout << DescribeMove(*move, tier) << "\n";
    return kExitOk;
  });
}

constexpr Subcommand kSubcommands[] = {
    {"set-tier", "set-tier TENANT TIER [--database URL]",
     "move a tenant and its waiting deliveries to another tier",
     R"(Moves the tenant to TIER (one tier is one queue) together with its waiting deliveries,
available and parked, of all its channels, in one statement; parked ones stay parked. Deliveries
in flight finish where they are, and one that fails retries in the new tier. The nodes serving
TIER are woken. A tenant already on TIER is left there. TIER must exist in bulkhead.tiers (a
node registers the tiers it serves; `default` and `bulk` exist from the start).
)",
     RunSetTier},
};

void PrintOverview() {
  std::cout << "usage: bulkhead tenant <subcommand> [arguments] [--database URL]\n\nsubcommands:\n";
  for (const Subcommand& sub : kSubcommands) {
    // Every subcommand takes --database; the overview says so once.
    std::string synopsis = sub.synopsis;
    synopsis = synopsis.substr(0, synopsis.find(" [--database URL]"));
    std::cout << "  " << synopsis
              << std::string(synopsis.size() < 22 ? 24 - synopsis.size() : 2, ' ') << sub.summary
              << "\n";
  }
  std::cout << "\n"
            << kTenantNote << "`bulkhead tenant <subcommand> --help` says more.\n"
            << kDatabaseNote;
}

std::string SubcommandNames() {
  std::string names;
  for (const Subcommand& sub : kSubcommands)
    names += (names.empty() ? "" : ", ") + std::string(sub.name);
  return names;
}

}  // namespace

bool IsTierName(std::string_view word) {
  if (word.empty() || word.size() > 63 || word[0] < 'a' || word[0] > 'z') return false;
  for (char c : word) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

int RunTenantCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead tenant";
  if (args.empty()) return UsageError(kCommand, "missing subcommand (" + SubcommandNames() + ")");
  std::string_view name = args.front();
  if (name == "-h" || name == "--help") {
    PrintOverview();
    return kExitOk;
  }
  for (const Subcommand& sub : kSubcommands) {
    if (name == sub.name) return sub.run(sub, args.subspan(1));
  }
  if (name.starts_with("-")) {
    return UsageError(kCommand, "expected a subcommand (" + SubcommandNames() + ") before '" +
                                    OneLine(name) + "'");
  }
  return UsageError(kCommand,
                    "unknown subcommand '" + OneLine(name) + "' (" + SubcommandNames() + ")");
}

}  // namespace bulkhead
