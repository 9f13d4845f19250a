// The engine bench's modes (`bulkhead-load engine MODE`, load/bench/benches.h describes each)
// and the arguments they share. Each mode runs on the calling thread (plus threads of its
// own), starts from an empty bulkhead schema in args.database (it migrates down and up), prints
// its figures with the load average around them, and returns 0 when every delivery arrived,
// else 1. They throw what pqxx throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bulkhead::bench {

struct EngineArgs {
  std::string mode;
  std::string database;
  int jobs = 100000;                        // throughput
  int channels = 20;                        // throughput
  int tenants = 0;                          // throughput: 0 is one tenant per channel
  int workers = 0;                          // 0: the mode's default (throughput 200, else 20)
  double share = 0.5;                       // throughput
  std::vector<double> shares = {0.5, 1.0};  // isolation
  int rate = 50;                            // latency, isolation
  int seconds = 0;                          // 0: the mode's default (latency 20, isolation 10)
  int rounds = 10;                          // churn: rounds of `jobs` deliveries
  int old_secrets = 0;                      // throughput: old secrets per channel
  int nodes = 1;                            // throughput: nodes sharing `workers` evenly
  int background = 0;                       // latency: a busy tenant's burst, enqueued first
  int background_tenants = 1;               // latency: the busy tenants
  int background_channels = 20;             // latency: the busy tenants' channels, in all
  int background_delay_ms = 0;              // latency: how long the busy endpoints take
  std::string background_tier;              // latency: the busy tenants' tier ("": default)
  int64_t finished = 10'000'000;            // table: finished jobs beside the burst
  int64_t parked = 1'000'000;               // table: parked jobs beside the burst
  bool jobs_given = false;                  // table, shape: --jobs given (else 60,000)
};

int Throughput(const EngineArgs& args);  // engine_throughput.cc
int Churn(const EngineArgs& args);       // engine_churn.cc
int Latency(const EngineArgs& args);     // engine_latency.cc
int Isolation(const EngineArgs& args);   // engine_isolation.cc

}  // namespace bulkhead::bench
