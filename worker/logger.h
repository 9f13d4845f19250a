// Structured logs: one JSON object per line on stderr, {"time", "level", "event", "node", …}.
//
// Events are snake_case names an operator can grep and count ("node_started",
// "claim_failed"); the fields carry the numbers. Never log a secret or a payload.
// Safe to call from any thread: each line is written whole under a mutex.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace bulkhead {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Sets the `node` field of every later line. Call once, before starting threads.
void SetLogNode(std::string node);

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields = {});

// The first line of `text`, for errors from libpq, whose messages span lines.
std::string FirstLine(std::string_view text);

}  // namespace bulkhead
