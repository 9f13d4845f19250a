// HttpSender: sends webhook POSTs, many at once, on one I/O thread of its own.
//
// Every request is a libcurl easy handle on one multi handle, driven by one thread that the
// sender owns: libcurl tells it which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when its
// next timeout is due (CURLMOPT_TIMERFUNCTION); the thread waits in epoll and hands each ready
// socket to curl_multi_socket_action. A request that hangs holds a socket and a few kilobytes,
// never a thread: thousands in flight cost thousands of file descriptors (raise RLIMIT_NOFILE
// in main) and nothing else. Connections are kept alive and reused across requests to the same
// host through the multi handle's connection cache.
//
// Threads: Send() and in_flight() may be called from any thread, concurrently. Send never
// touches the network: it queues the request and wakes the I/O thread (an eventfd in its epoll
// set) if the queue was empty; while it is not, a wake-up is on its way already. A claim's
// requests go in one Send, one wake-up: one each cost a write(2) per delivery, 0.85 of them per
// response read in a lone tenant's drain at 9,000 a second (perf).
// Every callback runs exactly once, on the I/O thread; it must not block or throw, since it
// holds up every other request's progress — hand the outcome to another thread's queue. A
// callback may call Send. The destructor stops the I/O thread; before it returns, every queued
// and in-flight request has completed with HttpError::kCancelled (on the I/O thread). Send must
// not be called once destruction has begun, except from a callback. The I/O thread is a
// ServiceThread for its start, stop and wake-up only (the wake-up is the eventfd): its waits
// are epoll_wait's and its loop libcurl's, and no send is retried, so no backoff.
//
// Caller's duties: curl_global_init(CURL_GLOBAL_DEFAULT) once, in main, before any thread
// starts (it is not thread-safe), and SIGPIPE ignored. The sender does not bound the number of
// requests in flight: the caller does (a worker holds a slot per delivery).
//
// Trade-offs of the design:
// - One thread, woken by the sockets that are ready. A turn of the loop costs what its ready
//   sockets cost, not what is in flight: 10,000 requests held open by a slow endpoint cost
//   epoll nothing until they answer. (The first design, curl_multi_perform + curl_multi_poll,
//   polled every socket each turn: with 10,000 held open the node spent most of a core in
//   sock_poll and tcp_poll, and a healthy tenant's pick-up p50 went from 7 to 25 ms; perf,
//   docs/benchmarks.md.) One thread buys simple ownership: no locks on curl state. Callbacks
//   share the thread, so their cost is paid by everyone's latency.
// - HTTP/1.1 only, one connection per request in flight. HTTP/2 would multiplex many requests
//   on one connection, so a stalled connection (a dead peer, exhausted flow control) would fail
//   healthy requests along with the stuck one; a webhook endpoint rarely earns that risk.
// - Idle connections kept: up to Options::max_idle_connections beyond those in use. libcurl's
//   cache limit counts busy connections too, so a fixed limit would stop keep-alive for every
//   host as soon as that many requests hang; the sender raises the limit with the load.
// - Name resolution uses libcurl's resolver (threaded in Debian's build: a short-lived helper
//   thread per lookup of a name not in the 60 s DNS cache; none for an IP literal).
// - Outbound safety (docs/adr/0007-ssrf-guard.md): every address libcurl is about to dial,
//   after DNS, passes Options::guard (network_guard.h) in its open-socket callback, so a name
//   that resolves (or re-resolves) to a private address is refused before a socket exists:
//   HttpError::kBlocked. Only http and https, redirects never followed, no proxy from the
//   environment, TLS peer and host verification on unless Options::tls_verify is false.
// - The response body is counted, not kept, and read only up to max_response_bytes: a huge
//   body costs the receiver's bandwidth, not our memory, and the connection is then closed.
// - Response headers are read by curl (each at most CURL_MAX_HTTP_HEADER, 100 KiB, and all of
//   one response at most 300 KiB in curl >= 7.83, else the transfer fails) and dropped, but
//   for Retry-After, kept up to kMaxRetryAfterBytes: a header flood costs no memory of ours.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "http_exchange.h"
#include "network_guard.h"
#include "service_thread.h"

