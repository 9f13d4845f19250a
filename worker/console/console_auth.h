// Who a console request is, and whether it may act: the tokens (TokenCheck), the browser's
// sessions (SessionTable), and the CSRF rule (docs/console.md, "Security").
//
// Tokens. The admin token may read and act; the viewer token may only read. A presented token
// is compared by its SHA-256 against each configured token's, with CRYPTO_memcmp, so neither
// the comparison's time nor its length says how much of a guess was right.
//
// Sessions. A browser logs in once (POST /login with a token) and then carries a cookie: 256
// random bits naming a session that holds the role and its CSRF token (another 256 bits, which
// the page reads from GET /api/session and sends back as X-CSRF-Token on every action). A
// session ends after kIdle without a request, after kLifetime in any case, at logout, or when
// kMaxSessions newer ones push it out (least recently used first), so the table is bounded
// whatever logs in.
//
// Threads: TokenCheck is immutable after construction and safe from any thread. SessionTable
// is used from the console's request threads: every method takes its mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "service_thread.h"  // WaitClock

namespace bulkhead::console {

enum class Role { kViewer, kAdmin };

std::string_view RoleName(Role role);

// The configured tokens.
class TokenCheck {
 public:
  // `admin` must not be empty; an empty `viewer` means no viewer token.
  TokenCheck(std::string_view admin, std::string_view viewer);

  // The role `presented` grants; nullopt when it is no configured token.
  std::optional<Role> RoleOf(std::string_view presented) const;

  // What the audit log names a token by: the first 8 hex digits of its SHA-256 (a token cannot
  // be recovered from it, and an operator can tell which of their files was used).
  static std::string Fingerprint(std::string_view token);

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest Sha256(std::string_view text);

  Digest admin_;
  std::optional<Digest> viewer_;
};

// 32 random bytes from OpenSSL's generator, as 64 hex digits. Throws std::runtime_error if the
// generator fails (it never returns weak bytes).
std::string RandomToken();

struct Session {
  Role role = Role::kViewer;
  std::string csrf;  // the X-CSRF-Token every action of this session must carry
  std::string who;   // the audit log's name for it: "admin:<fingerprint>"
};

class SessionTable {
 public:
  static constexpr auto kIdle = std::chrono::hours(8);
  static constexpr auto kLifetime = std::chrono::hours(12);
  static constexpr size_t kMaxSessions = 1000;

  explicit SessionTable(const WaitClock& clock = SteadyWaitClock());

  // A new session; returns its id (the cookie's value).
  std::string Open(Session session);
  // The live session `id` names, refreshed; nullopt when none (unknown, ended or expired).
  std::optional<Session> Find(std::string_view id);
  // Ends session `id`, if it is one.
  void Close(std::string_view id);
  size_t size() const;

 private:
  struct Entry {
    Session session;
    WaitClock::time_point opened, used;
    std::list<std::string>::iterator order;  // its place in by_use_
  };

  const WaitClock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> sessions_;  // guarded by mu_
  std::list<std::string> by_use_;                    // guarded by mu_; most recently used first
};

// Whether an action from a cookie session passes the CSRF rule: `header` (X-CSRF-Token) equals
// the session's token (constant time), and `origin`, when the request has one, is the console's
// own ("http://HOST" or "https://HOST", HOST as the request's Host header).
bool PassesCsrf(const Session& session, std::string_view header,
                const std::optional<std::string_view>& origin, std::string_view host, bool tls);

}  // namespace bulkhead::console
