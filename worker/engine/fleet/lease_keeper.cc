#include "lease_keeper.h"

#include "logger.h"

namespace bulkhead {
namespace {

using Clock = std::chrono::steady_clock;

// After a failed heartbeat, the next try: soon, so readiness and the lease come back soon
// after the database.
constexpr auto kRetryAfterFailure = std::chrono::seconds(1);

}  // namespace

LeaseKeeper::LeaseKeeper(Options options, Lease& lease)
    : options_(std::move(options)), lease_(lease) {
  service_.Start([this] { Run(); });
}

LeaseKeeper::~LeaseKeeper() { service_.Stop(); }

void LeaseKeeper::StopSweeping() {
  std::lock_guard lock(sweep_mu_);
  sweeping_ = false;
}

std::chrono::milliseconds LeaseKeeper::answer_pending_for(Clock::time_point now) const {
  const auto started = call_started_.load();
  if (started == Clock::time_point::max() || now <= started) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - started);
}

void LeaseKeeper::Run() {
  StoreConnection<FleetStore> store(options_.database, "lease", options_.pooling);
  const auto heartbeat_every = options_.lease / 5;
  auto next_heartbeat = Clock::now() + heartbeat_every;
  auto next_sweep = Clock::now() + options_.lease;
  std::unique_lock lock(mu_);
  while (!service_.stopping()) {
    if (service_.WaitUntil(lock, std::min(next_heartbeat, next_sweep))) break;
    lock.unlock();
    const auto now = Clock::now();
    if (now >= next_heartbeat && heartbeats_) {
      try {
        call_started_ = now;
        Heartbeat(store.Get(), now);
        next_heartbeat = now + heartbeat_every;
      } catch (const std::exception& e) {
        heartbeat_ok_ = false;
        Log(LogLevel::kWarn, "heartbeat_failed", {{"error", FirstLine(e.what())}});
        store.Reset();
        next_heartbeat = Clock::now() + kRetryAfterFailure;
      }
      call_started_ = Clock::time_point::max();
    }
    // Only under a running lease: without one, what is executing under this name is the
    // rescue's to return.
    if (now >= next_sweep && lease_.Held(Clock::now())) {
      next_sweep = now + options_.lease;
      try {
        call_started_ = Clock::now();
        ReturnStranded(store.Get());
      } catch (const std::exception& e) {
        Log(LogLevel::kWarn, "stranded_sweep_failed", {{"error", FirstLine(e.what())}});
        store.Reset();
      }
      call_started_ = Clock::time_point::max();
    }
    lock.lock();
  }
}

void LeaseKeeper::Heartbeat(FleetStore& store, Clock::time_point now) {
  const int64_t lease_ms = options_.lease.count();
  if (!store.Heartbeat(options_.node, lease_ms)) {
    // Read after the UPDATE found no row: a clean stop that removed the row after
    // StopHeartbeats() is seen here, and the row stays removed.
    if (!heartbeats_) return;
    store.RegisterNode(options_.node, options_.host, options_.pid, options_.version, options_.tiers,
                       lease_ms);
    Log(LogLevel::kWarn, "node_reregistered",
        {{"detail",
          "the node's row was gone (the leader forgets a node whose lease ended over an hour "
          "ago): registered again"}});
  }
  // `now` is when the heartbeat was sent: the lease the database set runs from later.
  lease_.Renewed(now);
  heartbeat_ok_ = true;
}

void LeaseKeeper::ReturnStranded(FleetStore& store) {
  std::vector<int64_t> held;
  {
    std::lock_guard lock(sweep_mu_);
    if (!sweeping_) return;
    if (options_.held) held = options_.held();
  }
  Stranded stranded = store.ReturnStranded(options_.node, held, options_.lease.count());
  if (stranded.jobs == 0) return;
  stranded_returned_ += static_cast<uint64_t>(stranded.jobs);
  if (options_.metrics) {
    options_.metrics->stranded_returned().Increment(static_cast<double>(stranded.jobs));
  }
  Log(LogLevel::kWarn, "stranded_jobs_returned",
      {{"jobs", stranded.jobs},
       {"ids", stranded.ids},
       {"detail",
        "jobs executing under this node's name that it did not hold (a claim whose reply was "
        "lost, or a failed hand-back) went back to the queue, their attempt unspent"}});
}

}  // namespace bulkhead
