// FreeLoopbackPort: a TCP port on 127.0.0.1 that nothing listens on at the moment of the call.
//
// The kernel's pick for port 0: bound, read back, closed. Two uses, one function: a port to hand
// to a server about to start (the throwaway PostgreSQL, a node's status server), and a port that
// refuses connections (a channel whose endpoint is down). Either way another process could take
// the port in between; the kernel hands ephemeral ports out in turn, so that takes a wrap-around
// of the range, and the caller's server then fails to start (and says so) or the "refused"
// endpoint answers.
//
// Safe to call from any thread. Throws std::runtime_error if no socket can be bound.
#pragma once

namespace bulkhead::testing {

int FreeLoopbackPort();

}  // namespace bulkhead::testing
