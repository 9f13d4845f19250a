#include "console_server.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>  // first: Asio 1.74's awaitable.hpp needs it (status_server.h says so too)

#include "logger.h"
#include "tcp_listen.h"

namespace bulkhead::console {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A kept-alive connection waits this long for its next request (a page polls every 2 s), and a
// request must arrive whole within it; a TLS handshake and the writing of an answer get less.
constexpr auto kIdle = std::chrono::seconds(30);
constexpr auto kStepDeadline = std::chrono::seconds(10);
constexpr size_t kHeaderLimit = 16 * 1024;

http::response<http::string_body> ToBeast(const Response& out, unsigned version, bool keep_alive) {
  http::response<http::string_body> response;
  response.version(version);
  response.result(static_cast<http::status>(out.status));
  response.set(http::field::content_type, out.content_type);
  for (const auto& [name, value] : SecurityHeaders()) response.set(name, value);
  for (const auto& [name, value] : out.headers) response.insert(name, value);
  response.body() = out.body;
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

Response TooLarge() {
  return {413,
          "application/json; charset=utf-8",
          "{\"error\": \"the body is over 16384 bytes\"}\n",
          {}};
}

// One connection: requests answered in turn until the client or an error ends it.
template <typename Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
 public:
  Connection(Stream stream, const ConsoleServer::Handler& handler, std::string remote, bool tls)
      : stream_(std::move(stream)), handler_(handler), remote_(std::move(remote)), tls_(tls) {}

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      Read();
    } else {
      beast::get_lowest_layer(stream_).expires_after(kStepDeadline);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (!ec) self->Read();
                              });
    }
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(ConsoleServer::kBodyLimit);
    parser_->header_limit(kHeaderLimit);
    beast::get_lowest_layer(stream_).expires_after(kIdle);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      // The header arrived and says what was asked; the rest is not read. Answer and close.
      Write(TooLarge(), parser_->get().version(), false, false);
      return;
    }
    if (ec) return Close();
    const http::request<http::string_body>& in = parser_->get();
    Request request;
    request.method = std::string(in.method_string());
    const std::string_view target(in.target().data(), in.target().size());
    const size_t question = target.find('?');
    request.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) request.query = target.substr(question + 1);
    for (const auto& field : in) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers.emplace(std::move(name), std::string(field.value()));
    }
    request.body = in.body();
    request.remote = remote_;
    request.tls = tls_;
    Response out;
    try {
      out = handler_(request);
    } catch (const std::exception& e) {
      Log(LogLevel::kError, "console_request_failed",
          {{"path", request.path}, {"error", e.what()}});
      out = {500, "application/json; charset=utf-8", "{\"error\": \"internal error\"}\n", {}};
    }
    Write(out, in.version(), in.keep_alive(), in.method() == http::verb::head);
  }

  // `head`: the answer to a HEAD, whose headers say the length of the body a GET would get and
  // which carries none.
  void Write(const Response& out, unsigned version, bool keep_alive, bool head) {
    response_ = ToBeast(out, version, keep_alive);
    if (head) {
      response_.body().clear();
      response_.content_length(out.body.size());
    }
    beast::get_lowest_layer(stream_).expires_after(kStepDeadline);
    http::async_write(stream_, response_,
                      [self = this->shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    } else {
      beast::get_lowest_layer(stream_).expires_after(kStepDeadline);
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    }
  }

  Stream stream_;
  const ConsoleServer::Handler& handler_;
  const std::string remote_;
  const bool tls_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

std::optional<std::string_view> Request::Header(std::string_view lower_name) const {
  auto it = headers.find(lower_name);
  if (it == headers.end()) return std::nullopt;
  return std::string_view(it->second);
}

const std::vector<std::pair<std::string, std::string>>& SecurityHeaders() {
  static const std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
      {"X-Frame-Options", "DENY"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-store"},
  };
  return headers;
}

struct ConsoleServer::Impl {
  // In this order: an io_context's destruction destroys the connections left in its queue,
  // which use the handler and the TLS context.
  Handler handler;
  std::optional<ssl::context> tls;
  // One io_context per thread, each run by that thread alone: a connection is accepted onto
  // one of them in turn and lives there, so no Asio object is ever touched by two threads
  // (Asio's cross-thread fences are what ThreadSanitizer cannot follow), and a request that
  // blocks in the database holds up only the connections of its own thread.
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::optional<tcp::acceptor> acceptor;  // on contexts[0]
  size_t next = 0;                        // contexts[0]'s thread only: the next connection's
  std::string error;
  int port = 0;
  std::vector<std::thread> threads;

  void Accept() {
    asio::io_context& home = *contexts[next++ % contexts.size()];
    acceptor->async_accept(home, [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        beast::error_code ignored;
        std::string remote = socket.remote_endpoint(ignored).address().to_string();
        // Start() runs on the socket's own context, whose thread then owns the connection.
        asio::post(socket.get_executor(), [this, socket = std::move(socket),
                                           remote = std::move(remote)]() mutable {
          if (tls) {
            std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(
                beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *tls),
                handler, std::move(remote), true)
                ->Start();
          } else {
            std::make_shared<Connection<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                            handler, std::move(remote), false)
                ->Start();
          }
        });
      }
      Accept();
    });
  }
};

ConsoleServer::ConsoleServer(const Options& options, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  try {
    if (!options.tls_cert.empty()) {
      impl_->tls.emplace(ssl::context::tls_server);
      impl_->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                              ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                              ssl::context::no_tlsv1_1);
      impl_->tls->use_certificate_chain_file(options.tls_cert);
      impl_->tls->use_private_key_file(options.tls_key, ssl::context::pem);
    }
  } catch (const std::exception& e) {
    impl_->error = "cannot load the TLS certificate or key: " + std::string(e.what());
    return;
  }
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    impl_->contexts.push_back(std::make_unique<asio::io_context>(1));
  }
  impl_->acceptor.emplace(*impl_->contexts[0]);
  try {
    impl_->port = ListenOn(*impl_->acceptor, options.listen);
  } catch (const std::exception& e) {
    impl_->error = e.what();
    return;
  }
  impl_->Accept();
  for (auto& context : impl_->contexts) {
    // Each context runs until stopped, even while it has no connection.
    impl_->threads.emplace_back([io = context.get()] {
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
  }
}

ConsoleServer::~ConsoleServer() {
  for (auto& context : impl_->contexts) context->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->acceptor.reset();
}

bool ConsoleServer::ok() const { return impl_->error.empty(); }
const std::string& ConsoleServer::error() const { return impl_->error; }
int ConsoleServer::port() const { return impl_->port; }

}  // namespace bulkhead::console
