// The signals a node stops and reloads on (SIGTERM, SIGINT, SIGHUP), received by the main thread
// alone through sigtimedwait: every thread has them blocked, so none is delivered elsewhere.
//
// BlockStopSignals() must run on the main thread before any other thread exists (run_command.cc
// calls it before it constructs the Node); the threads started afterwards inherit the mask.
// WaitForSignal() is called only by the main thread (Node::Run and StopNode).
#pragma once

#include <chrono>

namespace bulkhead {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in every thread it starts
// afterwards. Call on the main thread before any other thread exists, then construct the Node.
void BlockStopSignals();

// Waits up to `timeout` for one of the blocked signals; 0 when none came.
int WaitForSignal(std::chrono::milliseconds timeout);

// "SIGTERM", "SIGINT", "SIGHUP", or "signal" for any other.
const char* SignalName(int sig);

}  // namespace bulkhead
