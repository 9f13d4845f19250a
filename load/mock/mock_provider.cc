#include "mock_provider.h"

#include <sys/resource.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <optional>
#include <random>

#include "route_behaviour.h"
#include "webhook_signature.h"

namespace bulkhead::mock {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// The largest request body read; a webhook payload is at most 256 KiB by default.
constexpr uint64_t kMaxRequestBody = 16 << 20;

// 1 MiB of 'x', made once: the body of body_bytes answers and of endless streams, written from
// here by every session, so that an answer costs the mock what the client reads of it. A body
// made for each request cost a lot under ThreadSanitizer on a loaded machine: four requests
// for 8 MiB each (made, then copied behind the head) were read 0, 12, 551 and 868 ms after the
// first, the next route's first request 1,588 ms after it, and requests the node had sent
// timed out unread (endpoint_answers_test beside the TSan suite, 3 runs in 33, 2026-12-07; none in
// 80 since). As large as the largest drip_bytes, so that one drip is one write.
const std::string& FillBlock() {
  static const std::string block(1 << 20, 'x');
  return block;
}

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// State every session of one server shares. Safe for concurrent use.
struct Shared {
  explicit Shared(const MockOptions& options)
      : log(options.max_records),
        seed(options.seed != 0 ? options.seed
                               : static_cast<uint64_t>(
                                     std::chrono::steady_clock::now().time_since_epoch().count())) {
    log.SetSecrets(options.secrets);
  }
  RequestLog log;
  const uint64_t seed;
  std::atomic<uint64_t> streams{0};  // hands each I/O thread its own random stream
  std::atomic<int64_t> open{0};
  std::atomic<int64_t> accepted{0};

