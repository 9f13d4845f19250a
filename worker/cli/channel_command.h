// `bulkhead channel <subcommand> …`: an operator's verbs on one channel.
//
// Subcommands: add, show, disable, enable, pause, resume, rotate-secret and set, each with
// [--database URL]. Each is one row of a table in channel_command.cc, which
// cli::SubcommandVerb (cli_common.h) dispatches and turns into `bulkhead channel --help`; a new
// subcommand is a new row and its handler.
//
// Prints one line of outcome on stdout; a usage error is one line on stderr and exit 2, a
// database error or an unknown channel one line on stderr and exit 1 (exit_codes.h). Every
// change goes through AdminChannelStore. Runs on the calling thread.
//
// Secrets: `add` and `rotate-secret` print a secret they generated, once, on stdout. Nothing
// else prints one: `show` gives only the number of old secrets and their expiry, a secret
// given with --secret is never quoted back (not even in a usage error), and a database error
// is its first line only (cli::WithStore), since the DETAIL of a check violation quotes the
// failing row, secret included.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "channel". Returns the process exit code.
int RunChannelCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
