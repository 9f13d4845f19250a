// DeadChannelKnobs: the dead_channel scenario's settings, read from the environment with the
// seed study's names and defaults (docs/load.md). Pure; safe from any thread.
//
//   LOAD_PROFILE                   full (default) | smoke: 10 conversations, 30 s, backlog 1,000
//   LOAD_DEAD_CONVERSATIONS        healthy conversations                      (50;  smoke 10)
//   LOAD_DEAD_RATE                 messages a second per conversation         (1)
//   LOAD_DEAD_DURATION_S           seconds each phase sends                   (90;  smoke 30)
//   LOAD_DEAD_BACKLOG              deliveries to the dead channel             (10000; smoke 1000)
//   LOAD_DEAD_BACKLOG_CONCURRENCY  connections creating the backlog           (10)
//   LOAD_DEAD_TIER                 the dead tenant's tier: default (shared with the healthy
//                                  tenant) or bulk (separate tiers)           (default)
//   LOAD_DRAIN_TIMEOUT_S           how long after a phase's last send its messages may still
//                                  arrive before they count as lost           (30)
//
// A value set explicitly wins over the profile's.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bulkhead::load {

struct DeadChannelKnobs {
  std::string profile = "full";
  int conversations = 50;
  double rate = 1;
  int duration_s = 90;
  int backlog = 10000;
  int backlog_concurrency = 10;
  std::string dead_tier = "default";
  int drain_timeout_s = 30;

  // "shared" when the dead tenant is on the healthy tenant's tier (default), else "separate".
  std::string tier_mode() const { return dead_tier == "default" ? "shared" : "separate"; }
};

using KnobLookup = std::function<std::optional<std::string>(const std::string&)>;

// `lookup(name)` returns a variable's value (std::getenv in main, a map in tests). Returns the
// knobs, or sets `error` to "LOAD_X: reason" and returns std::nullopt.
std::optional<DeadChannelKnobs> DeadChannelKnobsFrom(const KnobLookup& lookup, std::string& error);

// throughput: drain a burst to /hook/fast over several channels, on the default tier.
//   LOAD_THROUGHPUT_JOBS      deliveries (100000; smoke 20000)
//   LOAD_THROUGHPUT_CHANNELS  channels, one tenant each, sharing the burst equally (20)
struct ThroughputKnobs {
  std::string profile = "full";
  int jobs = 100000;
  int channels = 20;
};
std::optional<ThroughputKnobs> ThroughputKnobsFrom(const KnobLookup& lookup, std::string& error);

// latency: pick-up latency at a steady low rate, one channel to /hook/fast, default tier.
//   LOAD_LATENCY_RATE        deliveries a second, each its own transaction (50)
//   LOAD_LATENCY_DURATION_S  seconds (20; smoke 10)
struct LatencyKnobs {
  std::string profile = "full";
  double rate = 50;
  int duration_s = 20;
};
std::optional<LatencyKnobs> LatencyKnobsFrom(const KnobLookup& lookup, std::string& error);

// webhook_burst: one busy channel's burst drained while other tenants send, default tier.
//   LOAD_BURST_SIZE         deliveries in the busy channel's burst (10000; smoke 2000)
//   LOAD_BURST_CONCURRENCY  connections creating the burst (10)
//   LOAD_BURST_TENANTS      other tenants, one channel and one conversation each (10)
//   LOAD_BURST_RATE         messages a second per other tenant (5)
//   LOAD_BURST_DURATION_S   seconds the other tenants send, from the burst's start (30; smoke 15)
// The busy channel's endpoint is /hook/busy?delay_ms=20-30, the others' /hook/others?...: the
// healthy provider's timing, under two routes so the mock counts them apart.
struct BurstKnobs {
  std::string profile = "full";
  int burst = 10000;
  int concurrency = 10;
  int tenants = 10;
  double rate = 5;
  int duration_s = 30;
};
std::optional<BurstKnobs> BurstKnobsFrom(const KnobLookup& lookup, std::string& error);

// hostile: the healthy tenant of dead_channel alone (baseline), then beside six misbehaving
// tenants at once (hostile), each with a backlog started with the phase, on the default tier:
// an endpoint answering 500 at once, one answering after 5 s, one refusing connections, one
// answering 429 with Retry-After, one with a 1 MiB body, one dripping its body a byte a second.
//   LOAD_HOSTILE_CONVERSATIONS, LOAD_HOSTILE_RATE, LOAD_HOSTILE_DURATION_S   the healthy
//                            tenant's traffic, as dead_channel's (50, 1, 90; smoke 10, 1, 30)
//   LOAD_HOSTILE_BACKLOG     deliveries to each misbehaving channel (2000; smoke 300)
//   LOAD_DRAIN_TIMEOUT_S     as dead_channel's (30)
struct HostileKnobs {
  std::string profile = "full";
  int conversations = 50;
  double rate = 1;
  int duration_s = 90;
  int backlog = 2000;
  int drain_timeout_s = 30;
  // LOAD_HOSTILE_OFFENDERS: the misbehaving tenants to run, by name (kHostileOffenders);
  // empty is all six. Fewer is for finding which one a failed gate is owed to.
  std::vector<std::string> offenders;
};
// The hostile scenario's misbehaving tenants, in the order it runs them: the names
// LOAD_HOSTILE_OFFENDERS accepts. hostile.cc gives each its endpoint, and refuses to start if
// its list and this one differ.
inline constexpr std::array<std::string_view, 6> kHostileOffenders = {
    "error500", "slow", "throttled", "huge", "drip", "refused"};
