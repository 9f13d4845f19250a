// The commit → receipt latency of the engine bench's steady traffic (`latency`, `isolation`):
// the deliveries an application commits at a steady rate (SteadyTraffic), when each reached the
// receiver (Arrivals), and their percentiles (Latencies).
//
// Arrivals is safe for concurrent use: the receiver's thread records, the bench's thread reads.
// SteadyTraffic runs on the calling thread with the caller's connection and throws what pqxx
// throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace bulkhead::bench {

using Clock = std::chrono::steady_clock;

// webhook-id → when its COMMIT returned in the application.
using Committed = std::map<std::string, Clock::time_point>;

// Commit -> receipt latencies of a phase, sorted, in ms; a delivery not received counts as
// +infinity, so that it ranks above every received one.
struct Latencies {
  std::vector<double> ms;
  size_t received = 0;

  // As the latency mode has always ranked: the element at floor(p × n). (The generator's
  // Percentile, phase_stats.h, is nearest-rank: the benches' figures keep their own rank so
  // that they compare with the ones published.)
  double Percentile(double p) const {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  }
  double Max() const { return ms.empty() ? 0.0 : ms.back(); }
};

// "12.34 ms", "1234 ms", or "not received" for +infinity.
std::string FormatMs(double ms);

// The receiver's arrival time of each delivery, by webhook-id; filled on its thread.
class Arrivals {
 public:
  void Record(const std::string& id, Clock::time_point at);
  // How many of `committed` have arrived.
  size_t Count(const Committed& committed) const;
  // Waits until every one of `committed` has arrived or `timeout` passed.
  void WaitFor(const Committed& committed, std::chrono::milliseconds timeout) const;
  Latencies Of(const Committed& committed) const { return BySecond(committed).all; }
  // The same, and split by the second of the phase in which each was committed.
  struct Split {
    Latencies all;
    std::vector<Latencies> seconds;
  };
  Split BySecond(const Committed& committed) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Clock::time_point> at_;  // guarded by mu_
};

// Enqueues `rate` deliveries a second to `channel` for `seconds`, each in its own
// transaction, like an application. Returns webhook-id → when its COMMIT returned.
Committed SteadyTraffic(pqxx::connection& conn, int64_t channel, int rate, int seconds);

}  // namespace bulkhead::bench
