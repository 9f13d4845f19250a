// WakeupListener: the node's one LISTEN connection. It turns `NOTIFY bulkhead_jobs, '<queue>'`
// (sent by bulkhead.enqueue and by unparking, at commit) into an immediate claim by that
// queue's runner, and passes `NOTIFY bulkhead_breakers, '<channel> <state>'` (every breaker
// transition, pause and resume) to the node's breaker boards, so every node learns another
// node's verdict within a round trip.
//
// After every (re)connect it wakes every queue, so a node catches up by claiming, not by
// waiting for the next enqueue: notifications sent while it was disconnected are lost by
// design of LISTEN/NOTIFY. A lost connection is retried with backoff (100 ms doubling to
// 5 s) while the runners' fallback poll keeps work moving.
//
// Threads: its own thread (a ServiceThread: started by the constructor, stopped and joined by
// the destructor) owns the connection; on_wake and on_breaker run on that thread and must not
// block. connected() from any thread. Of ServiceThread it uses the start, the stop and the
// backoff's sleep: its wait for news is libpq's (await_notification, 200 ms at a time, looking
// at stopping() in between), not the condition variable.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "service_thread.h"

namespace bulkhead {

class WakeupListener {
 public:
  // `queue` is the notified queue, or empty for "every queue" (after a reconnect).
  using OnWake = std::function<void(const std::string& queue)>;
  // The payload of a bulkhead_breakers notification.
  using OnBreaker = std::function<void(const std::string& payload)>;

  WakeupListener(std::string database, OnWake on_wake, OnBreaker on_breaker);
  ~WakeupListener();  // stops within ~200 ms (the longest wait for a notification)
  WakeupListener(const WakeupListener&) = delete;
  WakeupListener& operator=(const WakeupListener&) = delete;

  bool connected() const { return connected_.load(); }

 private:
  void Run();

  // Constant after construction.
  const std::string database_;
  const OnWake on_wake_;
  const OnBreaker on_breaker_;

  std::atomic<bool> connected_{false};

  std::mutex mu_;               // service_'s: held only for the sleep after a failure
  ServiceThread service_{mu_};  // started last, joined first
};

}  // namespace bulkhead
