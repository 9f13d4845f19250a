// RequestLog: what the mock provider saw — every /hook/ request as a record, and per route the
// counters a scenario reads (requests, duplicates by webhook-id, answers, signature checks,
// requests in flight now and at most).
//
// Safe for concurrent use: every member takes mu_, held only for a few map operations, so the
// server's I/O threads (two by default) can record thousands of requests a second. Signature
// checks run outside the lock, on a snapshot of the secrets.
//
// Memory grows with the records (about 100 bytes each). That is the point of a recorder, but it
// is bounded: past `max_records` records are counted and dropped, and the statistics say so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bulkhead::mock {

// The outcome of checking a request's `webhook-signature`.
enum class SignatureCheck {
  kUnchecked,  // no secret is known to the mock
  kMissing,    // a secret is known but the webhook-* headers are missing or malformed
  kValid,      // one of the header's v1 signatures matches one of the secrets
  kInvalid,    // none matches
};
const char* SignatureCheckName(SignatureCheck check);

// kHang as the answered status: the mock never answers the request.
inline constexpr int kHang = -1;

struct RequestRecord {
  std::string route;           // "/hook/healthy"
  std::string webhook_id;      // empty when the header was missing
  int64_t sent_at_us = -1;     // the payload's "sent_at_us" (Unix µs), -1 when it has none
  int64_t received_at_us = 0;  // when the request's last byte was read (Unix µs)
  int status = 0;              // what the mock answers (or will answer, after a delay); kHang
  SignatureCheck signature = SignatureCheck::kUnchecked;
  bool duplicate = false;  // an earlier request carried the same webhook-id
};

class RequestLog {
 public:
  explicit RequestLog(size_t max_records = 10'000'000) : max_records_(max_records) {}

  // Counts the request as received and in flight on its route, and stores its record. Returns
  // whether it is a duplicate.
  bool Record(RequestRecord record);
  // The request's answer was written, or its connection closed: no longer in flight.
  void Finished(const std::string& route);

  // Replaces the secrets signatures are checked against ("whsec_…"; empty: no checks).
  void SetSecrets(std::vector<std::string> secrets);
  // Checks a request's signature headers against the current secrets.
  SignatureCheck CheckSignature(std::string_view id, std::string_view timestamp,
                                std::string_view signature, std::string_view body) const;

  // Forgets every record and counter (requests in flight stay counted: they are still open);
  // the secrets stay.
  void Reset();

  // {"records", "dropped_records", "routes": {route: {requests, unique_ids, duplicates,
  //  in_flight, max_in_flight, answers: {"200": n, "hang": n}, signatures: {valid: n, …}}}}
  nlohmann::json Stats() const;
  // {"records": [...], "next": i, "total": n}: up to `limit` records from index `since`, of
  // `route` only when it is not empty. `next` is where the following call starts.
  nlohmann::json Records(size_t since, size_t limit, std::string_view route) const;

 private:
  struct RouteStats {
    uint64_t requests = 0;
    uint64_t with_id = 0;  // requests that carried a webhook-id
    uint64_t duplicates = 0;
    int64_t in_flight = 0;
    int64_t max_in_flight = 0;
    std::map<int, uint64_t> answers;
    std::map<SignatureCheck, uint64_t> signatures;
  };

  // Constant after construction
  const size_t max_records_;

  // Guarded by mu_
  mutable std::mutex mu_;
  std::vector<RequestRecord> records_;
  uint64_t dropped_records_ = 0;
  std::unordered_map<std::string, uint32_t> seen_ids_;  // webhook-id → requests that carried it
  std::map<std::string, RouteStats, std::less<>> routes_;
  std::shared_ptr<const std::vector<std::string>> secrets_ =
      std::make_shared<const std::vector<std::string>>();
};

// The payload's "sent_at_us" number, found without parsing the whole body (the mock reads
// thousands of bodies a second); -1 when absent or not a number.
int64_t SentAtFromBody(std::string_view body);

}  // namespace bulkhead::mock
