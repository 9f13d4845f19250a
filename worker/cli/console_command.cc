#include "console_command.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "cli_common.h"
#include "console_app.h"
#include "console_pool.h"
#include "console_server.h"
#include "database_connection.h"
#include "exit_codes.h"
#include "logger.h"
#include "rate_sampler.h"

namespace bulkhead {
namespace {

constexpr std::string_view kCommand = "bulkhead console";
constexpr size_t kMinTokenLength = 16;

constexpr const char* kUsage = R"(usage: bulkhead console --listen HOST:PORT --token-file FILE
                        [--viewer-token-file FILE] [--tls-cert FILE --tls-key FILE]
                        [--insecure-listen] [--database URL]

Serves the operator console: HTML pages and a JSON API on one port (docs/console.md), until
SIGTERM or SIGINT. It runs beside the fleet, against the same database, and takes no part in
delivery.

  --listen HOST:PORT        where to listen; IPv6 in brackets ([::1]:8080)
  --token-file FILE         the admin token (its first line, 16 characters or more): may read
                            and act
  --viewer-token-file FILE  the viewer token: may only read
  --tls-cert FILE           serve HTTPS with this PEM certificate (chain) ...
  --tls-key FILE            ... and this PEM private key
  --insecure-listen         allow plain HTTP on an address that is not loopback

Every request needs a token: "Authorization: Bearer TOKEN", or the session cookie a browser
gets by logging in at /login. Plain HTTP is refused on any address but loopback unless
--insecure-listen says it is meant.
)";

// The token on the first line of `path`, trimmed; nullopt after the usage error.
std::optional<std::string> ReadToken(const std::string& option, const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    cli::UsageError(kCommand, option + " " + path + ": cannot read the file");
    return std::nullopt;
  }
  const size_t first = line.find_first_not_of(" \t\r");
  const size_t last = line.find_last_not_of(" \t\r");
  line = first == std::string::npos ? "" : line.substr(first, last - first + 1);
  if (line.size() < kMinTokenLength) {
    cli::UsageError(kCommand, option + " " + path + ": the token must be at least " +
                                  std::to_string(kMinTokenLength) + " characters");
    return std::nullopt;
  }
  return line;
}

// Whether `listen`'s host is a loopback address (127.0.0.0/8, ::1, or "localhost").
bool IsLoopback(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

// Blocks SIGTERM and SIGINT in every thread started after it, so that sigwait takes them.
sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

}  // namespace

int RunConsoleCommand(std::span<const std::string_view> args) {
  auto parsed = cli::Parse(kCommand, args,
                           {.options = {{"--listen", "HOST:PORT"},
                                        {"--token-file", "a file"},
                                        {"--viewer-token-file", "a file"},
                                        {"--tls-cert", "a file"},
                                        {"--tls-key", "a file"},
                                        {"--insecure-listen", nullptr}},
                            .max_positional = 0},
                           [] { std::cout << kUsage << "\n"
                                          << cli::kDatabaseNote; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);

  const std::optional<std::string> listen = words.Value("--listen");
  if (!listen || listen->rfind(':') == std::string::npos) {
    return cli::UsageError(kCommand, "--listen HOST:PORT is required");
  }
  const std::optional<std::string> token_file = words.Value("--token-file");
  if (!token_file) return cli::UsageError(kCommand, "--token-file FILE is required");
  const std::optional<std::string> admin = ReadToken("--token-file", *token_file);
  if (!admin) return kExitUsage;
  std::string viewer;
  if (std::optional<std::string> file = words.Value("--viewer-token-file")) {
    std::optional<std::string> token = ReadToken("--viewer-token-file", *file);
    if (!token) return kExitUsage;
    if (*token == *admin) {
      return cli::UsageError(kCommand, "the viewer token must differ from the admin token");
    }
    viewer = *token;
  }
  const std::string cert = words.Value("--tls-cert").value_or("");
  const std::string key = words.Value("--tls-key").value_or("");
  if (cert.empty() != key.empty()) {
    return cli::UsageError(kCommand, "--tls-cert and --tls-key go together");
  }
  if (cert.empty() && !words.Has("--insecure-listen") && !IsLoopback(*listen)) {
    return cli::UsageError(kCommand, *listen +
                                         " is not a loopback address: serve TLS there "
                                         "(--tls-cert, --tls-key), or say --insecure-listen");
  }
  auto database = cli::DatabaseOf(kCommand, words);
  if (const int* exit_code = std::get_if<int>(&database)) return *exit_code;

  char host[256] = "";
  gethostname(host, sizeof host - 1);
  SetLogNode(std::string(host) + ":console");
  SetConnectionNode(host);
  const sigset_t stop = BlockStopSignals();

  console::ConsolePool pool(std::get<std::string>(database));
  try {
    pool.With([](console::ConsoleStores& s) { return s.console.Overview(); });
  } catch (const std::exception& e) {
    std::cerr << kCommand << ": database error: " << FirstLine(e.what()) << "\n";
    return kExitFailure;
  }
  console::RateSampler rates(pool);
  console::ConsoleApp app(console::TokenCheck(*admin, viewer), pool, rates);
  console::ConsoleServer server({.listen = *listen, .tls_cert = cert, .tls_key = key},
                                [&app](const console::Request& r) { return app.Handle(r); });
  if (!server.ok()) {
    std::cerr << kCommand << ": " << server.error() << "\n";
    return kExitFailure;
  }
  Log(LogLevel::kInfo, "console_serving",
      {{"listen", *listen},
       {"port", server.port()},
       {"tls", !cert.empty()},
       {"viewer_token", !viewer.empty()}});
  int signal = 0;
  sigwait(&stop, &signal);
  Log(LogLevel::kInfo, "console_stopping", {{"signal", signal}});
  return kExitOk;
}

}  // namespace bulkhead
