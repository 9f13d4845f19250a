#include "run_command.h"

#include <curl/curl.h>
#include <signal.h>
#include <sys/resource.h>

#include <iostream>
#include <optional>
#include <string>
#include <variant>

#include "cli_common.h"
#include "config.h"
#include "database_url.h"
#include "exit_codes.h"
#include "node.h"

namespace bulkhead {
namespace {

constexpr std::string_view kCommand = "bulkhead run";

constexpr const char* kUsage = R"(usage: bulkhead run --config FILE [--database URL]

Runs one worker node: claims the jobs of the tiers in the config's tiers_dir, delivers them,
and retries failures, until SIGTERM or SIGINT (the first drains in-flight deliveries for up to
shutdown_grace_ms and hands the rest back; a second exits at once).

The database is --database URL, else the config's "database", else DATABASE_URL, else libpq's
PG* variables. docs/configuration.md lists every key.
)";

// "bulkhead run: <message> (try: bulkhead run --help)", exit 2.
int UsageError(const std::string& message) { return cli::UsageError(kCommand, message); }

}  // namespace

int RunRunCommand(std::span<const std::string_view> args) {
  std::optional<std::string> config_file;
  std::optional<std::string> database;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (arg == "--config" || arg == "--database") {
      if (i + 1 == args.size()) return UsageError(std::string(arg) + " needs a value");
      (arg == "--config" ? config_file : database) = std::string(args[++i]);
    } else if (arg.starts_with("--config=")) {
      config_file = std::string(arg.substr(sizeof("--config=") - 1));
    } else if (arg.starts_with("--database=")) {
      database = std::string(arg.substr(sizeof("--database=") - 1));
    } else {
      return UsageError("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!config_file) return UsageError("missing --config FILE");

  auto loaded = LoadConfig(*config_file);
  if (auto* error = std::get_if<ConfigError>(&loaded)) {
    std::cerr << "bulkhead run: " << error->Message() << "\n";
    return kExitUsage;
  }
  Config config = std::get<Config>(std::move(loaded));
  std::optional<std::string> from_config;
  if (!config.node.database.empty()) from_config = config.node.database;
  std::string conninfo = ResolveDatabase(database, from_config);

  // Before any thread exists: every thread inherits the mask, so the stop signals reach only
  // Node::Run's sigtimedwait, and libcurl's global state is set up once.
  BlockStopSignals();
  signal(SIGPIPE, SIG_IGN);
  // Every request in flight holds a socket: 2,000 hung deliveries need more descriptors than
  // the usual soft limit of 1,024. Raise it to the hard limit the operator allows.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int code = Node(std::move(config), std::move(conninfo)).Run();
  curl_global_cleanup();
  return code;
}

}  // namespace bulkhead
