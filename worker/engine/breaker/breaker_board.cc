#include "breaker_board.h"

#include <unordered_set>

namespace bulkhead {

BreakerBoard::BreakerBoard(Settings settings) : settings_(settings) {}

void BreakerBoard::SetSettings(Settings settings) {
  std::lock_guard lock(mu_);
  settings_ = settings;
}

void BreakerBoard::Started(int64_t channel, int64_t job, Clock::time_point now) {
  std::lock_guard lock(mu_);
  channels_[channel].in_flight[job] = now;
}

std::optional<BreakerBoard::Trip> BreakerBoard::Finished(int64_t channel, int64_t job,
                                                         BreakerSignal signal,
                                                         const std::string& detail,
                                                         Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(channel);
  if (it == channels_.end()) {
    if (signal != BreakerSignal::kFailure) return std::nullopt;
    it = channels_.emplace(channel, Channel{}).first;
  }
  Channel& c = it->second;
  c.in_flight.erase(job);
  std::optional<Trip> trip;
  if (!c.open) {
    if (signal == BreakerSignal::kSuccess) {
      c.failures = 0;
      c.last_failure.clear();
    } else if (signal == BreakerSignal::kFailure) {
      ++c.failures;
      c.last_failure = detail;
      int slow = SlowCalls(c, now);
      if (c.failures + slow >= settings_.failure_threshold) trip = TripNow(channel, c, slow);
    }
  }
  Prune(it);
  return trip;
}

std::vector<BreakerBoard::Trip> BreakerBoard::CheckSlow(Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::vector<Trip> trips;
  for (auto& [id, c] : channels_) {
    if (c.open || c.in_flight.empty()) continue;
    int slow = SlowCalls(c, now);
    if (slow > 0 &&
        (c.failures + slow >= settings_.failure_threshold || slow >= settings_.slow_quorum)) {
      trips.push_back(TripNow(id, c, slow));
    }
  }
  return trips;
}

void BreakerBoard::Learn(int64_t channel, bool closed) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(channel);
  if (closed) {
    if (it == channels_.end()) return;
    // Failures before the breaker opened say nothing about the endpoint after its probe.
    it->second.open = false;
    it->second.failures = 0;
    it->second.last_failure.clear();
    Prune(it);
  } else {
    channels_[channel].open = true;
  }
}

void BreakerBoard::Resync(const std::vector<int64_t>& not_closed) {
  std::unordered_set<int64_t> open(not_closed.begin(), not_closed.end());
  std::lock_guard lock(mu_);
  for (auto it = channels_.begin(); it != channels_.end();) {
    Channel& c = it->second;
    if (c.open && !open.contains(it->first)) {
      c.open = false;
      c.failures = 0;
      c.last_failure.clear();
    }
    if (!c.open && c.failures == 0 && c.in_flight.empty()) {
      it = channels_.erase(it);
    } else {
      ++it;
    }
  }
  for (int64_t id : open) channels_[id].open = true;
}

bool BreakerBoard::KnownOpen(int64_t channel) const {
  std::lock_guard lock(mu_);
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.open;
}

size_t BreakerBoard::tracked() const {
  std::lock_guard lock(mu_);
  return channels_.size();
}

void BreakerBoard::Prune(std::unordered_map<int64_t, Channel>::iterator it) {
  const Channel& c = it->second;
  if (!c.open && c.failures == 0 && c.in_flight.empty()) channels_.erase(it);
}

int BreakerBoard::SlowCalls(const Channel& c, Clock::time_point now) const {
  int slow = 0;
  for (const auto& [job, sent] : c.in_flight) {
    if (now - sent >= settings_.slow_call) ++slow;
  }
  return slow;
}

BreakerBoard::Trip BreakerBoard::TripNow(int64_t id, Channel& c, int slow) {
  c.open = true;
  std::string reason;
  if (c.failures > 0) {
    reason = std::to_string(c.failures) + (c.failures == 1 ? " failure" : " failures") +
             " in a row (last: " + c.last_failure + ")";
  }
  if (slow > 0) {
    if (!reason.empty()) reason += " and ";
    reason += std::to_string(slow) + (slow == 1 ? " attempt" : " attempts") +
              " in flight longer than slow_call_ms (" +
              std::to_string(settings_.slow_call.count()) + " ms)";
  }
  c.failures = 0;
  c.last_failure.clear();
  return {id, reason};
}

}  // namespace bulkhead
