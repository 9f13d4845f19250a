#include "cap_ledger.h"

#include <algorithm>
#include <cmath>

namespace bulkhead {
namespace {

constexpr auto kDemoteEvery = std::chrono::seconds(1);
// How long a demoted channel (tenant) with nothing in flight stays in the ledger.
constexpr auto kRememberDemoted = std::chrono::seconds(10);
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

CapLedger::Caps CapLedger::For(int workers, double channel_share, double tenant_share) {
  const int channel = CapOf(workers, channel_share);
  return {channel, CapOf(workers, tenant_share),
          channel_share < 1.0 ? std::min(kFirstWindow, channel) : 0};
}

int CapLedger::Window(const Count& c) const {
  if (c.failing) return 1;
  if (caps_.first_window <= 0) return caps_.channel;
  return std::min(caps_.channel, c.window > 0 ? c.window : caps_.first_window);
}

CapLedger::Reached CapLedger::Add(int64_t channel, int64_t tenant) {
  Reached reached;
  Count& c = channels_[channel];
  reached.channel = ++c.n == ChannelCap(c);
  reached.tenant = ++tenants_[tenant].n == caps_.tenant;
  tenant_of_[channel] = tenant;
  return reached;
}

bool CapLedger::Remove(int64_t channel, int64_t tenant) {
  bool opened = false;
  if (auto it = channels_.find(channel); it != channels_.end()) {
    // At its cap, or with a demoted backlog: the channel has more waiting that the caps held
    // back, and this slot is for it.
    opened |= it->second.n >= Window(it->second) || it->second.demoted;
    // A demoted channel is remembered at 0 in flight too (until Forget), so that its backlog
    // is refilled and its next completions still wake the runner; a failing one, so that its
    // cap stays 1.
    if (--it->second.n <= 0 && !it->second.demoted && !it->second.failing &&
        it->second.window == 0) {
      channels_.erase(it);
      tenant_of_.erase(channel);
    }
  }
  if (auto it = tenants_.find(tenant); it != tenants_.end()) {
    opened |= it->second.n >= caps_.tenant || it->second.demoted;
    if (--it->second.n <= 0 && !it->second.demoted) tenants_.erase(it);
  }
  return opened;
}

void CapLedger::Failed(int64_t channel, int64_t tenant, Clock::time_point now) {
  Count& c = channels_[channel];
  c.failing = true;
  c.failed_at = now;
  c.window = 0;  // when it answers quickly again, it starts from the first window
  tenant_of_[channel] = tenant;
}

void CapLedger::Succeeded(int64_t channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  Count& c = it->second;
  c.failing = false;
  if (caps_.first_window > 0) {
    c.window = std::min(caps_.channel, (c.window > 0 ? c.window : caps_.first_window) + 1);
  }
  if (c.n <= 0 && !c.demoted && c.window == 0) {
    tenant_of_.erase(channel);
    channels_.erase(it);
  }
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
    if (c.n <= 0 && !c.failing && c.window == 0 && now - c.demoted_at >= kRememberDemoted) {
      tenant_of_.erase(it->first);
      it = channels_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = tenants_.begin(); it != tenants_.end();) {
    if (it->second.n <= 0 && now - it->second.demoted_at >= kRememberDemoted) {
      it = tenants_.erase(it);
    } else {
      ++it;
    }
  }
}

bool CapLedger::Due(Count& c, Clock::time_point now) {
  if (c.demoted && now - c.demoted_at < kDemoteEvery) return false;
  c.demoted = true;
  c.demoted_at = now;
  return true;
}

bool CapLedger::DemoteChannelDue(int64_t channel, Clock::time_point now) {
  auto it = channels_.find(channel);
  return it != channels_.end() && Due(it->second, now);
}

bool CapLedger::DemoteTenantDue(int64_t tenant, Clock::time_point now) {
  auto it = tenants_.find(tenant);
  return it != tenants_.end() && Due(it->second, now);
}

CapLedger::AtCap CapLedger::Capped() const {
  AtCap at;
  for (const auto& [id, c] : channels_) {
    if (c.n < ChannelCap(c)) continue;
    auto t = tenant_of_.find(id);
    at.channels.emplace_back(id, t == tenant_of_.end() ? 0 : t->second);
  }
  for (const auto& [id, c] : tenants_) {
    if (c.n >= caps_.tenant) at.tenants.push_back(id);
  }
  return at;
}

ClaimLimits CapLedger::Limits() const {
  ClaimLimits limits;
  limits.channel_cap = caps_.channel;
  limits.tenant_cap = caps_.tenant;
  limits.first_window = caps_.first_window;
  limits.channels_in_flight.reserve(channels_.size());
  struct Refill {
    int64_t channel;
    int room;    // the channel's own
    int tenant;  // index into tenant_room, or -1 (tenant unknown: no tenant bound)
  };
  std::vector<Refill> refill;
  std::vector<std::pair<int, int>> tenant_room;  // room left, refill channels of the tenant
  std::unordered_map<int64_t, int> tenant_index;
  for (const auto& [id, c] : channels_) {
    // The claim knows one channel cap; a failing channel's cap of 1 is passed as a count in
    // flight that leaves it room for one job at most.
    int counted = c.failing ? c.n + caps_.channel - 1 : c.n;
    // A channel at 0 in flight with a grown window is passed too, or it would be ranked
    // against the first window.
    if (counted > 0 || c.window > 0) {
      limits.channels_in_flight.emplace_back(id, counted);
      limits.channel_windows.push_back(c.failing ? caps_.channel : Window(c));
    }
    if (c.n >= Window(c)) continue;
    bool tenant_demoted = false;
    int tenant = -1;
    if (auto t = tenant_of_.find(id); t != tenant_of_.end()) {
      auto tc = tenants_.find(t->second);
      tenant_demoted = tc != tenants_.end() && tc->second.demoted;
      const int room = caps_.tenant - (tc != tenants_.end() ? tc->second.n : 0);
      if (room <= 0) continue;  // its tenant is at its cap: nothing of it may be claimed
      auto [it, added] = tenant_index.emplace(t->second, static_cast<int>(tenant_room.size()));
      if (added) tenant_room.emplace_back(room, 0);
      tenant = it->second;
    }
    if (!c.demoted && !tenant_demoted) continue;
    refill.push_back({id, Window(c) - c.n, tenant});
    if (tenant >= 0) ++tenant_room[tenant].second;
  }
  // A tenant's room is shared among its refilled channels (rounded up, at least 1 each): each
  // row the refill takes is locked, and locking every channel's own room for a tenant of many
  // channels locked 891 rows to claim 91 (docs/caps.md, "Refill").
  for (const Refill& r : refill) {
    int room = r.room;
    if (r.tenant >= 0) {
      const auto [left, channels] = tenant_room[r.tenant];
      room = std::min(room, std::max(1, (left + channels - 1) / channels));
    }
    limits.refill.push_back(r.channel);
    limits.refill_room.push_back(room);
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

}  // namespace bulkhead
