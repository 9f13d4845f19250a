// Node: one worker node — a queue runner per served tier, one HttpSender, one
// CompletionWriter, one BreakerKeeper, one WakeupListener — from start to a clean stop.
//
// Run() registers the tiers and the node, starts the parts (a LeaseKeeper heartbeats and
// returns stranded jobs; the runners claim only while the lease is held, lease.h), and waits
// for signals, which the caller must have blocked in every thread (run_command.cc does, before
// any thread starts), so that only Run() receives them, through sigtimedwait:
//   SIGTERM / SIGINT, first: stop claiming, let in-flight requests finish for up to
//     shutdown_grace_ms, hand the rest back as available without spending their attempt,
//     write every result, remove the node's row, return 0.
//   SIGTERM / SIGINT, second: exit at once with 1; jobs still executing come back through
//     lease rescue.
//   SIGHUP: reads the served tiers' files again and applies them (workers, shares, breaker
//     settings, timeouts, retries) without touching in-flight work. A file that does not
//     load is refused with the file, key and reason, and every setting in force is kept.
//     The set of tiers served is fixed at start.
//
// Observability: a StatusServer on `metrics_listen` serves /metrics, /healthz and /readyz
// (status_server.h); a port that cannot be bound is logged (metrics_listen_failed) and the
// node runs on without it — deliveries matter more than the endpoint, and the orchestrator's
// probe failing says so. Repeated events' summaries are flushed from the main loop, once a
// second. BULKHEAD_METRICS_RECORDING=off (a benchmark aid, docs/metrics.md) leaves every hot
// path hook out; the endpoint still serves.
//
// Run() is the composition root and reads in four steps, each in its own file: StartNode
// (node_start.h: schema check, registration, own rescue), NodeParts (node_parts.h: the parts
// wired together), NodeStatusPage (node_status_page.h: the status server), and, after the loop that
// waits for signals, StopNode (node_stop.h: the clean stop).
//
// Ownership: Run() owns every part on the calling (main) thread; NodeParts destroys the
// HttpSender first, since its callbacks reach into the runners and the writer.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "config.h"
#include "node_signals.h"  // BlockStopSignals, for the caller

namespace bulkhead {

class BreakerKeeper;
class QueueRunner;

class Node {
 public:
  // `database` is the resolved connection string (the order of docs/cli.md, "Common rules").
  Node(Config config, std::string database);

  // Returns the process exit code (exit_codes.h).
  int Run();

 private:
  // SIGHUP: re-reads the tier files and hands them to the runners and the keeper.
  void Reload(const std::map<std::string, std::unique_ptr<QueueRunner>>& runners,
              BreakerKeeper& keeper);

  const Config config_;
  const std::string database_;
  const std::string pool_;  // database_pool with the session settings; empty: none
};

}  // namespace bulkhead
