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
// Threads: its own thread owns the connection; on_wake and on_breaker run on that thread and
// must not block. connected() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

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

  std::atomic<bool> stop_{false};
  std::atomic<bool> connected_{false};
  std::thread thread_;  // started last
};

}  // namespace bulkhead
