// `bulkhead tenant <subcommand> …`: an operator's verbs on one tenant.
//
// Subcommands so far: `set-tier TENANT TIER [--database URL]`. Each is one row of a table in
// tenant_command.cc, which also generates `bulkhead tenant --help`; a new subcommand (`add`,
// `show`) is a new row and its handler.
//
// TENANT is a tenant's name, or its id (bulkhead.tenants.id) when no tenant has that name.
//
// Prints one line of outcome on stdout; a usage error is one line on stderr and exit 2, a
// database error, an unknown tenant or an unknown tier one line on stderr and exit 1
// (exit_codes.h). Every change goes through AdminChannelStore. Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "tenant". Returns the process exit code.
int RunTenantCommand(std::span<const std::string_view> args);

// TIER as an operator types it: a tier's name as bulkhead.tiers allows it,
// ^[a-z][a-z0-9_]{0,62}$ ("bulk", "eu_west_2"; not "Bulk", "2x" or "").
bool IsTierName(std::string_view word);

}  // namespace bulkhead
