#include "wakeup_listener.h"

#include <chrono>
#include <memory>
#include <pqxx/pqxx>

#include "database_connection.h"
#include "logger.h"

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
      on_breaker_(std::move(on_breaker)) {
  service_.Start([this] { Run(); });
}

WakeupListener::~WakeupListener() { service_.Stop(); }

void WakeupListener::Run() {
  bool was_connected = false;
  while (!service_.stopping()) {
    try {
      std::unique_ptr<pqxx::connection> owned = OpenConnection(database_, "listen");
      pqxx::connection& conn = *owned;
      Receiver jobs(conn, "bulkhead_jobs", on_wake_);  // LISTENs
      Receiver breakers(conn, "bulkhead_breakers", on_breaker_);
      connected_ = true;
      if (was_connected) Log(LogLevel::kInfo, "listen_reconnected");
      was_connected = true;
      service_.Succeeded();
      on_wake_("");  // catch up on what was enqueued while we were not listening
      while (!service_.stopping()) conn.await_notification(0, 200'000);
    } catch (const std::exception& e) {
      connected_ = false;
      const std::chrono::milliseconds wait = service_.Failed();  // 100 ms doubling to 5 s
      Log(LogLevel::kWarn, "listen_failed",
          {{"error", FirstLine(e.what())}, {"retry_in_ms", wait.count()}});
      std::unique_lock lock(mu_);
      service_.SleepFor(lock, wait);
    }
  }
  connected_ = false;
}

}  // namespace bulkhead
