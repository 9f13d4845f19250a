// The plumbing every admin verb of `bulkhead` shares: how its words are parsed, how a usage
// error and a database error look, how it connects, how a subcommand table dispatches and
// prints its help, and how a table of rows is aligned.
//
// The contract every verb keeps through these helpers (docs/cli.md "Common rules", exit_codes.h):
// - `-h`/`--help` anywhere before `--` prints the verb's help on stdout and exits 0;
// - a usage error is one line on stderr, "<command>: <what> (try: <command> --help)", exit 2,
//   and never reaches the database;
// - a database error is one line on stderr with libpq's first line (the reason), exit 1;
// - the database is `--database URL`, else the `database` of `--config FILE` (the node's config
//   file), else `DATABASE_URL`, else libpq's PG* variables (docs/cli.md); a config file that
//   does not load is a usage error naming the file, the key and the reason.
//
// Pure functions over their arguments, plus stdout/stderr: meant for the process's main thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace pqxx {
class connection_base;
}

namespace bulkhead {
namespace cli {

// The line every verb's help ends with.
inline constexpr const char* kDatabaseNote =
    "The database is --database URL, else the \"database\" of --config FILE, else DATABASE_URL,\n"
    "else libpq's PG* variables.\n";

// "<command>: <message> (try: <command> --help)" on stderr. Returns kExitUsage.
int UsageError(std::string_view command, const std::string& message);

// A word as it appears inside one line of output: control characters (a newline in a tenant's
// name or in a mistyped argument) become spaces, so that the outcome stays on one line.
std::string OneLine(std::string_view text);

// "1 parked delivery", "120 parked deliveries".
std::string Deliveries(int64_t n, std::string_view adjective);

// An id as an operator types it: a positive decimal integer that fits an int64 ("7"; not
// "07x", "+7", "0" or "-3"). nullopt when it is not one.
std::optional<int64_t> ParseId(std::string_view word);

// `word` as an id (ParseId), or nullopt after the usage error "<name> must be a positive integer
// (<what>), not '<word>'". Without `quote_word` the word is not repeated: it may be a secret
// typed in the wrong place.
std::optional<int64_t> TakeId(std::string_view command, std::string_view name,
                              std::string_view what, std::string_view word, bool quote_word = true);

// A duration as an operator types it: a positive whole number and a unit, s, m, h or d
// ("90s", "15m", "2h", "7d"). Seconds, or nullopt when it is not one.
std::optional<int64_t> ParseDuration(std::string_view word);

// A point in time as an operator types it: ISO 8601 "2026-11-30", "2026-11-30T14:05",
// "2026-11-30T14:05:09" (a space may stand for the T), with an optional zone "Z" or "+01:00"
// (UTC when none). Returns it with its zone spelled out, for Postgres; nullopt when it is not
// one. Only the shape is checked here: Postgres refuses a 31st of February.
std::optional<std::string> ParseTimestamp(std::string_view word);

// An option a verb takes besides --database, --config and --help.
struct Option {
  const char* name;   // "--json", "--limit"
  const char* value;  // what it needs, for the usage error: "a number"; nullptr: a flag
};

// What a verb accepts.
struct Grammar {
  std::vector<Option> options;
  size_t max_positional = 0;
};

// The parsed words of one verb. An option given twice keeps its last value.
struct Words {
  std::vector<std::string_view> positional;
  std::map<std::string, std::string, std::less<>> values;  // options with a value
  std::set<std::string, std::less<>> flags;                // options without one
  std::optional<std::string> database;                     // --database URL
  std::optional<std::string> config;                       // --config FILE

