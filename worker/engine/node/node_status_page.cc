#include "node_status_page.h"

#include <chrono>

#include "logger.h"

namespace bulkhead {

NodeStatusPage::NodeStatusPage(const Config& config, Metrics& metrics, NodeParts& parts,
                               const Lease& lease)
    : config_(config),
      metrics_(metrics),
      parts_(parts),
      lease_(lease),
      tier_metrics_([&] {
        std::vector<const Metrics::Tier*> tiers;
        for (const auto& tier : config.tiers) tiers.push_back(&metrics.ForTier(tier.name));
        return tiers;
      }()),
      server_(
          config.node.metrics_listen, [this] { return Scrape(); },
          [this] { return NotReadyBecause(); }) {
  if (!server_.ok()) {
    Log(LogLevel::kError, "metrics_listen_failed",
        {{"listen", config.node.metrics_listen},
         {"error", server_.error()},
         {"detail", "no /metrics, /healthz or /readyz on this node; delivering anyway"}});
  }
}

void NodeStatusPage::StopServing() {
  std::lock_guard lock(mu_);
  serving_ = false;
}

std::string NodeStatusPage::Scrape() {
  {
    std::lock_guard lock(mu_);
    if (serving_) {
      size_t i = 0;
      for (const auto& tier : config_.tiers) {
        const QueueRunner& runner = *parts_.runners.at(tier.name);
        tier_metrics_[i]->inflight->Set(static_cast<double>(runner.in_flight()));
        tier_metrics_[i]->workers->Set(runner.workers());
        tier_metrics_[i]->stalled->Set(static_cast<double>(runner.stalled()));
        ++i;
      }
    }
  }
  return metrics_.Scrape();
}

std::vector<std::string> NodeStatusPage::NotReadyBecause() {
  std::vector<std::string> reasons;
  std::lock_guard lock(mu_);
  if (!serving_) return std::vector<std::string>{"draining: the node is stopping"};
  const auto now = std::chrono::steady_clock::now();
  const LeaseKeeper& lease_keeper = *parts_.lease_keeper;
  if (!lease_keeper.heartbeat_ok()) reasons.push_back("database: the last heartbeat failed");
  // A call that hangs fails no heartbeat: one that waited longer than a heartbeat period
  // says the database does not answer.
  if (auto waited = lease_keeper.answer_pending_for(now);
      waited > std::chrono::milliseconds(config_.node.lease_ms / 5)) {
    reasons.push_back("database: no answer for " + std::to_string(waited.count()) + " ms");
  }
  if (!lease_.Held(now)) {
    reasons.push_back("lease: no heartbeat has landed for most of a lease; not claiming");
  }
  if (!parts_.listener->connected()) reasons.push_back("listen: the LISTEN connection is down");
  for (const auto& [name, runner] : parts_.runners) {
    if (!runner->claim_loop_healthy()) {
      reasons.push_back("claim loop " + name + ": not running, or its last claim failed");
    }
  }
  // Results waiting with none written (completion_writer.h): the heartbeat may pass while the
  // writer cannot write, and a saturated writer stops the claims.
  if (CompletionWriter::Progress p = parts_.writer.progress(); p.stalled) {
    reasons.push_back(p.Describe());
  }
  return reasons;
}

}  // namespace bulkhead
