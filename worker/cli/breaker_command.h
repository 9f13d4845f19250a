// `bulkhead breakers [--json]` and `bulkhead breaker reset CHANNEL`: the operator's view of the
// fleet's circuit breakers and the hand that closes one.
//
// `breakers` lists every channel whose breaker is not closed or that is paused (AdminChannelStore::
// ListBreakers), as an aligned table or, with --json, a JSON array with stable keys.
// `breaker reset` closes one channel's breaker from any state and returns its parked backlog
// to the queue (AdminChannelStore::ResetBreaker).
//
// Output on stdout; a usage error is one line on stderr and exit 2, a database error or an
// unknown channel one line on stderr and exit 1 (exit_codes.h). Runs on the calling thread.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "admin_channel_store.h"

namespace bulkhead {

// `args` are the words after "breakers". Returns the process exit code.
int RunBreakersCommand(std::span<const std::string_view> args);

// `args` are the words after "breaker" (so far only `reset CHANNEL`). Returns the exit code.
int RunBreakerCommand(std::span<const std::string_view> args);

// The breakers table and JSON array of `bulkhead breakers`, also part of `bulkhead status`.
void PrintBreakerTable(const std::vector<BreakerRow>& rows);
nlohmann::ordered_json BreakersJson(const std::vector<BreakerRow>& rows);

}  // namespace bulkhead
