// LeaseKeeper: keeps this node's lease and its claims honest, on a thread of its own.
//
// - Every lease_ms / 5 it heartbeats (FleetStore::Heartbeat), and tells the Lease when one
//   lands, so the queue runners claim only while the node's lease runs (lease.h). A node
//   survives four missed heartbeats in a row.
// - A heartbeat that finds no row — the leader forgot the node after its lease had ended for
//   over an hour (a node cut off that long, then back) — registers the node again
//   (node_reregistered); without a row, rescue would take every job it claims.
// - Every lease_ms it returns stranded jobs (FleetStore::ReturnStranded): jobs executing
//   under this node's name that no part of the node holds — a claim or probe claim that
//   committed while its reply was lost, a hand-back that failed. They go back unspent (none
//   was sent) once claimed over lease_ms ago, so a stranded job is back within two leases
//   (30 s at the defaults; docs/fleet.md, "Stranded jobs").
//
// A thread of its own, so that a database call that hangs (an unreachable server: see the
// database timeouts in docs/configuration.md) never keeps the node's main thread from its
// signals: the main thread reads the Lease and answer_pending_for() instead.
//
// Threads: the keeper's thread (a ServiceThread, started by the constructor) owns the
// connection and calls `held` (which must be safe from any thread); the accessors are atomics,
// for any thread. The destructor joins the thread, which may wait for a database call in
// progress to end (bounded by the connection's timeouts). A failed heartbeat is retried after a
// fixed second rather than ServiceThread's backoff: the lease is at stake, and a heartbeat is one
// small statement.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "fleet_store.h"
#include "lease.h"
#include "metrics.h"
#include "service_thread.h"
#include "store_connection.h"

namespace bulkhead {

class LeaseKeeper {
 public:
  struct Options {
    std::string database;                 // libpq connection string
    Pooling pooling = Pooling::kSession;  // kTransaction: `database` is a transaction pooler
    std::string node;
    std::chrono::milliseconds lease{15000};
    // What RegisterNode writes when the node registers again.
    std::string host;
    int pid = 0;
    std::string version;
    std::vector<std::string> tiers;
    // Every job the node holds in memory (in flight, waiting for the writer or a 410's
    // disable), read just before each stranded-job sweep.
    std::function<std::vector<int64_t>()> held;
    Metrics* metrics = nullptr;  // stranded jobs returned; nullptr records nothing
  };

  // Starts the thread; the first heartbeat is one period away (the node has just registered).
  LeaseKeeper(Options options, Lease& lease);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // No more stranded-job sweeps (the node is stopping: its parts hand back what they hold, and
  // `held` may no longer be called). Returns once a sweep reading `held` has finished.
  void StopSweeping();

  // No more heartbeats, and a heartbeat in progress that finds no row does not register the
  // node again: the node is about to remove its row (a clean stop), which must stay removed.
  void StopHeartbeats() { heartbeats_ = false; }

  // Whether the last heartbeat succeeded.
  bool heartbeat_ok() const { return heartbeat_ok_.load(); }
  // How long the database call in progress has waited for its answer; 0 when none is.
  std::chrono::milliseconds answer_pending_for(std::chrono::steady_clock::time_point now) const;
  // Jobs returned by the sweep, since start.
  uint64_t stranded_returned() const { return stranded_returned_.load(); }

 private:
  void Run();
  void Heartbeat(FleetStore& store, std::chrono::steady_clock::time_point now);
  void ReturnStranded(FleetStore& store);

  // Constant after construction.
  const Options options_;
  Lease& lease_;

  std::mutex mu_;  // service_'s: the keeper waits under it for its next beat or stop
  // Held while `held` is called; sweeping_ is guarded by it.
  std::mutex sweep_mu_;
  bool sweeping_ = true;

  std::atomic<bool> heartbeats_{true};
  std::atomic<bool> heartbeat_ok_{true};
  // When the call in progress started; time_point::max() when none is.
  std::atomic<std::chrono::steady_clock::time_point> call_started_{
      std::chrono::steady_clock::time_point::max()};
  std::atomic<uint64_t> stranded_returned_{0};

  ServiceThread service_{mu_};  // the keeper's thread: started last, joined first
};

}  // namespace bulkhead
