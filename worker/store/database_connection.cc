#include "database_connection.h"

#include <libpq-fe.h>

#include <map>
#include <mutex>

#include "session_settings.h"

namespace bulkhead {
namespace {

std::mutex node_mu;
std::string node_name;  // guarded by node_mu; set once before threads start

// The words of libpq's `options`: separated by spaces, a backslash keeps the next character
// (libpq's own rule, "\ " for a space inside a value).
std::vector<std::string> Words(const std::string& options) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < options.size(); ++i) {
    char c = options[i];
    if (c == '\\' && i + 1 < options.size()) {
      word += options[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// A word back into `options`, with its spaces and backslashes escaped.
std::string Escape(const std::string& word) {
  std::string out;
  for (char c : word) {
    if (c == ' ' || c == '\\' || c == '\t' || c == '\n') out += '\\';
    out += c;
  }
  return out;
}

// "name=value" as a setting; false when there is no '=' or no name.
bool AddSetting(const std::string& text, std::vector<std::pair<std::string, std::string>>& out) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  out.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  return true;
}

}  // namespace

void SetConnectionNode(std::string node) {
  std::lock_guard lock(node_mu);
  node_name = std::move(node);
}

std::string ApplicationName(std::string_view node, std::string_view part) {
  constexpr size_t kMaxBytes = 63;  // NAMEDATALEN - 1: PostgreSQL truncates past it
  std::string name = "bulkhead:";
  name += node;
  name += ':';
  name += part;
  for (char& c : name) {
    if (c < 0x20 || c > 0x7e) c = '?';  // also every byte of a multibyte character
  }
  if (name.size() > kMaxBytes) name.resize(kMaxBytes);
  return name;
}

StartupSettings TakeStartupSettings(const std::string& conninfo) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed(
      PQconninfoParse(conninfo.c_str(), &error), &PQconninfoFree);
  if (!parsed) {
    PQfreemem(error);
    return {conninfo, {}};
  }
  std::map<std::string, std::string> given;
  for (PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
    if (o->val != nullptr) given[o->keyword] = o->val;
  }
  StartupSettings result;
  if (auto options = given.find("options"); options != given.end()) {
    std::vector<std::string> words = Words(options->second);
    std::string kept;
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      bool taken = false;
      if (w == "-c" && i + 1 < words.size()) {
        taken = AddSetting(words[i + 1], result.settings);
        if (taken) ++i;
      } else if (w.starts_with("-c") && w.size() > 2) {
        taken = AddSetting(w.substr(2), result.settings);
      } else if (w.starts_with("--") && w.size() > 2) {
        taken = AddSetting(w.substr(2), result.settings);
      }
      if (!taken) {
        if (!kept.empty()) kept += ' ';
        kept += Escape(w);
      }
    }
    if (kept.empty()) {
      given.erase(options);
    } else {
      options->second = kept;
    }
  }
  for (const auto& [keyword, value] : given) {
    if (!result.conninfo.empty()) result.conninfo += ' ';
    result.conninfo.append(keyword).append("=").append(ConninfoValue(value));
  }
  return result;
}

namespace {

// Connects to `startup.conninfo` named as part `part` of this node; no settings made.
std::unique_ptr<pqxx::connection> ConnectNamed(const StartupSettings& startup,
                                               std::string_view part) {
  std::string node;
  {
    std::lock_guard lock(node_mu);
    node = node_name;
  }
  std::string with_name = startup.conninfo;
  if (!with_name.empty()) with_name += ' ';
  with_name.append("application_name=").append(ConninfoValue(ApplicationName(node, part)));
  return std::make_unique<pqxx::connection>(with_name);
}

}  // namespace

std::unique_ptr<pqxx::connection> OpenConnection(const std::string& conninfo,
                                                 std::string_view part) {
  StartupSettings startup = TakeStartupSettings(conninfo);
  auto conn = ConnectNamed(startup, part);
  if (!startup.settings.empty()) {
    pqxx::nontransaction tx(*conn, "session_settings");
    for (const auto& [name, value] : startup.settings) {
      tx.exec_params("SELECT set_config($1, $2, false)", name, value);
    }
  }
  return conn;
}

std::unique_ptr<pqxx::connection> OpenPooledConnection(
    const std::string& conninfo, std::string_view part,
    std::vector<std::pair<std::string, std::string>>* settings) {
  StartupSettings startup = TakeStartupSettings(conninfo);
  auto conn = ConnectNamed(startup, part);
  *settings = std::move(startup.settings);
  return conn;
}

}  // namespace bulkhead
