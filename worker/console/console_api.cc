// The console's JSON API (docs/console.md, "JSON API"): the routes past the gate, each read and
// action, and how a database error becomes an answer.
#include <charconv>
#include <nlohmann/json.hpp>
#include <vector>

#include "console_app.h"
#include "logger.h"
#include "url_form.h"

namespace bulkhead::console {
namespace {

using nlohmann::json;

// Bounds of what a request may ask for.
constexpr int64_t kChannelsDefault = 500, kChannelsMax = 1000;
constexpr int64_t kDeliveriesDefault = 50, kDeliveriesMax = 500;
constexpr int64_t kActionsDefault = 100, kActionsMax = 1000;
// A bulk action goes in statements of kBatch jobs, at most kBulkMax jobs a request.
constexpr int kBatch = 1000;
constexpr int64_t kBulkMax = 100000;

// A refusal of the request as it was asked: 400, with why.
struct BadRequest {
  std::string why;
};

Response Json(int status, const json& body) {
  return {status, "application/json; charset=utf-8", body.dump() + "\n", {}};
}
Response Error(int status, const std::string& why) { return Json(status, {{"error", why}}); }
// A JSON document the store built, passed on as it is.
Response Document(std::string body) {
  return {200, "application/json; charset=utf-8", std::move(body) + "\n", {}};
}

// A positive decimal id that fits int64 ("7"; not "07x", "+7", "0").
std::optional<int64_t> ParseId(std::string_view word) {
  if (word.empty() || word.front() == '0' ||
      word.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t end = path.find('/');
    parts.push_back(path.substr(0, end));
    if (end == std::string_view::npos) break;
    path.remove_prefix(end + 1);
  }
  return parts;
}

// The query string as a form, refusing a name not in `known`.
Form QueryOf(const Request& request, std::initializer_list<std::string_view> known) {
  std::optional<Form> form = ParseForm(request.query);
  if (!form) throw BadRequest{"the query string is not valid URL encoding"};
  for (const auto& [name, value] : *form) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || name == k;
    if (!ok) throw BadRequest{"unknown parameter '" + name + "'"};
  }
  return *form;
}

std::optional<int64_t> IdParam(const Form& form, std::string_view name) {
  auto it = form.find(name);
  if (it == form.end() || it->second.empty()) return std::nullopt;
  std::optional<int64_t> id = ParseId(it->second);
  if (!id) throw BadRequest{std::string(name) + " must be a positive integer"};
  return id;
}

int64_t LimitParam(const Form& form, std::string_view name, int64_t fallback, int64_t max,
                   int64_t min = 1) {
  auto it = form.find(name);
  if (it == form.end() || it->second.empty()) return fallback;
  int64_t value = -1;
  if (it->second == "0") {
    value = 0;
  } else if (std::optional<int64_t> id = ParseId(it->second)) {
    value = *id;
  }
  if (value < min || value > max) {
    throw BadRequest{std::string(name) + " must be a number from " + std::to_string(min) + " to " +
                     std::to_string(max)};
  }
  return value;
}

std::optional<std::string> TextParam(const Form& form, std::string_view name) {
  auto it = form.find(name);
  if (it == form.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

const std::vector<std::string_view>& States() {
  static const std::vector<std::string_view> states = {"available", "executing", "parked",
                                                       "completed", "discarded", "cancelled"};
  return states;
}

DeliveryFilter FilterOf(const Form& form) {
  DeliveryFilter filter;
  filter.state = TextParam(form, "state");
  if (filter.state) {
    bool known = false;
    for (std::string_view s : States()) known = known || *filter.state == s;
    if (!known) {
      throw BadRequest{
          "state must be available, executing, parked, completed, discarded or "
          "cancelled"};
    }
  }
  filter.channel = IdParam(form, "channel");
  filter.tenant = IdParam(form, "tenant");
  filter.since = TextParam(form, "since");
  filter.until = TextParam(form, "until");
  return filter;
}

// A bulk action's body: a JSON object of `known` keys, channel and tenant ids, since and until
// times (checked by PostgreSQL when used); at least a channel or a tenant.
DeliveryFilter BodyFilter(const std::string& body, std::initializer_list<std::string_view> known) {
  const json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw BadRequest{"the body must be a JSON object"};
  DeliveryFilter filter;
  for (const auto& [key, value] : doc.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) throw BadRequest{"unknown field '" + key + "'"};
    if (key == "channel" || key == "tenant") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        throw BadRequest{key + " must be a positive integer"};
      }
      (key == "channel" ? filter.channel : filter.tenant) = value.get<int64_t>();
    } else {
      if (!value.is_string() || value.get<std::string>().empty()) {
        throw BadRequest{key + " must be a time (ISO 8601, with its zone)"};
      }
      (key == "since" ? filter.since : filter.until) = value.get<std::string>();
    }
  }
  if (!filter.channel && !filter.tenant) {
    throw BadRequest{"a bulk action needs a channel or a tenant"};
  }
  return filter;
}

