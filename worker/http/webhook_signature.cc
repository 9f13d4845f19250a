#include "webhook_signature.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>

namespace bulkhead {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr size_t kSha256Bytes = 32;

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

std::string Base64(const unsigned char* bytes, size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes, static_cast<int>(size));
  out.resize(static_cast<size_t>(written));
  return out;
}

// HMAC-SHA256 is fetched once; OpenSSL lets one EVP_MAC serve contexts on every thread.
struct MacDeleter {
  void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
};
struct MacCtxDeleter {
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

EVP_MAC* Hmac() {
  static const std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  return mac.get();
}

}  // namespace

std::optional<std::string> DecodeWebhookSecret(std::string_view secret) {
  if (!secret.starts_with(kSecretPrefix)) return std::nullopt;
  std::string_view encoded = secret.substr(kSecretPrefix.size());
  size_t data_chars = encoded.find('=');
  if (data_chars == std::string_view::npos) data_chars = encoded.size();
  size_t padding = encoded.size() - data_chars;
  for (size_t i = 0; i < data_chars; ++i) {
    if (!IsBase64Char(encoded[i])) return std::nullopt;
  }
  // Only '=' after the first '=', and only as many as complete the last group of four.
  if (encoded.find_first_not_of('=', data_chars) != std::string_view::npos) return std::nullopt;
  size_t missing = (4 - data_chars % 4) % 4;
  if (data_chars == 0 || missing == 3) return std::nullopt;  // no byte, or a lone 6-bit char
  if (padding != 0 && padding != missing) return std::nullopt;

  std::string padded(encoded.substr(0, data_chars));
  padded.append(missing, '=');
  std::string key(padded.size() / 4 * 3, '\0');
  int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(key.data()),
                                reinterpret_cast<const unsigned char*>(padded.data()),
                                static_cast<int>(padded.size()));
  if (decoded < 0) return std::nullopt;
  // EVP_DecodeBlock counts the bytes that padding stands for as zeros of the output.
  key.resize(static_cast<size_t>(decoded) - missing);
  return key;
}

std::optional<std::string> SignWebhook(std::string_view secret, std::string_view webhook_id,
                                       int64_t timestamp, std::string_view body) {
  std::optional<std::string> key = DecodeWebhookSecret(secret);
  if (!key || Hmac() == nullptr) return std::nullopt;

  std::unique_ptr<EVP_MAC_CTX, MacCtxDeleter> ctx(EVP_MAC_CTX_new(Hmac()));
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  std::string stamp = std::to_string(timestamp);
  auto update = [&](std::string_view part) {
    return EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                          part.size()) == 1;
  };
  unsigned char mac[kSha256Bytes];
  size_t mac_size = 0;
  // The signed content, streamed so that the body is never copied: id.timestamp.body.
  bool ok = ctx != nullptr &&
            EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key->data()),
                         key->size(), params) == 1 &&
            update(webhook_id) && update(".") && update(stamp) && update(".") && update(body) &&
            EVP_MAC_final(ctx.get(), mac, &mac_size, sizeof(mac)) == 1 && mac_size == kSha256Bytes;
  if (!ok) return std::nullopt;
  return "v1," + Base64(mac, mac_size);
}

std::optional<std::string> SignWebhookAll(std::string_view current,
                                          std::span<const std::string> old_secrets,
                                          std::string_view webhook_id, int64_t timestamp,
                                          std::string_view body) {
  std::optional<std::string> header = SignWebhook(current, webhook_id, timestamp, body);
  if (!header) return std::nullopt;
  for (const std::string& old : old_secrets) {
    if (std::optional<std::string> signature = SignWebhook(old, webhook_id, timestamp, body)) {
      *header += ' ';
      *header += *signature;
    }
  }
  return header;
}

}  // namespace bulkhead
