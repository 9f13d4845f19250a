// `bulkhead status [--json]`: the operator's one look at the fleet: per queue (tier) its
// waiting jobs by state, its lag, its jobs in flight, its deliveries held behind an ordering key
// and its channels with a rate limit; the breakers that are not closed (and
// paused channels); the nodes with their heartbeat and lease.
//
// Reads only partial indexes of unfinished jobs (AdminJobsStore::QueueStatuses, NodeStatuses,
// AdminChannelStore::ListBreakers; channels besides), so it stays cheap however many finished
// jobs the table keeps.
//
// Output on stdout; a usage error is one line on stderr and exit 2, a database error one line
// on stderr and exit 1 (cli_common.h). Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "status". Returns the process exit code.
int RunStatusCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
