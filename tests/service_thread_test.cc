// ServiceThread: the thread starts once and stops once (before its start, twice, from two
// threads), a wake-up ends a wait whose condition holds, a timed wait ends when a clock stepped
// by hand passes its deadline and not before, and the backoff doubles while failures last and
// starts over after a success. The timed waits go by ManualClock, so no test sleeps through
// them; only "has the thread got there yet" is polled in real time.
#include "service_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace bulkhead {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// A WaitClock that moves only when Advance() is called. A waiter re-reads it every real
// millisecond, so a step is seen within one.
class ManualClock : public WaitClock {
 public:
  time_point Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 time_point deadline) const override {
    {
      std::lock_guard own(mu_);
      deadline_ = deadline;
      if (now_ >= deadline) return false;
    }
    cv.wait_for(lock, 1ms);
    return true;
  }
  void Advance(milliseconds step) {
    std::lock_guard lock(mu_);
    now_ += step;
  }
  // The deadline of the latest wait.
  time_point deadline() const {
    std::lock_guard lock(mu_);
    return deadline_;
  }

 private:
  mutable std::mutex mu_;
  time_point now_{std::chrono::hours(1)};
  mutable time_point deadline_{};
};

// Polls `done` (under `mu`) for up to 5 real seconds.
template <typename Done>
bool Eventually(std::mutex& mu, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < give_up) {
    {
      std::lock_guard lock(mu);
      if (done()) return true;
    }
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// What a test's service reads and writes, guarded by mu.
struct Owner {
  std::mutex mu;
  ManualClock clock;
  bool ready = false;
  int passes = 0;
  bool ended = false;
  bool result = false;

  ServiceThread::Options Options(uint32_t seed = 1) {
    ServiceThread::Options options;
    options.clock = &clock;
    options.backoff_seed = seed;
    return options;
  }
};

TEST(ServiceThread, StartRunsTheBodyOnItsOwnThreadAndStopJoinsIt) {
  Owner o;
  std::thread::id body_thread;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    body_thread = std::this_thread::get_id();
    while (!service.stopping()) {
      ++o.passes;
      service.Wait(lock, [&] { return o.ready; });
      o.ready = false;
    }
    o.ended = true;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  service.Stop();
  EXPECT_TRUE(o.ended);  // joined: the body has returned
  EXPECT_NE(body_thread, std::this_thread::get_id());
  EXPECT_TRUE(service.stopping());
}

TEST(ServiceThread, AWakeUpEndsAWaitWhoseConditionHoldsWithoutTheClockMoving) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    ++o.passes;
    o.result =
        service.WaitUntil(lock, o.clock.Now() + std::chrono::hours(1), [&] { return o.ready; });
    o.ended = true;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  {
    std::lock_guard lock(o.mu);
    o.ready = true;
  }
  service.Wake();
  EXPECT_TRUE(Eventually(o.mu, [&] { return o.ended; }));
  std::lock_guard lock(o.mu);
  EXPECT_TRUE(o.result);  // ended for its condition, not its deadline
}

TEST(ServiceThread, ATimedWaitEndsWhenTheClockPassesItsDeadlineAndNotBefore) {
  Owner o;
  const auto start = o.clock.Now();
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    o.result = service.WaitUntil(lock, start + 5s, [&] { return o.ready; });
    o.ended = true;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.clock.deadline() == start + 5s; }));
  o.clock.Advance(4999ms);
  std::this_thread::sleep_for(20ms);  // twenty re-reads of the clock
  {
    std::lock_guard lock(o.mu);
    EXPECT_FALSE(o.ended);
  }
  o.clock.Advance(1ms);
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.ended; }));
  std::lock_guard lock(o.mu);
  EXPECT_FALSE(o.result);  // the deadline, not the condition
}

TEST(ServiceThread, StopEndsAWaitAtOnceWhateverItsDeadline) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    ++o.passes;
    o.result = service.SleepFor(lock, milliseconds(std::chrono::hours(24)));
    o.ended = true;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  service.Stop();  // the clock never moves: only the stop can end the wait
  EXPECT_TRUE(o.ended);
  EXPECT_TRUE(o.result);  // whether stopping
}

TEST(ServiceThread, StopBeforeStartMeansTheBodyNeverRuns) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Stop();
  service.Start([&] {
    std::lock_guard lock(o.mu);
    ++o.passes;
  });
  service.Stop();
  EXPECT_EQ(o.passes, 0);
}

TEST(ServiceThread, StopTwiceOrFromTwoThreadsAtOnceJoinsOnce) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    ++o.passes;
    service.Wait(lock, [] { return false; });
    o.ended = true;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  std::thread other([&] { service.Stop(); });
  service.Stop();
  EXPECT_TRUE(o.ended);  // this Stop() returned after the join, whichever thread made it
  other.join();
  service.Stop();
  EXPECT_EQ(o.passes, 1);
}

TEST(ServiceThread, StartTwiceStartsOneThread) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  auto body = [&] {
    std::unique_lock lock(o.mu);
    ++o.passes;
    service.Wait(lock, [] { return false; });
  };
  service.Start(body);
  service.Start(body);
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  service.Stop();
  EXPECT_EQ(o.passes, 1);
}

