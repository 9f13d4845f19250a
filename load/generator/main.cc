// bulkhead-load: the load generator and scenario driver of the load harness. It plays the
// application (deliveries through bulkhead.enqueue, one transaction each), drives a scenario
// against a running node and mock provider, and writes the results. load/run.sh starts the
// stack and calls it; docs/load.md describes the scenarios, knobs and results.
//
//   bulkhead-load dead_channel --database URL --mock URL [--results-dir DIR] [--node NAME]
//                              [--commit TEXT]
//   bulkhead-load report RESULTS.json    # print the tables again, rewrite the .html beside it
//   bulkhead-load engine MODE --database URL [options]    # the benches of single parts
//   bulkhead-load breaker dead|claim --database URL [options]  (load/bench/benches.h)
//
// Scenarios:
//   dead_channel  docs/load.md, the seed study: a healthy tenant's latency with and without another
//                 tenant's dead endpoint (load/generator/dead_channel.h). Knobs: LOAD_PROFILE,
//                 LOAD_DEAD_* (load/generator/knobs.h).
//   webhook_burst, throughput, latency, hostile   load/generator/scenarios.h; knobs
//                 LOAD_BURST_*, LOAD_THROUGHPUT_*, LOAD_LATENCY_*, LOAD_HOSTILE_* (knobs.h).
//   crash, pg_restart, fleet, soak   load/generator/fleet_scenarios.h: they start nodes of
//                 their own (--bulkhead, --node-config, --run-dir) and pg_restart and soak
//                 restart the database (--pg-restart); knobs LOAD_CRASH_*, LOAD_PG_RESTART_*,
//                 LOAD_FLEET_*, LOAD_SOAK_*.
//   failover      load/generator/fleet_scenarios.h: on load/run.sh's replicated pair
//                 (load/replicated_postgres.sh, through --pg-control); knobs LOAD_FAILOVER_*.
//
// Exit status: 0 the gate passed, 1 it failed (or the stack was unusable), 2 usage error.
#include <curl/curl.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "benches.h"
#include "dead_channel.h"
#include "exit_codes.h"
#include "fleet_scenarios.h"
#include "knobs.h"
#include "options.h"
#include "report.h"
#include "scenarios.h"
#include "version.h"

namespace {

constexpr const char* kUsage = R"(usage: bulkhead-load SCENARIO --database URL --mock URL [options]
       bulkhead-load report RESULTS.json
       bulkhead-load series RESULTS.json...
       bulkhead-load engine MODE --database URL [options]   (bulkhead-load engine --help)
       bulkhead-load breaker dead|claim --database URL [options]

Plays the application against a running bulkhead node and bulkhead-mock, measures, and writes
<results-dir>/<UTC date>-<scenario>[-<tier mode>].json and an .html report beside it.
load/run.sh starts the whole stack and calls this; see docs/load.md.

scenarios (webhook_burst, throughput and latency pass when every delivery arrives exactly once):
  dead_channel   a healthy tenant alone (baseline), then beside a dead tenant's backlog (dead);
                 gate: dead p95 <= max(baseline p95 x 1.2, baseline p95 + 50 ms), every healthy
                 message exactly once, the breaker opened

  webhook_burst  a burst on one busy channel drained while other tenants send
  throughput     drain a burst to /hook/fast over several channels: deliveries/s, node CPU
  latency        pick-up latency (COMMIT -> request) at a steady low rate
  hostile        dead_channel's healthy tenant beside six misbehaving tenants at once (500,
                 5 s answers, refused, 429 + Retry-After, 1 MiB body, dripping body); gate:
                 dead_channel's p95 gate, healthy exactly once, no misbehaving job missing
  crash          3 nodes drain a burst, one is killed with SIGKILL: nothing lost, repeats only
                 of jobs it held, the rescue time
  pg_restart     PostgreSQL restarts mid-burst: nothing lost, every node carries on
  fleet          1 node vs 3 on one burst; a hanging channel: the cap on every node, and one
                 open breaker stops the whole fleet
  soak           3 nodes under a steady 200/s over 50 channels, a dead and a throttled one,
                 a SIGKILL and a PostgreSQL restart every 10 min for 30 min: nothing lost,
                 repeats only of jobs killed nodes held, latency per 10 min, the table sizes
  failover       a primary and a synchronous standby under a steady 200/s over 50 channels:
                 the primary killed and the standby promoted, the old primary rewound and
                 switched back to, 10 s read-only; per event: nothing committed lost, repeats
                 only of jobs in flight, deliveries again within 15 s, leader, leases and an
                 open breaker carried over, /readyz and the metrics during the outage
  report         print a kept result's tables again and rewrite its .html report beside it
  series         one row per kept dead_channel result, side by side (a series of runs)

