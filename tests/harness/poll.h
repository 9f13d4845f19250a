// PollUntil: waits for a condition that nobody signals (a row in PostgreSQL, a line in a node's
// log, a route's counter on the mock) by checking it again and again until a deadline.
//
// The one poll-with-a-deadline of the harness: DatabaseTest::WaitFor, NodeProcess::WaitForLog
// and the benches' waits are built on it. Checks at once, then every `interval`: a 10 ms
// interval sees a change at most 10 ms late and costs a SQL condition about 100 queries a
// second, which the throwaway cluster does not notice. Prefer a real signal where there is one
// (HttpReceiver::WaitForRequests waits on a condition variable).
//
// Blocks the calling thread; `done` runs on it, and may throw (the exception passes through).
#pragma once

#include <chrono>
#include <functional>

namespace bulkhead::testing {

constexpr std::chrono::milliseconds kPollInterval{10};

// True as soon as `done()` returns true; false if `timeout` passed first (`done` is checked
// one last time at the deadline).
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval = kPollInterval);

}  // namespace bulkhead::testing
