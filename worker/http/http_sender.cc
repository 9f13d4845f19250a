#include "http_sender.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <system_error>

#include "http_transfer.h"

namespace bulkhead {
namespace {

using Clock = std::chrono::steady_clock;

// How long one epoll_wait may sleep when libcurl has no timeout pending; Send and the destructor
// wake it, so this only bounds an idle loop's period.
constexpr int kIdlePollMs = 1000;
// Ready sockets taken from epoll per turn; more wait for the next turn.
constexpr int kEventsPerTurn = 256;

}  // namespace

std::string HttpSender::Options::Validate() const {
  if (max_idle_connections < 1) return "max_idle_connections must be at least 1";
  return "";
}

namespace {
HttpSender::Options Validated(HttpSender::Options options) {
  std::string problem = options.Validate();
  if (!problem.empty()) throw std::invalid_argument("HttpSender: " + problem);
  return options;
}

// The I/O thread waits in epoll_wait, not on the service's condition variable: waking it is
// writing the eventfd.
ServiceThread::Options IoThread(std::function<void()> wake) {
  ServiceThread::Options options;
  options.wake = std::move(wake);
  return options;
}
}  // namespace

HttpSender::HttpSender() : HttpSender(Options()) {}

HttpSender::HttpSender(Options options)
    : options_(Validated(options)),
      multi_(curl_multi_init()),
      service_(mu_, IoThread([this] { Wake(); })) {
  if (multi_ == nullptr) throw std::runtime_error("HttpSender: curl_multi_init failed");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  if (epoll_fd_ < 0 || wake_fd_ < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    const int error = errno;
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    throw std::system_error(error, std::generic_category(), "HttpSender: epoll or eventfd");
  }
  curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETFUNCTION, &HttpSender::OnSocket);
  curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_.get(), CURLMOPT_TIMERFUNCTION, &HttpSender::OnTimer);
  curl_multi_setopt(multi_.get(), CURLMOPT_TIMERDATA, this);
  ResizeConnectionCache();
  service_.Start([this] { Run(); });
}

HttpSender::~HttpSender() {
  service_.Stop();  // the stop flag under mu_, the eventfd written, the I/O thread joined
  for (CURL* easy : spare_easy_) curl_easy_cleanup(easy);
  close(wake_fd_);
  close(epoll_fd_);
}

void HttpSender::Send(HttpRequest request, Callback done) {
  std::vector<Outgoing> one;
  one.push_back({std::move(request), std::move(done)});
  Send(std::move(one));
}

void HttpSender::Send(std::vector<Outgoing> requests) {
  if (requests.empty()) return;
  in_flight_.fetch_add(requests.size(), std::memory_order_relaxed);
  bool was_empty;
  {
    std::lock_guard lock(mu_);
    was_empty = queue_.empty();
    for (auto& r : requests) queue_.push_back(std::move(r));
  }
  // A queue that was not empty has a wake-up on its way: the Send that made it non-empty
  // writes the eventfd after its push, and the I/O thread reads the eventfd before it next
  // takes the queue, so that take finds these requests too.
  if (was_empty) Wake();
}

void HttpSender::Wake() {
  const uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the I/O thread will wake anyway.
  [[maybe_unused]] ssize_t written = write(wake_fd_, &one, sizeof(one));
}

int HttpSender::OnSocket(CURL*, curl_socket_t socket, int what, void* sender, void*) {
  auto* self = static_cast<HttpSender*>(sender);
  if (what == CURL_POLL_REMOVE) {
    // curl removes a socket before it closes it; a closed one has left the set already.
    self->watched_.erase(socket);
    epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, socket, nullptr);
    return 0;
  }
  epoll_event event{};
  event.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
  event.data.fd = socket;
  // A socket curl watches already changes what it waits for; a new one is added. Should the set
  // be wrong (a socket closed without a REMOVE, its number reused), the other call is made.
  const bool watched = !self->watched_.insert(socket).second;
  if (watched) {
    if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, socket, &event) != 0 && errno == ENOENT) {
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, socket, &event);
    }
  } else if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, socket, &event) != 0 && errno == EEXIST) {
    epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, socket, &event);
  }
  return 0;
}