namespace bulkhead {

class HttpSender {
 public:
  struct Options {
    // Response body bytes read per request; past it the transfer stops (body_truncated).
    size_t max_response_bytes = 64 * 1024;
    // Idle keep-alive connections kept for reuse, beyond the connections in use (>= 1). Each
    // costs a file descriptor and a socket buffer; the oldest idle one is closed first.
    long max_idle_connections = 1024;
    // The SSRF guard every dialled address passes. Default: deny every private, loopback,
    // link-local and reserved range, allow nothing extra (a loopback receiver needs
    // NetworkGuard({127.0.0.0/8})).
    NetworkGuard guard{};
    // Verify the HTTPS peer's certificate chain and host name. false only for test setups
    // (NodeOptions::tls_insecure_skip_verify).
    bool tls_verify = true;
    // Fault injection, for tests only: the timer fires at half the time libcurl asked for, and
    // the calls libcurl makes to the timer callback during that timeout action are dropped —
    // libcurl 8.10.0–8.11.0 made none after a timeout action that came early (issue 31). The
    // sender must keep every request's timeout even so.
    bool early_timer_without_rearm = false;

    // Empty when valid, else what is wrong.
    std::string Validate() const;
  };

  using Callback = std::function<void(const HttpOutcome&)>;

  // Starts the I/O thread. Throws std::invalid_argument for invalid options and
  // std::runtime_error if libcurl cannot make its multi handle.
  HttpSender();
  explicit HttpSender(Options options);
  ~HttpSender();
  HttpSender(const HttpSender&) = delete;
  HttpSender& operator=(const HttpSender&) = delete;

  // A POST and what to do with its outcome.
  struct Outgoing {
    HttpRequest request;
    Callback done;
  };

  // Queues a POST; `done` runs once with its outcome, on the I/O thread. Never blocks on I/O.
  void Send(HttpRequest request, Callback done);
  // Queues every POST of `requests`, in order, as Send would each, with one wake-up.
  void Send(std::vector<Outgoing> requests);

  // Requests sent and not yet completed: queued or on the wire. A callback runs after its
  // request has left this count.
  size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  struct Transfer;  // one request on the wire; defined in http_sender.cc
  struct MultiCleanup {
    void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
  };

  void Run();   // the I/O thread
  void Wake();  // any thread: the I/O thread's epoll_wait returns
  // libcurl's socket and timer callbacks (I/O thread, inside curl_multi_socket_action or
  // curl_multi_add_handle): watch `socket` for `what`, and the next timeout.
  static int OnSocket(CURL* easy, curl_socket_t socket, int what, void* sender, void* per_socket);
  static int OnTimer(CURLM* multi, long timeout_ms, void* sender);
  void Start(Outgoing pending);  // queued -> on the wire, or completed at once
  void FinishDone();             // completes every transfer curl reports done
  void CancelAll();              // completes everything with kCancelled
  void Complete(Callback& done, const HttpOutcome& outcome);
  void ResizeConnectionCache();
  void Recycle(Transfer& transfer);  // keeps its easy handle in spare_easy_ (or frees it)

  // Constant after construction
  const Options options_;
  // Only the I/O thread uses it (and the constructor, before the thread starts).
  const std::unique_ptr<CURLM, MultiCleanup> multi_;
  // The I/O thread's epoll set (the sockets libcurl asks for, and wake_fd_), and an eventfd any
  // thread may write to wake it. Closed by the destructor after the thread has ended.
  int epoll_fd_ = -1;
  int wake_fd_ = -1;

  // Guarded by mu_ (also service_'s: its stop flag is written under it)
  std::mutex mu_;
  std::vector<Outgoing> queue_;  // sent, not yet handed to curl

  // Atomic: incremented by Send, decremented by the I/O thread just before a callback
  std::atomic<size_t> in_flight_{0};

  // Only touched by the I/O thread (and by the destructor once it has joined the thread)
  std::unordered_map<Transfer*, std::unique_ptr<Transfer>> active_;  // on the multi handle
  // The sockets in epoll_fd_ for libcurl: a socket curl asks for is added if it is not here, its
  // events changed if it is. Trying the change first and adding on ENOENT cost a failed
  // epoll_ctl(2) each time a kept-alive connection took its next request, about one a delivery.
  std::unordered_set<curl_socket_t> watched_;
  // Easy handles of finished transfers, kept for the next ones (curl_easy_reset): making a
  // handle and its buffers for every request cost more CPU than the request itself.
  std::vector<CURL*> spare_easy_;
  // When libcurl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT) next; max(): not at all.
  std::chrono::steady_clock::time_point timer_due_ = std::chrono::steady_clock::time_point::max();
  bool in_timeout_action_ = false;  // inside curl_multi_socket_action(CURL_SOCKET_TIMEOUT)

  ServiceThread service_;  // the I/O thread, last: starts once every field above exists
};

}  // namespace bulkhead
