// bulkhead-mock: the mock webhook provider of the load harness (load/mock/mock_provider.h has
// the routes). Serves until SIGINT or SIGTERM. docs/load.md describes it.
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "exit_codes.h"
#include "mock_provider.h"
#include "version.h"

namespace {

constexpr const char* kUsage = R"(usage: bulkhead-mock [options]

The load harness's mock webhook provider: an asynchronous HTTP/1.1 server that records every
request and answers as its route says.

routes:
  /hook/healthy     200 after a uniformly random 20-30 ms
  /hook/hang-dead   reads the request and never answers
  /hook/fast        200 at once
  /hook/<name>      200 at once; any /hook/ route takes query parameters:
                    status=N, delay_ms=N|A-B, fail=F (0..1), fail_status=N (503), hang=0|1,
                    body_bytes=N, drip_ms=N, drip_bytes=N (1),
                    retry_after=V (a Retry-After header; percent-encode an HTTP date),
                    location=URL (a Location header, for a 3xx status),
                    garbage=1 (answers bytes that are not HTTP, then closes),
                    endless=1 (a body that never ends: drip_bytes every drip_ms, or
                    64 KiB blocks back to back, until the client hangs up)
  GET  /_mock/stats, GET /_mock/records?since=N&limit=M&route=R, GET /_mock/health,
  POST /_mock/reset, POST /_mock/secrets (a JSON array of whsec_ secrets)

options:
  --listen HOST:PORT   where to listen (default 127.0.0.1:8090; port 0: any free port)
  --port-file FILE     write the port listened on to FILE once listening
  --threads N          I/O threads (default 2)
  --secret SECRET      a whsec_ secret to check webhook-signature against (repeatable)
  --seed N             seed of the random delays and failures (default: from the clock)
  --max-records N      records kept in memory, then counted and dropped (default 10000000)
  -h, --help           show this help
  --version            print the version
)";

int Usage(const std::string& message) {
  std::cerr << "bulkhead-mock: " << message << " (try: bulkhead-mock --help)\n";
  return bulkhead::kExitUsage;
}

template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  bulkhead::mock::MockOptions options;
  std::string port_file;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return bulkhead::kExitOk;
    }
    if (a == "--version") {
      std::cout << "bulkhead-mock " << bulkhead::kVersion << "\n";
      return bulkhead::kExitOk;
    }
    if (!a.starts_with("--")) return Usage("unexpected argument '" + std::string(a) + "'");
    if (a != "--listen" && a != "--port-file" && a != "--threads" && a != "--secret" &&
        a != "--seed" && a != "--max-records") {
      return Usage("unknown option '" + std::string(a) + "'");
    }
    if (i + 1 >= args.size()) return Usage(std::string(a) + " needs a value");
    std::string_view v = args[++i];
    if (a == "--listen") {
      auto colon = v.rfind(':');
      if (colon == std::string_view::npos || !ParseNumber(v.substr(colon + 1), options.port)) {
        return Usage("--listen: expected HOST:PORT, not '" + std::string(v) + "'");
      }
      std::string_view host = v.substr(0, colon);
      if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
      options.host = std::string(host);
    } else if (a == "--port-file") {
      port_file = std::string(v);
    } else if (a == "--threads") {
      if (!ParseNumber(v, options.threads)) return Usage("--threads: not a number");
    } else if (a == "--secret") {
      options.secrets.emplace_back(v);
    } else if (a == "--seed") {
      if (!ParseNumber(v, options.seed)) return Usage("--seed: not a number");
    } else {  // --max-records
      if (!ParseNumber(v, options.max_records)) return Usage("--max-records: not a number");
    }
  }
  if (std::string error = options.Validate(); !error.empty()) return Usage(error);

  // The stop signals are taken by the main thread only: block them before any thread starts,
  // so every I/O thread inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    bulkhead::mock::MockProvider mock(options);
    mock.Start();
    if (!port_file.empty()) {
      // Written to a temporary name and renamed, so a reader never sees a half-written port.
      std::string tmp = port_file + ".tmp";
      std::ofstream(tmp) << mock.port() << "\n";
      std::rename(tmp.c_str(), port_file.c_str());
    }
    std::cout << "bulkhead-mock: listening on http://" << options.host << ":" << mock.port()
              << " with " << options.threads << " threads" << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    std::cout << "bulkhead-mock: got " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", stopping"
              << std::endl;
    mock.Stop();
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-mock: " << e.what() << "\n";
    return bulkhead::kExitFailure;
  }
  return bulkhead::kExitOk;
}
