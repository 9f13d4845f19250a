// StatusServer: the node's HTTP listener on `metrics_listen` — GET /metrics (the Prometheus
// text exposition), /healthz (the process is alive) and /readyz (the node can do its work).
//
// Why a listener of our own, not prometheus-cpp's Exposer: the Exposer (civetweb) serves only
// registered collectables, and the probes must answer on the same port with a status chosen
// per request (503 while not ready). Boost.Beast is already a dependency (load/mock/), and a
// one-thread HTTP/1.1 server that serializes the registry with prometheus::TextSerializer is
// ~150 lines. Every connection is answered and closed (no keep-alive): a scrape every 15 s
// and a probe every few seconds do not need it, and it keeps every connection's life to one
// request, bounded by a 5 s deadline, so a client that never sends cannot hold the thread.
//
//   /metrics  200, text/plain; version=0.0.4 — Metrics::Scrape()
//   /healthz  200 "ok" — answered by the server thread, so it proves the process runs and
//             serves; it checks nothing else (a liveness probe must not restart a node for a
//             database outage)
//   /readyz   200 "ready", or 503 with {"ready": false, "reasons": [...]} from the readiness
//             callback (Node: database reachable, LISTEN connection up, every claim loop
//             running)
//   other     404; a method other than GET or HEAD: 405
//
// Threads: one thread of its own runs the io_context; the callbacks run on it and must be
// safe to call from it (both only read atomics and locked state). Construction binds (or
// reports why not); destruction stops the thread within one poll.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>  // status_server.cc includes this first: Asio 1.74's awaitable.hpp needs it
#include <vector>

namespace bulkhead {

class StatusServer {
 public:
  // Returns an empty list when ready, otherwise one sentence per reason.
  using Readiness = std::function<std::vector<std::string>()>;
  using Scrape = std::function<std::string()>;

  // Binds `listen` (host:port, IPv6 in brackets). On failure, ok() is false and error() says
  // why; no thread is started.
  StatusServer(const std::string& listen, Scrape scrape, Readiness readiness);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  bool ok() const;
  const std::string& error() const;
  // The bound port (the one asked for; useful in tests).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bulkhead