  // The calling thread's generator: seeded once per thread from `seed`, so that no lock is
  // taken for a random delay and a given seed with one thread repeats a run's draws.
  std::mt19937_64& Random() {
    thread_local const Shared* owner = nullptr;
    thread_local std::mt19937_64 generator;
    if (owner != this) {
      owner = this;
      generator.seed(seed + 0x9E3779B97F4A7C15ull * streams.fetch_add(1));
    }
    return generator;
  }
};

std::string PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    int value = 0;
    if (in[i] == '%' && i + 2 < in.size() &&
        std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16).ptr == in.data() + i + 3) {
      out += static_cast<char>(value);
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// One TCP connection. Owned by the handlers pending on it (shared_from_this): it ends when the
// last one has run, which closes the socket. Its handlers run on its strand, one at a time.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), shared_(shared) {}
  ~Session() {
    if (!counted_route_.empty()) shared_.log.Finished(counted_route_);
    shared_.open.fetch_sub(1);
  }

  void Start() { ReadRequest(); }

 private:
  void ReadRequest() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBody);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->OnRequest();
                     });
  }

  void OnRequest() {
    int64_t received_at = NowUs();
    http::request<http::string_body> request = parser_->release();
    keep_alive_ = request.keep_alive();
    std::string_view target(request.target().data(), request.target().size());
    if (target.starts_with("/_mock/")) return Control(request, target);

    ParsedRoute parsed = ParseRoute(target);
    if (!parsed.behaviour) {
      int status = parsed.error.starts_with("not a mock route") ? 404 : 400;
      return Write(status, "text/plain", parsed.error + "\n", {});
    }
    const RouteBehaviour& b = *parsed.behaviour;
    auto& random = shared_.Random();
    int status = b.hang ? kHang : b.status;
    if (!b.hang && b.fail_fraction > 0 &&
        std::uniform_real_distribution<double>(0, 1)(random) < b.fail_fraction) {
      status = b.fail_status;
    }
    auto header = [&request](std::string_view name) {
      auto it = request.find(beast::string_view(name.data(), name.size()));
      return it == request.end() ? std::string_view()
                                 : std::string_view(it->value().data(), it->value().size());
    };
    RequestRecord record;
    record.route = b.route;
    record.webhook_id = std::string(header("webhook-id"));
    record.sent_at_us = SentAtFromBody(request.body());
    record.received_at_us = received_at;
    record.status = status;
    record.signature = shared_.log.CheckSignature(header("webhook-id"), header("webhook-timestamp"),
                                                  header("webhook-signature"), request.body());
    shared_.log.Record(std::move(record));
    counted_route_ = b.route;  // in flight until answered or closed

    if (b.hang) return Drain();
    if (b.garbage) return WriteGarbage();
    std::string extra;
    if (!b.retry_after.empty()) extra += "Retry-After: " + b.retry_after + "\r\n";
    if (!b.location.empty()) extra += "Location: " + b.location + "\r\n";
    if (b.endless) return WriteEndless(status, extra, Drip{b.drip_every, b.drip_bytes});
    std::string text = b.body_bytes < 0 ? "ok" : "";
    size_t fill = b.body_bytes < 0 ? 0 : static_cast<size_t>(b.body_bytes);
    auto delay = b.delay_min;
    if (b.delay_max > b.delay_min) {
      delay = std::chrono::milliseconds(
          std::uniform_int_distribution<int64_t>(b.delay_min.count(), b.delay_max.count())(random));
    }
    Drip drip{b.drip_every, b.drip_bytes};
    if (delay.count() == 0) return Write(status, "text/plain", std::move(text), drip, extra, fill);
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this(), status, text = std::move(text), drip,
                       extra = std::move(extra), fill](beast::error_code ec) mutable {
      if (!ec) self->Write(status, "text/plain", std::move(text), drip, extra, fill);
    });
  }

  void Control(const http::request<http::string_body>& request, std::string_view target) {
    auto [path, query] = SplitTarget(target);
    bool get = request.method() == http::verb::get;
    bool post = request.method() == http::verb::post;
    if (path == "/_mock/health" && get) return Write(200, "text/plain", "ok\n", {});
    if (path == "/_mock/stats" && get) {
      nlohmann::json stats = shared_.log.Stats();
      stats["connections"] = {{"open", shared_.open.load()}, {"accepted", shared_.accepted.load()}};
      return Write(200, "application/json", stats.dump() + "\n", {});
    }
    if (path == "/_mock/records" && get) {
      size_t since = 0, limit = 10000;
      auto number = [&query](std::string_view name, size_t& out) {
        auto v = QueryParameter(query, name);
        if (!v) return true;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
        return ec == std::errc() && end == v->data() + v->size();
      };
      if (!number("since", since) || !number("limit", limit) || limit == 0) {
        return Write(400, "text/plain", "since and limit must be numbers, limit > 0\n", {});
      }
      std::string route = PercentDecode(QueryParameter(query, "route").value_or(""));
      return Write(200, "application/json", shared_.log.Records(since, limit, route).dump() + "\n",
                   {});
    }
    if (path == "/_mock/reset" && post) {
      shared_.log.Reset();
      return Write(200, "application/json", "{\"reset\": true}\n", {});
    }
    if (path == "/_mock/secrets" && post) {
      auto secrets = nlohmann::json::parse(request.body(), nullptr, false);
      std::vector<std::string> list;
      bool ok = secrets.is_array();
      for (const auto& s : ok ? secrets : nlohmann::json::array()) {
        if (!s.is_string() || !DecodeWebhookSecret(s.get<std::string>())) {
          ok = false;
          break;
        }
        list.push_back(s.get<std::string>());
      }
      if (!ok) {
        return Write(400, "text/plain", "the body must be a JSON array of whsec_ secrets\n", {});
      }
      shared_.log.SetSecrets(list);
      return Write(200, "application/json", "{\"secrets\": " + std::to_string(list.size()) + "}\n",
                   {});
    }
    Write(404, "text/plain", "no such control route: " + std::string(path) + "\n", {});
  }

  struct Drip {
    std::chrono::milliseconds every{0};
    int64_t bytes = 1;
  };

  // Writes the answer, whose body is `text` and then `fill` bytes of 'x' (FillBlock): the head
  // with the text at once, then the rest a block at a time; or the head, then the body a drip
  // at a time.
  void Write(int status, std::string_view content_type, std::string text, Drip drip,
             const std::string& extra_headers = {}, size_t fill = 0) {
    auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
    head_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) +
            "\r\n" + extra_headers + "Content-Type: " + std::string(content_type) +
            "\r\nContent-Length: " + std::to_string(text.size() + fill) + "\r\n" +
            (keep_alive_ ? "" : "Connection: close\r\n") + "\r\n";
    body_ = std::move(text);
    fill_ = fill;
    drip_ = drip;
    sent_ = 0;
    if (drip.every.count() == 0) {
      head_ += body_;
      sent_ = body_.size();
    }
    asio::async_write(socket_, asio::buffer(head_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec) self->WriteMore();
                      });
  }

  // The body from sent_ on: the next drip after drip_.every, or the next block at once.
  void WriteMore() {
    const size_t size = body_.size() + fill_;
    if (sent_ >= size) return Done();
    size_t n = size - sent_;
    if (drip_.every.count() > 0) n = std::min<size_t>(n, static_cast<size_t>(drip_.bytes));
    asio::const_buffer chunk(FillBlock().data(), std::min(n, FillBlock().size()));
    if (sent_ < body_.size()) chunk = {body_.data() + sent_, std::min(n, body_.size() - sent_)};
    auto write = [self = shared_from_this(), chunk] {
      asio::async_write(self->socket_, chunk, [self](beast::error_code ec, size_t written) {
        if (ec) return;
        self->sent_ += written;
        self->WriteMore();
      });
    };
    if (drip_.every.count() == 0) return write();
    timer_.expires_after(drip_.every);
    timer_.async_wait([write](beast::error_code ec) {
      if (!ec) write();
    });
  }

  // garbage=1: bytes that are no HTTP response at all, then the connection closes.
  void WriteGarbage() {
    static constexpr char kGarbage[] =
        "\x16\x03\x01\x00\xff garbage, not HTTP \x00\x01\x02\r\n\r\n";
    head_.assign(kGarbage, sizeof(kGarbage) - 1);
    keep_alive_ = false;
    sent_ = 0;
    body_.clear();
    asio::async_write(socket_, asio::buffer(head_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec) self->Done();
                      });
  }

  // endless=1: the head without a length (the body would end with the connection), then body
  // bytes until the client hangs up: drip.bytes every drip.every, or 64 KiB blocks back to
  // back. Ends only on a write error (the client closed).
  void WriteEndless(int status, const std::string& extra_headers, Drip drip) {
    auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
    head_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) +
            "\r\n" + extra_headers + "Content-Type: text/plain\r\nConnection: close\r\n\r\n";
    keep_alive_ = false;
    drip_ = drip;
    asio::async_write(socket_, asio::buffer(head_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec) self->WriteEndlessMore();
                      });
  }

  void WriteEndlessMore() {
    const size_t n = drip_.every.count() > 0 ? static_cast<size_t>(drip_.bytes) : 64 * 1024;
    auto write = [self = shared_from_this(), n] {
      asio::async_write(self->socket_, asio::buffer(FillBlock().data(), n),
                        [self](beast::error_code ec, size_t) {
                          if (!ec) self->WriteEndlessMore();
                        });
    };
    if (drip_.every.count() == 0) return write();
    timer_.expires_after(drip_.every);
    timer_.async_wait([write](beast::error_code ec) {
      if (!ec) write();
    });
  }

  void Done() {
    if (!counted_route_.empty()) {
      shared_.log.Finished(counted_route_);
      counted_route_.clear();
    }
    if (keep_alive_) return ReadRequest();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  // A request the mock never answers: read (and drop) whatever else comes, only to learn when
  // the client closes; then the session ends and the request is no longer in flight.
  void Drain() {
    socket_.async_read_some(asio::buffer(drain_buffer_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (!ec) self->Drain();
                            });
  }

  // Only touched by this connection's strand
  tcp::socket socket_;
  asio::steady_timer timer_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  std::string counted_route_;  // the route of the request in flight, empty when none is
  std::string head_;
  std::string body_;  // the answer's text, before its fill
  size_t fill_ = 0;   // bytes of 'x' after the text
  size_t sent_ = 0;   // of the body
  Drip drip_;
  char drain_buffer_[512];
};

}  // namespace