json FilterJson(const DeliveryFilter& filter) {
  json out = json::object();
  if (filter.channel) out["channel"] = *filter.channel;
  if (filter.tenant) out["tenant"] = *filter.tenant;
  if (filter.since) out["since"] = *filter.since;
  if (filter.until) out["until"] = *filter.until;
  return out;
}

std::string TargetOf(const DeliveryFilter& filter) {
  std::string target;
  if (filter.channel) target = "channel " + std::to_string(*filter.channel);
  if (filter.tenant) {
    target += (target.empty() ? "tenant " : " of tenant ") + std::to_string(*filter.tenant);
  }
  return target;
}

}  // namespace

Response ConsoleApp::Api(const Request& request, const Caller& caller) {
  const std::vector<std::string_view> parts =
      Segments(std::string_view(request.path).substr(std::string_view("/api/").size()));
  const bool get = request.method == "GET" || request.method == "HEAD";
  const size_t n = parts.size();
  const std::string_view head = parts.empty() ? "" : parts[0];
  // 0: the second segment is not an id (ids are positive).
  const int64_t id = n >= 2 ? ParseId(parts[1]).value_or(0) : 0;
  auto only = [&](bool want_get) -> std::optional<Response> {
    if (get == want_get) return std::nullopt;
    Response refused = Error(405, want_get ? "this is read with GET" : "this is done with POST");
    refused.headers.emplace_back("Allow", want_get ? "GET" : "POST");
    return refused;
  };
  try {
    if (n == 1 && head == "session") {
      if (auto refused = only(true)) return *refused;
      return Json(200, {{"role", RoleName(caller.role)},
                        {"csrf", caller.session ? caller.session->csrf : ""}});
    }
    if (n == 1 && head == "overview") {
      if (auto refused = only(true)) return *refused;
      return Overview();
    }
    if (n == 1 && head == "actions") {
      if (auto refused = only(true)) return *refused;
      return Actions(QueryOf(request, {"limit"}));
    }
    if (head == "channels") {
      if (n == 1) {
        if (auto refused = only(true)) return *refused;
        return Channels(QueryOf(request, {"q", "after", "limit"}));
      }
      if (id == 0) return Error(404, "no such channel: '" + std::string(parts[1]) + "'");
      if (n == 2) {
        if (auto refused = only(true)) return *refused;
        return Channel(id);
      }
      if (n == 3 && (parts[2] == "pause" || parts[2] == "resume" || parts[2] == "reset" ||
                     parts[2] == "enable")) {
        if (auto refused = only(false)) return *refused;
        return ChannelAction(id, parts[2], caller);
      }
    }
    if (head == "deliveries") {
      if (n == 1) {
        if (auto refused = only(true)) return *refused;
        return Deliveries(
            QueryOf(request, {"state", "channel", "tenant", "since", "until", "limit"}));
      }
      if (n == 2 && parts[1] == "count") {
        if (auto refused = only(true)) return *refused;
        return CountDeliveries(QueryOf(request, {"action", "channel", "tenant", "since", "until"}));
      }
      if (n == 2 && (parts[1] == "replay" || parts[1] == "cancel")) {
        if (auto refused = only(false)) return *refused;
        return BulkAction(parts[1], request, caller);
      }
      if (id == 0) return Error(404, "no such delivery: '" + std::string(parts[1]) + "'");
      if (n == 2) {
        if (auto refused = only(true)) return *refused;
        return Delivery(id);
      }
      if (n == 3 && parts[2] == "payload") {
        if (auto refused = only(true)) return *refused;
        return Payload(id, caller);
      }
      if (n == 3 && (parts[2] == "replay" || parts[2] == "cancel")) {
        if (auto refused = only(false)) return *refused;
        return DeliveryAction(id, parts[2], caller);
      }
    }
    return Error(404, "no such API path: " + request.path);
  } catch (const BadRequest& bad) {
    return Error(400, bad.why);
  } catch (const pqxx::data_exception& e) {
    // A filter PostgreSQL refused: a time it cannot read ("yesterday-ish"), a day out of range.
    std::string why = FirstLine(e.what());
    if (why.rfind("ERROR:  ", 0) == 0) why.erase(0, 8);
    return Error(400, "the database refused the filter: " + why);
  } catch (const pqxx::broken_connection&) {
    return Error(503, "the database cannot be reached");
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "57014") {  // query_canceled: the console's statement timeout
      return Error(503, "the query took longer than the console's statement timeout");
    }
    throw;
  }
}

