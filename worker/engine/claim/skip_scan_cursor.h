// SkipScanCursor: where the next claim's skip scan starts (Claim's $15, $16; issue 34).
//
// The claim's skip scan finds the first available job of each (channel, priority) — a head —
// with one index descent each, for the channels its windows could not reach. It visits at most
// ClaimLimits::HeadsFor(limit) heads, so that a claim costs what its size costs and not one
// descent per channel with work: beside a capped burst, 60,000 tenants of one delivery each made
// every claim walk 60,000 heads. Bounded, it must not always walk the same first ones, or the
// channels past the bound would wait for ever; so each claim starts after the head the last
// one stopped at, and wraps around to the lowest. Every head is visited within
// ceil(heads / bound) claims. A claim whose skip scan did not run leaves the cursor where it
// was; one that took nothing still moves it, so that a bound full of capped channels cannot
// hold it in place.
//
// With fewer heads than the bound, a claim visits them all, and what the spread takes from
// them does not depend on where the scan started.
//
// Not thread-safe: the queue runner's thread alone owns it.
#pragma once

#include <cstdint>

#include "store_types.h"

namespace bulkhead {

class SkipScanCursor {
 public:
  // Where the next claim's skip scan starts: after this head.
  void Apply(ClaimLimits& limits) const {
    limits.heads_after_channel = channel_;
    limits.heads_after_priority = priority_;
  }

  // Where the last claim's skip scan stopped.
  void Saw(const ClaimWindows& windows) {
    if (!windows.stopped) return;
    channel_ = windows.last_channel;
    priority_ = windows.last_priority;
  }

 private:
  int64_t channel_ = 0;
  int priority_ = 0;
};

}  // namespace bulkhead
