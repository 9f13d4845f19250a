// MemoryBreakerLedger: the fleet's breakers kept in memory, behind a BreakerLedger
// (worker/engine/breaker/breaker_ledger.h) that Ledger() hands to a BreakerKeeper, for the
// tests of the keeper's own logic: its queue of requests, retrying after a failure, halving a
// batch after a statement timeout, quarantining a request refused for its data. What the
// statements do to channels and jobs is breaker_store_test's and breaker_keeper_test's,
// against real PostgreSQL.
//
// Its breakers move as the statements' compare-and-set does: open only from closed, close and
// re-open only from half_open (SetState puts a channel in half_open, as a probe's claim does);
// a transition not made returns done = false. Backlogs are empty: every transition moves 0
// jobs. Every call is logged (calls()), made or not, failed or not.
//
// It fails as the real one does, so that the keeper classifies the failure as in production
// (store_failure.h): FailNext() makes the next transitions (OpenBreaker, CloseBreaker,
// ReopenBreaker; never the timers' calls) throw pqxx::broken_connection, or a pqxx::sql_error
// with the SQLSTATE given (57014: a statement timeout); Refuse() makes a transition whose reason
// is a given text throw pqxx::data_exception with SQLSTATE 22021.
//
// Ownership: the test owns it and declares it before the keeper; the keeper owns the
// forwarding BreakerLedger. Threads: the ledger's calls on the keeper's thread; everything
// else from the test's; its state is guarded by its own mutex. Waits take a timeout only so
// that a broken keeper fails the test instead of hanging it; no test asserts a duration.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "breaker_ledger.h"

namespace bulkhead::testing {

class MemoryBreakerLedger {
 public:
  struct Call {
    std::string method;  // "OpenBreaker", "CloseBreaker", …
    int64_t channel = 0;
    std::string reason;  // OpenBreaker, ReopenBreaker
    int64_t batch = 0;
    bool failed = false;  // threw (FailNext, Refuse)
    bool done = false;    // a transition that was made
  };

  // A BreakerLedger for a BreakerKeeper, moving breakers here; `this` must outlive it.
  std::unique_ptr<BreakerLedger> Ledger() { return std::make_unique<Forwarder>(*this); }

  // The next `n` transitions throw: pqxx::broken_connection when `sqlstate` is empty, else a
  // pqxx::sql_error with that SQLSTATE.
  void FailNext(int n, std::string sqlstate = "") {
    std::lock_guard lock(mu_);
    fail_next_ = n;
    fail_sqlstate_ = std::move(sqlstate);
  }
  // A transition whose reason is `reason` is refused for its data (22021).
  void Refuse(std::string reason) {
    std::lock_guard lock(mu_);
    refused_.insert(std::move(reason));
  }
  // Puts `channel`'s breaker in `state` ("closed", "open", "half_open").
  void SetState(int64_t channel, std::string state) {
    std::lock_guard lock(mu_);
    states_[channel] = std::move(state);
  }

  std::string State(int64_t channel) const {
    std::lock_guard lock(mu_);
    return StateLocked(channel);
  }
  std::string Reason(int64_t channel) const {
    std::lock_guard lock(mu_);
    auto it = reasons_.find(channel);
    return it == reasons_.end() ? "" : it->second;
  }
  std::vector<Call> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // The calls of `method` on `channel`.
  std::vector<Call> calls(const std::string& method, int64_t channel) const {
    std::lock_guard lock(mu_);
    std::vector<Call> of;
    for (const auto& call : calls_) {
      if (call.method == method && call.channel == channel) of.push_back(call);
    }
    return of;
  }
  int resets() const {
    std::lock_guard lock(mu_);
    return resets_;
  }

  // Whether `channel`'s breaker reached `state` (within `timeout`).
  bool WaitForState(int64_t channel, const std::string& state, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return StateLocked(channel) == state; });
  }
  // Whether `method` has been called on `channel`, made or not (within `timeout`).
  bool WaitForCall(const std::string& method, int64_t channel, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const auto& call : calls_) {
        if (call.method == method && call.channel == channel && !call.failed) return true;
      }
      return false;
    });
  }

 private:
  class Forwarder : public BreakerLedger {
   public:
    explicit Forwarder(MemoryBreakerLedger& to) : to_(to) {}
    BreakerTransition OpenBreaker(int64_t channel, int64_t, const std::string& reason,
                                  int64_t batch) override {
      return to_.Move("OpenBreaker", channel, reason, batch, "closed", "open");
    }
    BreakerTransition CloseBreaker(int64_t channel, int64_t, int64_t batch) override {
      return to_.Move("CloseBreaker", channel, "", batch, "half_open", "closed");
    }
    BreakerTransition ReopenBreaker(int64_t channel, int64_t, int64_t, int64_t,
                                    const std::string& reason, int64_t batch) override {
      return to_.Move("ReopenBreaker", channel, reason, batch, "half_open", "open");
    }
    int64_t ParkBacklog(int64_t channel, int64_t batch) override {
      to_.Log({"ParkBacklog", channel, "", batch, false, false});
      return 0;
    }
    int64_t UnparkBacklog(int64_t channel, int64_t batch) override {
      to_.Log({"UnparkBacklog", channel, "", batch, false, false});
      return 0;
    }
    int ExpireProbes(const std::string&, int64_t, int64_t) override { return 0; }
    std::vector<int64_t> NotClosedBreakers() override { return to_.NotClosed(); }
    void Reset() override {
      std::lock_guard lock(to_.mu_);
      ++to_.resets_;
    }

   private:
    MemoryBreakerLedger& to_;
  };

  BreakerTransition Move(const std::string& method, int64_t channel, const std::string& reason,
                         int64_t batch, const std::string& from, const std::string& to) {
    std::lock_guard lock(mu_);
    Call call{method, channel, reason, batch, false, false};
    if (fail_next_ > 0) {
      --fail_next_;
      call.failed = true;
      LogLocked(call);
      if (fail_sqlstate_.empty()) {
        throw pqxx::broken_connection("server closed the connection unexpectedly");
      }
      throw pqxx::sql_error("canceling statement due to statement timeout", method,
                            fail_sqlstate_.c_str());
    }
    if (refused_.count(reason) > 0) {
      call.failed = true;
      LogLocked(call);
      throw pqxx::data_exception("invalid byte sequence for encoding \"UTF8\"", method, "22021");
    }
    call.done = StateLocked(channel) == from;
    if (call.done) {
      states_[channel] = to;
      if (!reason.empty()) reasons_[channel] = reason;
    }
    LogLocked(call);
    return {call.done, 0};
  }

  void Log(Call call) {
    std::lock_guard lock(mu_);
    LogLocked(std::move(call));
  }
  void LogLocked(Call call) {
    calls_.push_back(std::move(call));
    changed_.notify_all();
  }

  std::vector<int64_t> NotClosed() const {
    std::lock_guard lock(mu_);
    std::vector<int64_t> channels;
    for (const auto& [channel, state] : states_) {
      if (state != "closed") channels.push_back(channel);
    }
    return channels;
  }

  std::string StateLocked(int64_t channel) const {
    auto it = states_.find(channel);
    return it == states_.end() ? "closed" : it->second;
  }

  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_.
  std::map<int64_t, std::string> states_;  // absent: closed
  std::map<int64_t, std::string> reasons_;
  std::set<std::string> refused_;
  std::vector<Call> calls_;
  std::string fail_sqlstate_;
  int fail_next_ = 0;
  int resets_ = 0;
};

}  // namespace bulkhead::testing