Response ConsoleApp::Overview() {
  std::unique_lock lock(overview_mu_);
  const auto now = clock_.Now();
  if (overview_.empty() || now - overview_at_ >= kOverviewFresh) {
    overview_ = pool_.With([](ConsoleStores& s) { return s.console.Overview(); });
    overview_at_ = now;
  }
  json overview = json::parse(overview_);
  lock.unlock();
  const std::map<std::string, TierRates> rates = rates_.Rates();
  for (json& tier : overview["tiers"]) {
    auto it = rates.find(tier["queue"].get<std::string>());
    const TierRates r = it == rates.end() ? TierRates{} : it->second;
    tier["completed_per_s"] = r.completed_per_s;
    tier["discarded_per_s"] = r.discarded_per_s;
    tier["failure_rate"] = r.failure_rate;
    double window_s = r.window_s;
    if (window_s == 0) {  // a tier that finished nothing: the window the sampler covers
      for (const auto& [queue, other] : rates) window_s = std::max(window_s, other.window_s);
    }
    tier["window_s"] = window_s;
  }
  return Json(200, overview);
}

Response ConsoleApp::Channels(const Query& query) {
  const std::optional<std::string> q = TextParam(query, "q");
  const int64_t after = LimitParam(query, "after", 0, INT64_MAX, 0);
  const int64_t limit = LimitParam(query, "limit", kChannelsDefault, kChannelsMax);
  return Document(
      pool_.With([&](ConsoleStores& s) { return s.console.Channels(q, after, limit); }));
}

Response ConsoleApp::Channel(int64_t id) {
  std::optional<std::string> doc =
      pool_.With([&](ConsoleStores& s) { return s.console.Channel(id); });
  if (!doc) return Error(404, "no such channel: " + std::to_string(id));
  return Document(std::move(*doc));
}

Response ConsoleApp::Deliveries(const Query& query) {
  const DeliveryFilter filter = FilterOf(query);
  const int64_t limit = LimitParam(query, "limit", kDeliveriesDefault, kDeliveriesMax);
  return Document(
      pool_.With([&](ConsoleStores& s) { return s.console.Deliveries(filter, limit); }));
}

Response ConsoleApp::CountDeliveries(const Query& query) {
  const std::optional<std::string> action = TextParam(query, "action");
  if (!action || (*action != "replay" && *action != "cancel")) {
    throw BadRequest{"action must be replay or cancel"};
  }
  DeliveryFilter filter = FilterOf(query);
  if (!filter.channel && !filter.tenant) throw BadRequest{"a count needs a channel or a tenant"};
  if (*action == "cancel" && (filter.since || filter.until)) {
    throw BadRequest{"a cancel takes no time range"};
  }
  const int64_t count = pool_.With([&](ConsoleStores& s) {
    return *action == "replay" ? s.console.CountReplay(filter) : s.console.CountCancel(filter);
  });
  return Json(200, {{"count", std::min(count, ConsoleStore::kCountCap)},
                    {"capped", count > ConsoleStore::kCountCap}});
}

Response ConsoleApp::Delivery(int64_t id) {
  std::optional<std::string> doc =
      pool_.With([&](ConsoleStores& s) { return s.console.Delivery(id); });
  if (!doc) return Error(404, "no such delivery: " + std::to_string(id));
  return Document(std::move(*doc));
}

Response ConsoleApp::Payload(int64_t id, const Caller& caller) {
  if (caller.role != Role::kAdmin) return Error(403, "only the admin token may read payloads");
  std::optional<std::string> payload =
      pool_.With([&](ConsoleStores& s) { return s.console.Payload(id); });
  if (!payload) return Error(404, "no such delivery: " + std::to_string(id));
  Log(LogLevel::kInfo, "console_payload_read", {{"who", caller.who}, {"delivery", id}});
  return Document("{\"payload\": " + *payload + "}");
}

