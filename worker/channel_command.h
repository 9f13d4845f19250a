// `bulkhead channel <subcommand> …`: an operator's verbs on one channel.
//
// Subcommands so far: `pause CHANNEL` and `resume CHANNEL`, each with [--database URL]. Each is
// one row of a table in channel_command.cc, which also generates `bulkhead channel --help`; a
// new subcommand is a new row and its handler.
//
// Prints one line of outcome on stdout; a usage error is one line on stderr and exit 2, a
// database error or an unknown channel one line on stderr and exit 1 (exit_codes.h). Every
// change goes through JobStore. Runs on the calling thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "channel". Returns the process exit code.
int RunChannelCommand(std::span<const std::string_view> args);

// CHANNEL as an operator types it: a positive decimal integer that fits an int64 ("7"; not
// "07x", "+7", "0" or "-3"). nullopt when it is not one.
std::optional<int64_t> ParseChannelId(std::string_view word);

}  // namespace bulkhead
