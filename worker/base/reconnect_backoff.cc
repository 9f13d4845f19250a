#include "reconnect_backoff.h"

#include <algorithm>

namespace bulkhead {

ReconnectBackoff::ReconnectBackoff(uint32_t seed) : rng_(seed) {}

std::chrono::milliseconds ReconnectBackoff::Next() {
  const int64_t high = ceiling_.count();
  std::uniform_int_distribution<int64_t> pick(high / 2, high);
  std::chrono::milliseconds wait(pick(rng_));
  ceiling_ = std::min(ceiling_ * 2, kMost);
  return wait;
}

}  // namespace bulkhead
