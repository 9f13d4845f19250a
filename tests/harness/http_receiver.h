// HttpReceiver: a real HTTP/1.1 server on 127.0.0.1 for tests of code that sends webhooks.
//
// It listens on an ephemeral loopback port and serves every connection from one thread of its
// own: non-blocking sockets on epoll, so thousands of connections — including ones it never
// answers — cost file descriptors, not threads. It understands what a webhook sender sends:
// requests with a Content-Length body (or none), several per keep-alive connection. It answers
// with a Content-Length body, after a delay if asked (a timer in the event loop: a slow reply
// holds nobody else up), or never. Bytes that do not start like an HTTP request (a TLS
// ClientHello, say) get "400 Bad Request" and a closed connection; so does a chunked body.
//
// On construction it raises this process's RLIMIT_NOFILE soft limit to the hard limit, so that
// a test may hold a few thousand connections (both ends live in the test process).
//
// Threads: the handler runs on the receiver's thread, one request at a time; it must not block
// (use Reply::delay or Reply::hang instead) and must not call back into the receiver. Every
// public member may be called from any thread. The destructor stops the thread and closes every
// connection; it must not run on the receiver's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace bulkhead::testing {

struct ReceivedRequest {
  std::string method;                          // "POST"
  std::string path;                            // the request target, query included: "/hook?x=1"
  std::map<std::string, std::string> headers;  // names lower-cased; repeats joined by ", "
  std::string body;
  std::chrono::system_clock::time_point received_at;  // when its last byte was read
  int connection = 0;  // id of the TCP connection it came on: 1, 2, … in order of accept
};

struct Reply {
  int status = 200;
  std::string body;
  // Sent after the status line; Content-Length is always added. "Connection: close" here
  // closes the connection once the reply is written.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};  // answer this long after the request arrived
  bool hang = false;                   // never answer; the connection stays open until closed
};

using Handler = std::function<Reply(const ReceivedRequest&)>;

class HttpReceiver {
 public:
  // Listens and starts the thread. The default handler answers 200 with an empty body.
  // Throws std::system_error if the socket, epoll or eventfd cannot be made.
  explicit HttpReceiver(Handler handler = nullptr);
  ~HttpReceiver();
  HttpReceiver(const HttpReceiver&) = delete;
  HttpReceiver& operator=(const HttpReceiver&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" + path; path starts with '/'.
  std::string Url(std::string_view path) const;

  // Every request received so far, in order of arrival.
  std::vector<ReceivedRequest> Requests() const;
  size_t request_count() const;
  // TCP connections accepted since start, and those still open now.
  size_t connections_accepted() const;
  size_t open_connections() const;

  // Wait, without polling, until at least `n` requests have arrived / `n` connections are open
  // at once; false if `timeout` passed first.
  bool WaitForRequests(size_t n, std::chrono::milliseconds timeout) const;
  bool WaitForOpenConnections(size_t n, std::chrono::milliseconds timeout) const;

 private:
  // An owned file descriptor: closed on destruction; move-only.
  class Fd {
   public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept;
    ~Fd();
    int get() const { return fd_; }

   private:
    int fd_ = -1;
  };
  class Loop;  // the event loop's state: a local of the receiver's thread (http_receiver.cc)

  void Run();
  void Record(const ReceivedRequest& request);
  void CountConnection(bool opened);

  // Constant after construction
  const Handler handler_;
  const Fd listen_;  // the loopback listening socket
  const Fd epoll_;
  const Fd wake_;  // eventfd: the destructor writes it to stop the thread
  const int port_;

  // Guarded by mu_
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // notified on every request and connection change
  std::vector<ReceivedRequest> requests_;
  size_t accepted_ = 0;
  size_t open_ = 0;

  std::thread thread_;  // last: starts once every field above exists
};

}  // namespace bulkhead::testing
