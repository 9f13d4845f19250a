#include "console_app.h"

#include <nlohmann/json.hpp>

#include "console_assets.h"
#include "logger.h"
#include "url_form.h"

namespace bulkhead::console {
namespace {

constexpr std::string_view kCookie = "bulkhead_session";

Response Json(int status, const nlohmann::json& body) {
  return {status, "application/json; charset=utf-8", body.dump() + "\n", {}};
}

Response ServeAsset(std::string_view name, int status = 200) {
  std::optional<Asset> asset = FindAsset(name);
  if (!asset) return Json(404, {{"error", "no such page"}});
  return {status, std::string(asset->content_type), std::string(asset->body), {}};
}

// The login form, with `message` (a sentence of ours, never the request's text) where the page
// says <!--message-->.
Response LoginPage(int status, std::string_view message) {
  Response page = ServeAsset("login.html", status);
  const std::string_view mark = "<!--message-->";
  if (size_t at = page.body.find(mark); at != std::string::npos) {
    page.body.replace(at, mark.size(),
                      message.empty() ? "" : "<p class=\"error\">" + std::string(message) + "</p>");
  }
  return page;
}

// The value of cookie `name` in a Cookie header; "" when absent.
std::string_view CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
        pair[name.size()] == '=') {
      return pair.substr(name.size() + 1);
    }
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return {};
}

std::string SessionCookie(std::string_view id, bool tls, bool clear) {
  std::string cookie =
      std::string(kCookie) + "=" + std::string(id) + "; Path=/; HttpOnly; SameSite=Strict";
  if (tls) cookie += "; Secure";
  if (clear) cookie += "; Max-Age=0";
  return cookie;
}

bool IsPage(std::string_view path) {
  if (path == "/" || path == "/channels" || path == "/deliveries" || path == "/actions") {
    return true;
  }
  for (std::string_view prefix : {"/channels/", "/deliveries/"}) {
    if (path.substr(0, prefix.size()) == prefix && path.size() > prefix.size() &&
        path.find_first_not_of("0123456789", prefix.size()) == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

ConsoleApp::ConsoleApp(TokenCheck tokens, ConsolePool& pool, RateSampler& rates,
                       const WaitClock& clock)
    : tokens_(std::move(tokens)), pool_(pool), rates_(rates), clock_(clock), sessions_(clock) {}

Response ConsoleApp::Handle(const Request& request) {
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (request.path == "/login") {
    if (get) return LoginPage(200, "");
    if (request.method == "POST") return Login(request);
    return {405,
            "application/json; charset=utf-8",
            "{\"error\": \"GET or POST\"}\n",
            {{"Allow", "GET, POST"}}};
  }
  if (get && request.path == "/assets/app.css") return ServeAsset("app.css");

  const std::optional<Caller> caller = Authenticate(request);
  if (!caller) {
    if (request.path.rfind("/api/", 0) == 0 || !get) {
      Response refused = Json(401, {{"error", "a valid token is required"}});
      refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"bulkhead console\"");
      return refused;
    }
    return LoginPage(401, "");
  }
  if (!get && caller->session &&
      !PassesCsrf(*caller->session, request.Header("x-csrf-token").value_or(""),
                  request.Header("origin"), request.Header("host").value_or(""), request.tls)) {
    return Json(403, {{"error", "the CSRF check failed: reload the page"}});
  }
  if (request.path == "/logout") {  // any role may end its own session
    if (request.method != "POST") {
      return {
          405, "application/json; charset=utf-8", "{\"error\": \"POST\"}\n", {{"Allow", "POST"}}};
    }
    return Logout(request);
  }
  if (!get && caller->role != Role::kAdmin) {
    return Json(403, {{"error", "the viewer token may only read"}});
  }
  if (request.path.rfind("/api/", 0) == 0) return Api(request, *caller);
  if (!get) return Json(405, {{"error", "pages are read with GET"}});
  if (IsPage(request.path)) return ServeAsset("index.html");
  if (request.path == "/assets/app.js") return ServeAsset("app.js");
  return Json(404, {{"error", "no such page"}});
}

Response ConsoleApp::Login(const Request& request) {
  const std::optional<Form> form = ParseForm(request.body);
  std::optional<std::string> token;
  if (form && form->contains("token")) token = form->at("token");
  const std::optional<Role> role = token ? tokens_.RoleOf(*token) : std::nullopt;
  if (!role) {
    Log(LogLevel::kWarn, "console_login_refused", {{"remote", request.remote}});
    return LoginPage(401, "That token is not valid.");
  }
  const std::string who = std::string(RoleName(*role)) + ":" + TokenCheck::Fingerprint(*token);
  const std::string id = sessions_.Open({*role, RandomToken(), who});
  Log(LogLevel::kInfo, "console_login", {{"who", who}, {"remote", request.remote}});
  return {303,
          "text/plain; charset=utf-8",
          "",
          {{"Location", "/"}, {"Set-Cookie", SessionCookie(id, request.tls, false)}}};
}

Response ConsoleApp::Logout(const Request& request) {
  sessions_.Close(CookieValue(request.Header("cookie").value_or(""), kCookie));
  return {200,
          "application/json; charset=utf-8",
          "{}\n",
          {{"Set-Cookie", SessionCookie("", request.tls, true)}}};
}

std::optional<ConsoleApp::Caller> ConsoleApp::Authenticate(const Request& request) {
  if (std::optional<std::string_view> header = request.Header("authorization")) {
    constexpr std::string_view kBearer = "Bearer ";
    if (header->substr(0, kBearer.size()) != kBearer) return std::nullopt;
    const std::string_view token = header->substr(kBearer.size());
    const std::optional<Role> role = tokens_.RoleOf(token);
    if (!role) return std::nullopt;
    return Caller{
        *role,
        std::string(RoleName(*role)) + ":" + TokenCheck::Fingerprint(token) + "@" + request.remote,
        std::nullopt};
  }
  const std::string_view id = CookieValue(request.Header("cookie").value_or(""), kCookie);
  if (id.empty()) return std::nullopt;
  std::optional<Session> session = sessions_.Find(id);
  if (!session) return std::nullopt;
  return Caller{session->role, session->who + "@" + request.remote, std::move(session)};
}

}  // namespace bulkhead::console
