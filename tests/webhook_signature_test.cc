// Webhook signatures: the Standard Webhooks test vector, an independent HMAC from the openssl
// command-line tool, and the secrets that are refused.
#include "webhook_signature.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace bulkhead {
namespace {

// The specification's published vector (libraries/*/ in standard-webhooks/standard-webhooks).
TEST(WebhookSignature, MatchesTheStandardWebhooksTestVector) {
  EXPECT_EQ(SignWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                        1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, ChangesWithTheIdTheTimestampAndTheBody) {
  const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string reference = *SignWebhook(secret, "msg_1", 1614265330, "{}");
  EXPECT_NE(SignWebhook(secret, "msg_2", 1614265330, "{}"), reference);
  EXPECT_NE(SignWebhook(secret, "msg_1", 1614265331, "{}"), reference);
  EXPECT_NE(SignWebhook(secret, "msg_1", 1614265330, "{ }"), reference);
  EXPECT_EQ(SignWebhook(secret, "msg_1", 1614265330, "{}"), reference);
}

// ---- Several secrets: a rotation (Standard Webhooks, "Signature scheme") -----------------

TEST(WebhookSignature, SignsWithTheCurrentSecretAloneWhenThereIsNoOldOne) {
  const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  EXPECT_EQ(SignWebhookAll(secret, {}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                           R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, SignsWithEverySecretSpaceSeparatedCurrentFirst) {
  // The specification's vector as the current secret, and two old ones in the order given.
  const std::string current = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::vector<std::string> old = {"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
                                        "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="};
  const std::string id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  const std::string body = R"({"test": 2432232314})";
  std::optional<std::string> header = SignWebhookAll(current, old, id, 1614265330, body);
  ASSERT_TRUE(header);
  EXPECT_EQ(*header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= " +
                         *SignWebhook(old[0], id, 1614265330, body) + " " +
                         *SignWebhook(old[1], id, 1614265330, body));
  // Three "v1," + 44-character signatures and exactly two single spaces.
  EXPECT_EQ(header->size(), 3 * 47 + 2);
  EXPECT_EQ(std::count(header->begin(), header->end(), ' '), 2);
  EXPECT_NE(SignWebhook(old[0], id, 1614265330, body), SignWebhook(old[1], id, 1614265330, body));
}

TEST(WebhookSignature, LeavesOutAnOldSecretThatCannotSignButNeedsTheCurrentOne) {
  const std::string good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::vector<std::string> old = {"whsec_not base64", good};
  EXPECT_EQ(SignWebhookAll(good, old, "msg_1", 1614265330, "{}"),
            *SignWebhook(good, "msg_1", 1614265330, "{}") + " " +
                *SignWebhook(good, "msg_1", 1614265330, "{}"));
  const std::vector<std::string> just_good = {good};
  EXPECT_EQ(SignWebhookAll("whsec_", just_good, "msg_1", 1614265330, "{}"), std::nullopt);
}

// ---- An independent HMAC: openssl dgst and coreutils base64, in a shell -----------------

class TempDir {
 public:
  TempDir() {
    char path[] = "/tmp/bulkhead-signature-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = path;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(std::fclose(f), 0);
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

struct ShellResult {
  int status = -1;  // as pclose returns it: 0 when the pipeline's last command exited 0
  std::string out;
};

// Runs `script` with /bin/sh and captures its stdout (stderr goes to the test's own).
ShellResult Shell(const std::string& script) {
  ShellResult result;
  std::FILE* pipe = popen(script.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[512];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, got);
  result.status = pclose(pipe);
  return result;
}

TEST(WebhookSignature, AgreesWithTheOpensslCommandLineForRandomKeysOfEveryLength) {
  std::random_device seed_source;
  const unsigned seed = seed_source();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  TempDir dir;
  const std::string id = "12345678901";
  const int64_t timestamp = 1767225600;
  // UTF-8 in several widths, newlines of both kinds, a tab, quotes, a shell metacharacter.
  const std::string body =
      "{\"text\": \"h\xC3\xA9llo \xE2\x9C\x93 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\",\n"
      "  \"lines\": \"a\\nb\",\r\n\t\"cost\": \"$5 * 2\"}\n";
  WriteFile(dir.path() + "/content", id + "." + std::to_string(timestamp) + "." + body);

  // 1 and 2 bytes leave base64 padding of 2 and 1; 24 to 64 is the specification's range.
  for (size_t length : {1, 2, 3, 24, 32, 33, 64, 100}) {
    std::string key(length, '\0');
    for (char& c : key) c = static_cast<char>(random() & 0xff);
    SCOPED_TRACE("key " + Hex(key));
    WriteFile(dir.path() + "/key", key);
    ShellResult encoded = Shell("base64 -w0 " + dir.path() + "/key");
    ASSERT_EQ(encoded.status, 0);
    // pipefail is not POSIX: the 44-character check below catches a failed openssl.
    ShellResult expected = Shell("openssl dgst -sha256 -mac HMAC -macopt hexkey:" + Hex(key) +
                                 " -binary " + dir.path() + "/content | base64 -w0");
    ASSERT_EQ(expected.status, 0);
    ASSERT_EQ(expected.out.size(), 44u) << "openssl printed: " << expected.out;

    const std::string secret = "whsec_" + encoded.out;
    EXPECT_EQ(DecodeWebhookSecret(secret), key);
    EXPECT_EQ(SignWebhook(secret, id, timestamp, body), "v1," + expected.out);
  }
}

// ---- Secrets ----------------------------------------------------------------------------

TEST(WebhookSignature, DecodesSecretsWithOrWithoutPadding) {
  EXPECT_EQ(DecodeWebhookSecret("whsec_QQ=="), "A");
  EXPECT_EQ(DecodeWebhookSecret("whsec_QQ"), "A");
  EXPECT_EQ(DecodeWebhookSecret("whsec_QUI="), "AB");
  EXPECT_EQ(DecodeWebhookSecret("whsec_QUI"), "AB");
  EXPECT_EQ(DecodeWebhookSecret("whsec_QUJD"), "ABC");
  EXPECT_EQ(DecodeWebhookSecret("whsec_AAEC/+8="), std::string("\x00\x01\x02\xff\xef", 5));
  EXPECT_EQ(DecodeWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")->size(), 24u);
}

TEST(WebhookSignature, RefusesMalformedSecrets) {
  const std::vector<std::string> malformed = {
      "",                                          // empty
      "whsec_",                                    // no key bytes
      "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",          // no prefix
      "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",    // prefix in the wrong case
      "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",     // the asymmetric scheme's prefix
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",    // outside the alphabet
      "whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLa_w",    // URL-safe alphabet
      "whsec_MfKQ9r8GKYqrTwjU PD8ILPZIo2LaLaSw",   // whitespace inside
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",  // whitespace after
      "whsec_Q",                                   // 6 bits: not one byte
      "whsec_QUJDR",                               // 4 characters and a lone one
      "whsec_QQ=",                                 // padding cut short
      "whsec_QQ===",                               // padding too long
      "whsec_QUJD=",                               // padding after a full group
      "whsec_Q=Q=",                                // data after padding
      "whsec_====",                                // nothing but padding
  };
  for (const std::string& secret : malformed) {
    EXPECT_EQ(DecodeWebhookSecret(secret), std::nullopt) << '"' << secret << '"';
    EXPECT_EQ(SignWebhook(secret, "msg_1", 1614265330, "{}"), std::nullopt) << '"' << secret << '"';
  }
}

}  // namespace
}  // namespace bulkhead
