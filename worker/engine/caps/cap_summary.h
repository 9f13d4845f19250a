// CapSummary: one tier's count of caps reached on this node, as a metric and as one
// caps_summary log line at most once a minute (kSummaryEvery), never a line per claim.
//
// A cap reached costs nothing of its own since ADR 0012: the claim finds other channels' work
// past a capped backlog through its skip scan, so nothing is rewritten when a channel or
// tenant reaches its cap (before, its fresh backlog was demoted to priority 2). What is left
// is to tell the operator how often the caps bound.
//
// Threads: Summarize() and next_summary() only on the runner thread; CountReached() and the
// counters from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "cap_ledger.h"
#include "metrics.h"

namespace bulkhead {

class CapSummary {
 public:
  using Clock = std::chrono::steady_clock;

  // `tier` names the logs; `metrics` may be nullptr (record nothing).
  CapSummary(std::string tier, const Metrics::Tier* metrics);
  CapSummary(const CapSummary&) = delete;
  CapSummary& operator=(const CapSummary&) = delete;

  // `reached` reached their cap just now: counted as caps hit (bulkhead_capped_total).
  void CountReached(const CapLedger::AtCap& reached);

  // When the next caps_summary is due.
  Clock::time_point next_summary() const { return next_summary_; }
  // Logs caps_summary if a cap was hit since the last one (with the current `caps`), and sets
  // the next one kSummaryEvery later.
  void Summarize(Clock::time_point now, const CapLedger::Caps& caps);

  // Times a channel (tenant) reached its cap here since start.
  uint64_t channel_caps_hit() const { return channel_caps_hit_.load(); }
  uint64_t tenant_caps_hit() const { return tenant_caps_hit_.load(); }

 private:
  // Constant after construction.
  const std::string tier_;
  const Metrics::Tier* const metrics_;

  std::atomic<uint64_t> channel_caps_hit_{0};
  std::atomic<uint64_t> tenant_caps_hit_{0};

  // Only touched by the runner thread: the counts at the last summary, and when the next is
  // due.
  uint64_t logged_channel_caps_ = 0;
  uint64_t logged_tenant_caps_ = 0;
  Clock::time_point next_summary_;
};

}  // namespace bulkhead
