// `bulkhead console --listen HOST:PORT --token-file FILE [--viewer-token-file FILE]
// [--tls-cert FILE --tls-key FILE] [--insecure-listen] [--database URL]`: serves the operator
// console (docs/console.md) until SIGTERM or SIGINT.
//
// It checks everything before serving: the token files (readable, a token of at least 16
// characters on the first line), the certificate and key given together, and the listening
// address — not a loopback one only with TLS or --insecure-listen — each refused with one line
// and exit 2; then the database (its statements prepared, a first read), refused with exit 1.
//
// Runs on the calling thread, which waits for the signal; the console's server and rate
// sampler run their own threads (console_server.h, rate_sampler.h).
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "console". Returns the process exit code.
int RunConsoleCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
