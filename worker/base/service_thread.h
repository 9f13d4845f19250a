// ServiceThread: the lifecycle of the one thread a service owns — start, wake-up, stop, and the
// wait after a failure — written once for the node's thread-owning classes.
//
// It holds the thread, the condition variable that thread waits on, the stop flag and a
// ReconnectBackoff (100 ms doubling to 5 s, jittered). It does not hold the owner's state: the
// owner keeps its own mutex and passes it in, so one lock guards the owner's state and the stop
// flag alike, and a wait's condition reads both at once (no wake-up is lost between the check
// and the wait). The loop stays the owner's, written with the waits below, because the loops
// differ where it matters: a batch and its flush interval (CompletionWriter), requests taking
// turns with timers (BreakerKeeper), timers alone (LeaseKeeper, Maintenance), two deadlines
// (StopDeadline), the claim rules (QueueRunner).
//
// Who uses which part:
// - CompletionWriter, BreakerKeeper, Maintenance, QueueRunner: all of it.
// - LeaseKeeper: start, wake, stop and the waits. No backoff: a failed heartbeat is retried
//   after a fixed second, so that readiness and the lease come back soon after the database.
// - StopDeadline: start, stop and the waits; nothing it does can fail.
// - WakeupListener: start, stop and the backoff's sleep. Its other wait is libpq's
//   (await_notification, 200 ms at a time, reading stopping() in between).
// - HttpSender: start, stop and wake only. Its thread waits in epoll_wait, so its wake-up is an
//   eventfd (Options::wake), and its loop is libcurl's.
// The quarantine of a poison item is not a thread's concern, and needs the store and the
// metrics: engine/record/poison_quarantine.h, shared by CompletionWriter and BreakerKeeper.
//
// Threads:
// - Start(): once, by the owner, last in its constructor (the thread may use every member).
// - Stop(): any thread; idempotent, and concurrent calls are safe. It returns once the thread
//   has ended (from the service thread itself, at once: it cannot wait for itself). The
//   destructor calls it, and the owner declares the ServiceThread last, so it is destroyed
//   (and joined) before any member its thread uses.
// - Wake(), stopping(): any thread, with or without the owner's mutex held.
// - Wait(), WaitUntil(), SleepFor(), Nap(): the service thread only, holding the owner's mutex
//   in `lock`.
// - Failed(), Succeeded(): the service thread only (the backoff is its own).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "reconnect_backoff.h"

namespace bulkhead {

// The clock a ServiceThread's timed waits go by: steady_clock in the node
// (SteadyWaitClock()); in a test, a clock stepped by hand, so a test of a wait does not sleep.
class WaitClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~WaitClock() = default;
  virtual time_point Now() const = 0;
  // Blocks on `cv`, with `lock` held on its mutex, until notified or until `deadline` has
  // passed on this clock. Returns false once the deadline has passed; true otherwise, which may
  // be spurious.
  virtual bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         time_point deadline) const = 0;
};

// std::chrono::steady_clock, waited on with condition_variable::wait_until.
const WaitClock& SteadyWaitClock();

class ServiceThread {
 public:
  using time_point = WaitClock::time_point;

  struct Options {
    // Wakes the thread instead of the condition variable, for a thread that waits elsewhere
    // (HttpSender: epoll_wait, woken by an eventfd). Called by Wake() and Stop(), never while
    // Stop() holds the owner's mutex.
    std::function<void()> wake;
    const WaitClock* clock = nullptr;      // nullptr: SteadyWaitClock()
    std::optional<uint32_t> backoff_seed;  // unset: one from std::random_device
  };

  // `mu` is the owner's mutex: the stop flag is written under it and every wait holds it.
  explicit ServiceThread(std::mutex& mu);
  ServiceThread(std::mutex& mu, Options options);
  ~ServiceThread();  // Stop()
  ServiceThread(const ServiceThread&) = delete;
  ServiceThread& operator=(const ServiceThread&) = delete;

  // Starts the thread, which runs `body` and ends when it returns; the body's loop ends when
  // stopping() turns true. Once: a second call does nothing, and so does a call after Stop()
  // (the body never runs).
  void Start(std::function<void()> body);

  // Sets the stop flag (under the owner's mutex), wakes the thread and joins it. Idempotent;
  // before Start() it only sets the flag. Not under the owner's mutex (it takes it).
  void Stop();

  // Whether Stop() was called. Under the owner's mutex it is exact; without it, an atomic read
  // (a loop that waits outside the condition variable, such as WakeupListener's, polls it).
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  // Wakes the thread's wait (the condition variable, or Options::wake). The caller changes
  // what the wait's condition reads under the owner's mutex first; it may notify after
  // releasing it.
  void Wake();

  // The waits: each returns when its condition holds, at Stop(), or at its deadline; each
  // returns whether it ended for Stop() or the condition (false: the deadline passed), as
  // std::condition_variable's waits with a predicate do.
  template <typename Ready>
  bool Wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    cv_.wait(lock, [&] { return stopping() || ready(); });
    return true;
  }
  template <typename Ready>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, time_point deadline, Ready ready) {
    while (!(stopping() || ready())) {
      if (!clock_.WaitUntil(cv_, lock, deadline)) return stopping() || ready();
    }
    return true;
  }
  // Until `deadline` or Stop(); whether stopping.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, time_point deadline) {
    return WaitUntil(lock, deadline, [] { return false; });
  }
  // `wait` long, or until Stop(); whether stopping.
  bool SleepFor(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait) {
    return WaitUntil(lock, clock_.Now() + wait);
  }
  // Up to `wait`, returning early at any Wake() or Stop() (or spuriously): a retry that
  // anything the owner is told may cut short (CompletionWriter: a Drain() retries at once).
  void Nap(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait) {
    clock_.WaitUntil(cv_, lock, clock_.Now() + wait);
  }

  // After a failure: how long to wait before the next try (ReconnectBackoff::Next: within
  // [ceiling / 2, ceiling], the ceiling doubling from 100 ms to 5 s).
  std::chrono::milliseconds Failed() { return backoff_.Next(); }
  // After a success: the next failure waits from 100 ms again.
  void Succeeded() { backoff_.Reset(); }

 private:
  // Constant after construction.
  std::mutex& mu_;
  const WaitClock& clock_;
  const std::function<void()> wake_;

  std::condition_variable cv_;  // only the service thread waits on it
  // Written under mu_, read anywhere.
  std::atomic<bool> stop_{false};

  // Only touched by the service thread.
  ReconnectBackoff backoff_;

  // Guarded by join_mu_: Start() and concurrent Stop()s.
  std::mutex join_mu_;
  std::thread thread_;
  // The service thread's id once started, so that a Stop() from it does not join itself.
  std::atomic<std::thread::id> id_{};
};

}  // namespace bulkhead
