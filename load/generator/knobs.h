// DeadChannelKnobs: the dead_channel scenario's settings, read from the environment with the
// seed study's names and defaults (design §5). Pure; safe from any thread.
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

#include <functional>
#include <optional>
#include <string>

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

// `lookup(name)` returns a variable's value (std::getenv in main, a map in tests). Returns the
// knobs, or sets `error` to "LOAD_X: reason" and returns std::nullopt.
std::optional<DeadChannelKnobs> DeadChannelKnobsFrom(
    const std::function<std::optional<std::string>(const std::string&)>& lookup,
    std::string& error);

}  // namespace bulkhead::load
