// `bulkhead grant --role NAME --as app|node|console`: gives a PostgreSQL role exactly what one
// part of a deployment needs, and nothing else (RoleStore, migration 0009, ADR 0018), then
// prints what the role may do in schema bulkhead.
//
// Output on stdout; a usage error is one line on stderr and exit 2, a database error (no such
// role, a caller that does not own the schema) one line on stderr and exit 1 (cli_common.h).
// Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "grant". Returns the process exit code.
int RunGrantCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
