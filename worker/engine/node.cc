#include "node.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string_view>

#include "breaker_keeper.h"
#include "completion_writer.h"
#include "database_connection.h"
#include "exit_codes.h"
#include "fleet_store.h"
#include "http_sender.h"
#include "lease.h"
#include "lease_keeper.h"
#include "logger.h"
#include "maintenance.h"
#include "metrics.h"
#include "migrations.h"
#include "migrator.h"
#include "network_guard.h"
#include "queue_runner.h"
#include "session_settings.h"
#include "status_server.h"
#include "stop_deadline.h"
#include "store_connection.h"
#include "version.h"
#include "wakeup_listener.h"

namespace bulkhead {
namespace {

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// Waits up to `timeout` for a blocked signal; 0 when none came.
int WaitForSignal(std::chrono::milliseconds timeout) {
  sigset_t set = StopSignals();
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1'000'000)};
  int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
  }
  return "signal";
}

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

namespace {

// A stop's time after the grace: the hand-back, the completion writer's drain (up to 10 s) and
// removing the node's row. docs/operations.md's TimeoutStopSec is the grace + this and more.
constexpr std::chrono::milliseconds kStopDrain{15000};

DatabaseTimeouts TimeoutsOf(const NodeOptions& node) {
  return {node.database_connect_timeout_ms, node.database_statement_timeout_ms,
          node.database_tcp_user_timeout_ms, node.database_keepalive_idle_ms};
}

}  // namespace

