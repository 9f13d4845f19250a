#include "sleep_horizon.h"

#include <algorithm>

namespace bulkhead {

namespace {

bool Listed(const RunningXids& snapshot, int64_t xid) {
  return std::binary_search(snapshot.running.begin(), snapshot.running.end(), xid);
}

}  // namespace

void SleepHorizon::Start(const SleepStart& start, Clock::time_point now) {
  listed_.clear();
  for (int64_t xid : start.now.running) {
    if (xid < start.next_xid) listed_.push_back(xid);
  }
  std::sort(listed_.begin(), listed_.end());
  unlisted_from_ = start.now.xmax;
  unlisted_to_ = std::max(start.now.xmax, start.next_xid);
  interval_ = kFirstInterval;
  next_look_ = now + interval_;
}

bool SleepHorizon::Look(const RunningXids& now_running, Clock::time_point now) {
  // Listed before: still running while the new snapshot lists it (its xmax is never lower).
  const auto gone = std::remove_if(listed_.begin(), listed_.end(),
                                   [&](int64_t xid) { return !Listed(now_running, xid); });
  bool ended = gone != listed_.end();
  listed_.erase(gone, listed_.end());
  // Unlisted before: those the new xmax has passed are listed now, or have ended.
  const int64_t passed = std::min(unlisted_to_, std::max(unlisted_from_, now_running.xmax));
  if (passed > unlisted_from_) {
    const auto first =
        std::lower_bound(now_running.running.begin(), now_running.running.end(), unlisted_from_);
    const auto last = std::lower_bound(first, now_running.running.end(), passed);
    ended = ended || last - first < passed - unlisted_from_;
    // Every listed id is below unlisted_from_ and these are not: appended, listed_ stays
    // ascending.
    listed_.insert(listed_.end(), first, last);
    unlisted_from_ = passed;
  }
  interval_ = std::min(interval_ * 2, std::chrono::milliseconds(kLongestInterval));
  next_look_ = now + interval_;
  return ended;
}

void SleepHorizon::Stop() {
  listed_.clear();
  unlisted_from_ = unlisted_to_ = 0;
  next_look_ = Clock::time_point::max();
}

}  // namespace bulkhead
