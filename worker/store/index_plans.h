// PlanFromIndexes: the planner settings of a connection whose statements keep one shape for
// the connection's life (ADR 0016) — the claiming connection's and the completion writer's.
//
// After it, every statement on the connection is planned generically, once (until an ANALYZE or
// a schema change invalidates the plan), and from indexes only: plan_cache_mode =
// force_generic_plan, enable_seqscan = off, enable_bitmapscan = off.
// - Generic: such a statement's plan does not depend on its arguments, and its custom plans
//   cost more to make than to run (the claim 5–10 ms a plan). Under plan_cache_mode = auto,
//   PostgreSQL may also keep choosing a custom plan for every execution: the result write did,
//   once the statistics had seen executing rows (3,195 plans in 3,541 writes of an 8-node drain).
// - Indexes only: a generic plan is made from the statistics of its moment, and kept. Made on a
//   table the statistics call empty (a node's first write, a burst that autovacuum has not yet
//   analyzed), it would read bulkhead.jobs whole at every execution: a seq scan costs nothing
//   on an empty table. Every statement on these connections reaches its rows by an index.
//
// On a session connection the three are the session's, set once in one round trip. On a pooled
// connection (pooled_connection.h) they are made for each transaction, in the round trip that
// makes its other settings, so they cost no round trip there either.
//
// Threads: call it on the thread that owns the connection, before its first statement that
// needs it.
#pragma once

#include <pqxx/pqxx>

namespace bulkhead {

void PlanFromIndexes(pqxx::connection_base& conn);

}  // namespace bulkhead
