#include "http_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <memory>
#include <queue>
#include <system_error>
#include <unordered_map>

namespace bulkhead::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t kListenKey = 0;  // epoll keys: 0 and max are ours, connections are 1, 2, …
constexpr uint64_t kWakeKey = std::numeric_limits<uint64_t>::max();
constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 64 * 1024 * 1024;
constexpr size_t kReadChunk = 64 * 1024;

[[noreturn]] void ThrowErrno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "HttpReceiver: " + what);
}

// Both ends of every test connection live in this process: 1,000 hung requests are 2,000
// descriptors, past the usual soft limit of 1,024.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int ListenOnLoopback() {
  RaiseFileLimit();
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) ThrowErrno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    ThrowErrno("bind/listen on 127.0.0.1");
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) ThrowErrno("getsockname");
  return ntohs(addr.sin_port);
}

int MakeEpoll() {
  int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) ThrowErrno("epoll_create1");
  return fd;
}

int MakeEventFd() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) ThrowErrno("eventfd");
  return fd;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 410:
      return "Gone";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

enum class Parse { kIncomplete, kBad, kOk };

// Parses one request from the front of `in`. On kOk fills `request` (not its connection and
// time), `close_after` (the client asked for the connection to end) and `consumed`.
Parse ParseRequest(std::string_view in, ReceivedRequest& request, bool& close_after,
                   size_t& consumed) {
  // A request starts with a method in capitals; a TLS ClientHello (0x16) or junk does not.
  if (!in.empty() && (in[0] < 'A' || in[0] > 'Z')) return Parse::kBad;
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return in.size() > kMaxHeaderBytes ? Parse::kBad : Parse::kIncomplete;
  }
  std::string_view head = in.substr(0, head_end);
  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return Parse::kBad;
  std::string_view version = line.substr(sp2 + 1);
  if (!version.starts_with("HTTP/1.")) return Parse::kBad;
  request.method = std::string(line.substr(0, sp1));
  request.path = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  request.headers.clear();

  std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
  while (!rest.empty()) {
    size_t end = rest.find("\r\n");
    std::string_view header = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 2);
    size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) return Parse::kBad;
    std::string name = Lower(Trim(header.substr(0, colon)));
    std::string value(Trim(header.substr(colon + 1)));
    auto [it, inserted] = request.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }

  if (request.headers.contains("transfer-encoding")) return Parse::kBad;  // chunked: unsupported
  size_t length = 0;
  if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
    const std::string& text = it->second;
    if (text.empty() || text.size() > 12 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Parse::kBad;
    }
    length = std::stoull(text);
    if (length > kMaxBodyBytes) return Parse::kBad;
  }
  size_t body_start = head_end + 4;
  if (in.size() - body_start < length) return Parse::kIncomplete;
  request.body = std::string(in.substr(body_start, length));
  consumed = body_start + length;

  std::string connection;
  if (auto it = request.headers.find("connection"); it != request.headers.end()) {
    connection = Lower(it->second);
  }
  close_after = connection == "close" || (version == "HTTP/1.0" && connection != "keep-alive");
  return Parse::kOk;
}

}  // namespace

HttpReceiver::Fd& HttpReceiver::Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

HttpReceiver::Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

// The state of the event loop. Lives on the receiver thread's stack; only that thread sees it.
class HttpReceiver::Loop {
 public:
  explicit Loop(HttpReceiver& owner) : owner_(owner) {}

  ~Loop() {
    for (size_t i = 0; i < connections_.size(); ++i) owner_.CountConnection(false);
  }

