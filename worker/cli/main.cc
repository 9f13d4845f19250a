// bulkhead: the delivery worker and its admin CLI. This file only dispatches to the verbs, from
// one table of commands: each row is a command's name, its lines in `bulkhead --help`, and the
// handler that gets the words after the name. The handler owns everything after that: its
// options (cli::Parse, cli_common.h), its own --help, and its subcommands (cli::SubcommandVerb
// for `channel` and `tenant`). A new command is a row here, its handler, and its section in
// docs/cli.md (tests/cli_docs_test.cc fails until the doc lists it).
#include <algorithm>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "breaker_command.h"
#include "channel_command.h"
#include "console_command.h"
#include "exit_codes.h"
#include "grant_command.h"
#include "jobs_command.h"
#include "migrate_command.h"
#include "run_command.h"
#include "status_command.h"
#include "tenant_command.h"
#include "version.h"

namespace {

// One line of `bulkhead --help`: the words after "bulkhead", and what they do.
struct HelpLine {
  std::string_view synopsis;
  std::string_view summary;
};

struct Command {
  std::string_view name;
  std::vector<HelpLine> help;  // a command with subcommands may take several lines
  int (*run)(std::span<const std::string_view> args);
};

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"migrate",
       {{"migrate up | down [N] | status", "apply or reverse the schema migrations"}},
       bulkhead::RunMigrateCommand},
      {"run",
       {{"run --config FILE", "run a worker node until SIGTERM or SIGINT"}},
       bulkhead::RunRunCommand},
      {"status",
       {{"status [--json]", "queues (depth by state, lag, in flight), breakers, nodes"}},
       bulkhead::RunStatusCommand},
      {"console",
       {{"console --listen HOST:PORT --token-file FILE …",
         "serve the operator console (pages and a JSON API)"}},
       bulkhead::RunConsoleCommand},
      {"jobs",
       {{"jobs [--channel ID] [--tenant ID] [--state S] [--limit N]",
         "list jobs, newest first, without their payloads"}},
       bulkhead::RunJobsCommand},
      {"replay",
       {{"replay --id|--channel|--tenant|--since|--until …",
         "put discarded jobs back in the queue, a fresh budget each"}},
       bulkhead::RunReplayCommand},
      {"cancel",
       {{"cancel --id|--channel|--tenant …", "cancel waiting (available or parked) jobs"}},
       bulkhead::RunCancelCommand},
      {"breakers",
       {{"breakers [--json]", "list paused channels and those whose breaker is not closed"}},
       bulkhead::RunBreakersCommand},
      {"breaker",
       {{"breaker reset CHANNEL", "close a channel's breaker and return its parked backlog"}},
       bulkhead::RunBreakerCommand},
      {"channel",
       {{"channel add | show CHANNEL", "add a channel (its secret printed once), show one"},
        {"channel disable | enable CHANNEL",
         "refuse new deliveries (backlog held parked), or accept them"},
        {"channel pause | resume CHANNEL",
         "hold a channel's deliveries parked, or let them go again"},
        {"channel rotate-secret CHANNEL",
         "a new secret (printed once); the old one signs for 24 h more"}},
       bulkhead::RunChannelCommand},
      {"tenant",
       {{"tenant add | show TENANT", "add a tenant, show one"},
        {"tenant set-tier TENANT TIER",
         "move a tenant and its waiting deliveries to another tier"}},
       bulkhead::RunTenantCommand},
      {"grant",
       {{"grant --role NAME --as app|node|console",
         "grant a PostgreSQL role exactly what that part needs"}},
       bulkhead::RunGrantCommand},
  };
  return commands;
}

void PrintUsage() {
  // A synopsis of up to kColumn - 1 characters shares its line with the summary; a longer one
  // has the summary on the next line, in the same column.
  constexpr size_t kColumn = 33;
  std::cout << R"(usage: bulkhead <command> [options]

Bulkhead delivers webhooks enqueued in Postgres, keeping one tenant's dead endpoint from
slowing any other.

commands:
)";
  for (const Command& command : Commands()) {
    for (const HelpLine& line : command.help) {
      std::cout << "  " << line.synopsis;
      // Columns on a terminal: UTF-8 code points ("…" is one).
      const size_t width =
          static_cast<size_t>(std::count_if(line.synopsis.begin(), line.synopsis.end(), [](char c) {
            return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
          }));
      if (width < kColumn) {
        std::cout << std::string(kColumn - width, ' ');
      } else {
        std::cout << "\n" << std::string(kColumn + 2, ' ');
      }
      std::cout << line.summary << "\n";
    }
  }
  std::cout << R"(
options:
  -h, --help      show this help (also after a command)
  --version       print the version
)";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "bulkhead: missing command (try: bulkhead --help)\n";
    return bulkhead::kExitUsage;
  }
  std::string_view name = args.front();
  std::span<const std::string_view> rest(args.begin() + 1, args.end());
  if (name == "-h" || name == "--help") {
    PrintUsage();
    return bulkhead::kExitOk;
  }
  if (name == "--version") {
    std::cout << "bulkhead " << bulkhead::kVersion << "\n";
    return bulkhead::kExitOk;
  }
  for (const Command& command : Commands()) {
    if (name == command.name) return command.run(rest);
  }
  std::cerr << "bulkhead: unknown command '" << name << "' (try: bulkhead --help)\n";
  return bulkhead::kExitUsage;
}