Response ConsoleApp::Actions(const Query& query) {
  const int64_t limit = LimitParam(query, "limit", kActionsDefault, kActionsMax);
  return Document(pool_.With([&](ConsoleStores& s) { return s.console.Actions(limit); }));
}

Response ConsoleApp::ChannelAction(int64_t id, std::string_view verb, const Caller& caller) {
  const std::optional<ChannelChange> change = pool_.With([&](ConsoleStores& s) {
    if (verb == "pause") return s.channels.PauseChannel(id);
    if (verb == "resume") return s.channels.ResumeChannel(id);
    if (verb == "reset") return s.channels.ResetBreaker(id);
    return s.channels.EnableChannel(id);
  });
  if (!change) return Error(404, "no such channel: " + std::to_string(id));
  if (verb == "resume" && change->before == "disabled") {
    return Json(409, {{"error", "channel " + std::to_string(id) + " is disabled (" +
                                    change->reason + "): enable it first"},
                      {"before", change->before},
                      {"jobs", change->jobs}});
  }
  Audit(caller, verb, "channel " + std::to_string(id), "{}", change->jobs);
  return Json(200, {{"before", change->before}, {"jobs", change->jobs}});
}

Response ConsoleApp::DeliveryAction(int64_t id, std::string_view verb, const Caller& caller) {
  JobSelector one;
  one.id = id;
  one.limit = 1;
  const auto [change, found] = pool_.With([&](ConsoleStores& s) {
    const BulkChange done = verb == "replay" ? s.jobs.Replay(one) : s.jobs.Cancel(one);
    return std::make_pair(done, done.jobs == 0 ? s.jobs.FindJob(id) : std::nullopt);
  });
  if (change.jobs == 0) {
    if (!found) return Error(404, "no such delivery: " + std::to_string(id));
    return Error(409, "delivery " + std::to_string(id) + " is " + found->state + ", not " +
                          (verb == "replay" ? "discarded" : "waiting (available or parked)"));
  }
  Audit(caller, verb, "delivery " + std::to_string(id), "{}", change.jobs);
  json out = {{"jobs", change.jobs}};
  if (verb == "replay") {
    out["available"] = change.available;
    out["parked"] = change.parked;
  }
  return Json(200, out);
}

Response ConsoleApp::BulkAction(std::string_view verb, const Request& request,
                                const Caller& caller) {
  const DeliveryFilter filter =
      verb == "replay" ? BodyFilter(request.body, {"channel", "tenant", "since", "until"})
                       : BodyFilter(request.body, {"channel", "tenant"});
  JobSelector selector;
  selector.channel = filter.channel;
  selector.tenant = filter.tenant;
  selector.since_at = filter.since;
  selector.until_at = filter.until;
  selector.limit = kBatch;
  // Batch after batch, each its own statement and transaction, so that no statement holds a
  // big backlog's row locks for long; the jobs a batch takes are gone from the next one's.
  BulkChange total;
  pool_.With([&](ConsoleStores& s) {
    do {
      const BulkChange batch = verb == "replay" ? s.jobs.Replay(selector) : s.jobs.Cancel(selector);
      total.jobs += batch.jobs;
      total.available += batch.available;
      total.parked += batch.parked;
      total.more = batch.more;
      if (batch.jobs == 0) break;
    } while (total.more && total.jobs < kBulkMax);
  });
  Audit(caller, verb, TargetOf(filter), FilterJson(filter).dump(), total.jobs);
  json out = {{"jobs", total.jobs}, {"more", total.more}};
  if (verb == "replay") {
    out["available"] = total.available;
    out["parked"] = total.parked;
  }
  return Json(200, out);
}

void ConsoleApp::Audit(const Caller& caller, std::string_view action, const std::string& target,
                       const std::string& filter_json, int64_t jobs) {
  pool_.With([&](ConsoleStores& s) {
    return s.console.RecordAction(caller.who, std::string(action), target, filter_json, jobs);
  });
  Log(LogLevel::kInfo, "console_action",
      {{"who", caller.who}, {"action", action}, {"target", target}, {"jobs", jobs}});
}

}  // namespace bulkhead::console
