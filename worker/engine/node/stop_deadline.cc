#include "stop_deadline.h"

#include <cstdlib>

#include "exit_codes.h"
#include "logger.h"

namespace bulkhead {

StopDeadline::StopDeadline(Options options)
    : options_(std::move(options)), started_(std::chrono::steady_clock::now()) {
  service_.Start([this] { Run(); });
}

// The stop finished: the deadline is cancelled.
StopDeadline::~StopDeadline() { service_.Stop(); }

void StopDeadline::Run() {
  auto exit_now = [](const char* reason, std::chrono::milliseconds waited) {
    nlohmann::json fields = {{"reason", reason}};
    if (waited != kNoAnswer) fields["database_unanswered_ms"] = waited.count();
    fields["detail"] =
        "the stop could not finish in time: exiting; the jobs still executing under this node "
        "return through lease rescue";
    Log(LogLevel::kError, "stop_deadline_exit", fields);
    FlushRepeatedEvents(std::chrono::steady_clock::now(), true);
    std::_Exit(kExitFailure);
  };
  std::unique_lock lock(mu_);
  if (service_.WaitUntil(lock, started_ + options_.grace)) return;
  const auto waited = options_.unanswered ? options_.unanswered() : std::chrono::milliseconds(0);
  if (waited >= options_.unanswered_after) exit_now("the database does not answer", waited);
  if (service_.WaitUntil(lock, started_ + options_.grace + options_.drain)) return;
  exit_now("the grace and the drain are over",
           options_.unanswered ? options_.unanswered() : std::chrono::milliseconds(0));
}

}  // namespace bulkhead
