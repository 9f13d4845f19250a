// Structured logs: one JSON object per line on stderr, {"time", "level", "event", "node", …}.
//
// Events are snake_case names an operator can grep and count ("node_started",
// "claim_failed"); the fields carry the numbers. Never log a secret or a payload.
// Safe to call from any thread: each line is written whole under a mutex.
//
// Events that repeat with the traffic (a retry scheduled, a job parked at claim, a probe sent)
// are not logged one line each: a RepeatedEvent counts them (one relaxed atomic add, no lock,
// so it is safe on the delivery path), and FlushRepeatedEvents() — the node's main thread
// calls it every second — writes one line per kind with the count since its last line, at
// most once a minute per kind, and only when the count moved:
//   {"event":"delivery_retries","tier":"default","outcome":"timeout","count":1234,
//    "window_s":60.0,"detail":"…"}
// A RepeatedEvent's last count is flushed when it is destroyed, so a stop loses none.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace bulkhead {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Sets the `node` field of every later line. Call once, before starting threads.
void SetLogNode(std::string node);

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields = {});

// One kind of repeated event: `event` and the fixed `fields` (a tier, an outcome) that name
// it. Registered while it lives; Add() from any thread. Construct and destroy it outside
// FlushRepeatedEvents() (not from a log line's own thread while flushing).
class RepeatedEvent {
 public:
  RepeatedEvent(LogLevel level, std::string event, nlohmann::json fields);
  ~RepeatedEvent();  // writes the count not yet summarized, if any
  RepeatedEvent(const RepeatedEvent&) = delete;
  RepeatedEvent& operator=(const RepeatedEvent&) = delete;

  void Add(uint64_t n = 1) { count_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  friend void FlushRepeatedEvents(std::chrono::steady_clock::time_point now, bool force);
  void Summarize(std::chrono::steady_clock::time_point now, bool force);

  // Constant after construction.
  const LogLevel level_;
  const std::string event_;
  const nlohmann::json fields_;
  std::atomic<uint64_t> count_{0};
  // Guarded by the registry's mutex (logger.cc).
  uint64_t logged_ = 0;
  std::chrono::steady_clock::time_point last_line_;
};

// How often each kind may write a summary line.
inline constexpr std::chrono::seconds kSummaryEvery{60};

// Writes a summary for every registered kind whose count moved and whose last summary (or
// creation) is at least kSummaryEvery before `now`; with `force`, for every kind whose count
// moved. Any thread.
void FlushRepeatedEvents(
    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now(),
    bool force = false);

// The first line of `text`, for errors from libpq, whose messages span lines.
std::string FirstLine(std::string_view text);

}  // namespace bulkhead
