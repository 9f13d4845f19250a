#include "channel_command.h"

#include <cctype>
#include <charconv>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>

#include "database_url.h"
#include "exit_codes.h"
#include "job_store.h"
#include "logger.h"

namespace bulkhead {
namespace {

constexpr const char* kDatabaseNote =
    "The database is --database URL, else DATABASE_URL, else libpq's PG* variables.\n";

// One subcommand of `bulkhead channel`: its name, its usage and help, and its handler, which
// gets the words after the subcommand's name. `bulkhead channel --help` lists the table.
struct Subcommand {
  const char* name;
  const char* synopsis;  // the words after "bulkhead channel"
  const char* summary;   // one line for `bulkhead channel --help`
  const char* details;   // the rest of `bulkhead channel <name> --help`
  int (*run)(const Subcommand& self, std::span<const std::string_view> args);
};

// A usage error of `bulkhead channel[ <name>]`: one line on stderr, exit 2.
int UsageError(std::string_view command, const std::string& message) {
  std::cerr << command << ": " << message << " (try: " << command << " --help)\n";
  return kExitUsage;
}

std::string CommandName(const Subcommand& sub) {
  return std::string("bulkhead channel ") + sub.name;
}

void PrintHelp(const Subcommand& sub) {
  std::cout << "usage: bulkhead channel " << sub.synopsis << "\n\n"
            << sub.details << "\n"
            << kDatabaseNote;
}

// "1 parked delivery", "120 parked deliveries".
std::string Deliveries(int64_t n, std::string_view adjective) {
  return std::to_string(n) + " " + std::string(adjective) + (n == 1 ? " delivery" : " deliveries");
}

// The words of a subcommand that takes one CHANNEL: `CHANNEL [--database URL]`, in any order.
struct ChannelArgs {
  int64_t channel = 0;
  std::optional<std::string> database;
};

// The parsed words, or the exit code to return at once (help printed, or a usage error).
std::variant<ChannelArgs, int> ParseChannelArgs(const Subcommand& sub,
                                                std::span<const std::string_view> args) {
  const std::string command = CommandName(sub);
  for (std::string_view arg : args) {
    if (arg == "-h" || arg == "--help") {
      PrintHelp(sub);
      return kExitOk;
    }
  }
  std::optional<std::string_view> channel_word;
  ChannelArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    // "-3" is a (bad) CHANNEL, not an option.
    bool negative_number =
        arg.size() > 1 && arg[0] == '-' && std::isdigit(static_cast<unsigned char>(arg[1]));
    if (arg == "--database") {
      if (i + 1 == args.size()) return UsageError(command, "--database needs a URL");
      parsed.database = std::string(args[++i]);
    } else if (arg.starts_with("--database=")) {
      parsed.database = std::string(arg.substr(sizeof("--database=") - 1));
    } else if (arg.starts_with("-") && !negative_number) {
      return UsageError(command, "unknown option '" + std::string(arg) + "'");
    } else if (!channel_word) {
      channel_word = arg;
    } else {
      return UsageError(command, "unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!channel_word) return UsageError(command, "missing CHANNEL");
  std::optional<int64_t> channel = ParseChannelId(*channel_word);
  if (!channel) {
    return UsageError(command, "CHANNEL must be a positive integer (a channel id), not '" +
                                   std::string(*channel_word) + "'");
  }
  parsed.channel = *channel;
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

int NoSuchChannel(const std::string& command, int64_t channel) {
  std::cerr << command << ": no channel with id " << channel << "\n";
  return kExitFailure;
}

// The channel's row in `bulkhead breakers`, if it has one (breaker not closed, or paused).
std::optional<JobStore::BreakerRow> FindBreakerRow(JobStore& store, int64_t channel) {
  for (auto& row : store.ListBreakers()) {
    if (row.channel == channel) return std::move(row);
  }
  return std::nullopt;
}

int RunPause(const Subcommand& sub, std::span<const std::string_view> args) {
  auto parsed = ParseChannelArgs(sub, args);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const int64_t channel = std::get<ChannelArgs>(parsed).channel;
  const std::string command = CommandName(sub);
  return WithStore(command, std::get<ChannelArgs>(parsed).database, [&](JobStore& store) {
    std::optional<JobStore::ChannelChange> change = store.PauseChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    std::cout << "channel " << channel;
    if (change->before == "paused") {
      // The statement parks stragglers anyway: a job made available meanwhile (a retry).
      std::cout << " already paused";
      if (change->jobs > 0)
        std::cout << "; " << Deliveries(change->jobs, "more waiting") << " parked";
    } else if (change->jobs > 0) {
      std::cout << " paused: " << Deliveries(change->jobs, "waiting")
                << " parked until it is resumed";
    } else {
      std::cout << " paused: nothing was waiting; new deliveries are parked until it is resumed";
    }
    std::cout << "\n";
    return kExitOk;
  });
}

int RunResume(const Subcommand& sub, std::span<const std::string_view> args) {
  auto parsed = ParseChannelArgs(sub, args);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const int64_t channel = std::get<ChannelArgs>(parsed).channel;
  const std::string command = CommandName(sub);
  return WithStore(command, std::get<ChannelArgs>(parsed).database, [&](JobStore& store) {
    std::optional<JobStore::ChannelChange> change = store.ResumeChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    const bool was_paused = change->before == "paused";
    std::cout << "channel " << channel << (was_paused ? " resumed" : " was not paused");
    if (change->jobs > 0) {
      std::cout << (was_paused ? ": " : "; ") << Deliveries(change->jobs, "parked")
                << " back in the queue";
    } else if (auto row = FindBreakerRow(store, channel); row && row->state != "closed") {
      // ResumeChannel unparks nothing while the breaker is not closed: say why.
      std::cout << (was_paused ? ", but" : ";") << " its breaker is " << row->state << ", so its "
                << Deliveries(row->parked, "parked")
                << " stay parked until the breaker's probe succeeds (or `bulkhead breaker reset "
                << channel << "`)";
    } else if (was_paused) {
      std::cout << ": nothing was parked";
    }
    std::cout << "\n";
    return kExitOk;
  });
}

constexpr Subcommand kSubcommands[] = {
    {"pause", "pause CHANNEL [--database URL]", "hold a channel's deliveries, parked",
     R"(Holds the channel's deliveries: its waiting backlog (due or not) is parked at once, and
deliveries enqueued while it is paused are inserted parked. Deliveries already in flight
finish; one that fails waits parked for its retry. The circuit breaker keeps its state
meanwhile but sends no new probe. Pausing a paused channel changes nothing.
)",
     RunPause},
    {"resume", "resume CHANNEL [--database URL]", "lift the hold; the parked backlog returns",
     R"(Lifts the hold: the channel's parked backlog returns to the queue in one statement, behind
fresh deliveries (priority 3), with its retry times kept. If the channel's breaker is not
closed, the backlog stays parked until the breaker's probe succeeds or an operator runs
`bulkhead breaker reset CHANNEL`.
)",
     RunResume},
};

void PrintOverview() {
  std::cout
      << "usage: bulkhead channel <subcommand> [arguments] [--database URL]\n\nsubcommands:\n";
  for (const Subcommand& sub : kSubcommands) {
    // Every subcommand takes --database; the overview says so once.
    std::string synopsis = sub.synopsis;
    synopsis = synopsis.substr(0, synopsis.find(" [--database URL]"));
    std::cout << "  " << synopsis
              << std::string(synopsis.size() < 22 ? 24 - synopsis.size() : 2, ' ') << sub.summary
              << "\n";
  }
  std::cout << "\nCHANNEL is a channel id (bulkhead.channels.id). `bulkhead channel <subcommand> "
               "--help` says more.\n"
            << kDatabaseNote;
}

std::string SubcommandNames() {
  std::string names;
  for (const Subcommand& sub : kSubcommands)
    names += (names.empty() ? "" : ", ") + std::string(sub.name);
  return names;
}

}  // namespace

std::optional<int64_t> ParseChannelId(std::string_view word) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
  if (word.empty() || ec != std::errc() || end != word.data() + word.size() || id < 1) {
    return std::nullopt;
  }
  return id;
}

int RunChannelCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead channel";
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
                                    std::string(name) + "'");
  }
  return UsageError(kCommand,
                    "unknown subcommand '" + std::string(name) + "' (" + SubcommandNames() + ")");
}

}  // namespace bulkhead
