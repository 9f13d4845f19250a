#include "retry_policy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace bulkhead {
namespace {

std::vector<std::chrono::milliseconds> CheckedDelays(std::vector<std::chrono::milliseconds> d) {
  if (d.empty()) throw std::invalid_argument("RetryPolicy: the schedule has no delays");
  for (auto delay : d) {
    if (delay.count() <= 0) throw std::invalid_argument("RetryPolicy: a delay is not positive");
  }
  return d;
}

double CheckedJitter(double jitter) {
  // Written so that NaN fails too.
  if (!(jitter >= 0.0 && jitter <= 1.0)) {
    throw std::invalid_argument("RetryPolicy: jitter is outside [0, 1]");
  }
  return jitter;
}

}  // namespace

RetryPolicy::RetryPolicy(std::vector<std::chrono::milliseconds> delays, double jitter)
    : delays_(CheckedDelays(std::move(delays))), jitter_(CheckedJitter(jitter)) {}

std::chrono::milliseconds RetryPolicy::NextDelay(int failed_attempt, double unit_random) const {
  size_t index = static_cast<size_t>(std::max(failed_attempt, 1) - 1);
  double base = static_cast<double>(delays_[std::min(index, delays_.size() - 1)].count());
  // NaN counts as 0; the upper end stays just inside the band, as for a real draw from [0, 1).
  double u = unit_random >= 0.0 ? std::min(unit_random, std::nextafter(1.0, 0.0)) : 0.0;
  double spread = base * (1.0 - jitter_ + 2.0 * jitter_ * u);
  // To the nearest millisecond, and at least 1 ms (jitter 1 at u = 0 would give 0).
  return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(spread)));
}

}  // namespace bulkhead
