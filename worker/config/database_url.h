// Which database a command talks to.
//
// Design §2: `--database URL`, else the config file's `database`, else DATABASE_URL, else the
// empty string, with which libpq reads its PG* variables (PGHOST, PGPORT, PGDATABASE, …).
// Reads the environment; safe to call from any thread that does not change it.
#pragma once

#include <optional>
#include <string>

namespace bulkhead {

std::string ResolveDatabase(const std::optional<std::string>& from_flag,
                            const std::optional<std::string>& from_config);

}  // namespace bulkhead
