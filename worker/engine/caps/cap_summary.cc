#include "cap_summary.h"

#include "logger.h"

namespace bulkhead {

CapSummary::CapSummary(std::string tier, const Metrics::Tier* metrics)
    : tier_(std::move(tier)), metrics_(metrics), next_summary_(Clock::now() + kSummaryEvery) {}

void CapSummary::CountReached(const CapLedger::AtCap& reached) {
  tenant_caps_hit_ += reached.tenants.size();
  channel_caps_hit_ += reached.channels.size();
  if (metrics_) {
    if (!reached.tenants.empty()) {
      metrics_->capped_tenant->Increment(static_cast<double>(reached.tenants.size()));
    }
    if (!reached.channels.empty()) {
      metrics_->capped_channel->Increment(static_cast<double>(reached.channels.size()));
    }
  }
}

void CapSummary::Summarize(Clock::time_point now, const CapLedger::Caps& caps) {
  next_summary_ = now + kSummaryEvery;
  uint64_t channels = channel_caps_hit_.load(), tenants = tenant_caps_hit_.load();
  if (channels == logged_channel_caps_ && tenants == logged_tenant_caps_) return;
  Log(LogLevel::kInfo, "caps_summary",
      {{"tier", tier_},
       {"channel_cap", caps.channel},
       {"tenant_cap", caps.tenant},
       {"channel_caps_hit", channels - logged_channel_caps_},
       {"tenant_caps_hit", tenants - logged_tenant_caps_},
       {"detail", "in the last minute (or since the last summary)"}});
  logged_channel_caps_ = channels;
  logged_tenant_caps_ = tenants;
}

}  // namespace bulkhead
