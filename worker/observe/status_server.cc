#include "status_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "tcp_listen.h"

namespace bulkhead {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A request that has not arrived whole, or an answer not taken, within this is dropped.
constexpr auto kConnectionDeadline = std::chrono::seconds(5);

struct Handlers {
  StatusServer::Scrape scrape;
  StatusServer::Readiness readiness;
};

http::response<http::string_body> Answer(const Handlers& handlers,
                                         const http::request<http::string_body>& request) {
  http::response<http::string_body> response;
  response.version(request.version());
  response.keep_alive(false);
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  std::string target(request.target());
  target = target.substr(0, target.find('?'));
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET, HEAD");
    response.body() = "only GET and HEAD\n";
  } else if (target == "/metrics") {
    response.result(http::status::ok);
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = handlers.scrape();
  } else if (target == "/healthz") {
    response.result(http::status::ok);
    response.body() = "ok\n";
  } else if (target == "/readyz") {
    std::vector<std::string> reasons = handlers.readiness();
    if (reasons.empty()) {
      response.result(http::status::ok);
      response.body() = "ready\n";
    } else {
      response.result(http::status::service_unavailable);
      response.set(http::field::content_type, "application/json");
      response.body() = nlohmann::json{{"ready", false}, {"reasons", reasons}}.dump() + "\n";
    }
  } else {
    response.result(http::status::not_found);
    response.body() = "not found: try /metrics, /healthz or /readyz\n";
  }
  response.prepare_payload();
  if (request.method() == http::verb::head) response.body().clear();
  return response;
}

// One connection: read one request, answer, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Handlers& handlers)
      : stream_(std::move(socket)), handlers_(handlers) {}

  void Start() {
    stream_.expires_after(kConnectionDeadline);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->Respond();
                     });
  }

 private:
  void Respond() {
    response_ = Answer(handlers_, request_);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  const Handlers& handlers_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

struct StatusServer::Impl {
  Handlers handlers;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::string error;
  int port = 0;
  std::thread thread;

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handlers)->Start();
      Accept();
    });
  }
};

StatusServer::StatusServer(const std::string& listen, Scrape scrape, Readiness readiness)
    : impl_(std::make_unique<Impl>()) {
  impl_->handlers = {std::move(scrape), std::move(readiness)};
  try {
    impl_->port = ListenOn(impl_->acceptor, listen);
  } catch (const std::exception& e) {
    impl_->error = e.what();
    return;
  }
  impl_->Accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

StatusServer::~StatusServer() {
  if (impl_->thread.joinable()) {
    impl_->io.stop();
    impl_->thread.join();
  }
}

bool StatusServer::ok() const { return impl_->error.empty(); }
const std::string& StatusServer::error() const { return impl_->error; }
int StatusServer::port() const { return impl_->port; }

}  // namespace bulkhead
