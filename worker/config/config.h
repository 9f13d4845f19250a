// Configuration: the node's JSON config file and the tier files it serves (docs/configuration.md).
//
// `bulkhead run --config FILE` reads one JSON object for the node (NodeOptions) and one JSON
// object per served tier, each in its own file `<tiers_dir>/<tier>.json` (TierOptions). Every key
// is optional: its default is written beside its field below, and nowhere else. Each key's name,
// type, range and reload rule is one row of the tables in config_keys.h, which the readers and
// each struct's Validate() walk, and which tests/config_keys_test.cc holds
// docs/configuration.md to. Anything else — an unknown or repeated key, a wrong JSON type, a value
// out of range, a tier file that is not named like a tier — refuses the whole configuration, with
// the file, the key and the reason: a node never starts on a half-understood config.
//
// Where the node keys go: `allowed_networks` and `tls_insecure_skip_verify` into the
// HttpSender's options (the SSRF guard, network_guard.h, and TLS verification); CIDRs are
// parsed by network_guard.h's ParseCidr, the one CIDR parser. `metrics_listen` is where the
// node's status server (status_server.h: /metrics, /healthz, /readyz) listens.
//
// Reads files and, for the default node name, the host name and pid; keeps no state. Safe to
// call from any thread. Expected failures (a missing file, bad JSON, a bad value) are returned
// as ConfigError values; nothing here throws but std::bad_alloc.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "retry_policy.h"

namespace bulkhead {

// Why a configuration was refused.
struct ConfigError {
  std::string file;    // the config or tier file (or tiers folder) at fault
  std::string key;     // the key, "retry_delays_ms[2]" for an entry; empty for the whole file
  std::string reason;  // "must be an integer from 1 to 10000, not 0"

  // "<file>: <key>: <reason>", or "<file>: <reason>" when key is empty.
  std::string Message() const;
};

// The retry schedule of kDefaultRetryDelays, in the milliseconds of a tier file.
std::vector<int64_t> DefaultRetryDelaysMs();

// One tier: one queue, and how a node works it. Read from `<tiers_dir>/<name>.json`.
struct TierOptions {
  // The tier's file name without .json; ^[a-z][a-z0-9_]{0,62}$, the database's rule.
  std::string name;

  // Deliveries in flight at once for this tier, per node. 1..10000.
  int workers = 200;

  // Share of `workers` one channel may hold on a node. (0, 1]; 1 is no cap. The cap is
  // floor(share × workers), at least 1 and at most workers − 1 (CapLedger).
  double channel_share = 0.5;

  // Share of `workers` all channels of one tenant together may hold on a node. (0, 1]; 1 is no
  // cap. Rounded like channel_share.
  double tenant_share = 0.5;

  // Share of `workers` that lending never takes (ADR 0013): a claim may lend idle slots past
  // the caps to channels that answer quickly, while nobody else has due work, but leaves
  // ceil(share × workers), at least 1, free for everyone else. (0, 1]; 1 is no lending (strict
  // caps). Lending needs slow start, so it is off with channel_share 1 too.
  double reserve_share = 0.1;

  // Failures in a row, on this node, that open a channel's breaker: timeouts, connection
  // errors, 5xx and 429 answers; attempts in flight longer than slow_call_ms count too.
  // 1..1000. See BreakerBoard.
  int failure_threshold = 5;

  // An attempt still in flight after this long counts as a failure toward failure_threshold
  // while it lasts, so a hanging endpoint opens its breaker before its requests time out.
  // 1..3600000; at or above request_timeout_ms the rule is off. Endpoints that legitimately
  // answer slower than this under concurrent load need a tier with a higher value.
  int64_t slow_call_ms = 2000;

  // An attempt still in flight after this long gives its worker slot back, so that endpoints
  // that hang or answer slowly cannot hold every slot of the tier: the request goes on (it
  // costs a socket, not a thread) and still counts toward its channel's and tenant's caps.
  // At most 4 × workers requests of the tier are released so at once; past that they keep
  // their slots. 1..3600000; at or above request_timeout_ms slots are never released.
  int64_t stalled_after_ms = 500;

  // How long an open breaker waits before one probe, in ms. 1000..86400000 (1 s..24 h).
  int64_t cooldown_ms = 30000;

  // The cooldown doubles after each failed probe, up to this, in ms. cooldown_ms..86400000.
  int64_t cooldown_max_ms = 600000;

  // Connecting (TCP and TLS) to a channel's endpoint, in ms. 1..600000.
  int64_t connect_timeout_ms = 3000;

  // A whole attempt, connecting included, in ms. 1..3600000, and ≥ connect_timeout_ms.
  int64_t request_timeout_ms = 10000;

  // The wait after each failed attempt, in ms; past the end the last repeats (RetryPolicy).
  // 1..100 entries of 1..604800000 (7 days). Default 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
  std::vector<int64_t> retry_delays_ms = DefaultRetryDelaysMs();

  // Each retry delay is spread uniformly over ±this share of it. 0..1.
  double retry_jitter = kDefaultRetryJitter;  // 0.1