  bool Has(std::string_view flag) const { return flags.contains(flag); }
  std::optional<std::string> Value(std::string_view option) const;
};

// The option every listing verb takes for JSON output instead of a table.
inline constexpr Option kJsonFlag{"--json", nullptr};

// The first positional word as CHANNEL, a channel id (bulkhead.channels.id): nullopt after the
// usage error "missing CHANNEL" or TakeId's. The one CHANNEL rule of every verb that takes one.
std::optional<int64_t> TakeChannel(std::string_view command, const Words& words,
                                   bool quote_word = true);

// The value of `option` as a number from 1 to `max`, else `fallback` when it is not given.
// nullopt after printing the usage error.
std::optional<int> ParseLimit(std::string_view command, const Words& words, std::string_view option,
                              int fallback, int max);

// Parses `args` (the words after the verb's name) by `grammar`: options in any order, as
// `--name VALUE` or `--name=VALUE`; `--` makes every later word positional; a word like "-3"
// is positional (a bad id, not an option). Returns the words, or the exit code to return at
// once: kExitOk after `print_help` ran (`-h`/`--help` before any `--`), or kExitUsage after
// the usage error was printed.
std::variant<Words, int> Parse(std::string_view command, std::span<const std::string_view> args,
                               const Grammar& grammar, const std::function<void()>& print_help);

// The connection string of the database `words` name (see the top of this file), or the exit
// code to return at once (kExitUsage, after "<command>: <file>: <key>: <reason>" for a config
// file that does not load).
std::variant<std::string, int> DatabaseOf(std::string_view command, const Words& words);

// Connects to the database `words` name (see the top of this file), hands `act` that
// connection, and returns what `act` returns. A config file that does not load is
// "<command>: <file>: <key>: <reason>" and kExitUsage. Any exception (a refused connection, a
// failed statement, a store that cannot start) becomes "<command>: database error: <first
// line>" and kExitFailure.
int WithConnection(std::string_view command, const Words& words,
                   const std::function<int(pqxx::connection_base&)>& act);

// The same, handing `act` a `Store` (AdminChannelStore, AdminJobsStore) on the connection, so
// that a one-shot verb prepares only that store's statements.
template <typename Store>
int WithStore(std::string_view command, const Words& words, const std::function<int(Store&)>& act) {
  return WithConnection(command, words, [&](pqxx::connection_base& conn) {
    Store store(conn);
    return act(store);
  });
}

// One subcommand of a verb with subcommands (`bulkhead channel`, `bulkhead tenant`): its name,
// usage and help, and its handler, which gets the words after the subcommand's name.
struct Subcommand {
  const char* name;
  const char* synopsis;  // the words after the verb: "pause CHANNEL [--database URL]"
  const char* summary;   // one line for the verb's --help
  const char* details;   // the rest of `<verb> <name> --help`
  int (*run)(const Subcommand& self, std::span<const std::string_view> args);
};

// A verb made of subcommands: `verb` is "bulkhead channel", `table` its rows, and `note` what
// the overview and every subcommand's help say before kDatabaseNote (may be empty).
struct SubcommandVerb {
  std::string_view verb;
  std::span<const Subcommand> table;
  std::string_view note;

  // "bulkhead channel pause".
  std::string CommandName(const Subcommand& sub) const;
  // `bulkhead channel pause --help`.
  void PrintHelp(const Subcommand& sub) const;
  // Runs the subcommand named by args[0], prints the overview for --help, or a usage error.
  int Dispatch(std::span<const std::string_view> args) const;
};

// ---- Output -------------------------------------------------------------------------------

// A duration an operator reads at a glance: "45s", "3m12s", "2h05m", "3d04h".
std::string Duration(int64_t seconds);

// One table cell: control characters become spaces; an empty text becomes "-".
std::string Cell(std::string text);

// Prints rows (the first is the header) as columns two spaces apart, each as wide as its
// widest cell counted in UTF-8 code points.
void PrintTable(const std::vector<std::vector<std::string>>& table);

// Seconds rounded to the millisecond, for JSON: enough for a script, without float noise.
double Millis(double seconds);

}  // namespace cli
}  // namespace bulkhead