benches of single parts, each against a database of its own (load/engine_bench.sh and
load/breaker_bench.sh start one; load/bench/benches.h describes every mode and option):
  engine         throughput, latency, isolation, churn, table, shape: the delivery engine
  breaker        dead, claim: the circuit breaker on a dead endpoint, the claim beside dead rows

options:
  --database URL      the database the node works (libpq string or URL)
  --mock URL          the mock provider, e.g. http://127.0.0.1:8090
  --results-dir DIR   where results go (default load/results)
  --node NAME         wait for this node to register and check it serves the tiers used
  --commit TEXT       recorded in the results (load/run.sh passes the git commit)
  --bulkhead PATH     the bulkhead binary, for the nodes crash, pg_restart, fleet, soak start
  --node-config FILE  the config those nodes copy (load/run.sh's node config)
  --run-dir DIR       where their configs and logs go
  --pg-restart CMD    a shell command that restarts the database (pg_restart, soak)
  --pg-control CMD    the replicated cluster's control, "{}" standing for the action (failover;
                      load/run.sh passes load/replicated_postgres.sh {} DIR)
  -h, --help          show this help
  --version           print the version

knobs (environment):
  LOAD_PROFILE=full|smoke (full), LOAD_DEAD_CONVERSATIONS (50; smoke 10), LOAD_DEAD_RATE (1),
  LOAD_DEAD_DURATION_S (90; smoke 30), LOAD_DEAD_BACKLOG (10000; smoke 1000),
  LOAD_DEAD_BACKLOG_CONCURRENCY (10), LOAD_DEAD_TIER=default|bulk (default),
  LOAD_DRAIN_TIMEOUT_S (30); LOAD_BURST_SIZE (10000; smoke 2000), LOAD_BURST_CONCURRENCY (10),
  LOAD_BURST_TENANTS (10), LOAD_BURST_RATE (5), LOAD_BURST_DURATION_S (30; smoke 15);
  LOAD_THROUGHPUT_JOBS (100000; smoke 20000), LOAD_THROUGHPUT_CHANNELS (20);
  LOAD_LATENCY_RATE (50), LOAD_LATENCY_DURATION_S (20; smoke 10);
  LOAD_CRASH_JOBS (20000; smoke 5000), LOAD_CRASH_CHANNELS (20), LOAD_CRASH_NODES (3),
  LOAD_CRASH_KILL_AT (0.3); LOAD_PG_RESTART_JOBS, _CHANNELS, _NODES, _AT (the same);
  LOAD_FLEET_JOBS (50000; smoke 10000), LOAD_FLEET_CHANNELS (20), LOAD_FLEET_NODES (3),
  LOAD_FLEET_HANG_JOBS (1000; smoke 300); LOAD_SOAK_MINUTES (30; smoke 2), LOAD_SOAK_RATE (200),
  LOAD_SOAK_CHANNELS (50), LOAD_SOAK_NODES (3), LOAD_SOAK_PERIOD_S (600; smoke 120),
  LOAD_SOAK_KILL_AT (0.3), LOAD_SOAK_RESTART_AT (0.7), LOAD_SOAK_DRAIN_S (180);
  LOAD_FAILOVER_REPLICATION=sync|async (sync), LOAD_FAILOVER_RATE (200; smoke 100),
  LOAD_FAILOVER_CHANNELS (50; smoke 20), LOAD_FAILOVER_NODES (2), LOAD_FAILOVER_WARMUP_S (20;
  smoke 10), LOAD_FAILOVER_SETTLE_S (30; smoke 20), LOAD_FAILOVER_READ_ONLY_S (10; smoke 8),
  LOAD_FAILOVER_RESUME_S (15), LOAD_FAILOVER_DRAIN_S (120)
)";

int Usage(const std::string& message) {
  std::cerr << "bulkhead-load: " << message << " (try: bulkhead-load --help)\n";
  return bulkhead::kExitUsage;
}

// `bulkhead-load report FILE`: the report of a kept result, from its JSON alone.
int Report(const std::vector<std::string_view>& args) {
  if (args.size() != 2) return Usage("report takes one results file");
  std::filesystem::path path(args[1]);
  std::ifstream in(path);
  auto result = nlohmann::json::parse(in, nullptr, false);
  if (!in || result.is_discarded() || result.value("scenario", "") != "dead_channel") {
    std::cerr << "bulkhead-load: " << path.string() << ": not a dead_channel results file\n";
    return bulkhead::kExitFailure;
  }
  auto html = std::filesystem::path(path).replace_extension(".html");
  std::ofstream(html) << bulkhead::load::HtmlReport(result);
  std::cout << bulkhead::load::TextReport(result) << "\nreport:  " << html.string() << "\n";
  return result["gate"]["pass"].get<bool>() ? bulkhead::kExitOk : bulkhead::kExitFailure;
}

