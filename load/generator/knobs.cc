#include "knobs.h"

#include <algorithm>
#include <charconv>
#include <regex>

namespace bulkhead::load {
namespace {

template <typename T>
bool Read(const KnobLookup& lookup, const std::string& name, T min, T max, T& out,
          std::string& error) {
  auto value = lookup(name);
  if (!value || value->empty()) return true;
  T parsed{};
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), parsed);
  if (ec != std::errc() || end != value->data() + value->size() || parsed < min || parsed > max) {
    error = name + ": must be a number from " + std::to_string(min) + " to " + std::to_string(max) +
            ", not '" + *value + "'";
    return false;
  }
  out = parsed;
  return true;
}

// LOAD_PROFILE into `profile`; false with `error` set when it is neither full nor smoke.
bool ReadProfile(const KnobLookup& lookup, std::string& profile, std::string& error) {
  if (auto value = lookup("LOAD_PROFILE"); value && !value->empty()) {
    if (*value != "full" && *value != "smoke") {
      error = "LOAD_PROFILE: must be full or smoke, not '" + *value + "'";
      return false;
    }
    profile = *value;
  }
  return true;
}

}  // namespace

std::optional<DeadChannelKnobs> DeadChannelKnobsFrom(const KnobLookup& lookup, std::string& error) {
  DeadChannelKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.conversations = 10;
    k.duration_s = 30;
    k.backlog = 1000;
  }
  if (!Read(lookup, "LOAD_DEAD_CONVERSATIONS", 1, 10000, k.conversations, error) ||
      !Read(lookup, "LOAD_DEAD_RATE", 0.01, 1000.0, k.rate, error) ||
      !Read(lookup, "LOAD_DEAD_DURATION_S", 1, 3600, k.duration_s, error) ||
      !Read(lookup, "LOAD_DEAD_BACKLOG", 0, 10'000'000, k.backlog, error) ||
      !Read(lookup, "LOAD_DEAD_BACKLOG_CONCURRENCY", 1, 100, k.backlog_concurrency, error) ||
      !Read(lookup, "LOAD_DRAIN_TIMEOUT_S", 1, 3600, k.drain_timeout_s, error)) {
    return std::nullopt;
  }
  if (auto tier = lookup("LOAD_DEAD_TIER"); tier && !tier->empty()) {
    if (!std::regex_match(*tier, std::regex("[a-z][a-z0-9_]{0,62}"))) {
      error = "LOAD_DEAD_TIER: not a tier name: '" + *tier + "'";
      return std::nullopt;
    }
    k.dead_tier = *tier;
  }
  return k;
}

std::optional<ThroughputKnobs> ThroughputKnobsFrom(const KnobLookup& lookup, std::string& error) {
  ThroughputKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") k.jobs = 20000;
  if (!Read(lookup, "LOAD_THROUGHPUT_JOBS", 1, 10'000'000, k.jobs, error) ||
      !Read(lookup, "LOAD_THROUGHPUT_CHANNELS", 1, 10000, k.channels, error)) {
    return std::nullopt;
  }
  return k;
}

std::optional<LatencyKnobs> LatencyKnobsFrom(const KnobLookup& lookup, std::string& error) {
  LatencyKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") k.duration_s = 10;
  if (!Read(lookup, "LOAD_LATENCY_RATE", 0.1, 1000.0, k.rate, error) ||
      !Read(lookup, "LOAD_LATENCY_DURATION_S", 1, 3600, k.duration_s, error)) {
    return std::nullopt;
  }
  return k;
}

