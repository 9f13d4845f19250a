// `bulkhead migrate up | down [N] | status [--database URL]`: the command-line face of Migrator.
//
// Prints progress and the status table on stdout, one-line errors on stderr, and returns the
// process exit code (exit_codes.h). Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "migrate".
int RunMigrateCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