  // The longest wait a 429 or 503 answer's Retry-After may impose, in ms: the job's next
  // attempt waits max(its retry delay, min(Retry-After, this)), and its channel's waiting jobs
  // are pushed to no earlier than that. 0..604800000 (7 days); 0 ignores Retry-After. Default
  // 1 h: long enough for a provider's hourly rate-limit window, short enough that an endpoint
  // cannot stall a channel for days by asking.
  int64_t retry_after_max_ms = 3'600'000;

  // The first bad field, with an empty ConfigError::file; std::nullopt when all are good.
  std::optional<ConfigError> Validate() const;
};

// One worker node: which database, which tiers, and its own limits.
struct NodeOptions {
  // libpq connection string or URL. Empty: not set, and `--database`, DATABASE_URL or libpq's
  // PG* variables decide (docs/cli.md, "Common rules").
  std::string database;

  // A pooler in transaction mode (PgBouncer's pool_mode = transaction) in front of the same
  // database, as a libpq connection string or URL. Empty: not used. When set, the claim, result,
  // breaker and lease connections go through it (pooled_connection.h); the LISTEN, the leader
  // and the node's start and stop stay on `database`, which must then give a session.
  std::string database_pool;

  // This node's name in bulkhead.nodes, unique in the fleet. 1..200 characters.
  std::string node = DefaultNodeName();  // "<host name>-<pid>"

  // The folder of the tier files. A relative path is relative to the config file's folder;
  // LoadConfig stores it resolved. Not empty.
  std::string tiers_dir = "tiers";

  // Where the Prometheus endpoint listens: "host:port" or "[ipv6]:port", port 1..65535.
  std::string metrics_listen = "127.0.0.1:9464";

  // CIDR networks the SSRF guard (network_guard.h) lets through although private, loopback,
  // link-local or otherwise denied ("127.0.0.0/8" and "::1/128" for a loopback mock). Empty:
  // only public addresses are dialled. Host bits past the prefix are refused.
  std::vector<std::string> allowed_networks;

  // Test setups only: send HTTPS without verifying the endpoint's certificate or host name.
  // Logged as a warning at every start and exported as bulkhead_tls_verify_disabled 1.
  bool tls_insecure_skip_verify = false;

  // The tiers this node serves, each with a file in tiers_dir. Empty: every *.json there.
  std::vector<std::string> tiers;

  // After the first SIGTERM, how long in-flight deliveries may finish, in ms. 0..600000.
  int64_t shutdown_grace_ms = 10000;

  // How often a tier is polled for due work when no NOTIFY wakes it, in ms. 10..60000.
  int64_t poll_interval_ms = 1000;

  // Finished jobs written back per statement, at most. 1..10000.
  int completion_batch_size = 500;

  // The longest a finished job waits for its batch to be written, in ms. 1..1000.
  int64_t completion_flush_ms = 5;

  // This node's lease, in ms: it heartbeats every lease_ms / 5, and when its heartbeat is
  // older than this, the leader returns its executing jobs to the queue. 3000..600000.
  int64_t lease_ms = 15000;

  // How long finished jobs (completed, discarded, cancelled) are kept before the leader
  // prunes them, in ms. 60000 (1 min)..31536000000 (365 days); default 7 days.
  int64_t retention_ms = 604'800'000;

  // The database connections' timeouts and keepalives (session_settings.h), in ms; 0 leaves
  // libpq's default (wait for ever). A connection attempt: 0..600000.
  int64_t database_connect_timeout_ms = 5000;
  // A statement the server runs, at most: 0..3600000.
  int64_t database_statement_timeout_ms = 60000;
  // Data sent and not acknowledged (the server gone mid-statement): 0..600000.
  int64_t database_tcp_user_timeout_ms = 10000;
  // An idle connection's silence before keepalive probes (every fifth of it, 3 unanswered
  // and the connection is dead): 0..7200000.
  int64_t database_keepalive_idle_ms = 10000;

  // The first bad field, with an empty ConfigError::file; std::nullopt when all are good.
  std::optional<ConfigError> Validate() const;

  // "<host name>-<pid>": the default of `node`.
  static std::string DefaultNodeName();
};

struct Config {
  NodeOptions node;                // node.tiers_dir is resolved against the config file's folder
  std::vector<TierOptions> tiers;  // the served tiers only, sorted by name; never empty
  std::filesystem::path file;      // the config file, as given
};

// Reads and validates the node config `file` and the tiers it serves.
std::variant<Config, ConfigError> LoadConfig(const std::filesystem::path& file);

// Reads and validates the tier files in `dir`: `<name>.json` for each of `names`, or every
// *.json file there when `names` is empty (then a file not named like a tier is an error, and
// so is finding none). Sorted by name. Also what a reload reads again.
std::variant<std::vector<TierOptions>, ConfigError> LoadTiers(
    const std::filesystem::path& dir, const std::vector<std::string>& names);

}  // namespace bulkhead
