// The breaker bench's modes (`bulkhead-load breaker MODE`, load/bench/benches.h describes each),
// the arguments they share, and what they set up alike: a channel of its own tenant on tier
// `default`, a backlog through enqueue_many. Each mode runs on the calling thread (plus threads
// of its own), starts from an empty bulkhead schema in args.database (it migrates down and up),
// and throws what pqxx throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace bulkhead::bench {

struct BreakerArgs {
  std::string mode;
  std::string database;
  int backlog = 10000;   // dead
  int concurrency = 10;  // dead
  int seconds = 15;      // dead: the least time watched after t = 0
  int available = 5000;  // claim
  int extra = 1000000;   // claim: parked (b) or completed (c) rows
  int drains = 3;        // claim
};

// Returns 0 when the breaker opened and the whole backlog was parked, else 1 (breaker_dead.cc).
int Dead(const BreakerArgs& args);
// Returns 0 when every case drained; throws when a claim came back empty (breaker_claim.cc).
int Claim(const BreakerArgs& args);

// The payload of every delivery the breaker bench enqueues: about 90 bytes.
constexpr const char* kPayload =
    R"({"type": "invoice.paid", "text": "a message of about a hundred bytes, like a chat note"})";

struct Channel {
  int64_t tenant = 0;
  int64_t id = 0;
};

// A tenant named `tenant` on tier `default` and one channel of it to `url`.
Channel MakeChannel(pqxx::connection& conn, const std::string& tenant, const std::string& url);

// Enqueues `n` deliveries of kPayload to `channel` with enqueue_many, 1,000 per call and
// transaction.
void EnqueueMany(pqxx::connection& conn, int64_t channel, int n);

// One statement outside a transaction block (VACUUM, CREATE DATABASE).
void Sql(pqxx::connection& conn, const std::string& statement);

}  // namespace bulkhead::bench
