#include "maintenance.h"

#include "logger.h"

namespace bulkhead {
namespace {

// A node row whose lease ended this long ago, with no job left, is forgotten.
constexpr int64_t kForgetNodesAfterMs = 3'600'000;
// Prune batches per run, at most: a backlog of old rows is worked off over several minutes.
constexpr int kMaxPruneBatches = 100;
// Ids the claim floor passes per round, at most (ADR 0027): a floor behind a week of history
// catches up over a few rounds, each reading at most this many rows.
constexpr int64_t kClaimFloorStep = 100'000;

}  // namespace

Maintenance::Maintenance(Options options)
    : options_(std::move(options)),
      store_(options_.database, "leader"),
      ranges_({.retention = options_.retention, .min_range_ids = options_.min_range_ids}) {
  service_.Start([this] { Run(); });
}

Maintenance::~Maintenance() { service_.Stop(); }

void Maintenance::Run() {
  std::unique_lock lock(mu_);
  while (!service_.stopping()) {
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    auto next = now + options_.elect_every;
    try {
      if (!leader_) {
        if (!store_.Get().TryLead(options_.node) && store_.Get().DeposeLostLeader() > 0) {
          Log(LogLevel::kWarn, "leader_deposed",
              {{"detail",
                "the leader's node has no lease (frozen or cut off): its "
                "maintenance connection was terminated"}});
        }
        if (!leader_ && store_.Get().TryLead(options_.node)) {
          leader_ = true;
          next_rescue_ = next_park_ = next_reconcile_ = now;
          next_prune_ = now + options_.rescue_every;  // rescue first, prune after
          next_sample_ = now;
          Log(LogLevel::kInfo, "leader_elected",
              {{"detail",
                "this node now runs the fleet's maintenance (rescue, pruning, "
                "the parked reconciler)"}});
        }
        if (!leader_ && options_.close_when_following) store_.Close();
      }
      if (leader_) {
        Lead(now);
        next = std::min({next_rescue_, next_park_, next_reconcile_, next_prune_, next_sample_});
      }
      service_.Succeeded();
    } catch (const std::exception& e) {
      if (leader_) {
        Log(LogLevel::kWarn, "leadership_lost",
            {{"error", FirstLine(e.what())},
             {"detail", "the maintenance connection failed; another node may take over"}});
      } else {
        Log(LogLevel::kWarn, "maintenance_failed", {{"error", FirstLine(e.what())}});
      }
      leader_ = false;
      if (options_.metrics) options_.metrics->ClearFleetSample();
      store_.Reset();  // closing the connection releases the lock, if it was still held
      next = std::chrono::steady_clock::now() + service_.Failed();  // 100 ms doubling to 5 s
    }
    lock.lock();
    service_.WaitUntil(lock, next);
  }
}

void Maintenance::Lead(std::chrono::steady_clock::time_point now) {
  FleetStore& store = store_.Get();
  if (now >= next_rescue_) {
    next_rescue_ = now + options_.rescue_every;
    Rescue rescue = store.RescueLost();
    if (rescue.jobs > 0) {
      rescued_ += rescue.jobs;
      if (options_.metrics) options_.metrics->rescued().Increment(static_cast<double>(rescue.jobs));
      Log(LogLevel::kWarn, "jobs_rescued",
          {{"jobs", rescue.jobs},
           {"discarded", rescue.discarded},
           {"nodes", rescue.nodes},
           {"detail", "returned the jobs of nodes whose lease ran out to the queue"}});
    }
    // Their runners' sleeping marks too: enqueues would notify them for nothing.
    store.ForgetSleepers();
    // The claim floor, after the rescue: jobs the rescue returned hold it where they are.
    store.RaiseClaimFloor(kClaimFloorStep);
  }
  if (now >= next_park_) {
    next_park_ = now + options_.park_every;
    auto [parked, channels] = store.ParkBehindOpenBreakers();
    (void)channels;
    if (parked > 0) parked_log_.Add(static_cast<uint64_t>(parked));
  }
  if (now >= next_reconcile_) {
    next_reconcile_ = now + options_.reconcile_every;
    auto [jobs, channels] = store.ReconcileParked();
    if (jobs > 0) {
      Log(LogLevel::kWarn, "parked_reconciled",
          {{"jobs", jobs},
           {"channels", channels},
           {"detail", "unparked jobs that waited behind closed breakers"}});
    }
  }
  if (now >= next_sample_) {
    next_sample_ = now + options_.sample_every;
    if (options_.metrics) options_.metrics->SetFleetSample(store.SampleFleet());
  }
  if (now >= next_prune_) {
    next_prune_ = now + options_.prune_every;
    // The ranges first: a range dropped whole is not pruned row by row.
    int64_t total = 0;
    int batches = 0;
    for (const IdInterval& ids : ranges_.Keep(store, now)) {
      while (batches < kMaxPruneBatches) {
        ++batches;
        int pruned = store.PruneFinished(options_.retention.count(), options_.prune_batch, ids.low,
                                         ids.high);
        total += pruned;
        if (pruned < options_.prune_batch) break;
      }
    }
    pruned_ += total;
    if (total > 0) {
      Log(LogLevel::kInfo, "jobs_pruned",
          {{"jobs", total}, {"retention_ms", options_.retention.count()}});
    }
    int forgotten = store.ForgetNodes(kForgetNodesAfterMs);
    if (forgotten > 0) Log(LogLevel::kInfo, "nodes_forgotten", {{"nodes", forgotten}});
    // The claim already ignores expired old secrets; this keeps their rows from piling up and
    // clears the claim's gate. Only a count is logged, never a secret.
    int secrets = store.PruneOldSecrets();
    if (secrets > 0) Log(LogLevel::kInfo, "old_secrets_pruned", {{"secrets", secrets}});
  }
}

}  // namespace bulkhead
