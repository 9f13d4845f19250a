#include "request_log.h"

#include <charconv>

#include "webhook_signature.h"

namespace bulkhead::mock {

const char* SignatureCheckName(SignatureCheck check) {
  switch (check) {
    case SignatureCheck::kUnchecked:
      return "unchecked";
    case SignatureCheck::kMissing:
      return "missing";
    case SignatureCheck::kValid:
      return "valid";
    case SignatureCheck::kInvalid:
      return "invalid";
  }
  return "?";
}

bool RequestLog::Record(RequestRecord record) {
  std::lock_guard lock(mu_);
  auto it = routes_.find(record.route);
  if (it == routes_.end()) it = routes_.emplace(record.route, RouteStats{}).first;
  RouteStats& route = it->second;
  ++route.requests;
  route.in_flight += 1;
  route.max_in_flight = std::max(route.max_in_flight, route.in_flight);
  ++route.answers[record.status];
  ++route.signatures[record.signature];
  if (!record.webhook_id.empty()) {
    ++route.with_id;
    uint32_t& seen = seen_ids_[record.webhook_id];
    record.duplicate = seen > 0;
    ++seen;
    if (record.duplicate) ++route.duplicates;
  }
  bool duplicate = record.duplicate;
  if (records_.size() < max_records_) {
    records_.push_back(std::move(record));
  } else {
    ++dropped_records_;
  }
  return duplicate;
}

void RequestLog::Finished(const std::string& route) {
  std::lock_guard lock(mu_);
  auto it = routes_.find(route);
  if (it != routes_.end()) it->second.in_flight -= 1;
}

void RequestLog::SetSecrets(std::vector<std::string> secrets) {
  auto snapshot = std::make_shared<const std::vector<std::string>>(std::move(secrets));
  std::lock_guard lock(mu_);
  secrets_ = std::move(snapshot);
}

SignatureCheck RequestLog::CheckSignature(std::string_view id, std::string_view timestamp,
                                          std::string_view signature, std::string_view body) const {
  std::shared_ptr<const std::vector<std::string>> secrets;
  {
    std::lock_guard lock(mu_);
    secrets = secrets_;
  }
  if (secrets->empty()) return SignatureCheck::kUnchecked;
  int64_t ts = 0;
  auto [end, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ts);
  if (id.empty() || signature.empty() || ec != std::errc() ||
      end != timestamp.data() + timestamp.size()) {
    return SignatureCheck::kMissing;
  }
  // The header may carry several space-separated signatures ("v1,abc v1,def"), as during a
  // secret rotation; one match is enough.
  for (const std::string& secret : *secrets) {
    auto expected = SignWebhook(secret, id, ts, body);
    if (!expected) continue;
    std::string_view rest = signature;
    while (!rest.empty()) {
      auto space = rest.find(' ');
      if (rest.substr(0, space) == *expected) return SignatureCheck::kValid;
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
  }
  return SignatureCheck::kInvalid;
}

void RequestLog::Reset() {
  std::lock_guard lock(mu_);
  records_.clear();
  records_.shrink_to_fit();
  dropped_records_ = 0;
  seen_ids_.clear();
  for (auto& [name, route] : routes_) {
    int64_t in_flight = route.in_flight;
    route = RouteStats{};
    route.in_flight = in_flight;
    route.max_in_flight = in_flight;
  }
}

nlohmann::json RequestLog::Stats() const {
  std::lock_guard lock(mu_);
  nlohmann::json routes = nlohmann::json::object();
  for (const auto& [name, route] : routes_) {
    nlohmann::json answers = nlohmann::json::object();
    for (const auto& [status, n] : route.answers) {
      answers[status == kHang ? "hang" : std::to_string(status)] = n;
    }
    nlohmann::json signatures = nlohmann::json::object();
    for (const auto& [check, n] : route.signatures) signatures[SignatureCheckName(check)] = n;
    routes[name] = {{"requests", route.requests},
                    {"unique_ids", route.with_id - route.duplicates},
                    {"duplicates", route.duplicates},
                    {"in_flight", route.in_flight},
                    {"max_in_flight", route.max_in_flight},
                    {"answers", answers},
                    {"signatures", signatures}};
  }
  return {{"records", records_.size()}, {"dropped_records", dropped_records_}, {"routes", routes}};
}

nlohmann::json RequestLog::Records(size_t since, size_t limit, std::string_view route) const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  size_t i = since;
  for (; i < records_.size() && out.size() < limit; ++i) {
    const RequestRecord& r = records_[i];
    if (!route.empty() && r.route != route) continue;
    out.push_back(
        {{"i", i},
         {"route", r.route},
         {"webhook_id", r.webhook_id},
         {"sent_at_us", r.sent_at_us},
         {"received_at_us", r.received_at_us},
         {"status", r.status == kHang ? nlohmann::json("hang") : nlohmann::json(r.status)},
         {"signature", SignatureCheckName(r.signature)},
         {"duplicate", r.duplicate}});
  }
  return {{"records", std::move(out)}, {"next", i}, {"total", records_.size()}};
}

int64_t SentAtFromBody(std::string_view body) {
  constexpr std::string_view kKey = "\"sent_at_us\"";
  auto at = body.find(kKey);
  if (at == std::string_view::npos) return -1;
  size_t i = at + kKey.size();
  while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n')) ++i;
  if (i >= body.size() || body[i] != ':') return -1;
  ++i;
  while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n')) ++i;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(body.data() + i, body.data() + body.size(), value);
  if (ec != std::errc() || end == body.data() + i) return -1;
  return value;
}

}  // namespace bulkhead::mock
