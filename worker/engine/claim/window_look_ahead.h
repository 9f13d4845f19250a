// WindowLookAhead: how far past its limit the next claim's windows read (Claim's $14, ADR 0014).
//
// Each window of the claim reads jobs_claim in time order, leaves out the rows of channels and
// tenants at their caps, and locks the rest until it has the limit; it gives up after limit +
// look-ahead rows. When the front of the queue is one capped tenant's backlog (a lone tenant
// borrowing idle slots, a burst beside a 50/s tenant), every claim read the long look-ahead's
// 1,000 rows of it only to leave them all out, and then found everything it took through the
// skip scan: a sixth of such a claim's time (load/claim_bench.sh). After a claim like that the
// next one looks only 10 rows ahead.
//
// The long look-ahead is for many channels due behind a held-back front: in order, the windows
// find them at a row each, where the skip scan pays a descent each. A short claim whose skip
// scan visited more than kFewHeads heads, or whose windows kept anything, sends the next claim
// back to the long look-ahead, so that case pays for at most one short claim at a time. A claim
// that took nothing reports nothing and changes nothing.
//
// Not thread-safe: the queue runner's thread alone owns it.
#pragma once

#include "store_types.h"

namespace bulkhead {

class WindowLookAhead {
 public:
  // More heads than this in one claim's skip scan: the front hides many channels; look long.
  static constexpr int kFewHeads = 64;

  // The look-ahead for the next claim.
  int next() const { return short_ ? ClaimLimits::kShortLookAhead : ClaimLimits::kLongLookAhead; }

  // What the last claim's windows and skip scan saw.
  void Saw(const ClaimWindows& windows) {
    if (!windows.reported) return;
    short_ = windows.kept == 0 && windows.heads <= kFewHeads;
  }

 private:
  bool short_ = false;
};

}  // namespace bulkhead
