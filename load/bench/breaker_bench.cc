// `bulkhead-load breaker MODE …`: the breaker bench's usage, options and dispatch, and what its
// modes set up alike (breaker_bench.h). The modes are described in benches.h: dead
// (breaker_dead.cc) and claim (breaker_claim.cc).
#include "breaker_bench.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "benches.h"
#include "options.h"
#include "process_usage.h"

namespace bulkhead::bench {
namespace {

constexpr const char* kUsage =
    "usage: bulkhead-load breaker dead|claim --database URL [--backlog N] [--concurrency N] "
    "[--seconds N] [--available N] [--extra N] [--drains N]\n";

int Usage(const std::string& message) {
  std::cerr << "bulkhead-load breaker: " << message << "\n" << kUsage;
  return 2;
}

}  // namespace

Channel MakeChannel(pqxx::connection& conn, const std::string& tenant, const std::string& url) {
  pqxx::work tx(conn);
  Channel c;
  c.tenant = tx.exec_params1(
                   "INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, 'default') RETURNING id",
                   tenant)[0]
                 .as<int64_t>();
  c.id = tx.exec_params1(
               "INSERT INTO bulkhead.channels (tenant_id, url) VALUES ($1, $2) "
               "RETURNING id",
               c.tenant, url)[0]
             .as<int64_t>();
  tx.commit();
  return c;
}

void EnqueueMany(pqxx::connection& conn, int64_t channel, int n) {
  for (int done = 0; done < n;) {
    int batch = std::min(1000, n - done);
    pqxx::work tx(conn);
    tx.exec_params(
        "SELECT bulkhead.enqueue_many(ARRAY(SELECT $1::bigint FROM generate_series(1, $2::int)),"
        "  ARRAY(SELECT $3::jsonb FROM generate_series(1, $2::int)))",
        channel, batch, kPayload);
    tx.commit();
    done += batch;
  }
}

void Sql(pqxx::connection& conn, const std::string& statement) {
  pqxx::nontransaction tx(conn);
  tx.exec(statement);
}

int BreakerBench(const std::vector<std::string_view>& words) {
  BreakerArgs args;
  if (words.empty()) return Usage("missing mode");
  if (words[0] == "-h" || words[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }
  std::vector<std::string> positional;
  std::string error = load::ReadOptions(words,
                                        {{"--database", &args.database},
                                         {"--backlog", &args.backlog},
                                         {"--concurrency", &args.concurrency},
                                         {"--seconds", &args.seconds},
                                         {"--available", &args.available},
                                         {"--extra", &args.extra},
                                         {"--drains", &args.drains}},
                                        positional);
  if (!error.empty()) return Usage(error);
  if (positional.size() != 1) return Usage("one mode, first");
  args.mode = positional[0];
  if (args.mode != "dead" && args.mode != "claim") return Usage("unknown mode " + args.mode);
  for (int value : {args.backlog, args.concurrency, args.seconds, args.available, args.drains}) {
    if (value < 1) return Usage("a count is out of range");
  }
  if (args.extra < 0) return Usage("--extra is out of range");
  if (args.concurrency > args.backlog) return Usage("--concurrency is above --backlog");
  if (args.database.empty()) return Usage("--database is required");
  try {
    std::string load_before = testing::LoadAverage();
    int code = args.mode == "dead" ? Dead(args) : Claim(args);
    std::printf("  load average (1, 5, 15 min) before %s, after %s\n", load_before.c_str(),
                testing::LoadAverage().c_str());
    return code;
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-load breaker: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace bulkhead::bench
