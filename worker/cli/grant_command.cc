#include "grant_command.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "exit_codes.h"
#include "role_store.h"

namespace bulkhead {
namespace {

constexpr std::string_view kCommand = "bulkhead grant";

constexpr const char* kUsage =
    R"(usage: bulkhead grant --role NAME --as app|node|console [--database URL]

Gives the PostgreSQL role NAME exactly what one part of a deployment needs in schema bulkhead:
it revokes whatever NAME held on the schema's tables, sequences and functions, then grants
the part's privileges, in one transaction. Running it again changes nothing.

  app      call bulkhead.enqueue, bulkhead.enqueue_many and bulkhead.add_channel (which returns
           the new channel's secret); add, read and rename tenants; read channels, but not
           their secrets, and change a channel's URL. Nothing on jobs: no read, no write.
  node     what `bulkhead run` needs: claim and record jobs, open and close breakers, park and
           unpark, register itself and its tiers, and, as the leader, rescue, prune and expire
           old secrets. Reads the secrets it signs with.
  console  read everything but secrets (tenants, channels, jobs, nodes); pause, resume, reset
           a breaker, enable a channel, replay and cancel deliveries.

Run it as the role that ran `bulkhead migrate` (the owner of schema bulkhead), once per role,
and again after every `migrate up` that adds a table or a column. NAME must exist
(CREATE ROLE NAME LOGIN) and must not own the schema. Prints what NAME may do afterwards, one
line per object.

)";

}  // namespace

int RunGrantCommand(std::span<const std::string_view> args) {
  auto parsed =
      cli::Parse(kCommand, args,
                 {.options = {{"--role", "a role name"}, {"--as", "a part"}}, .max_positional = 0},
                 [] { std::cout << kUsage << cli::kDatabaseNote; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<std::string> role = words.Value("--role");
  std::optional<std::string> part = words.Value("--as");
  if (!role || role->empty()) return cli::UsageError(kCommand, "missing --role NAME");
  if (!part) return cli::UsageError(kCommand, "missing --as app|node|console");
  if (std::find(std::begin(RoleStore::kParts), std::end(RoleStore::kParts), *part) ==
      std::end(RoleStore::kParts)) {
    return cli::UsageError(kCommand,
                           "--as must be app, node or console, not '" + cli::OneLine(*part) + "'");
  }
  return cli::WithStore<RoleStore>(kCommand, words, [&](RoleStore& store) {
    store.Grant(*role, *part);
    std::cout << "granted " << cli::OneLine(*role) << " the " << *part << " part; it may now:\n";
    std::vector<std::vector<std::string>> table = {{"OBJECT", "PRIVILEGES"}};
    for (const RolePrivilege& p : store.Privileges(*role))
      table.push_back({p.object, p.privileges});
    cli::PrintTable(table);
    return kExitOk;
  });
}

}  // namespace bulkhead
