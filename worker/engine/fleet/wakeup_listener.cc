#include "wakeup_listener.h"

#include <chrono>
#include <memory>
#include <pqxx/pqxx>

#include "database_connection.h"
#include "logger.h"
#include "reconnect_backoff.h"

namespace bulkhead {
namespace {

// LISTENs on `channel` for as long as it lives and passes each payload on.
class Receiver : public pqxx::notification_receiver {
 public:
  using Handler = std::function<void(const std::string&)>;
  Receiver(pqxx::connection_base& conn, const char* channel, const Handler& handler)
      : pqxx::notification_receiver(conn, channel), handler_(handler) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override { handler_(payload); }

 private:
  const Handler& handler_;
};

}  // namespace

WakeupListener::WakeupListener(std::string database, OnWake on_wake, OnBreaker on_breaker)
    : database_(std::move(database)),
      on_wake_(std::move(on_wake)),
      on_breaker_(std::move(on_breaker)),
      thread_([this] { Run(); }) {}

WakeupListener::~WakeupListener() {
  stop_ = true;
  thread_.join();
}

void WakeupListener::Run() {
  ReconnectBackoff backoff;  // 100 ms doubling to 5 s, jittered
  bool was_connected = false;
  while (!stop_) {
    try {
      std::unique_ptr<pqxx::connection> owned = OpenConnection(database_, "listen");
      pqxx::connection& conn = *owned;
      Receiver jobs(conn, "bulkhead_jobs", on_wake_);  // LISTENs
      Receiver breakers(conn, "bulkhead_breakers", on_breaker_);
      connected_ = true;
      if (was_connected) Log(LogLevel::kInfo, "listen_reconnected");
      was_connected = true;
      backoff.Reset();
      on_wake_("");  // catch up on what was enqueued while we were not listening
      while (!stop_) conn.await_notification(0, 200'000);
    } catch (const std::exception& e) {
      connected_ = false;
      const std::chrono::milliseconds wait = backoff.Next();
      Log(LogLevel::kWarn, "listen_failed",
          {{"error", FirstLine(e.what())}, {"retry_in_ms", wait.count()}});
      for (auto waited = std::chrono::milliseconds(0); waited < wait && !stop_;
           waited += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  connected_ = false;
}

}  // namespace bulkhead
