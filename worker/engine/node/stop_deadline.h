// StopDeadline: bounds a node's stop, even when the database does not answer.
//
// A stop waits for in-flight deliveries (up to shutdown_grace_ms), then hands back what is
// left, drains the completion writer (up to 10 s) and removes the node's row — and joins
// threads that may be inside a database call. When the database does not answer (a failover
// to an address that drops packets, a stalled proxy), those calls wait for their connection's
// timeouts, and without a deadline SIGTERM would not be honoured for as long: the service
// manager's SIGKILL would come first, or an operator's.
//
// Made at the first stop signal; its thread exits the process with kExitFailure
//   - at the end of the grace, if a database call has by then waited `unanswered_after` for
//     its answer, or no heartbeat has landed for most of a lease (`unanswered()`): the stop
//     cannot finish, so waiting on helps nobody; or
//   - at grace + `drain`, whatever is still unfinished.
// Jobs still executing under the node then come back through lease rescue (at-least-once);
// each exit is logged (stop_deadline_exit) with the reason. Destroying the StopDeadline (the
// stop finished) cancels it.
//
// Threads: its own (a ServiceThread: started by the constructor; the destructor stops and joins
// it); `unanswered` is called from it and must be safe from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

#include "service_thread.h"

namespace bulkhead {

class StopDeadline {
 public:
  struct Options {
    std::chrono::milliseconds grace{10000};
    std::chrono::milliseconds drain{15000};  // after the grace: hand-back, results, deregister
    // How long the database call in progress has waited for its answer (0: none waits), or
    // kNoAnswer when no heartbeat has landed for most of a lease (calls then fail on their
    // timeouts and reconnect, so none need be waiting long at the deadline).
    std::function<std::chrono::milliseconds()> unanswered;
    std::chrono::milliseconds unanswered_after{3000};
  };

  static constexpr std::chrono::milliseconds kNoAnswer = std::chrono::milliseconds::max();

  explicit StopDeadline(Options options);
  ~StopDeadline();
  StopDeadline(const StopDeadline&) = delete;
  StopDeadline& operator=(const StopDeadline&) = delete;

 private:
  void Run();

  // Constant after construction.
  const Options options_;
  const std::chrono::steady_clock::time_point started_;

  std::mutex mu_;  // service_'s: the thread waits under it for a deadline or the stop's end
  ServiceThread service_{mu_};  // started last, joined first
};

}  // namespace bulkhead
