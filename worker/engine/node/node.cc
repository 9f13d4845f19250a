#include "node.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>

#include "breaker_keeper.h"
#include "exit_codes.h"
#include "fleet_store.h"
#include "lease.h"
#include "logger.h"
#include "metrics.h"
#include "node_parts.h"
#include "node_start.h"
#include "node_status_page.h"
#include "node_stop.h"
#include "queue_runner.h"
#include "session_settings.h"
#include "store_connection.h"
#include "version.h"

namespace bulkhead {
namespace {

DatabaseTimeouts TimeoutsOf(const NodeOptions& node) {
  return {node.database_connect_timeout_ms, node.database_statement_timeout_ms,
          node.database_tcp_user_timeout_ms, node.database_keepalive_idle_ms};
}

}  // namespace

Node::Node(Config config, std::string database)
    : config_(std::move(config)),
      database_(WithSessionSettings(database, TimeoutsOf(config_.node))),
      pool_(config_.node.database_pool.empty()
                ? std::string()
                : WithSessionSettings(config_.node.database_pool, TimeoutsOf(config_.node))) {}

void Node::Reload(const std::map<std::string, std::unique_ptr<QueueRunner>>& runners,
                  BreakerKeeper& keeper) {
  std::vector<std::string> names;
  for (const auto& [name, runner] : runners) names.push_back(name);
  auto loaded = LoadTiers(config_.node.tiers_dir, names);
  if (auto* error = std::get_if<ConfigError>(&loaded)) {
    Log(LogLevel::kError, "reload_refused",
        {{"file", error->file},
         {"key", error->key},
         {"reason", error->reason},
         {"detail", "SIGHUP: " + error->Message() + "; the settings in force are kept"}});
    return;
  }
  nlohmann::json tiers = nlohmann::json::object();
  for (const TierOptions& tier : std::get<std::vector<TierOptions>>(loaded)) {
    runners.at(tier.name)->Reconfigure(tier);
    keeper.Reconfigure(tier);
    tiers[tier.name] = {
        {"workers", tier.workers},           {"channel_share", tier.channel_share},
        {"tenant_share", tier.tenant_share}, {"failure_threshold", tier.failure_threshold},
        {"slow_call_ms", tier.slow_call_ms}, {"request_timeout_ms", tier.request_timeout_ms}};
  }
  Log(LogLevel::kInfo, "reloaded",
      {{"tiers", tiers},
       {"detail",
        "SIGHUP: tier files read again; in-flight deliveries keep their timeouts. "
        "The set of tiers served is fixed at start: a new tier file needs a restart"}});
}

int Node::Run() {
  const NodeOptions& options = config_.node;
  SetLogNode(options.node);
  SetConnectionNode(options.node);

  std::vector<std::string> tier_names;
  for (const auto& tier : config_.tiers) tier_names.push_back(tier.name);

  // Recording off is a benchmark aid (load/engine_bench.sh metrics-cost): the parts get no
  // Metrics, so their hooks are skipped; the families are still served.
  const char* recording_env = std::getenv("BULKHEAD_METRICS_RECORDING");
  const bool recording = recording_env == nullptr || std::string_view(recording_env) != "off";
  Metrics metrics(kVersion);
  Metrics* record = recording ? &metrics : nullptr;

  StoreConnection<FleetStore> store(database_, "node");
  Lease lease{std::chrono::milliseconds(options.lease_ms)};
  if (!StartNode(store, database_, options, tier_names, lease, record)) return kExitFailure;
  // Not needed again until the stop (deregistering), which opens it anew: a node running holds
  // no idle session for it (a fleet's server connections, docs/operations.md "Connections").
  store.Close();

  NodeParts parts(config_, NodeDatabases{database_, pool_}, metrics, record, lease);
  NodeStatusPage status(config_, metrics, parts, lease);

  nlohmann::json tiers = nlohmann::json::object();
  for (const auto& tier : config_.tiers) tiers[tier.name] = {{"workers", tier.workers}};
  Log(LogLevel::kInfo, "node_started",
      {{"version", kVersion},
       {"tiers", tiers},
       {"metrics_listen", status.ok() ? options.metrics_listen : ""},
       {"metrics_recording", recording},
       {"allowed_networks", options.allowed_networks},
       {"tls_verify", !options.tls_insecure_skip_verify}});

  // Until the first stop signal: signals, the repeated events' summaries, and the lease's
  // lapse and renewal in the log. The heartbeat and the stranded-job sweep are the
  // LeaseKeeper's, on its own thread, so that a database call that hangs never keeps this
  // thread from a signal.
  int sig = 0;
  bool lapsed = false;  // logged the lease's lapse, not yet its renewal
  while (true) {
    sig = WaitForSignal(std::chrono::milliseconds(250));
    if (sig == SIGTERM || sig == SIGINT) break;
    if (sig == SIGHUP) Reload(parts.runners, parts.keeper);
    FlushRepeatedEvents();
    const bool held = lease.Held(std::chrono::steady_clock::now());
    if (!lapsed && !held) {
      lapsed = true;
      Log(LogLevel::kWarn, "lease_lapsed",
          {{"detail",
            "no heartbeat has landed for most of a lease: claims stop until one does, or "
            "another node's rescue would take what this node claims"}});
    } else if (lapsed && held) {
      lapsed = false;
      Log(LogLevel::kInfo, "lease_renewed", {{"detail", "a heartbeat landed: claiming again"}});
    }
  }
  return StopNode(sig, options, parts, status, store, lease);
}

}  // namespace bulkhead
