// ConsoleServer: the console's HTTP/1.1 listener, plain or TLS, on Boost.Beast. It knows
// nothing of the console's pages or rules: it reads each request (a body of at most
// kBodyLimit), hands it to the Handler, and writes the answer with the headers every answer of
// the console carries (docs/console.md: CSP, no framing, no sniffing, no referrer, no caching).
//
// Why not the node's StatusServer: that answers one request per connection and is for probes.
// A browser loads a page and its assets and then polls the API every 2 s, so this one keeps
// connections alive (each waiting at most kIdle for its next request), and serves TLS.
//
// Threads: `threads` threads of its own, each running an io_context of its own; a connection is
// accepted onto one of them in turn and every step of it runs on that thread. The Handler is
// called on those threads, so several calls may run at once, and it may block (a database
// query): the other threads' connections go on. Construction binds (or says why not);
// destruction stops the threads and closes every connection.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // console_server.cc includes this first, as status_server.cc does
#include <vector>

namespace bulkhead::console {

struct Request {
  std::string method;                                       // "GET", "POST", …
  std::string path;                                         // the target before '?', not decoded
  std::string query;                                        // after '?', not decoded; "" when none
  std::map<std::string, std::string, std::less<>> headers;  // names in lower case
  std::string body;
  std::string remote;  // the client's address
  bool tls = false;

  // A header's value; nullopt when absent.
  std::optional<std::string_view> Header(std::string_view lower_name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Set-Cookie, Location, Allow …
};

class ConsoleServer {
 public:
  static constexpr size_t kBodyLimit = 16 * 1024;

  struct Options {
    std::string listen{};               // host:port, IPv6 in brackets
    std::string tls_cert{}, tls_key{};  // PEM files; both empty: plain HTTP
    int threads = 2;
  };
  using Handler = std::function<Response(const Request&)>;

  // Binds and starts serving. On failure (a bad address, a port in use, a certificate that
  // does not load), ok() is false, error() says why, and no thread is started.
  ConsoleServer(const Options& options, Handler handler);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  bool ok() const;
  const std::string& error() const;
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The headers every answer carries.
const std::vector<std::pair<std::string, std::string>>& SecurityHeaders();

}  // namespace bulkhead::console