// `bulkhead-load series FILE...`: kept dead_channel results side by side.
int Series(const std::vector<std::string_view>& args) {
  if (args.size() < 2) return Usage("series takes one or more results files");
  std::vector<nlohmann::json> results;
  std::vector<std::string> names;
  for (size_t i = 1; i < args.size(); ++i) {
    std::filesystem::path path(args[i]);
    std::ifstream in(path);
    auto result = nlohmann::json::parse(in, nullptr, false);
    if (!in || result.is_discarded() || result.value("scenario", "") != "dead_channel") {
      std::cerr << "bulkhead-load: " << path.string() << ": not a dead_channel results file\n";
      return bulkhead::kExitFailure;
    }
    results.push_back(std::move(result));
    names.push_back(path.stem().string());
  }
  std::cout << bulkhead::load::SeriesTable(results, names);
  for (const auto& r : results) {
    if (!r["gate"]["pass"].get<bool>()) return bulkhead::kExitFailure;
  }
  return bulkhead::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "report") return Report(args);
  if (!args.empty() && args[0] == "series") return Series(args);
  if (!args.empty() && (args[0] == "engine" || args[0] == "breaker")) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    signal(SIGPIPE, SIG_IGN);
    std::vector<std::string_view> words(args.begin() + 1, args.end());
    return args[0] == "engine" ? bulkhead::bench::EngineBench(words)
                               : bulkhead::bench::BreakerBench(words);
  }
  for (std::string_view a : args) {
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return bulkhead::kExitOk;
    }
    if (a == "--version") {
      std::cout << "bulkhead-load " << bulkhead::kVersion << "\n";
      return bulkhead::kExitOk;
    }
  }
  bulkhead::load::ScenarioContext context;
  context.results_dir = "load/results";
  std::string node_config, run_dir;  // the fleet's, kept as paths in context.fleet
  std::vector<std::string> positional;
  std::string option_error = bulkhead::load::ReadOptions(args,
                                                         {{"--database", &context.database},
                                                          {"--mock", &context.mock_url},
                                                          {"--results-dir", &context.results_dir},
                                                          {"--node", &context.node},
                                                          {"--commit", &context.commit},
                                                          {"--bulkhead", &context.fleet.bulkhead},
                                                          {"--pg-restart", &context.pg_restart},
                                                          {"--pg-control", &context.pg_control},
                                                          {"--node-config", &node_config},
                                                          {"--run-dir", &run_dir}},
                                                         positional);
  if (!option_error.empty()) return Usage(option_error);
  if (positional.size() > 1)
    return Usage("one scenario at a time, not also '" + positional[1] + "'");
  const std::string scenario = positional.empty() ? "" : positional[0];
  context.fleet.node_config = node_config;
  context.fleet.run_dir = run_dir;
  context.fleet.database = context.database;
  const std::string kScenarios =
      "dead_channel, webhook_burst, throughput, latency, hostile, crash, pg_restart, fleet, soak, "
      "failover";
  if (scenario.empty()) return Usage("missing scenario (" + kScenarios + ")");
  if (context.database.empty()) return Usage("--database is required");
  if (context.mock_url.empty()) return Usage("--mock is required");
  while (context.mock_url.ends_with('/')) context.mock_url.pop_back();

  bulkhead::load::KnobLookup lookup = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  // Each scenario reads its own knobs; a bad one is a usage error before anything starts.
  std::string error;
  std::function<int()> run;
  if (scenario == "dead_channel") {
    if (auto k = bulkhead::load::DeadChannelKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunDeadChannel(context, k); };
    }
  } else if (scenario == "throughput") {
    if (auto k = bulkhead::load::ThroughputKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunThroughput(context, k); };
    }
  } else if (scenario == "latency") {
    if (auto k = bulkhead::load::LatencyKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunLatency(context, k); };
    }
  } else if (scenario == "webhook_burst") {
    if (auto k = bulkhead::load::BurstKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunWebhookBurst(context, k); };
    }
  } else if (scenario == "hostile") {
    if (auto k = bulkhead::load::HostileKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunHostile(context, k); };
    }
  } else if (scenario == "crash") {
    if (auto k = bulkhead::load::CrashKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunCrash(context, k); };
    }
  } else if (scenario == "pg_restart") {
    if (auto k = bulkhead::load::PgRestartKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunPgRestart(context, k); };
    }
  } else if (scenario == "fleet") {
    if (auto k = bulkhead::load::FleetKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunFleet(context, k); };
    }
  } else if (scenario == "soak") {
    if (auto k = bulkhead::load::SoakKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunSoak(context, k); };
    }
  } else if (scenario == "failover") {
    if (auto k = bulkhead::load::FailoverKnobsFrom(lookup, error)) {
      run = [&context, k = *k] { return bulkhead::load::RunFailover(context, k); };
    }
  } else {
    return Usage("unknown scenario '" + scenario + "' (" + kScenarios + ")");
  }
  if (!run) return Usage(error);

  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-load: " << scenario << ": " << e.what() << "\n";
    return bulkhead::kExitFailure;
  }
}