std::string MockOptions::Validate() const {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  if (ec) return "--listen: '" + host + "' is not an IP address";
  if (port < 0 || port > 65535) return "--listen: the port must be 0 to 65535";
  if (threads < 1 || threads > 64) return "--threads: must be 1 to 64";
  for (const auto& s : secrets) {
    if (!DecodeWebhookSecret(s)) return "--secret: not a whsec_ secret: " + s;
  }
  if (max_records < 1) return "--max-records: must be at least 1";
  return {};
}

class MockProvider::Impl {
 public:
  explicit Impl(MockOptions options)
      : options_(std::move(options)),
        shared_(options_),
        io_(options_.threads),
        acceptor_(io_),
        retry_(io_) {
    // Both ends of a few thousand connections may live in one process (the tests): lift the
    // soft descriptor limit to the hard one.
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    tcp::endpoint endpoint(asio::ip::make_address(options_.host),
                           static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
  }

  void Start() {
    Accept();
    for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  void Stop() {
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  int port() const { return acceptor_.local_endpoint().port(); }
  RequestLog& log() { return shared_.log; }

 private:
  void Accept() {
    acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket s) {
      if (ec) {
        // Out of descriptors (EMFILE) or a connection reset before accept: try again shortly
        // rather than spinning on the error.
        retry_.expires_after(std::chrono::milliseconds(50));
        retry_.async_wait([this](beast::error_code) { Accept(); });
        return;
      }
      beast::error_code ignored;
      s.set_option(tcp::no_delay(true), ignored);  // answers are small: no Nagle wait
      shared_.accepted.fetch_add(1);
      shared_.open.fetch_add(1);
      std::make_shared<Session>(std::move(s), shared_)->Start();
      Accept();
    });
  }

  // Constant after construction
  const MockOptions options_;
  // Outlives every session: sessions still held by pending handlers die with io_, after it.
  Shared shared_;
  asio::io_context io_;
  // Only touched by the I/O threads once Start() has run
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  // Only touched by the thread that calls Start() and Stop()
  std::vector<std::thread> threads_;
};

MockProvider::MockProvider(MockOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
MockProvider::~MockProvider() { impl_->Stop(); }
void MockProvider::Start() { impl_->Start(); }
void MockProvider::Stop() { impl_->Stop(); }
int MockProvider::port() const { return impl_->port(); }
RequestLog& MockProvider::log() { return impl_->log(); }

}  // namespace bulkhead::mock
