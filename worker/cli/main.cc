// bulkhead: the delivery worker and its admin CLI. This file only dispatches to the verbs.
#include <iostream>
#include <span>
#include <string_view>
#include <vector>

#include "breaker_command.h"
#include "channel_command.h"
#include "exit_codes.h"
#include "jobs_command.h"
#include "migrate_command.h"
#include "run_command.h"
#include "status_command.h"
#include "tenant_command.h"
#include "version.h"

namespace {

constexpr const char* kUsage = R"(usage: bulkhead <command> [options]

Bulkhead delivers webhooks enqueued in Postgres, keeping one tenant's dead endpoint from
slowing any other.

commands:
  migrate up | down [N] | status   apply or reverse the schema migrations
  run --config FILE                run a worker node until SIGTERM or SIGINT
  status [--json]                  queues (depth by state, lag, in flight), breakers, nodes
  jobs [--channel ID] [--tenant ID] [--state S] [--limit N]
                                   list jobs, newest first, without their payloads
  replay --id|--channel|--tenant|--since|--until …
                                   put discarded jobs back in the queue, a fresh budget each
  cancel --id|--channel|--tenant … cancel waiting (available or parked) jobs
  breakers [--json]                list paused channels and those whose breaker is not closed
  breaker reset CHANNEL            close a channel's breaker and return its parked backlog
  channel add | show CHANNEL       add a channel (its secret printed once), show one
  channel disable | enable CHANNEL refuse new deliveries (backlog held parked), or accept them
  channel pause | resume CHANNEL   hold a channel's deliveries parked, or let them go again
  channel rotate-secret CHANNEL    a new secret (printed once); the old one signs for 24 h more
  tenant add | show TENANT         add a tenant, show one
  tenant set-tier TENANT TIER      move a tenant and its waiting deliveries to another tier

options:
  -h, --help      show this help (also after a command)
  --version       print the version
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "bulkhead: missing command (try: bulkhead --help)\n";
    return bulkhead::kExitUsage;
  }
  std::string_view command = args.front();
  std::span<const std::string_view> rest(args.begin() + 1, args.end());
  if (command == "-h" || command == "--help") {
    std::cout << kUsage;
    return bulkhead::kExitOk;
  }
  if (command == "--version") {
    std::cout << "bulkhead " << bulkhead::kVersion << "\n";
    return bulkhead::kExitOk;
  }
  if (command == "migrate") return bulkhead::RunMigrateCommand(rest);
  if (command == "run") return bulkhead::RunRunCommand(rest);
  if (command == "status") return bulkhead::RunStatusCommand(rest);
  if (command == "jobs") return bulkhead::RunJobsCommand(rest);
  if (command == "replay") return bulkhead::RunReplayCommand(rest);
  if (command == "cancel") return bulkhead::RunCancelCommand(rest);
  if (command == "breakers") return bulkhead::RunBreakersCommand(rest);
  if (command == "breaker") return bulkhead::RunBreakerCommand(rest);
  if (command == "channel") return bulkhead::RunChannelCommand(rest);
  if (command == "tenant") return bulkhead::RunTenantCommand(rest);
  std::cerr << "bulkhead: unknown command '" << command << "' (try: bulkhead --help)\n";
  return bulkhead::kExitUsage;
}
