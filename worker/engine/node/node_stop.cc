#include "node_stop.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "exit_codes.h"
#include "logger.h"
#include "node_signals.h"
#include "stop_deadline.h"

namespace bulkhead {
namespace {

// A stop's time after the grace: the hand-back, the completion writer's drain (up to 10 s) and
// removing the node's row. docs/operations.md's TimeoutStopSec is the grace + this and more.
constexpr std::chrono::milliseconds kStopDrain{15000};

}  // namespace

int StopNode(int sig, const NodeOptions& options, NodeParts& parts, NodeStatusPage& status,
             StoreConnection<FleetStore>& store, const Lease& lease) {
  status.StopServing();
  // From here the database may not answer; the deadline bounds the stop all the same.
  const auto heartbeat_every = std::chrono::milliseconds(options.lease_ms / 5);
  LeaseKeeper& lease_keeper = *parts.lease_keeper;
  auto deadline_guard = std::make_unique<StopDeadline>(StopDeadline::Options{
      std::chrono::milliseconds(options.shutdown_grace_ms), kStopDrain,
      [&lease_keeper, &lease] {
        const auto now = std::chrono::steady_clock::now();
        return lease.Held(now) ? lease_keeper.answer_pending_for(now) : StopDeadline::kNoAnswer;
      },
      heartbeat_every});
  lease_keeper.StopSweeping();  // the runners hand back what they hold
  parts.listener.reset();
  for (auto& [name, runner] : parts.runners) runner->StopClaiming();
  Log(LogLevel::kInfo, "draining",
      {{"signal", SignalName(sig)},
       {"in_flight", parts.in_flight()},
       {"grace_ms", options.shutdown_grace_ms},
       {"detail", std::string("got ") + SignalName(sig) + ", stopped claiming, draining " +
                      std::to_string(parts.in_flight()) + " in-flight deliveries"}});
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.shutdown_grace_ms);
  while (parts.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    int again = WaitForSignal(std::chrono::milliseconds(50));
    if (again == SIGTERM || again == SIGINT) {
      Log(LogLevel::kWarn, "exiting_now",
          {{"signal", SignalName(again)},
           {"in_flight", parts.in_flight()},
           {"detail", "second signal: exiting at once; executing jobs return by lease rescue"}});
      std::_Exit(kExitFailure);
    }
  }
  int handed_back = 0;
  nlohmann::json claims = nlohmann::json::object();
  for (auto& [name, runner] : parts.runners) {
    handed_back += runner->HandBackInFlight();
    claims[name] = {{"claims", runner->claims()},
                    {"front_claims", runner->front_claims()},
                    {"jobs", runner->claimed()},
                    {"probes", runner->probes()},
                    {"parked_at_claim", runner->parked_at_claim()}};
  }
  bool written = parts.writer.Drain(std::chrono::seconds(10));
  parts.sender.reset();  // cancels nothing that is still ours: every runner has handed back
  parts.runners.clear();
  lease_keeper.StopHeartbeats();  // or a heartbeat could register the node again
  // Twice: the first try may find the connection the database dropped during the run.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    try {
      store.Get().RemoveNode(options.node);
      break;
    } catch (const std::exception& e) {
      store.Reset();
      if (attempt == 2) {
        Log(LogLevel::kWarn, "deregister_failed", {{"error", FirstLine(e.what())}});
      }
    }
  }
  deadline_guard.reset();  // the stop finished
  parts.lease_keeper.reset();
  FlushRepeatedEvents(std::chrono::steady_clock::now(), true);
  Log(LogLevel::kInfo, "node_stopped",
      {{"handed_back", handed_back},
       {"claims", claims},
       {"results_written", parts.writer.written()},
       {"all_results_written", written},
       {"detail",
        "handed back " + std::to_string(handed_back) + " unfinished deliveries; stopped"}});
  return kExitOk;
}

}  // namespace bulkhead