int HttpSender::OnTimer(CURLM*, long timeout_ms, void* sender) {
  auto* self = static_cast<HttpSender*>(sender);
  if (self->options_.early_timer_without_rearm) {
    if (self->in_timeout_action_) return 0;
    if (timeout_ms > 0) timeout_ms /= 2;  // -1 (no timer) and 0 (now) stay as they are
  }
  self->timer_due_ = timeout_ms < 0 ? Clock::time_point::max()
                                    : Clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

void HttpSender::Run() {
  std::vector<Outgoing> batch;
  epoll_event events[kEventsPerTurn];
  int running = 0;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (service_.stopping()) break;
      batch.swap(queue_);
    }
    for (auto& pending : batch) Start(std::move(pending));
    batch.clear();

    int wait_ms = kIdlePollMs;
    if (timer_due_ != Clock::time_point::max()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(timer_due_ - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, kIdlePollMs));
    }
    const int ready = epoll_wait(epoll_fd_, events, kEventsPerTurn, wait_ms);
    for (int i = 0; i < ready; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t got = read(wake_fd_, &count, sizeof(count));
        continue;
      }
      const uint32_t e = events[i].events;
      const int flags = (e & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
      curl_multi_socket_action(multi_.get(), fd, flags, &running);
    }
    // libcurl's timeouts (connect and request timeouts, its own retries, a handle just added)
    // are due whatever the sockets did: a busy loop must not starve them.
    if (Clock::now() >= timer_due_) {
      timer_due_ = Clock::time_point::max();  // one-shot: OnTimer sets the next one
      in_timeout_action_ = true;
      curl_multi_socket_action(multi_.get(), CURL_SOCKET_TIMEOUT, 0, &running);
      in_timeout_action_ = false;
      // No timer call during the action: ask libcurl when it wants the next one. libcurl
      // 8.10.0–8.11.0 made no call after an action that came early (before its deadline), and
      // a one-shot timer left unset would never fire again for a request whose socket stays
      // silent: a hanging endpoint held its slot for ever (issue 31).
      if (timer_due_ == Clock::time_point::max()) {
        long next_ms = -1;
        if (curl_multi_timeout(multi_.get(), &next_ms) == CURLM_OK && next_ms >= 0) {
          timer_due_ = Clock::now() + std::chrono::milliseconds(next_ms);
        }
      }
    }
    FinishDone();
  }
  CancelAll();
}

void HttpSender::Start(Outgoing pending) {
  auto transfer = std::make_unique<Transfer>(std::move(pending));
  auto fail = [&](HttpError error, std::string text) {
    HttpOutcome outcome;
    outcome.error = error;
    outcome.error_text = std::move(text);
    Complete(transfer->done, outcome);
  };
  if (auto [error, text] = transfer->Check(); error != HttpError::kNone) {
    return fail(error, std::move(text));
  }
  if (!spare_easy_.empty()) {
    transfer->easy.reset(spare_easy_.back());
    spare_easy_.pop_back();
    curl_easy_reset(transfer->easy.get());  // every option back to its default
  } else {
    transfer->easy.reset(curl_easy_init());
  }
  if (transfer->easy == nullptr) return fail(HttpError::kOther, "curl_easy_init failed");
  CURLcode rc;
  try {
    rc = transfer->Configure(options_);
  } catch (const std::bad_alloc&) {
    rc = CURLE_OUT_OF_MEMORY;
  }
  if (rc != CURLE_OK) return fail(HttpError::kOther, curl_easy_strerror(rc));
  transfer->started = Clock::now();
  if (CURLMcode mc = curl_multi_add_handle(multi_.get(), transfer->easy.get()); mc != CURLM_OK) {
    return fail(HttpError::kOther, curl_multi_strerror(mc));
  }
  Transfer* key = transfer.get();
  active_.emplace(key, std::move(transfer));
  ResizeConnectionCache();
}

void HttpSender::FinishDone() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_.get(), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;  // read before remove_handle frees the message
    char* priv = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    auto it = active_.find(reinterpret_cast<Transfer*>(priv));
    curl_multi_remove_handle(multi_.get(), easy);
    if (it == active_.end()) continue;  // cannot happen: every added handle is in active_
    std::unique_ptr<Transfer> transfer = std::move(it->second);
    active_.erase(it);
    ResizeConnectionCache();
    HttpOutcome outcome = transfer->Finish(code);
    Recycle(*transfer);
    Complete(transfer->done, outcome);
  }
}

void HttpSender::CancelAll() {
  auto cancelled = [](std::chrono::microseconds duration) {
    HttpOutcome outcome;
    outcome.error = HttpError::kCancelled;
    outcome.error_text = "cancelled: the sender is shutting down";
    outcome.duration = duration;
    return outcome;
  };
  // Callbacks may Send more; those are cancelled too, until nothing is left.
  while (true) {
    auto active = std::move(active_);
    active_.clear();
    std::vector<Outgoing> queued;
    {
      std::lock_guard lock(mu_);
      queued.swap(queue_);
    }
    if (active.empty() && queued.empty()) break;
    for (auto& [key, transfer] : active) {
      curl_multi_remove_handle(multi_.get(), transfer->easy.get());
      Complete(transfer->done, cancelled(transfer->Elapsed()));
    }
    for (auto& pending : queued) Complete(pending.done, cancelled({}));
  }
}

void HttpSender::Recycle(Transfer& transfer) {
  // Enough for the requests one poll round finishes at 10,000/s; the rest are freed.
  constexpr size_t kMaxSpare = 256;
  if (spare_easy_.size() < kMaxSpare && transfer.easy) {
    spare_easy_.push_back(transfer.easy.release());
  }
}

void HttpSender::Complete(Callback& done, const HttpOutcome& outcome) {
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  if (done) done(outcome);
}

// libcurl closes the oldest idle connection whenever its cache holds more than MAXCONNECTS
// connections, busy ones included; keeping the limit at (busy + max_idle_connections) keeps
// keep-alive working for healthy hosts however many requests hang elsewhere.
void HttpSender::ResizeConnectionCache() {
  curl_multi_setopt(multi_.get(), CURLMOPT_MAXCONNECTS,
                    static_cast<long>(active_.size()) + options_.max_idle_connections);
}

}  // namespace bulkhead
