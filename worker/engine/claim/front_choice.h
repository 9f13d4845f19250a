// FrontChoice: whether the runner's next claim runs the claim's front alone (ClaimFront, ADR
// 0031) or the whole claim (Claim), from what the last claim took; and whether a front fell
// short, so that the runner claims again at once with the whole claim.
//
// The front takes what the whole claim's first window would take, at a third less a call. It
// is enough when it took at least half its limit and at least the lending budget: the whole
// claim lends only what its picks leave of that budget, which a front cannot, so below it the
// whole claim runs at once as before. Above it, the runner claims what the front left at the
// claim-again rule's other occasions (QueueRunner::Run): at once when jobs ended during the
// claim or a channel it took is still below its caps, else at the end of a job of a channel
// or tenant at its cap, an enqueue's wake-up or the poll. Claiming again at once after every
// short front instead (a front again when it took enough) was measured and cost more.
// Requiring the whole limit made nearly every other claim a whole one at 8 nodes of 25 workers,
// where the caps trim a row or two off most fronts (ADR 0031, "Enough, not all").
//
// After a whole claim, the front next if that claim's windows alone kept enough, or it took its
// whole limit without the skip scan. The first claim is whole, and so is the one after any claim
// that took nothing.
//
// Not thread-safe: the queue runner's thread alone owns it.
#pragma once

#include <algorithm>

#include "store_types.h"

namespace bulkhead {

class FrontChoice {
 public:
  // Whether the next claim runs the front alone.
  bool next() const { return front_; }

  // What the last claim took: whether it was a front, its limit (the free slots), the rows it
  // took (parked ones included), the lending budget the runner had for it (ClaimLimits::lend
  // before a wake-up's claim set it to 0) and what its windows saw. True when it was a front
  // that fell short of enough: the runner then claims again at once, with the whole claim.
  bool Saw(bool was_front, int limit, int taken, int lend_budget, const ClaimWindows& windows) {
    const int enough = std::max((limit + 1) / 2, lend_budget);
    if (was_front) {
      front_ = taken >= enough;
      return !front_;
    }
    front_ = (taken == limit && windows.heads == 0) || windows.kept >= enough;
    return false;
  }

 private:
  bool front_ = false;
};

}  // namespace bulkhead
