// ReconnectBackoff: how long a node thread waits before it tries the database again after an
// error. The ceiling starts at 100 ms and doubles with each failure up to 5 s; each wait is
// drawn uniformly between half the ceiling and the ceiling ("equal jitter"). Without the
// jitter, every thread of every node that lost the database in the same failover would retry
// at the same instants — 100, 300, 700 ms … after it — and meet the new primary all at once.
//
// One per thread, owned by it (not thread-safe). The seed is a parameter so that tests can
// check the bounds deterministically.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace bulkhead {

class ReconnectBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{100};
  static constexpr std::chrono::milliseconds kMost{5000};

  explicit ReconnectBackoff(uint32_t seed = std::random_device{}());

  // The wait before the next try, in [ceiling / 2, ceiling]; then doubles the ceiling (up to
  // kMost).
  std::chrono::milliseconds Next();

  // After a success: the next failure starts again at kFirst.
  void Reset() { ceiling_ = kFirst; }

 private:
  std::chrono::milliseconds ceiling_ = kFirst;
  std::minstd_rand rng_;
};

}  // namespace bulkhead
