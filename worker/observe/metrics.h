// Metrics: the node's Prometheus registry — every family it exports, registered once at start,
// and the label children cached as plain pointers so that recording is one atomic add (a
// counter) or one short mutex inside prometheus-cpp (a histogram's Observe), never a lookup.
//
// docs/metrics.md is the table of every family, as registered here (metrics_test compares the
// two). No label takes a channel id, tenant id or URL: the labels are the tier (a handful, from
// the node's config), a fixed outcome, reason or state word, and nothing else.
//
// Who records what (each from the thread that already owns the event):
//   QueueRunner (runner thread)  queue wait, claim duration, parked at claim, probes (half_open)
//   CapSummary (runner thread)   caps hit
//   EndpointAnswers (runner)     channels disabled by a 410, waiting jobs snoozed
//   QueueRunner (sender I/O)     deliveries by outcome (the Verdict's), delivery duration, SSRF
//                                refusals; answering jobs snoozed (EndpointAnswers)
//   CompletionWriter (writer)    completion batch size, results quarantined
//   BreakerKeeper (keeper)       breaker transitions, jobs parked by an opening, requests
//                                quarantined
//   Maintenance (its thread)     rescued jobs; as the leader, the fleet-wide samples below
//   LeaseKeeper (its thread)     stranded jobs returned
//   StoreConnection (any owner)  database errors and reconnects (process-wide atomics, copied
//                                into the counters at scrape time)
//   Scrape (status server)       in-flight and worker gauges, process metrics from /proc
//
// Fleet-wide samples (`bulkhead_jobs`, `bulkhead_breakers`, `bulkhead_queue_lag_seconds`,
// `bulkhead_ordering_held`, `bulkhead_claim_floor_age_seconds`) are read by the maintenance
// leader only, every 15 s, from statements on partial indexes or one descent of the primary
// key (never a scan of finished rows, never per scrape). Only the leader exports them: a node that
// is not (or stops being) the leader has no such series, and `bulkhead_leader` says which node is.
// A dashboard aggregates them with max by (tier, state): during a hand-over two nodes may both show
// a sample for up to one scrape, and max never double-counts.
//
// Recording off (a benchmark aid): Node passes nullptr instead of this object to the parts
// when BULKHEAD_METRICS_RECORDING=off, so the hot path skips every hook; the families are
// still registered and served (as zeros). See docs/metrics.md.
//
// Threads: construction and Tier()/the setters of the leader's samples may be called from
// any thread (the registry locks); the cached pointers are safe for concurrent use.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http_sender.h"
#include "store_types.h"
#include "verdict.h"  // DeliveryOutcome

namespace bulkhead {

// The label word of an outcome: delivered, failed, timeout, refused, discarded. Which outcome
// an attempt came to is the verdict's (verdict.h: DeliveryOutcome, ClassifyDelivery).
const char* DeliveryOutcomeName(DeliveryOutcome outcome);

class Metrics {
 public:
  // The children of one tier's labels.
  struct Tier {
    prometheus::Counter* deliveries[5] = {};  // by DeliveryOutcome
    prometheus::Histogram* delivery_duration = nullptr;
    prometheus::Histogram* queue_wait = nullptr;
    prometheus::Histogram* claim_duration = nullptr;
    prometheus::Counter* capped_channel = nullptr;
    prometheus::Counter* capped_tenant = nullptr;
    prometheus::Counter* parked = nullptr;
    prometheus::Counter* snoozed = nullptr;        // jobs a Retry-After pushed later
    prometheus::Counter* rate_limited = nullptr;   // jobs handed back for want of a token
    prometheus::Counter* channels_gone = nullptr;  // channels disabled by a 410
    prometheus::Counter* blocked = nullptr;        // attempts the SSRF guard refused
    prometheus::Counter* transitions_open = nullptr;
    prometheus::Counter* transitions_half_open = nullptr;
    prometheus::Counter* transitions_closed = nullptr;
    prometheus::Gauge* inflight = nullptr;
    prometheus::Gauge* workers = nullptr;
    prometheus::Gauge* stalled = nullptr;  // in flight past stalled_after_ms, slot given back

    void Delivered(DeliveryOutcome outcome) const {
      deliveries[static_cast<int>(outcome)]->Increment();
    }
  };

