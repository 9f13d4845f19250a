// PoisonQuarantine: what a writing thread does with the one item the database refuses for the
// item's own data (store_failure.h: a text PostgreSQL cannot hold, a value out of range, a text
// that is not UTF-8). Such a refusal repeats every time the same item is written, so retrying
// it as it is would hold up everything queued behind it for ever.
//
// The item is written once more with its free text made storable (StorableText, and a note that
// the original could not be stored), so what it means still happens (a job's retry or discard,
// a breaker's transition); if even that is refused for its data, it is dropped. Either way it
// is counted (count(), bulkhead_quarantined_total{writer, outcome="recorded"|"dropped"}) and
// logged once, at error level: the item's own fields, the SQLSTATE, the first line of the error,
// the outcome, and what it means for the item (the owner's two details). A retry that fails for
// the database's sake (the connection lost, a timeout) is not the item's fault: Take() throws
// it to the caller, which keeps the item and backs off, and nothing is counted or logged.
//
// One quarantine, two users: CompletionWriter (a result, once halving its batch has isolated
// it) and BreakerKeeper (a request). Deciding that an item is the poison is the caller's part
// (the writer's halving, the keeper's one request a statement); only a data failure qualifies,
// never a count of database failures, since those pass with the database.
//
// Threads: Take() on the owner's writing thread (it runs the owner's statement); count() from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "metrics.h"

namespace bulkhead {

class PoisonQuarantine {
 public:
  struct Options {
    std::string event;  // the log line's event: "completion_result_quarantined"
    // What is made storable, named in the note: "error text" → "[the original error text could
    // not be stored: SQLSTATE 22021]".
    std::string text;
    Metrics::QuarantineWriter writer = Metrics::QuarantineWriter::kCompletion;
    Metrics* metrics = nullptr;   // nullptr counts nothing but count()
    std::string recorded_detail;  // the log's detail when the storable retry was written
    std::string dropped_detail;   // and when it was refused too
  };

  explicit PoisonQuarantine(Options options);
  PoisonQuarantine(const PoisonQuarantine&) = delete;
  PoisonQuarantine& operator=(const PoisonQuarantine&) = delete;

  // Quarantines the item `failure` refused (a data failure, IsDataFailure): calls
  // `retry(storable)` with the item's free text `text` made storable, then counts and logs the
  // item with `fields`. Returns whether the retry was written ("recorded") or not ("dropped").
  // Throws what `retry` throws unless it is a data failure.
  bool Take(const std::exception& failure, const std::string& text, nlohmann::json fields,
            const std::function<void(const std::string& storable)>& retry);

  // Items quarantined so far, recorded or dropped.
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  // Constant after construction.
  const Options options_;
  // Written by the owner's thread, read from any.
  std::atomic<uint64_t> count_{0};
};

}  // namespace bulkhead
