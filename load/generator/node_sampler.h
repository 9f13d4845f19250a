// NodeSampler: polls every node's /readyz and /metrics every 250 ms on a thread of its own, so
// that a scenario can say afterwards what an operator would have seen of each node while the
// database failed over (the failover scenario, fleet_scenarios.h). Not the dead channel's
// Sampler (sampler.h), which watches a channel in PostgreSQL.
//
// Construction waits up to 10 s for every node's /readyz to answer (any status), throwing
// std::runtime_error naming a node that does not, then starts the thread; Stop() (or the
// destructor) joins it. Samples() may be called from any thread: the samples are guarded by a
// mutex.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bulkhead::load {

struct NodeView {
  std::string name;
  std::string base_url;  // http://127.0.0.1:PORT, its metrics_listen
  pid_t pid = 0;
};

// "http://" + the metrics_listen of the node config at `config`; throws when it has none.
std::string MetricsUrl(const std::filesystem::path& config);

// The sum of a metric's samples over all its label sets in a Prometheus text exposition.
double MetricSum(const std::string& text, const std::string& name);

// What the sampler saw of one node at one moment.
struct NodeSample {
  int64_t at_us = 0;
  size_t node = 0;
  long readyz = 0;  // HTTP status; 0: no answer
  std::string reasons;
  double leader = -1;  // bulkhead_leader; -1 when /metrics did not answer
  double db_errors = 0, reconnects = 0;
};

class NodeSampler {
 public:
  explicit NodeSampler(std::vector<NodeView> nodes);
  ~NodeSampler() { Stop(); }
  void Stop();
  std::vector<NodeSample> Samples();

 private:
  void Loop();

  // Constant after construction
  const std::vector<NodeView> nodes_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  // Guarded by mu_
  std::mutex mu_;
  std::vector<NodeSample> samples_;
};

}  // namespace bulkhead::load
