// console_auth: the tokens, the sessions (on a clock stepped by hand) and the CSRF rule.
#include "console_auth.h"

#include <gtest/gtest.h>

namespace bulkhead::console {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// Only Now() is used by SessionTable.
class StepClock : public WaitClock {
 public:
  time_point Now() const override { return now_; }
  bool WaitUntil(std::condition_variable&, std::unique_lock<std::mutex>&,
                 time_point) const override {
    return false;
  }
  void Advance(std::chrono::steady_clock::duration step) { now_ += step; }

 private:
  time_point now_{};
};

TEST(TokenCheck, GivesEachTokenItsRoleAndNothingElseAny) {
  const TokenCheck tokens("admin-token-0123456789", "viewer-token-0123456789");
  EXPECT_EQ(tokens.RoleOf("admin-token-0123456789"), Role::kAdmin);
  EXPECT_EQ(tokens.RoleOf("viewer-token-0123456789"), Role::kViewer);
  EXPECT_EQ(tokens.RoleOf(""), std::nullopt);
  EXPECT_EQ(tokens.RoleOf("admin-token-012345678"), std::nullopt) << "a prefix";
  EXPECT_EQ(tokens.RoleOf("admin-token-01234567890"), std::nullopt) << "a longer one";
  EXPECT_EQ(tokens.RoleOf("ADMIN-TOKEN-0123456789"), std::nullopt);
}

TEST(TokenCheck, WithoutAViewerTokenTheEmptyStringIsNoToken) {
  const TokenCheck tokens("admin-token-0123456789", "");
  EXPECT_EQ(tokens.RoleOf(""), std::nullopt);
}

TEST(TokenCheck, AFingerprintNamesATokenWithoutRevealingIt) {
  const std::string print = TokenCheck::Fingerprint("admin-token-0123456789");
  EXPECT_EQ(print.size(), 8u);
  EXPECT_EQ(print, TokenCheck::Fingerprint("admin-token-0123456789"));
  EXPECT_NE(print, TokenCheck::Fingerprint("admin-token-0123456780"));
}

TEST(RandomToken, Is64HexDigitsAndDiffersEachTime) {
  const std::string a = RandomToken(), b = RandomToken();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(SessionTable, ASessionLivesWhileUsedAndEndsWhenIdleOrTooOld) {
  StepClock clock;
  SessionTable sessions(clock);
  const std::string id = sessions.Open({Role::kAdmin, "csrf", "admin:x"});
  ASSERT_TRUE(sessions.Find(id));
  EXPECT_EQ(sessions.Find(id)->role, Role::kAdmin);
  // Used every 7 hours, it outlives the 8-hour idle limit, but not the 12-hour lifetime.
  clock.Advance(hours(7));
  EXPECT_TRUE(sessions.Find(id));
  clock.Advance(hours(4));
  EXPECT_TRUE(sessions.Find(id));
  clock.Advance(hours(1) + minutes(1));
  EXPECT_FALSE(sessions.Find(id));
  EXPECT_EQ(sessions.size(), 0u);

  const std::string idle = sessions.Open({Role::kViewer, "csrf", "viewer:x"});
  clock.Advance(hours(8) + minutes(1));
  EXPECT_FALSE(sessions.Find(idle));
}

TEST(SessionTable, LogoutEndsASessionAndUnknownIdsFindNothing) {
  StepClock clock;
  SessionTable sessions(clock);
  const std::string id = sessions.Open({Role::kAdmin, "csrf", "admin:x"});
  EXPECT_FALSE(sessions.Find("not-a-session"));
  sessions.Close(id);
  EXPECT_FALSE(sessions.Find(id));
  sessions.Close(id);  // twice: nothing
}

TEST(SessionTable, IsBoundedAndPushesOutTheLeastRecentlyUsed) {
  StepClock clock;
  SessionTable sessions(clock);
  const std::string first = sessions.Open({Role::kAdmin, "c", "a"});
  const std::string second = sessions.Open({Role::kAdmin, "c", "a"});
  for (size_t i = 2; i < SessionTable::kMaxSessions; ++i) sessions.Open({Role::kAdmin, "c", "a"});
  ASSERT_TRUE(sessions.Find(first));  // now the most recently used
  sessions.Open({Role::kAdmin, "c", "a"});
  EXPECT_EQ(sessions.size(), SessionTable::kMaxSessions);
  EXPECT_TRUE(sessions.Find(first));
  EXPECT_FALSE(sessions.Find(second));
}

TEST(PassesCsrf, NeedsTheSessionsTokenAndTheConsolesOwnOrigin) {
  const Session session{Role::kAdmin, std::string(64, 'f'), "admin:x"};
  const std::string token(64, 'f');
  EXPECT_TRUE(PassesCsrf(session, token, std::nullopt, "127.0.0.1:8080", false));
  EXPECT_TRUE(PassesCsrf(session, token, "http://127.0.0.1:8080", "127.0.0.1:8080", false));
  EXPECT_TRUE(PassesCsrf(session, token, "https://console.example", "console.example", true));
  EXPECT_FALSE(PassesCsrf(session, "", std::nullopt, "127.0.0.1:8080", false));
  EXPECT_FALSE(PassesCsrf(session, std::string(64, 'e'), std::nullopt, "127.0.0.1:8080", false));
  EXPECT_FALSE(PassesCsrf(session, token, "https://evil.example", "127.0.0.1:8080", false));
  EXPECT_FALSE(PassesCsrf(session, token, "null", "127.0.0.1:8080", false));
  EXPECT_FALSE(PassesCsrf(session, token, "http://console.example", "console.example", true))
      << "an http origin on the TLS console";
}

}  // namespace
}  // namespace bulkhead::console
