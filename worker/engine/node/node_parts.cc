#include "node_parts.h"

#include <unistd.h>

#include <chrono>
#include <utility>
#include <vector>

#include "logger.h"
#include "network_guard.h"
#include "node_start.h"
#include "version.h"

namespace bulkhead {
namespace {

BreakerKeeper::Options KeeperOptions(const Config& config, const NodeDatabases& databases,
                                     Metrics* record) {
  BreakerKeeper::Options options{databases.traffic(), config.tiers};
  options.pooling = databases.traffic_pooling();
  options.metrics = record;
  return options;
}

Maintenance::Options MaintenanceOptions(const NodeOptions& node, const NodeDatabases& databases,
                                        Metrics* record) {
  Maintenance::Options options{databases.session, node.node,
                               std::chrono::milliseconds(node.retention_ms)};
  options.metrics = record;
  // With a pool, the leader's is the one session a follower would hold besides its LISTEN.
  options.close_when_following = !databases.pool.empty();
  return options;
}

// The sender's options, with the warning that a test switch is on in production.
HttpSender::Options SenderOptions(const NodeOptions& node, Metrics& metrics) {
  HttpSender::Options options;
  std::vector<Network> allowed;
  for (const std::string& cidr : node.allowed_networks) {
    // Validated by LoadConfig already; parsed again here into the guard's form.
    allowed.push_back(std::get<Network>(ParseCidr(cidr)));
  }
  options.guard = NetworkGuard(std::move(allowed));
  options.tls_verify = !node.tls_insecure_skip_verify;
  metrics.SetTlsVerifyDisabled(node.tls_insecure_skip_verify);
  if (node.tls_insecure_skip_verify) {
    // Every start, at warn: a switch for test setups must never sit unnoticed in production.
    Log(LogLevel::kWarn, "tls_verification_disabled",
        {{"detail",
          "tls_insecure_skip_verify is true: HTTPS endpoints' certificates and host names are "
          "NOT verified, so anyone on the path can read and forge deliveries. For test setups "
          "only (bulkhead_tls_verify_disabled is 1)"}});
  }
  return options;
}

}  // namespace

NodeParts::NodeParts(const Config& config, const NodeDatabases& databases, Metrics& metrics,
                     Metrics* record, Lease& lease)
    : writer({.database = databases.traffic(),
              .node = config.node.node,
              .batch_size = config.node.completion_batch_size,
              .flush_interval = std::chrono::milliseconds(config.node.completion_flush_ms),
              .metrics = record,
              .pooling = databases.traffic_pooling()}),
      keeper(KeeperOptions(config, databases, record)),
      maintenance(MaintenanceOptions(config.node, databases, record)),
      sender(std::make_unique<HttpSender>(SenderOptions(config.node, metrics))) {
  const NodeOptions& options = config.node;
  for (const auto& tier : config.tiers) {
    StoreRunnerStore& store =
        *runner_stores
             .emplace(tier.name,
                      std::make_unique<StoreRunnerStore>(databases.traffic(), "claim:" + tier.name,
                                                         databases.traffic_pooling()))
             .first->second;
    runners.emplace(tier.name,
                    std::make_unique<QueueRunner>(
                        QueueRunner::Options{tier, options.node,
                                             std::chrono::milliseconds(options.poll_interval_ms),
                                             record, &lease},
                        store, *sender, writer, keeper));
  }
  listener = std::make_unique<WakeupListener>(
      databases.session,
      [this](const std::string& q) {
        if (q.empty()) {
          for (auto& [name, runner] : runners) runner->Wake();
        } else if (auto it = runners.find(q); it != runners.end()) {
          it->second->Wake();
        }
      },
      [this](const std::string& payload) { keeper.Learn(payload); });

  LeaseKeeper::Options lease_options;
  lease_options.database = databases.traffic();
  lease_options.pooling = databases.traffic_pooling();
  lease_options.node = options.node;
  lease_options.lease = std::chrono::milliseconds(options.lease_ms);
  lease_options.host = HostName();
  lease_options.pid = getpid();
  lease_options.version = kVersion;
  for (const auto& tier : config.tiers) lease_options.tiers.push_back(tier.name);
  // The runners before the writer: a result reaches the writer before its job leaves the
  // runner, so a job on its way between the two is seen in one or the other. A result the
  // writer commits after this read is seen committed by the sweep's statement, which runs
  // after it.
  lease_options.held = [this] {
    std::vector<int64_t> held;
    for (const auto& [name, runner] : runners) runner->HeldJobs(&held);
    writer.HeldJobs(&held);
    return held;
  };
  lease_options.metrics = record;
  lease_keeper = std::make_unique<LeaseKeeper>(std::move(lease_options), lease);
}

size_t NodeParts::in_flight() const {
  size_t n = 0;
  for (const auto& [name, runner] : runners) n += runner->in_flight();
  return n;
}

}  // namespace bulkhead
