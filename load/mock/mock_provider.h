// MockProvider: the load harness's webhook receiver, an asynchronous HTTP/1.1 server on
// Boost.Asio/Beast that stands in for every tenant's endpoint at once.
//
// It serves the /hook/ routes of route_behaviour.h (healthy, hang-dead, fast, and misbehaviour
// by query parameters) and, for the harness, the control routes under /_mock/:
//
//   GET  /_mock/health                      200 "ok"
//   GET  /_mock/stats                       RequestLog::Stats() plus open/accepted connections
//   GET  /_mock/records?since=N&limit=M&route=R   RequestLog::Records() (limit default 10000)
//   POST /_mock/reset                       forget every record and counter
//   POST /_mock/secrets                     body: a JSON array of "whsec_…" secrets to check
//                                           webhook-signature against (replaces the list)
//
// Anything else answers 404; a bad /hook/ parameter 400 with the reason.
//
// Why Asio: a connection costs a socket and a few hundred bytes of session, never a thread, so
// a few thousand connections that are never answered (the dead provider) sit beside the
// thousands of answers a second of the healthy ones on two cores. A session lives as long as
// its connection: a hanging request keeps reading its socket only to learn when the client
// gives up, and is then no longer in flight.
//
// Threads: Start() runs the io_context on `threads` threads; each connection's handlers run on
// its own strand, one at a time. Stop() (or the destructor) stops them and closes every
// connection; call it from a thread that is not one of them. port(), log() are safe anywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "request_log.h"

namespace bulkhead::mock {

struct MockOptions {
  std::string host = "127.0.0.1";    // an IPv4 or IPv6 address to listen on
  int port = 8090;                   // 0: an ephemeral port (see MockProvider::port())
  int threads = 2;                   // I/O threads, 1..64
  std::vector<std::string> secrets;  // webhook secrets to check signatures against
  uint64_t seed = 0;                 // random delays and failures; 0: seeded from the clock
  size_t max_records = 10'000'000;   // records kept before further ones are dropped (counted)

  // The first bad field as "--<flag>: reason"; empty when all are good.
  std::string Validate() const;
};

class MockProvider {
 public:
  // Binds and listens (so port() is known and connections queue up at once); serves nothing
  // until Start(). Throws boost::system::system_error if the address cannot be bound.
  explicit MockProvider(MockOptions options);
  ~MockProvider();
  MockProvider(const MockProvider&) = delete;
  MockProvider& operator=(const MockProvider&) = delete;

  void Start();
  void Stop();

  int port() const;
  RequestLog& log();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bulkhead::mock