Node::Node(Config config, std::string database)
    : config_(std::move(config)),
      database_(WithSessionSettings(database, TimeoutsOf(config_.node))) {}

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
  try {
    std::unique_ptr<pqxx::connection> conn = OpenConnection(database_, "node");
    Migrator migrator(*conn, EmbeddedMigrations());
    int version = migrator.DatabaseVersion();
    if (version != migrator.BinaryVersion()) {
      Log(LogLevel::kError, "schema_mismatch",
          {{"database_version", version},
           {"binary_version", migrator.BinaryVersion()},
           {"hint", version < migrator.BinaryVersion() ? "run: bulkhead migrate up"
                                                       : "run a bulkhead release that knows "
                                                         "the database's schema"}});
      return kExitFailure;
    }
    store.Get().RegisterTiers(tier_names);
    // A node restarting under its old name (a fixed `node`) finds the jobs its previous life
    // left executing: they would look alive under the new lease, so they go back first.
    Rescue own = store.Get().RescueLost(options.node);
    if (own.jobs > 0) {
      if (record) record->rescued().Increment(static_cast<double>(own.jobs));
      Log(LogLevel::kWarn, "jobs_rescued",
          {{"jobs", own.jobs},
           {"discarded", own.discarded},
           {"nodes", own.nodes},
           {"detail",
            "returned jobs left executing by nodes without a lease (this node's "
            "previous run among them) to the queue"}});
    }
    const auto sent = std::chrono::steady_clock::now();
    store.Get().RegisterNode(options.node, HostName(), getpid(), kVersion, tier_names,
                             options.lease_ms);
    lease.Renewed(sent);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "start_failed", {{"error", FirstLine(e.what())}});
    return kExitFailure;
  }

  // Declaration order is destruction order reversed: the sender goes first, so no callback
  // outlives the runners, and the keeper and writer outlive the runners that feed them.
  CompletionWriter writer({database_, options.node, options.completion_batch_size,
                           std::chrono::milliseconds(options.completion_flush_ms), record});
  BreakerKeeper::Options keeper_options{database_, config_.tiers};
  keeper_options.metrics = record;
  BreakerKeeper keeper(keeper_options);
  Maintenance::Options maintenance_options{database_, options.node,
                                           std::chrono::milliseconds(options.retention_ms)};
  maintenance_options.metrics = record;
  Maintenance maintenance(maintenance_options);
  // Each runner's own connection, used only by its thread: declared first, so it outlives it.
  std::map<std::string, std::unique_ptr<StoreConnection<ClaimStore>>> runner_stores;
  std::map<std::string, std::unique_ptr<QueueRunner>> runners;
  HttpSender::Options sender_options;
  std::vector<Network> allowed;
  for (const std::string& cidr : options.allowed_networks) {
    // Validated by LoadConfig already; parsed again here into the guard's form.
    allowed.push_back(std::get<Network>(ParseCidr(cidr)));
  }
  sender_options.guard = NetworkGuard(std::move(allowed));
  sender_options.tls_verify = !options.tls_insecure_skip_verify;
  metrics.SetTlsVerifyDisabled(options.tls_insecure_skip_verify);
  if (options.tls_insecure_skip_verify) {
    // Every start, at warn: a switch for test setups must never sit unnoticed in production.
    Log(LogLevel::kWarn, "tls_verification_disabled",
        {{"detail",
          "tls_insecure_skip_verify is true: HTTPS endpoints' certificates and host names are "
          "NOT verified, so anyone on the path can read and forge deliveries. For test setups "
          "only (bulkhead_tls_verify_disabled is 1)"}});
  }
  auto sender = std::make_unique<HttpSender>(std::move(sender_options));
  for (const auto& tier : config_.tiers) {
    StoreConnection<ClaimStore>& store =
        *runner_stores
             .emplace(tier.name, std::make_unique<StoreConnection<ClaimStore>>(
                                     database_, "claim:" + tier.name))
             .first->second;
    runners.emplace(tier.name,
                    std::make_unique<QueueRunner>(
                        QueueRunner::Options{tier, options.node,
                                             std::chrono::milliseconds(options.poll_interval_ms),
                                             record, &lease},
                        store, *sender, writer, keeper));
  }
  auto listener = std::make_unique<WakeupListener>(
      database_,
      [&runners](const std::string& q) {
        if (q.empty()) {
          for (auto& [name, runner] : runners) runner->Wake();
        } else if (auto it = runners.find(q); it != runners.end()) {
          it->second->Wake();
        }
      },
      [&keeper](const std::string& payload) { keeper.Learn(payload); });

  LeaseKeeper::Options lease_options;
  lease_options.database = database_;
  lease_options.node = options.node;
  lease_options.lease = std::chrono::milliseconds(options.lease_ms);
  lease_options.host = HostName();
  lease_options.pid = getpid();
  lease_options.version = kVersion;
  lease_options.tiers = tier_names;
  // The runners before the writer: a result reaches the writer before its job leaves the
  // runner, so a job on its way between the two is seen in one or the other. A result the
  // writer commits after this read is seen committed by the sweep's statement, which runs
  // after it.
  lease_options.held = [&runners, &writer] {
    std::vector<int64_t> held;
    for (const auto& [name, runner] : runners) runner->HeldJobs(&held);
    writer.HeldJobs(&held);
    return held;
  };
  lease_options.metrics = record;
  auto lease_keeper = std::make_unique<LeaseKeeper>(std::move(lease_options), lease);

  // The status server's callbacks run on its thread. They read the parts under parts_mu and
  // only while `serving`: the first stop signal clears it before any part goes away.
  std::mutex parts_mu;
  bool serving = true;  // guarded by parts_mu
  std::vector<const Metrics::Tier*> tier_metrics;
  for (const auto& tier : config_.tiers) tier_metrics.push_back(&metrics.ForTier(tier.name));
  auto scrape = [&] {
    {
      std::lock_guard lock(parts_mu);
      if (serving) {
        size_t i = 0;
        for (const auto& tier : config_.tiers) {
          const QueueRunner& runner = *runners.at(tier.name);
          tier_metrics[i]->inflight->Set(static_cast<double>(runner.in_flight()));
          tier_metrics[i]->workers->Set(runner.workers());
          tier_metrics[i]->stalled->Set(static_cast<double>(runner.stalled()));
          ++i;
        }
      }
    }
    return metrics.Scrape();
  };
  auto readiness = [&] {
    std::vector<std::string> reasons;
    std::lock_guard lock(parts_mu);
    if (!serving) return std::vector<std::string>{"draining: the node is stopping"};
    const auto now = std::chrono::steady_clock::now();
    if (!lease_keeper->heartbeat_ok()) reasons.push_back("database: the last heartbeat failed");
    // A call that hangs fails no heartbeat: one that waited longer than a heartbeat period
    // says the database does not answer.
    if (auto waited = lease_keeper->answer_pending_for(now);
        waited > std::chrono::milliseconds(options.lease_ms / 5)) {
      reasons.push_back("database: no answer for " + std::to_string(waited.count()) + " ms");
    }
    if (!lease.Held(now)) {
      reasons.push_back("lease: no heartbeat has landed for most of a lease; not claiming");
    }
    if (!listener->connected()) reasons.push_back("listen: the LISTEN connection is down");
    for (const auto& [name, runner] : runners) {
      if (!runner->claim_loop_healthy()) {
        reasons.push_back("claim loop " + name + ": not running, or its last claim failed");
      }
    }
    // Results waiting with none written (completion_writer.h): the heartbeat may pass while the
    // writer cannot write, and a saturated writer stops the claims.
    if (CompletionWriter::Progress p = writer.progress(); p.stalled) {
      reasons.push_back(p.Describe());
    }
    return reasons;
  };
  StatusServer status(options.metrics_listen, scrape, readiness);
  if (!status.ok()) {
    Log(LogLevel::kError, "metrics_listen_failed",
        {{"listen", options.metrics_listen},
         {"error", status.error()},
         {"detail", "no /metrics, /healthz or /readyz on this node; delivering anyway"}});
  }

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
    if (sig == SIGHUP) Reload(runners, keeper);
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

  // First stop signal: not ready any more, stop claiming, drain, hand back.
  {
    std::lock_guard lock(parts_mu);
    serving = false;
  }
  // From here the database may not answer; the deadline bounds the stop all the same.
  const auto heartbeat_every = std::chrono::milliseconds(options.lease_ms / 5);
  auto deadline_guard = std::make_unique<StopDeadline>(StopDeadline::Options{
      std::chrono::milliseconds(options.shutdown_grace_ms), kStopDrain,
      [&lease_keeper, &lease] {
        const auto now = std::chrono::steady_clock::now();
        return lease.Held(now) ? lease_keeper->answer_pending_for(now) : StopDeadline::kNoAnswer;
      },
      heartbeat_every});
  lease_keeper->StopSweeping();  // the runners hand back what they hold
  listener.reset();
  for (auto& [name, runner] : runners) runner->StopClaiming();
  auto in_flight = [&runners] {
    size_t n = 0;
    for (auto& [name, runner] : runners) n += runner->in_flight();
    return n;
  };
  Log(LogLevel::kInfo, "draining",
      {{"signal", SignalName(sig)},
       {"in_flight", in_flight()},
       {"grace_ms", options.shutdown_grace_ms},
       {"detail", std::string("got ") + SignalName(sig) + ", stopped claiming, draining " +
                      std::to_string(in_flight()) + " in-flight deliveries"}});
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.shutdown_grace_ms);
  while (in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    int again = WaitForSignal(std::chrono::milliseconds(50));
    if (again == SIGTERM || again == SIGINT) {
      Log(LogLevel::kWarn, "exiting_now",
          {{"signal", SignalName(again)},
           {"in_flight", in_flight()},
           {"detail", "second signal: exiting at once; executing jobs return by lease rescue"}});
      std::_Exit(kExitFailure);
    }
  }
  int handed_back = 0;
  nlohmann::json claims = nlohmann::json::object();
  for (auto& [name, runner] : runners) {
    handed_back += runner->HandBackInFlight();
    claims[name] = {{"claims", runner->claims()},
                    {"jobs", runner->claimed()},
                    {"probes", runner->probes()},
                    {"parked_at_claim", runner->parked_at_claim()}};
  }
  bool written = writer.Drain(std::chrono::seconds(10));
  sender.reset();  // cancels nothing that is still ours: every runner has handed back
  runners.clear();
  lease_keeper->StopHeartbeats();  // or a heartbeat could register the node again
  // Twice: the first try may find the connection the database dropped during the run.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    try {
      store.Get().RemoveNode(options.node);
      break;
    } catch (const std::exception& e) {
      store.Reset();
      if (attempt == 2) {
        Log(LogLevel::kWarn, "deregister_failed", {{"error", FirstLine(e.what())}});
      }
    }
  }
  deadline_guard.reset();  // the stop finished
  lease_keeper.reset();
  FlushRepeatedEvents(std::chrono::steady_clock::now(), true);
  Log(LogLevel::kInfo, "node_stopped",
      {{"handed_back", handed_back},
       {"claims", claims},
       {"results_written", writer.written()},
       {"all_results_written", written},
       {"detail",
        "handed back " + std::to_string(handed_back) + " unfinished deliveries; stopped"}});
  return kExitOk;
}

}  // namespace bulkhead
