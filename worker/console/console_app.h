// ConsoleApp: what the console answers — the gate every request passes (a token or a session,
// the role, the CSRF rule; console_app.cc) and the pages and the JSON API behind it
// (console_api.cc). docs/console.md is the contract: every path, answer and status.
//
// The gate, in order:
//   1. GET/POST /login and GET /assets/app.css are the only requests answered without a token.
//   2. `Authorization: Bearer TOKEN`, else the `bulkhead_session` cookie, names the caller;
//      neither, or one that names no token or live session: 401.
//   3. Any other POST is an action: a viewer gets 403, and a cookie session must pass the CSRF
//      rule (console_auth.h), else 403.
// Then the path: a page (the one HTML shell), an asset, or /api/….
//
// Refusals change nothing: a request that fails a check, names an unknown id (404) or has a
// malformed filter or body (400) reaches no statement that writes. Every action that does
// change something is written to the audit log (bulkhead.console_actions) and logged.
//
// Threads: Handle() is called from the server's request threads, several at once. The
// TokenCheck is immutable; the SessionTable, the ConsolePool and the RateSampler are safe from
// any thread; the cached overview is guarded by overview_mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "console_auth.h"
#include "console_pool.h"
#include "console_server.h"
#include "rate_sampler.h"

namespace bulkhead::console {

class ConsoleApp {
 public:
  ConsoleApp(TokenCheck tokens, ConsolePool& pool, RateSampler& rates,
             const WaitClock& clock = SteadyWaitClock());

  Response Handle(const Request& request);

 private:
  // Who is asking: the role, the audit log's name for them, and the session when it is a
  // browser's.
  struct Caller {
    Role role = Role::kViewer;
    std::string who;
    std::optional<Session> session;
  };
  using Query = std::map<std::string, std::string, std::less<>>;

  // console_app.cc: the gate.
  Response Login(const Request& request);
  Response Logout(const Request& request);
  std::optional<Caller> Authenticate(const Request& request);

  // console_api.cc: the API, past the gate.
  Response Api(const Request& request, const Caller& caller);
  Response Overview();
  Response Channels(const Query& query);
  Response Channel(int64_t id);
  Response Deliveries(const Query& query);
  Response CountDeliveries(const Query& query);
  Response Delivery(int64_t id);
  Response Payload(int64_t id, const Caller& caller);
  Response Actions(const Query& query);
  Response ChannelAction(int64_t id, std::string_view verb, const Caller& caller);
  Response DeliveryAction(int64_t id, std::string_view verb, const Caller& caller);
  Response BulkAction(std::string_view verb, const Request& request, const Caller& caller);
  // Writes an action to the audit log and to the log.
  void Audit(const Caller& caller, std::string_view action, const std::string& target,
             const std::string& filter_json, int64_t jobs);

  // The overview answered within kOverviewFresh of its making is answered again: every open
  // browser polls it every 2 s, and the console's cost must not grow with the people watching.
  static constexpr auto kOverviewFresh = std::chrono::seconds(1);

  const TokenCheck tokens_;
  ConsolePool& pool_;
  RateSampler& rates_;
  const WaitClock& clock_;
  SessionTable sessions_;
  // Held while the overview is made, so that browsers asking at once wait for one query.
  std::mutex overview_mu_;
  WaitClock::time_point overview_at_;  // guarded by overview_mu_
  std::string overview_;               // guarded by overview_mu_; "" before the first
};

}  // namespace bulkhead::console