  // Registers every family; `version` goes into bulkhead_build_info.
  explicit Metrics(const std::string& version);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The children for `tier`, made on first call (at node start, not on the hot path). The
  // reference stays valid for the object's life.
  const Tier& ForTier(const std::string& tier);

  prometheus::Histogram& completion_batch_size() { return *completion_batch_size_; }
  prometheus::Counter& rescued() { return *rescued_; }
  prometheus::Counter& stranded_returned() { return *stranded_returned_; }
  // A completion result (completion_writer.h) or a breaker request (breaker_keeper.h) the
  // database refused for its data: `recorded` once its text was replaced, or `dropped`.
  enum class QuarantineWriter { kCompletion, kBreaker };
  prometheus::Counter& quarantined(QuarantineWriter writer, bool recorded) {
    return *quarantined_[static_cast<int>(writer)][recorded ? 0 : 1];
  }

  // The leader's samples: replaces every series of the four families with `sample`.
  void SetFleetSample(const FleetCounts& sample);
  // Not (or no longer) the leader: no fleet-wide series, bulkhead_leader 0.
  void ClearFleetSample();
  void SetLeader(bool leader) { leader_->Set(leader ? 1 : 0); }
  // 1 while the node sends HTTPS without verifying certificates (tls_insecure_skip_verify).
  void SetTlsVerifyDisabled(bool disabled) { tls_verify_disabled_->Set(disabled ? 1 : 0); }

  // The text exposition of every family, after refreshing the process metrics from /proc and
  // the database connection counters. Safe from any thread.
  std::string Scrape();

  // The names of every registered family (for the docs and dashboard consistency tests).
  std::vector<std::string> FamilyNames() const;

  prometheus::Registry& registry() { return *registry_; }

 private:
  void RefreshProcess();

  std::shared_ptr<prometheus::Registry> registry_;

  // Families; constant after construction (the Family objects lock themselves).
  prometheus::Family<prometheus::Counter>* deliveries_;
  prometheus::Family<prometheus::Histogram>* delivery_duration_;
  prometheus::Family<prometheus::Histogram>* queue_wait_;
  prometheus::Family<prometheus::Histogram>* claim_duration_;
  prometheus::Family<prometheus::Counter>* capped_;
  prometheus::Family<prometheus::Counter>* parked_;
  prometheus::Family<prometheus::Counter>* snoozed_;
  prometheus::Family<prometheus::Counter>* rate_limited_;
  prometheus::Family<prometheus::Counter>* channels_gone_;
  prometheus::Family<prometheus::Counter>* blocked_;
  prometheus::Family<prometheus::Counter>* transitions_;
  prometheus::Family<prometheus::Gauge>* inflight_;
  prometheus::Family<prometheus::Gauge>* workers_;
  prometheus::Family<prometheus::Gauge>* stalled_;
  prometheus::Family<prometheus::Gauge>* jobs_;
  prometheus::Family<prometheus::Gauge>* breakers_;
  prometheus::Family<prometheus::Gauge>* lag_;
  prometheus::Family<prometheus::Gauge>* ordering_held_;
  prometheus::Family<prometheus::Gauge>* claim_floor_age_;
  prometheus::Histogram* completion_batch_size_;
  prometheus::Counter* rescued_;
  prometheus::Counter* stranded_returned_;
  prometheus::Counter* quarantined_[2][2];  // [writer][recorded, dropped]
  prometheus::Counter* reconnects_;
  prometheus::Counter* database_errors_;
  prometheus::Gauge* leader_;
  prometheus::Gauge* tls_verify_disabled_;
  prometheus::Counter* cpu_seconds_;
  prometheus::Gauge* resident_bytes_;
  prometheus::Gauge* virtual_bytes_;
  prometheus::Gauge* open_fds_;
  prometheus::Gauge* max_fds_;
  prometheus::Gauge* start_time_;

  // Guarded by mu_: the tiers' children, the fleet sample's children, and the values last
  // copied into the counters that mirror process-wide totals.
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Tier>> tiers_;
  static constexpr int kFleetFamilies = 5;
  // jobs, breakers, lag, held, claim floor age
  std::vector<prometheus::Gauge*> fleet_series_[kFleetFamilies];
  double cpu_seen_ = 0;
  uint64_t reconnects_seen_ = 0;
  uint64_t database_errors_seen_ = 0;
};

}  // namespace bulkhead