  void Run() {
    Watch(owner_.listen_.get(), kListenKey, EPOLLIN);
    Watch(owner_.wake_.get(), kWakeKey, EPOLLIN);
    epoll_event events[256];
    while (true) {
      int n = epoll_wait(owner_.epoll_.get(), events, 256, MillisToNextTimer());
      if (n < 0 && errno != EINTR) ThrowErrno("epoll_wait");
      for (int i = 0; i < n; ++i) {
        uint64_t key = events[i].data.u64;
        if (key == kWakeKey) return;
        if (key == kListenKey) {
          AcceptAll();
          continue;
        }
        auto it = connections_.find(key);
        if (it == connections_.end()) continue;  // closed earlier in this batch
        Connection& c = *it->second;
        if ((events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !OnReadable(c)) continue;
        if ((events[i].events & EPOLLOUT) && c.state == State::kWriting && Flush(c)) Serve(c);
      }
      FireTimers();
    }
  }

 private:
  enum class State { kReading, kWaiting, kWriting };

  struct Connection {
    uint64_t id = 0;
    Fd fd;
    std::string in;       // bytes read and not yet parsed
    std::string out;      // the reply being written
    size_t out_sent = 0;  // bytes of `out` already written
    State state = State::kReading;
    bool close_after_write = false;
    bool watching_out = false;  // EPOLLOUT registered
    Reply delayed;              // the reply a timer will send (state kWaiting, not hung)
  };

  struct Timer {
    SteadyClock::time_point due;
    uint64_t connection;
    bool operator>(const Timer& other) const { return due > other.due; }
  };

  void Watch(int fd, uint64_t key, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    if (epoll_ctl(owner_.epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) ThrowErrno("epoll_ctl add");
  }

  void SetWatchOut(Connection& c, bool on) {
    if (c.watching_out == on) return;
    epoll_event ev{};
    ev.events = on ? EPOLLIN | EPOLLOUT : EPOLLIN;
    ev.data.u64 = c.id;
    epoll_ctl(owner_.epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
    c.watching_out = on;
  }

  int MillisToNextTimer() const {
    if (timers_.empty()) return -1;
    auto left = timers_.top().due - SteadyClock::now();
    if (left <= SteadyClock::duration::zero()) return 0;
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
  }

  void AcceptAll() {
    while (true) {
      int fd = accept4(owner_.listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN: all taken; anything else (EMFILE): retried on next event
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = Fd(fd);
      Watch(fd, c->id, EPOLLIN);
      connections_.emplace(c->id, std::move(c));
      owner_.CountConnection(true);
    }
  }

  void Close(Connection& c) {
    uint64_t id = c.id;
    connections_.erase(id);  // closing the descriptor also takes it out of the epoll set
    owner_.CountConnection(false);
  }

  // Reads what there is. Returns false if the connection was closed.
  bool OnReadable(Connection& c) {
    char buffer[kReadChunk];
    while (true) {
      ssize_t n = read(c.fd.get(), buffer, sizeof(buffer));
      if (n > 0) {
        c.in.append(buffer, static_cast<size_t>(n));
        if (c.in.size() > kMaxHeaderBytes + kMaxBodyBytes) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (c.state == State::kReading) return Serve(c);
        return true;  // a pipelined request waits for the reply before it
      }
      break;  // end of stream, reset, or too much
    }
    Close(c);
    return false;
  }

  // Answers every complete request in `c.in`, one at a time, while replies go out at once.
  // Returns false if the connection was closed.
  bool Serve(Connection& c) {
    while (c.state == State::kReading && !c.in.empty()) {
      ReceivedRequest request;
      bool close_after = false;
      size_t consumed = 0;
      Parse parse = ParseRequest(c.in, request, close_after, consumed);
      if (parse == Parse::kIncomplete) return true;
      if (parse == Parse::kBad) {
        c.in.clear();
        c.close_after_write = true;
        Reply bad;
        bad.status = 400;
        bad.body = "bad request\n";
        Respond(c, bad);
        return Flush(c);
      }
      c.in.erase(0, consumed);
      c.close_after_write = close_after;
      request.connection = static_cast<int>(c.id);
      request.received_at = std::chrono::system_clock::now();
      owner_.Record(request);
      Reply reply = owner_.handler_ ? owner_.handler_(request) : Reply{};
      if (reply.hang) {
        c.state = State::kWaiting;
      } else if (reply.delay > std::chrono::milliseconds::zero()) {
        c.state = State::kWaiting;
        timers_.push({SteadyClock::now() + reply.delay, c.id});
        c.delayed = std::move(reply);
      } else {
        Respond(c, reply);
        if (!Flush(c)) return false;
      }
    }
    return true;
  }

  void Respond(Connection& c, const Reply& reply) {
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " ";
    out += ReasonPhrase(reply.status);
    out += "\r\n";
    bool says_close = false;
    for (const auto& [name, value] : reply.headers) {
      out += name + ": " + value + "\r\n";
      says_close |= Lower(name) == "connection" && Lower(value) == "close";
    }
    if (c.close_after_write && !says_close) out += "Connection: close\r\n";
    c.close_after_write |= says_close;
    out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n\r\n";
    out += reply.body;
    c.out = std::move(out);
    c.out_sent = 0;
    c.state = State::kWriting;
  }

  // Writes what the socket takes. Returns false if the connection was closed; true with
  // state kReading once the whole reply is out, true with state kWriting if more must wait.
  bool Flush(Connection& c) {
    while (c.out_sent < c.out.size()) {
      ssize_t n =
          send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        SetWatchOut(c, true);
        return true;
      }
      Close(c);  // the peer went away (EPIPE, ECONNRESET)
      return false;
    }
    SetWatchOut(c, false);
    c.out.clear();
    c.out_sent = 0;
    if (c.close_after_write) {
      Close(c);
      return false;
    }
    c.state = State::kReading;
    return true;
  }

  void FireTimers() {
    auto now = SteadyClock::now();
    while (!timers_.empty() && timers_.top().due <= now) {
      uint64_t id = timers_.top().connection;
      timers_.pop();
      auto it = connections_.find(id);
      if (it == connections_.end()) continue;  // the client left before the reply was due
      Connection& c = *it->second;
      Respond(c, c.delayed);
      c.delayed = Reply{};
      if (Flush(c)) Serve(c);
    }
  }

  HttpReceiver& owner_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t next_id_ = 1;
};

HttpReceiver::HttpReceiver(Handler handler)
    : handler_(std::move(handler)),
      listen_(ListenOnLoopback()),
      epoll_(MakeEpoll()),
      wake_(MakeEventFd()),
      port_(LocalPort(listen_.get())),
      thread_([this] { Run(); }) {}

HttpReceiver::~HttpReceiver() {
  uint64_t one = 1;
  ssize_t written = write(wake_.get(), &one, sizeof(one));
  (void)written;  // an eventfd write only fails when the counter would overflow
  thread_.join();
}

void HttpReceiver::Run() {
  Loop loop(*this);
  loop.Run();
}

std::string HttpReceiver::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void HttpReceiver::Record(const ReceivedRequest& request) {
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
  }
  changed_.notify_all();
}

void HttpReceiver::CountConnection(bool opened) {
  {
    std::lock_guard lock(mu_);
    if (opened) {
      ++accepted_;
      ++open_;
    } else {
      --open_;
    }
  }
  changed_.notify_all();
}

std::vector<ReceivedRequest> HttpReceiver::Requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

size_t HttpReceiver::request_count() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

size_t HttpReceiver::connections_accepted() const {
  std::lock_guard lock(mu_);
  return accepted_;
}

size_t HttpReceiver::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

bool HttpReceiver::WaitForRequests(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

bool HttpReceiver::WaitForOpenConnections(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return open_ >= n; });
}

}  // namespace bulkhead::testing
