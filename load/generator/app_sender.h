// The application side of a scenario: deliveries enqueued the way an application enqueues
// them, each through `SELECT bulkhead.enqueue(...)` in its own short transaction, with the
// send time stamped into the payload ("sent_at_us", Unix µs, taken just before BEGIN) so the
// mock provider can measure send → receive.
//
// Both functions block the calling thread until done and run their own threads, one pqxx
// connection each; nothing is shared between calls. An enqueue that fails is counted and its
// first error kept; the run goes on (a scenario decides whether that voids it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bulkhead::load {

struct SentMessage {
  int64_t job_id = 0;           // the webhook-id the provider will see
  int64_t sent_at_us = 0;       // Unix µs, as stamped in the payload
  int64_t committed_at_us = 0;  // Unix µs, when COMMIT returned (pick-up latency starts here)
  int64_t channel = 0;
};

struct SendReport {
  std::vector<SentMessage> sent;  // committed deliveries, in no particular order
  int errors = 0;
  std::string first_error;
  int64_t started_us = 0;   // the first send
  int64_t finished_us = 0;  // the last commit
};

// `conversations` conversations, each sending `rate` messages a second for `duration`, to
// `channel`; conversation k starts k/(conversations × rate) s after `start`, so the sends are
// spread evenly rather than in bursts. The conversations share `connections` connections
// (conversation k uses connection k mod connections), as an application's pool would. A send
// that falls behind its schedule goes at once; its stamp is the real send time.
struct ConversationOptions {
  std::string database;
  int64_t channel = 0;
  int conversations = 50;
  double rate = 1;
  std::chrono::seconds duration{90};
  int connections = 10;
  std::string phase;  // written into each payload, for whoever reads the provider's log
};
SendReport RunConversations(const ConversationOptions& options,
                            std::chrono::system_clock::time_point start);

// `total` deliveries to `channel` as fast as `concurrency` connections can enqueue them, one
// transaction each (the seed's backlog of activities created by concurrent processes).
SendReport RunBacklog(const std::string& database, int64_t channel, int total, int concurrency);

// `rate` deliveries a second in all, from `start` until `duration` has passed, send i going to
// channels[i mod channels.size()] (list a channel several times to give it a larger share), one
// transaction each, spread evenly over the second; send i goes on connection i mod
// `connections`. Made to outlast the database: a send that fails is counted and not retried
// (the application saw the error), and its connection is opened again, at most every 100 ms,
// before the next send — so a database restart costs the sends of its outage, not the run.
struct SteadyOptions {
  std::string database;
  std::vector<int64_t> channels;
  double rate = 200;
  std::chrono::seconds duration{60};
  int connections = 10;
  std::string phase;
  // When set, sending ends early once it reads true (checked before each send): for a
  // scenario whose length depends on how long its events take.
  const std::atomic<bool>* stop = nullptr;
};
SendReport RunSteady(const SteadyOptions& options, std::chrono::system_clock::time_point start);

int64_t NowUs();

}  // namespace bulkhead::load
