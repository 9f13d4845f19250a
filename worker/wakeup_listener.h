// WakeupListener: the node's one LISTEN connection. It turns `NOTIFY bulkhead_jobs, '<queue>'`
// (sent by bulkhead.enqueue at commit) into an immediate claim by that queue's runner.
//
// After every (re)connect it wakes every queue, so a node catches up by claiming, not by
// waiting for the next enqueue: notifications sent while it was disconnected are lost by
// design of LISTEN/NOTIFY. A lost connection is retried with backoff (100 ms doubling to
// 5 s) while the runners' fallback poll keeps work moving.
//
// Threads: its own thread owns the connection; on_wake runs on that thread and must not
// block. connected() from any thread.
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

  WakeupListener(std::string database, OnWake on_wake);
  ~WakeupListener();  // stops within ~200 ms (the longest wait for a notification)
  WakeupListener(const WakeupListener&) = delete;
  WakeupListener& operator=(const WakeupListener&) = delete;

  bool connected() const { return connected_.load(); }

 private:
  void Run();

  // Constant after construction.
  const std::string database_;
  const OnWake on_wake_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> connected_{false};
  std::thread thread_;  // started last
};

}  // namespace bulkhead