std::optional<HostileKnobs> HostileKnobsFrom(const KnobLookup& lookup, std::string& error) {
  HostileKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.conversations = 10;
    k.duration_s = 30;
    k.backlog = 300;
  }
  if (!Read(lookup, "LOAD_HOSTILE_CONVERSATIONS", 1, 10000, k.conversations, error) ||
      !Read(lookup, "LOAD_HOSTILE_RATE", 0.01, 1000.0, k.rate, error) ||
      !Read(lookup, "LOAD_HOSTILE_DURATION_S", 1, 3600, k.duration_s, error) ||
      !Read(lookup, "LOAD_HOSTILE_BACKLOG", 0, 1'000'000, k.backlog, error) ||
      !Read(lookup, "LOAD_DRAIN_TIMEOUT_S", 1, 3600, k.drain_timeout_s, error)) {
    return std::nullopt;
  }
  if (auto value = lookup("LOAD_HOSTILE_OFFENDERS"); value && !value->empty()) {
    std::string list = *value + ",";
    for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
      std::string name = list.substr(at, comma - at);
      if (std::find(kHostileOffenders.begin(), kHostileOffenders.end(), name) ==
          kHostileOffenders.end()) {
        error = "LOAD_HOSTILE_OFFENDERS: '" + name + "' is not one of";
        for (std::string_view known : kHostileOffenders) {
          error += (known == kHostileOffenders.front() ? " " : ", ") + std::string(known);
        }
        return std::nullopt;
      }
      k.offenders.push_back(name);
    }
  }
  return k;
}

std::optional<BurstKnobs> BurstKnobsFrom(const KnobLookup& lookup, std::string& error) {
  BurstKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.burst = 2000;
    k.duration_s = 15;
  }
  if (!Read(lookup, "LOAD_BURST_SIZE", 1, 10'000'000, k.burst, error) ||
      !Read(lookup, "LOAD_BURST_CONCURRENCY", 1, 100, k.concurrency, error) ||
      !Read(lookup, "LOAD_BURST_TENANTS", 1, 1000, k.tenants, error) ||
      !Read(lookup, "LOAD_BURST_RATE", 0.01, 1000.0, k.rate, error) ||
      !Read(lookup, "LOAD_BURST_DURATION_S", 1, 3600, k.duration_s, error)) {
    return std::nullopt;
  }
  return k;
}

namespace {

// The knobs common to crash and pg_restart, under LOAD_<prefix>_*.
std::optional<FleetKnobs> FaultKnobsFrom(const KnobLookup& lookup, const std::string& prefix,
                                         std::string& error) {
  FleetKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") k.jobs = 5000;
  if (!Read(lookup, "LOAD_" + prefix + "_JOBS", 100, 10'000'000, k.jobs, error) ||
      !Read(lookup, "LOAD_" + prefix + "_CHANNELS", 1, 10000, k.channels, error) ||
      !Read(lookup, "LOAD_" + prefix + "_NODES", 1, 16, k.nodes, error) ||
      !Read(lookup, "LOAD_" + prefix + (prefix == "CRASH" ? "_KILL_AT" : "_AT"), 0.05, 0.95, k.at,
            error)) {
    return std::nullopt;
  }
  return k;
}

}  // namespace

std::optional<FleetKnobs> CrashKnobsFrom(const KnobLookup& lookup, std::string& error) {
  auto k = FaultKnobsFrom(lookup, "CRASH", error);
  if (k && k->nodes < 2) {
    error = "LOAD_CRASH_NODES: must be at least 2 (one is killed, another rescues its jobs)";
    return std::nullopt;
  }
  return k;
}

std::optional<FleetKnobs> PgRestartKnobsFrom(const KnobLookup& lookup, std::string& error) {
  return FaultKnobsFrom(lookup, "PG_RESTART", error);
}

std::optional<FleetKnobs> FleetKnobsFrom(const KnobLookup& lookup, std::string& error) {
  FleetKnobs k;
  k.jobs = 50000;
  k.hang_jobs = 1000;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.jobs = 10000;
    k.hang_jobs = 300;
  }
  if (!Read(lookup, "LOAD_FLEET_JOBS", 100, 10'000'000, k.jobs, error) ||
      !Read(lookup, "LOAD_FLEET_CHANNELS", 1, 10000, k.channels, error) ||
      !Read(lookup, "LOAD_FLEET_NODES", 2, 16, k.nodes, error) ||
      !Read(lookup, "LOAD_FLEET_HANG_JOBS", 1, 1'000'000, k.hang_jobs, error)) {
    return std::nullopt;
  }
  return k;
}

