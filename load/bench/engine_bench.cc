// `bulkhead-load engine MODE …`: the engine bench's usage, options and dispatch. The modes are
// described in benches.h and live one to a file (engine_throughput.cc, engine_latency.cc,
// engine_isolation.cc, engine_churn.cc, table_bench.cc).
//
// Every mode runs tier `default` as tiers/default.json ships it (read from the file), overriding
// only the keys it varies: `workers`, `channel_share` and `tenant_share` (Tier, bench_stack.h),
// and in isolation `failure_threshold` and `slow_call_ms`. Every run prints the 1-minute load
// average before and after: the machine is shared.
#include "engine_bench.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "benches.h"
#include "options.h"
#include "table_bench.h"

namespace bulkhead::bench {
namespace {

constexpr const char* kUsage =
    "usage: bulkhead-load engine throughput|latency|isolation|churn --database URL [--jobs N] "
    "[--channels N] [--tenants N] [--workers N] [--share S] [--shares S,S,…] [--rate N] "
    "[--seconds N] [--rounds N] [--nodes N] [--old-secrets N] [--background N] "
    "[--background-tenants N] "
    "[--background-channels N] [--background-delay-ms N] [--background-tier NAME]\n"
    "       bulkhead-load engine table|shape --database URL [--jobs N] [--finished N] "
    "[--parked N]\n";

int Usage(const std::string& message) {
  std::cerr << "bulkhead-load engine: " << message << "\n" << kUsage;
  return 2;
}

std::vector<double> ParseShares(const std::string& list) {
  std::vector<double> shares;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) shares.push_back(std::stod(item));
  return shares;
}

bool ShareInRange(double s) { return s > 0.0 && s <= 1.0; }

}  // namespace

int EngineBench(const std::vector<std::string_view>& words) {
  EngineArgs args;
  if (words.empty()) return Usage("missing mode");
  if (words[0] == "-h" || words[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }
  std::string shares;
  std::vector<std::string> positional;
  std::string error = load::ReadOptions(words,
                                        {{"--database", &args.database},
                                         {"--jobs", &args.jobs, &args.jobs_given},
                                         {"--finished", &args.finished},
                                         {"--parked", &args.parked},
                                         {"--channels", &args.channels},
                                         {"--tenants", &args.tenants},
                                         {"--workers", &args.workers},
                                         {"--share", &args.share},
                                         {"--shares", &shares},
                                         {"--rate", &args.rate},
                                         {"--seconds", &args.seconds},
                                         {"--rounds", &args.rounds},
                                         {"--background", &args.background},
                                         {"--background-tenants", &args.background_tenants},
                                         {"--background-channels", &args.background_channels},
                                         {"--background-tier", &args.background_tier},
                                         {"--background-delay-ms", &args.background_delay_ms},
                                         {"--nodes", &args.nodes},
                                         {"--old-secrets", &args.old_secrets}},
                                        positional);
  if (!error.empty()) return Usage(error);
  if (positional.size() != 1) return Usage("one mode, first");
  args.mode = positional[0];
  if (args.mode != "throughput" && args.mode != "latency" && args.mode != "isolation" &&
      args.mode != "churn" && args.mode != "table" && args.mode != "shape") {
    return Usage("unknown mode");
  }
  if (args.finished < 0) return Usage("--finished must be 0 or more");
  if (args.parked < 0) return Usage("--parked must be 0 or more");
  if (!ShareInRange(args.share)) return Usage("--share must be in (0, 1]");
  if (!shares.empty()) {
    try {
      args.shares = ParseShares(shares);
    } catch (const std::logic_error&) {
      args.shares.clear();
    }
    if (args.shares.empty() || !std::all_of(args.shares.begin(), args.shares.end(), ShareInRange)) {
      return Usage("--shares must list shares in (0, 1], comma-separated");
    }
  }
  if (args.nodes < 1 || args.nodes > 16) return Usage("--nodes must be 1 to 16");
  if (args.old_secrets < 0 || args.old_secrets > 10) return Usage("--old-secrets must be 0 to 10");
  // latency keeps the shipped tier's workers unless --workers is given.
  if (args.workers == 0 && args.mode != "latency")
    args.workers = args.mode == "throughput" || args.mode == "churn" ? 200 : 20;
  if (args.seconds == 0) args.seconds = args.mode == "latency" ? 20 : 10;
  if (args.database.empty()) return Usage("--database is required");
  if (args.jobs < 1 || args.channels < 1 || args.tenants < 0 || args.workers < 0 ||
      (args.workers == 0 && args.mode != "latency") || args.rate < 1 || args.seconds < 1 ||
      args.rounds < 1 || args.background < 0 || args.background_tenants < 1 ||
      args.background_channels < args.background_tenants || args.background_delay_ms < 0) {
    return Usage("a count is out of range");
  }
  if (args.workers % args.nodes != 0) return Usage("--workers must be a multiple of --nodes");
  try {
    if (args.mode == "table" || args.mode == "shape") {
      TableArgs table{args.database, args.jobs_given ? args.jobs : 60'000, args.finished,
                      args.parked};
      if (table.jobs < 40) return Usage("--jobs must be at least 40 for table and shape");
      return args.mode == "table" ? TableBench(table) : ShapeBench(table);
    }
    if (args.mode == "throughput") return Throughput(args);
    if (args.mode == "latency") return Latency(args);
    if (args.mode == "churn") return Churn(args);
    return Isolation(args);
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-load engine: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace bulkhead::bench