std::optional<HostileKnobs> HostileKnobsFrom(const KnobLookup& lookup, std::string& error);

// The fleet scenarios (fleet_scenarios.h). Each drains a burst to /hook/healthy (20–30 ms per
// answer, so many requests are in flight at any moment) or /hook/fast over several channels on
// the default tier, with `nodes` nodes in all: load/run.sh's node and nodes - 1 of its own.
//
// crash: one of the scenario's own nodes is killed with SIGKILL mid-burst.
//   LOAD_CRASH_JOBS      deliveries in the burst (20000; smoke 5000)
//   LOAD_CRASH_CHANNELS  channels sharing it (20)
//   LOAD_CRASH_NODES     nodes in all (3)
//   LOAD_CRASH_KILL_AT   the fraction of the burst delivered when the kill comes (0.3)
// pg_restart: PostgreSQL is restarted (fast shutdown) mid-burst.
//   LOAD_PG_RESTART_JOBS, LOAD_PG_RESTART_CHANNELS, LOAD_PG_RESTART_NODES,
//   LOAD_PG_RESTART_AT   as above (20000; smoke 5000 / 20 / 3 / 0.3)
// fleet: the same burst to /hook/fast drained by one node and then by `nodes`; then a hanging
// channel against the per-node cap and the fleet-wide breaker.
//   LOAD_FLEET_JOBS      deliveries in each burst (50000; smoke 10000)
//   LOAD_FLEET_CHANNELS  channels sharing it (20)
//   LOAD_FLEET_NODES     nodes in the second drain (3)
//   LOAD_FLEET_HANG_JOBS backlog of the hanging channel (1000; smoke 300)
struct FleetKnobs {
  std::string profile = "full";
  int jobs = 20000;
  int channels = 20;
  int nodes = 3;
  double at = 0.3;    // crash, pg_restart: when the fault comes, as a fraction delivered
  int hang_jobs = 0;  // fleet only
};
std::optional<FleetKnobs> CrashKnobsFrom(const KnobLookup& lookup, std::string& error);
std::optional<FleetKnobs> PgRestartKnobsFrom(const KnobLookup& lookup, std::string& error);
std::optional<FleetKnobs> FleetKnobsFrom(const KnobLookup& lookup, std::string& error);

// soak (fleet_scenarios.h): `nodes` nodes under a steady enqueue rate for `minutes`, with a
// SIGKILL and a PostgreSQL restart every `period_s`.
//   LOAD_SOAK_MINUTES     how long the application enqueues (30; smoke 2)
//   LOAD_SOAK_RATE        deliveries a second in all, each its own transaction (200)
//   LOAD_SOAK_CHANNELS    healthy channels (/hook/healthy) sharing them (50); a dead channel
//                         and a throttled one get one share each beside them
//   LOAD_SOAK_NODES       nodes in all, load/run.sh's included (3, at least 2)
//   LOAD_SOAK_PERIOD_S    one kill and one restart per period; also the latency windows
//                         (600; smoke 120)
//   LOAD_SOAK_KILL_AT     when in each period the kill comes, as a fraction of it (0.3)
//   LOAD_SOAK_RESTART_AT  when in each period PostgreSQL restarts (0.7)
//   LOAD_SOAK_DRAIN_S     how long after the last enqueue the healthy deliveries may still
//                         arrive before they count as lost (180)
struct SoakKnobs {
  std::string profile = "full";
  double minutes = 30;
  double rate = 200;
  int channels = 50;
  int nodes = 3;
  int period_s = 600;
  double kill_at = 0.3;
  double restart_at = 0.7;
  int drain_s = 180;
};
std::optional<SoakKnobs> SoakKnobsFrom(const KnobLookup& lookup, std::string& error);

// failover (fleet_scenarios.h): a steady stream through a multi-host connection string while
// the primary is killed and its standby promoted, the old primary rewound and switched back to,
// and the primary made read-only for a spell.
//   LOAD_FAILOVER_REPLICATION  sync: the gate, nothing committed lost; async: the lost tail
//                              measured and reported, not gated (sync)
//   LOAD_FAILOVER_RATE         deliveries a second in all, each its own transaction
//                              (200; smoke 100)
//   LOAD_FAILOVER_CHANNELS     healthy channels (/hook/healthy) sharing them; one failing
//                              channel (/hook/failing, 500) gets one share beside them
//                              (50; smoke 20)
//   LOAD_FAILOVER_NODES        nodes in all, load/run.sh's included (2)
//   LOAD_FAILOVER_WARMUP_S     steady sending before the first event (20; smoke 10)
//   LOAD_FAILOVER_SETTLE_S     steady sending after each event's return before it is judged
//                              (30; smoke 20)
//   LOAD_FAILOVER_READ_ONLY_S  how long the primary stays read-only (10; smoke 8)
//   LOAD_FAILOVER_RESUME_S     the gate's limit from the database's return to the first
//                              delivery of an enqueue committed after it (15)
//   LOAD_FAILOVER_DRAIN_S      how long after the last enqueue deliveries may still arrive
//                              before they count as lost (120)
struct FailoverKnobs {
  std::string profile = "full";
  std::string replication = "sync";
  double rate = 200;
  int channels = 50;
  int nodes = 2;
  int warmup_s = 20;
  int settle_s = 30;
  int read_only_s = 10;
  int resume_s = 15;
  int drain_s = 120;
};
std::optional<FailoverKnobs> FailoverKnobsFrom(const KnobLookup& lookup, std::string& error);

}  // namespace bulkhead::load
