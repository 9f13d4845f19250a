// ClaimStore: what a queue runner runs against the database — the claim, the breaker's probe
// claim, the Retry-After snooze, its sleeping mark, the 410 Gone disable, and the hand-back at
// shutdown. Its SQL, with each statement's contract, parameters, columns and reasons, is
// worker/store/claim_store.sql; the store prepares only those statements on its connection and
// runs each through the struct generated from its declarations (claim_store_statements.h).
//
// One ClaimStore per connection, and both belong to the queue runner's thread. Database errors
// throw pqxx exceptions; the runner catches them, resets its StoreConnection and backs off.
// Construction throws std::logic_error when the build embedded no statement of a name it
// needs (named_queries.h).
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class ClaimStore {
 public:
  // Every statement of claim_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit ClaimStore(pqxx::connection_base& conn);

  // Claims up to `limit` due jobs of `queue` for `node`, in (priority, scheduled_at, id)
  // order, marking them executing with attempt + 1, and never taking a channel or a tenant
  // past its cap given what the node already runs (`limits`). Picked jobs whose channel's
  // breaker is not closed, or that is paused, are parked instead; `parked` (if given) gets
  // their count. `held_back` (if given) gets how many rows it locked and left, for the caps
  // or the limit (0 when it took nothing): what the claim spent beyond what it took, which the
  // caps tests hold down (the runner needs only what it took). `windows` (if given) gets what
  // the windows kept and how many heads the skip scan visited, for the next look-ahead.
  // With `limits.front`, it runs the first window alone (ClaimFront, ADR 0031): it may then take
  // fewer than the whole claim would, never others.
  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node,
                                const ClaimLimits& limits, int* parked = nullptr,
                                int* held_back = nullptr, ClaimWindows* windows = nullptr);
  // The same without caps.
  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node,
                                int* parked = nullptr);

  // For up to `limit` channels of `queue` whose cooldown is over: open → half_open, and their
  // oldest due parked job claimed by `node` as the probe, which must answer within
  // probe_window_ms. Jobs come back with probe = true.
  std::vector<ClaimedJob> ClaimProbes(const std::string& queue, int limit, const std::string& node,
                                      int64_t probe_window_ms);

  // Pushes the channel's available jobs to no earlier than now() + delay_ms (a Retry-After);
  // never earlier than they were. Returns the jobs moved.
  int SnoozeChannel(int64_t channel, int64_t delay_ms);

  // Takes tokens from the rate buckets of limited channels, fleet-wide: for each request, how
  // many of its jobs may go now (the rest go back: HandBack). A channel deleted meanwhile is
  // not answered; one whose limit was removed is granted everything (rate 0).
  std::vector<TokenGrant> TakeTokens(const std::vector<TokenRequest>& requests);
  // Gives tokens taken and not used back to their buckets (`wanted`: how many).
  void ReturnTokens(const std::vector<TokenRequest>& unused);

  // Marks `node`'s runner of `queue` as waiting for news, so that enqueues notify it, or as
  // busy, so that they do not (bulkhead.sleepers, ADR 0019). Each is its own transaction.
  void MarkAsleep(const std::string& queue, const std::string& node);
  void MarkAwake(const std::string& queue, const std::string& node);
  // Opens the wake-up gate, after MarkAsleep committed (bulkhead.open_wake_gate(), migration
  // 0027), then returns the next transaction id and those running (bulkhead.fell_asleep());
  // then, while the runner watches them (SleepHorizon), the transactions running now. Each
  // statement its own transaction.
  SleepStart FellAsleep();
  RunningXids RunningTransactions();

  // Disables and pauses the channel (disabled_reason: "the endpoint answered 410 Gone at
  // <UTC time> (job <id>)"), parks its waiting backlog and the answering job (its attempt not
  // spent, if `node` still owns it at that attempt), in one statement.
  GoneOutcome DisableGone(const GoneAnswer& answer, const std::string& node);

  // Gives claimed jobs back as available, in the queue of their tenant's tier now, without
  // spending their attempt. Returns the rows.
  int HandBack(const std::vector<OwnedJob>& jobs, const std::string& node);

 private:
  pqxx::connection_base& conn_;
  // Whether this session plans generically (set by the first Claim; see there).
  bool generic_plans_ = false;
};

}  // namespace bulkhead
