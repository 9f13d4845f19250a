#include "cap_demotion.h"

#include <algorithm>

#include "logger.h"

namespace bulkhead {

CapDemotion::CapDemotion(std::string tier, const Metrics::Tier* metrics,
                         StoreConnection<ClaimStore>& store)
    : tier_(std::move(tier)),
      metrics_(metrics),
      store_(store),
      next_summary_(Clock::now() + kSummaryEvery) {}

CapDemotion::Due CapDemotion::Plan(CapLedger& caps, const CapLedger::AtCap& at_cap,
                                   Clock::time_point now) {
  Due due;
  for (int64_t tenant : at_cap.tenants) {
    if (caps.DemoteTenantDue(tenant, now)) due.tenants.push_back(tenant);
  }
  const auto& covered = at_cap.tenants;
  for (const auto& [channel, tenant] : at_cap.channels) {
    if (std::find(covered.begin(), covered.end(), tenant) != covered.end()) {
      caps.DemoteChannelDue(channel, now);  // counts as demoted (refill), no statement
      continue;
    }
    if (caps.DemoteChannelDue(channel, now)) due.channels.push_back(channel);
  }
  return due;
}

void CapDemotion::CountReached(const CapLedger::AtCap& reached) {
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

bool CapDemotion::Run(const Due& due) {
  // One statement for the tenants and one for the channels, however many are due: a statement
  // each kept the runner thread from claiming when hundreds of channels sat at their cap.
  // Not demoting (a statement that fails) only costs the order; the cap itself holds in the
  // claim.
  try {
    demoted_ += store_.Get().DemoteTenants(due.tenants);
  } catch (const std::exception& e) {
    Log(LogLevel::kWarn, "demote_failed",
        {{"tier", tier_}, {"tenants", due.tenants.size()}, {"error", FirstLine(e.what())}});
    store_.Reset();
  }
  try {
    demoted_ += store_.Get().DemoteChannels(due.channels);
  } catch (const std::exception& e) {
    Log(LogLevel::kWarn, "demote_failed",
        {{"tier", tier_}, {"channels", due.channels.size()}, {"error", FirstLine(e.what())}});
    store_.Reset();
  }
  return !due.tenants.empty() || !due.channels.empty();
}

void CapDemotion::Summarize(Clock::time_point now, const CapLedger::Caps& caps) {
  next_summary_ = now + kSummaryEvery;
  uint64_t channels = channel_caps_hit_.load(), tenants = tenant_caps_hit_.load(),
           demoted = demoted_.load();
  if (channels == logged_channel_caps_ && tenants == logged_tenant_caps_ &&
      demoted == logged_demoted_) {
    return;
  }
  Log(LogLevel::kInfo, "caps_summary",
      {{"tier", tier_},
       {"channel_cap", caps.channel},
       {"tenant_cap", caps.tenant},
       {"channel_caps_hit", channels - logged_channel_caps_},
       {"tenant_caps_hit", tenants - logged_tenant_caps_},
       {"jobs_demoted", demoted - logged_demoted_},
       {"detail", "in the last minute (or since the last summary)"}});
  logged_channel_caps_ = channels;
  logged_tenant_caps_ = tenants;
  logged_demoted_ = demoted;
}

}  // namespace bulkhead
