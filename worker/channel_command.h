// `bulkhead channel <subcommand> …`: an operator's verbs on one channel.
//
// Subcommands so far: `pause CHANNEL` and `resume CHANNEL`, each with [--database URL]. Each is
// one row of a table in channel_command.cc, which cli::SubcommandVerb (cli_common.h) dispatches
// and turns into `bulkhead channel --help`; a new subcommand is a new row and its handler.
//
// Prints one line of outcome on stdout; a usage error is one line on stderr and exit 2, a
// database error or an unknown channel one line on stderr and exit 1 (exit_codes.h). Every
// change goes through JobStore. Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "channel". Returns the process exit code.
int RunChannelCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
