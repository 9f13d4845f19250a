// `bulkhead jobs`, `bulkhead replay` and `bulkhead cancel`: the operator's view of single jobs
// and the two bulk changes made to them by hand.
//
// - jobs: the newest jobs, filtered by channel, tenant and state, bounded
// (AdminJobsStore::ListJobs);
//   never the payload (only its size), never a secret.
// - replay: discarded jobs back to the queue with a fresh attempt budget (AdminJobsStore::Replay),
//   selected by id, channel, tenant and discard time; refused without a selector; bounded.
// - cancel: waiting jobs (available or parked) to cancelled (AdminJobsStore::Cancel); a job in
//   flight is refused, not interrupted.
//
// Output on stdout; a usage error is one line on stderr and exit 2; a database error, or a job
// by --id that cannot be replayed or cancelled, one line on stderr and exit 1 (cli_common.h).
// Runs on the calling thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "jobs", "replay" or "cancel". Each returns the exit code.
int RunJobsCommand(std::span<const std::string_view> args);
int RunReplayCommand(std::span<const std::string_view> args);
int RunCancelCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
