#include "console_auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace bulkhead::console {

namespace {

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

}  // namespace

std::string_view RoleName(Role role) { return role == Role::kAdmin ? "admin" : "viewer"; }

TokenCheck::TokenCheck(std::string_view admin, std::string_view viewer) : admin_(Sha256(admin)) {
  if (!viewer.empty()) viewer_ = Sha256(viewer);
}

TokenCheck::Digest TokenCheck::Sha256(std::string_view text) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

std::optional<Role> TokenCheck::RoleOf(std::string_view presented) const {
  // Both digests are compared every time, so the answer's time does not say which matched.
  const Digest digest = Sha256(presented);
  const bool admin = CRYPTO_memcmp(digest.data(), admin_.data(), digest.size()) == 0;
  const bool viewer = viewer_ && CRYPTO_memcmp(digest.data(), viewer_->data(), digest.size()) == 0;
  if (admin) return Role::kAdmin;
  if (viewer) return Role::kViewer;
  return std::nullopt;
}

std::string TokenCheck::Fingerprint(std::string_view token) {
  const Digest digest = Sha256(token);
  return Hex(digest.data(), 4);
}

std::string RandomToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("OpenSSL's random generator failed");
  }
  return Hex(bytes, sizeof bytes);
}

SessionTable::SessionTable(const WaitClock& clock) : clock_(clock) {}

std::string SessionTable::Open(Session session) {
  std::string id = RandomToken();
  const auto now = clock_.Now();
  std::lock_guard lock(mu_);
  while (sessions_.size() >= kMaxSessions) {
    sessions_.erase(by_use_.back());
    by_use_.pop_back();
  }
  by_use_.push_front(id);
  sessions_.emplace(id, Entry{std::move(session), now, now, by_use_.begin()});
  return id;
}

std::optional<Session> SessionTable::Find(std::string_view id) {
  const auto now = clock_.Now();
  std::lock_guard lock(mu_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return std::nullopt;
  Entry& entry = it->second;
  if (now - entry.used > kIdle || now - entry.opened > kLifetime) {
    by_use_.erase(entry.order);
    sessions_.erase(it);
    return std::nullopt;
  }
  entry.used = now;
  by_use_.splice(by_use_.begin(), by_use_, entry.order);
  return entry.session;
}

void SessionTable::Close(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return;
  by_use_.erase(it->second.order);
  sessions_.erase(it);
}

size_t SessionTable::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

bool PassesCsrf(const Session& session, std::string_view header,
                const std::optional<std::string_view>& origin, std::string_view host, bool tls) {
  if (header.size() != session.csrf.size() ||
      CRYPTO_memcmp(header.data(), session.csrf.data(), header.size()) != 0) {
    return false;
  }
  if (!origin) return true;
  const std::string own = std::string(tls ? "https://" : "http://") + std::string(host);
  return *origin == own;
}

}  // namespace bulkhead::console