std::optional<SoakKnobs> SoakKnobsFrom(const KnobLookup& lookup, std::string& error) {
  SoakKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.minutes = 2;
    k.period_s = 120;
  }
  if (!Read(lookup, "LOAD_SOAK_MINUTES", 0.5, 1440.0, k.minutes, error) ||
      !Read(lookup, "LOAD_SOAK_RATE", 1.0, 5000.0, k.rate, error) ||
      !Read(lookup, "LOAD_SOAK_CHANNELS", 1, 10000, k.channels, error) ||
      !Read(lookup, "LOAD_SOAK_NODES", 2, 16, k.nodes, error) ||
      !Read(lookup, "LOAD_SOAK_PERIOD_S", 10, 86400, k.period_s, error) ||
      !Read(lookup, "LOAD_SOAK_KILL_AT", 0.0, 0.99, k.kill_at, error) ||
      !Read(lookup, "LOAD_SOAK_RESTART_AT", 0.0, 0.99, k.restart_at, error) ||
      !Read(lookup, "LOAD_SOAK_DRAIN_S", 10, 3600, k.drain_s, error)) {
    return std::nullopt;
  }
  return k;
}

std::optional<FailoverKnobs> FailoverKnobsFrom(const KnobLookup& lookup, std::string& error) {
  FailoverKnobs k;
  if (!ReadProfile(lookup, k.profile, error)) return std::nullopt;
  if (k.profile == "smoke") {
    k.rate = 100;
    k.channels = 20;
    k.warmup_s = 10;
    k.settle_s = 20;
    // A spell past about 11 s can outlast a lease (15 s, heartbeats every 3 s, retried each
    // second): the leader rescues the read-only node's jobs and they are sent twice. The full
    // profile's 10 s sits within a second of that; the gate in CI keeps 3 s of margin.
    k.read_only_s = 8;
  }
  if (!Read(lookup, "LOAD_FAILOVER_RATE", 1.0, 2000.0, k.rate, error) ||
      !Read(lookup, "LOAD_FAILOVER_CHANNELS", 1, 10000, k.channels, error) ||
      !Read(lookup, "LOAD_FAILOVER_NODES", 1, 16, k.nodes, error) ||
      !Read(lookup, "LOAD_FAILOVER_WARMUP_S", 1, 3600, k.warmup_s, error) ||
      !Read(lookup, "LOAD_FAILOVER_SETTLE_S", 5, 3600, k.settle_s, error) ||
      !Read(lookup, "LOAD_FAILOVER_READ_ONLY_S", 1, 3600, k.read_only_s, error) ||
      !Read(lookup, "LOAD_FAILOVER_RESUME_S", 1, 3600, k.resume_s, error) ||
      !Read(lookup, "LOAD_FAILOVER_DRAIN_S", 1, 3600, k.drain_s, error)) {
    return std::nullopt;
  }
  if (auto value = lookup("LOAD_FAILOVER_REPLICATION"); value && !value->empty()) {
    if (*value != "sync" && *value != "async") {
      error = "LOAD_FAILOVER_REPLICATION: must be sync or async, not '" + *value + "'";
      return std::nullopt;
    }
    k.replication = *value;
  }
  if (k.settle_s <= k.resume_s) {
    error = "LOAD_FAILOVER_SETTLE_S: must be longer than LOAD_FAILOVER_RESUME_S (" +
            std::to_string(k.resume_s) + "), or a late resumption goes unseen";
    return std::nullopt;
  }
  return k;
}

}  // namespace bulkhead::load
