// CapDemotion: one tier's demotion of capped backlogs on this node, with its counts and its
// caps_summary log.
//
// When a claim brings a channel (tenant) to its per-node cap (CapLedger), its waiting fresh jobs
// are demoted to priority 2 (ClaimStore::DemoteChannels, DemoteTenants: one statement for all
// that are due, however many), so every other channel's fresh jobs come first; while it stays
// at its cap, again at most once a second (CapLedger::DemoteChannelDue, DemoteTenantDue): its
// new jobs arrive fresh, and each claim's fresh scan steps over them until they are. Not
// demoting (a statement that fails) only costs the order: the cap itself holds in the claim.
//
// Tenants first: a tenant's demotion covers its channels, so a channel that reached its cap
// together with its tenant (a tenant with one channel, at the default shares) is not demoted
// twice.
//
// Caps reached are counted (bulkhead_capped_total) and, with the jobs demoted, logged as one
// caps_summary line at most once a minute (kSummaryEvery), never a line per claim.
//
// Threads: Run() and Summarize() only on the thread that owns `store` (the runner thread);
// Plan() with the ledger's lock held; CountReached() and the counters from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cap_ledger.h"
#include "claim_store.h"
#include "metrics.h"
#include "store_connection.h"

namespace bulkhead {

class CapDemotion {
 public:
  using Clock = std::chrono::steady_clock;

  // The backlogs to demote now: each a statement.
  struct Due {
    std::vector<int64_t> tenants;
    std::vector<int64_t> channels;
  };

  // `tier` names the logs; `metrics` may be nullptr (record nothing).
  CapDemotion(std::string tier, const Metrics::Tier* metrics, StoreConnection<ClaimStore>& store);
  CapDemotion(const CapDemotion&) = delete;
  CapDemotion& operator=(const CapDemotion&) = delete;

  // Which of `at_cap` are due a demotion at `now`, as `caps` says (it remembers them as
  // demoted); a channel whose tenant is in `at_cap` is covered by the tenant's statement.
  // The caller holds the lock that guards `caps`.
  static Due Plan(CapLedger& caps, const CapLedger::AtCap& at_cap, Clock::time_point now);

  // `reached` reached their cap just now (not: stay at it): counted as caps hit.
  void CountReached(const CapLedger::AtCap& reached);

  // Runs the statements of `due`: at most two. Returns whether any was due.
  bool Run(const Due& due);

  // When the next caps_summary is due.
  Clock::time_point next_summary() const { return next_summary_; }
  // Logs caps_summary if anything moved since the last one (with the current `caps`), and sets
  // the next one kSummaryEvery later.
  void Summarize(Clock::time_point now, const CapLedger::Caps& caps);

  // Times a channel (tenant) reached its cap here, and jobs demoted for it, since start.
  uint64_t channel_caps_hit() const { return channel_caps_hit_.load(); }
  uint64_t tenant_caps_hit() const { return tenant_caps_hit_.load(); }
  uint64_t demoted() const { return demoted_.load(); }

 private:
  // Constant after construction.
  const std::string tier_;
  const Metrics::Tier* const metrics_;
  StoreConnection<ClaimStore>& store_;

  std::atomic<uint64_t> channel_caps_hit_{0};
  std::atomic<uint64_t> tenant_caps_hit_{0};
  std::atomic<uint64_t> demoted_{0};

  // Only touched by the thread that owns the store: the counts at the last summary, and when
  // the next is due.
  uint64_t logged_channel_caps_ = 0;
  uint64_t logged_tenant_caps_ = 0;
  uint64_t logged_demoted_ = 0;
  Clock::time_point next_summary_;
};

}  // namespace bulkhead