TEST(ServiceThread, TheDestructorStopsAndJoinsTheThread) {
  Owner o;
  {
    ServiceThread service(o.mu, o.Options());
    service.Start([&] {
      std::unique_lock lock(o.mu);
      ++o.passes;
      service.Wait(lock, [] { return false; });
      o.ended = true;
    });
    ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  }
  EXPECT_TRUE(o.ended);
}

TEST(ServiceThread, AStopFromTheServiceThreadItselfEndsItsLoopWithoutWaitingForItself) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    service.Stop();  // would deadlock if it joined
    std::lock_guard lock(o.mu);
    o.ended = service.stopping();
  });
  EXPECT_TRUE(Eventually(o.mu, [&] { return o.ended; }));
  service.Stop();  // the owner's: joins
}

TEST(ServiceThread, ANapEndsAtAWakeUpWhatTheWakeUpChanged) {
  Owner o;
  ServiceThread service(o.mu, o.Options());
  service.Start([&] {
    std::unique_lock lock(o.mu);
    ++o.passes;
    // A nap ends at any wake-up, so a caller that needs a condition loops on it.
    while (!o.ready && !service.stopping()) service.Nap(lock, milliseconds(std::chrono::hours(1)));
    o.ended = o.ready;
  });
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 1; }));
  {
    std::lock_guard lock(o.mu);
    o.ready = true;
  }
  service.Wake();
  EXPECT_TRUE(Eventually(o.mu, [&] { return o.ended; }));
}

TEST(ServiceThread, AWakeHookReplacesTheConditionVariable) {
  Owner o;
  std::atomic<int> hooked{0};
  ServiceThread::Options options = o.Options();
  options.wake = [&] { ++hooked; };
  ServiceThread service(o.mu, options);
  service.Stop();  // before Start: nothing to wake
  EXPECT_EQ(hooked.load(), 0);

  Owner p;
  ServiceThread::Options polled = p.Options();
  polled.wake = [&] { ++hooked; };
  ServiceThread loop(p.mu, polled);
  loop.Start([&] {
    // A loop that waits elsewhere (HttpSender's epoll_wait) and reads stopping() each turn.
    while (!loop.stopping()) std::this_thread::sleep_for(1ms);
  });
  loop.Wake();
  EXPECT_EQ(hooked.load(), 1);
  loop.Stop();
  EXPECT_EQ(hooked.load(), 2);  // the stop woke it too
}

// The service's retry loop as the owners write it: try, and after a failure wait Failed()
// before the next try (or stop); after a success, Succeeded().
TEST(ServiceThread, TheBackoffDoublesWhileFailuresLastAndStartsOverAfterASuccess) {
  Owner o;
  std::vector<milliseconds> waits;  // guarded by o.mu
  // Tries 1-5 fail, 6 succeeds, 7 fails, 8 on succeed.
  auto fails = [](int attempt) { return attempt <= 5 || attempt == 7; };
  ServiceThread service(o.mu, o.Options(42));
  service.Start([&] {
    std::unique_lock lock(o.mu);
    while (!service.stopping()) {
      ++o.passes;
      if (!fails(o.passes)) {
        service.Succeeded();
        if (o.passes >= 8) {
          service.Wait(lock, [] { return false; });
          continue;
        }
        continue;
      }
      milliseconds wait = service.Failed();
      waits.push_back(wait);
      service.SleepFor(lock, wait);
    }
  });
  // Each retry waits for its backoff on the clock, and comes once the clock has moved that far.
  for (int failure = 0; failure < 5; ++failure) {
    ASSERT_TRUE(Eventually(o.mu, [&] { return waits.size() == size_t(failure) + 1; }));
    milliseconds wait;
    {
      std::lock_guard lock(o.mu);
      wait = waits.back();
      EXPECT_EQ(o.passes, failure + 1);
    }
    const int64_t ceiling = int64_t{100} << failure;  // 100, 200, 400, 800, 1600 ms
    EXPECT_GE(wait.count(), ceiling / 2) << "failure " << failure;
    EXPECT_LE(wait.count(), ceiling) << "failure " << failure;
    ASSERT_TRUE(Eventually(o.mu, [&] { return o.clock.deadline() == o.clock.Now() + wait; }));
    o.clock.Advance(wait - 1ms);
    std::this_thread::sleep_for(10ms);
    {
      std::lock_guard lock(o.mu);
      EXPECT_EQ(o.passes, failure + 1) << "retried before its backoff";
    }
    o.clock.Advance(1ms);
  }
  // Try 6 succeeds, try 7 fails: its wait starts over at 100 ms.
  ASSERT_TRUE(Eventually(o.mu, [&] { return waits.size() == 6; }));
  {
    std::lock_guard lock(o.mu);
    EXPECT_EQ(o.passes, 7);
    EXPECT_GE(waits.back().count(), 50);
    EXPECT_LE(waits.back().count(), 100);
  }
  o.clock.Advance(waits.back());
  ASSERT_TRUE(Eventually(o.mu, [&] { return o.passes == 8; }));
  service.Stop();
}

}  // namespace
}  // namespace bulkhead
