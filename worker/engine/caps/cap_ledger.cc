#include "cap_ledger.h"

#include <algorithm>
#include <cmath>

namespace bulkhead {
namespace {

// How long a failing channel with nothing in flight stays in the ledger (and capped at 1).
constexpr auto kRememberFailing = std::chrono::seconds(60);
// How long a channel with nothing in flight keeps the window it grew (then: the first again).
// Between two bursts, or between two claims of one, a fast channel's count falls to 0; without
// the memory it would start from the first window every time.
constexpr auto kRememberWindow = std::chrono::seconds(10);

int CapOf(int workers, double share) {
  if (share >= 1.0) return workers;
  int cap = static_cast<int>(std::floor(share * workers));
  return std::clamp(cap, 1, std::max(1, workers - 1));
}

}  // namespace

CapLedger::Caps CapLedger::For(int workers, double channel_share, double tenant_share,
                               double reserve_share) {
  const int channel = CapOf(workers, channel_share);
  const int tenant = CapOf(workers, tenant_share);
  // Lending needs slow start's record of which channels answer (channel_share below 1).
  const bool capped = channel_share < 1.0;
  const int reserve =
      capped ? std::clamp(static_cast<int>(std::ceil(reserve_share * workers)), 1, workers) : 0;
  return {channel, tenant, channel_share < 1.0 ? std::min(kFirstWindow, channel) : 0, workers,
          reserve};
}

int CapLedger::WindowMax() const {
  return caps_.reserve > 0 ? std::max(caps_.channel, caps_.workers - caps_.reserve) : caps_.channel;
}

int CapLedger::Window(const Count& c) const {
  if (c.failing) return 1;
  if (caps_.first_window <= 0) return caps_.channel;
  return std::min(WindowMax(), c.window > 0 ? c.window : caps_.first_window);
}

CapLedger::Count& CapLedger::Track(int64_t channel) {
  auto [it, added] = channels_.try_emplace(channel);
  Count& c = it->second;
  if (added) {
    c.idle = idle_.end();
  } else if (c.idle != idle_.end()) {
    idle_.erase(c.idle);
    c.idle = idle_.end();
  }
  return c;
}

void CapLedger::Settle(Channels::iterator it) {
  Count& c = it->second;
  if (c.n > 0) return;
  if (!c.failing && c.window == 0) {
    Erase(it);
    return;
  }
  if (c.idle != idle_.end()) idle_.erase(c.idle);
  idle_.push_front(it->first);
  c.idle = idle_.begin();
  // The oldest idle entries go first; the one just settled is the newest, and IdleMax() >= 1.
  while (idle_.size() > IdleMax()) {
    channels_.erase(idle_.back());
    idle_.pop_back();
  }
}

CapLedger::Channels::iterator CapLedger::Erase(Channels::iterator it) {
  if (it->second.idle != idle_.end()) idle_.erase(it->second.idle);
  return channels_.erase(it);
}

size_t CapLedger::IdleMax() const {
  return std::max(kIdleFloor, static_cast<size_t>(std::max(caps_.workers, 0)));
}

CapLedger::Reached CapLedger::Add(int64_t channel, int64_t tenant) {
  Reached reached;
  Count& c = Track(channel);
  reached.channel = ++c.n == ChannelCap(c);
  reached.tenant = ++tenants_[tenant].n == caps_.tenant;
  return reached;
}

bool CapLedger::Holds(int64_t channel, int64_t tenant) const {
  auto c = channels_.find(channel);
  if (c != channels_.end() && c->second.n >= std::min(Window(c->second), ChannelCap(c->second))) {
    return true;
  }
  auto t = tenants_.find(tenant);
  return t != tenants_.end() && t->second.n >= caps_.tenant;
}

void CapLedger::Remove(int64_t channel, int64_t tenant) {
  if (auto it = channels_.find(channel); it != channels_.end()) {
    // A failing channel is remembered at 0 in flight (until Forget), so that its cap stays 1;
    // one with a grown window, so that it keeps it for a while (Settle).
    if (--it->second.n <= 0) Settle(it);
  }
  if (auto it = tenants_.find(tenant); it != tenants_.end()) {
    if (--it->second.n <= 0) tenants_.erase(it);
  }
}

void CapLedger::Failed(int64_t channel, Clock::time_point now) {
  Count& c = Track(channel);
  c.failing = true;
  c.failed_at = now;
  c.window = 0;  // when it answers quickly again, it starts from the first window
  Settle(channels_.find(channel));
}

void CapLedger::Succeeded(int64_t channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  Count& c = it->second;
  c.failing = false;
  if (caps_.first_window > 0) {
    c.window = std::min(WindowMax(), (c.window > 0 ? c.window : caps_.first_window) + 1);
  }
  Settle(it);
}

void CapLedger::Answered(int64_t channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  it->second.failing = false;
  Settle(it);
}

bool CapLedger::failing(int64_t channel) const {
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.failing;
}

void CapLedger::Forget(Clock::time_point now) {
  for (auto it = channels_.begin(); it != channels_.end();) {
    Count& c = it->second;
    if (c.failing && now - c.failed_at >= kRememberFailing) c.failing = false;
    if (c.n > 0) {
      c.idle_since = {};
    } else if (c.idle_since == Clock::time_point{}) {
      c.idle_since = now;
    } else if (c.window > 0 && now - c.idle_since >= kRememberWindow) {
      c.window = 0;
    }
    if (c.n <= 0 && !c.failing && c.window == 0) {
      it = Erase(it);
    } else {
      ++it;
    }
  }
}

ClaimLimits CapLedger::Limits(int free) const {
  ClaimLimits limits;
  limits.channel_cap = caps_.channel;
  limits.tenant_cap = caps_.tenant;
  limits.first_window = caps_.first_window;
  limits.lend = caps_.reserve > 0 ? std::max(0, free - caps_.reserve) : 0;
  limits.channels_in_flight.reserve(channels_.size());
  for (const auto& [id, c] : channels_) {
    // The claim knows one channel cap; a failing channel's cap of 1 is passed as a count in
    // flight that leaves it room for one job at most.
    int counted = c.failing ? c.n + caps_.channel - 1 : c.n;
    // A channel at 0 in flight with a grown window is passed too, or it would be ranked
    // against the first window.
    if (counted > 0 || c.window > 0) {
      limits.channels_in_flight.emplace_back(id, counted);
      limits.channel_windows.push_back(c.failing ? caps_.channel : Window(c));
      // Lent to only once it has answered quickly (its window grew) and while not failing: a
      // channel that never answered, like forty hanging ones of one tenant, borrows nothing.
      limits.lend_windows.push_back(limits.lend > 0 && c.window > 0 && !c.failing ? Window(c) : 0);
    }
  }
  for (const auto& [id, c] : tenants_) {
    if (c.n > 0) limits.tenants_in_flight.emplace_back(id, c.n);
  }
  return limits;
}

int CapLedger::in_flight(int64_t channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.n;
}

int CapLedger::tenant_in_flight(int64_t tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.n;
}

size_t CapLedger::tracked() const { return channels_.size() + tenants_.size(); }

void CapLedger::Narrow(ClaimLimits& limits, int64_t channel, int room) {
  auto& flying = limits.channels_in_flight;
  // Every channel's window and lend window explicit from here on (empty lists mean defaults).
  if (limits.channel_windows.size() != flying.size()) {
    limits.channel_windows.assign(flying.size(), limits.channel_cap);
  }
  if (limits.lend_windows.size() != flying.size()) limits.lend_windows.assign(flying.size(), 0);
  auto it = std::find_if(flying.begin(), flying.end(),
                         [&](const auto& entry) { return entry.first == channel; });
  if (it == flying.end()) {
    // Not in flight here: its first window, at most `room`.
    flying.emplace_back(channel, 0);
    limits.channel_windows.push_back(
        std::min(limits.first_window > 0 ? limits.first_window : limits.channel_cap, room));
    limits.lend_windows.push_back(0);
    return;
  }
  const size_t i = static_cast<size_t>(it - flying.begin());
  limits.channel_windows[i] = std::min(limits.channel_windows[i], it->second + room);
  limits.lend_windows[i] = 0;
}

void CapLedger::LeaveOut(ClaimLimits& limits, int64_t channel) {
  auto& flying = limits.channels_in_flight;
  auto it = std::find_if(flying.begin(), flying.end(),
                         [&](const auto& entry) { return entry.first == channel; });
  if (it != flying.end()) {
    it->second = std::max(it->second, limits.channel_cap);
    return;
  }
  // A new entry: at its cap, with the cap for its window and nothing to lend it.
  flying.emplace_back(channel, limits.channel_cap);
  if (!limits.channel_windows.empty()) limits.channel_windows.push_back(limits.channel_cap);
  if (!limits.lend_windows.empty()) limits.lend_windows.push_back(0);
}

}  // namespace bulkhead
