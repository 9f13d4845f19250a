#include "service_thread.h"

#include <random>

namespace bulkhead {
namespace {

class SteadyClock final : public WaitClock {
 public:
  time_point Now() const override { return std::chrono::steady_clock::now(); }
  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 time_point deadline) const override {
    return cv.wait_until(lock, deadline) == std::cv_status::no_timeout;
  }
};

}  // namespace

const WaitClock& SteadyWaitClock() {
  static const SteadyClock clock;
  return clock;
}

ServiceThread::ServiceThread(std::mutex& mu) : ServiceThread(mu, Options()) {}

ServiceThread::ServiceThread(std::mutex& mu, Options options)
    : mu_(mu),
      clock_(options.clock ? *options.clock : SteadyWaitClock()),
      wake_(std::move(options.wake)),
      backoff_(options.backoff_seed ? *options.backoff_seed : std::random_device{}()) {}

ServiceThread::~ServiceThread() { Stop(); }

void ServiceThread::Start(std::function<void()> body) {
  std::lock_guard join(join_mu_);
  if (thread_.joinable() || stopping()) return;
  thread_ = std::thread(std::move(body));
  id_ = thread_.get_id();
}

void ServiceThread::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  // From the service thread itself: its body ends at its next look at stopping(), and the
  // owner's Stop() or destructor joins it.
  // Checked before join_mu_, which another thread's Stop() may hold while it joins this one,
  // and again under it, for a body that stops before Start() has recorded its id.
  if (id_.load() == std::this_thread::get_id()) return;
  std::lock_guard join(join_mu_);
  if (!thread_.joinable()) return;  // never started, or joined by an earlier Stop()
  if (thread_.get_id() == std::this_thread::get_id()) return;
  Wake();
  thread_.join();
}

void ServiceThread::Wake() {
  if (wake_) {
    wake_();
  } else {
    cv_.notify_one();
  }
}

}  // namespace bulkhead
