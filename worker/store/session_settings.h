// WithSessionSettings: a node's connection string with the timeouts and keepalives every one
// of its database connections needs, so that a database that stops answering costs a bounded
// wait, never a thread stuck for the kernel's 15 minutes of retransmissions.
//
// libpq's defaults wait for ever: no connect timeout, no statement timeout, keepalives only
// after two hours of silence, and a request to a black-holed address is retransmitted for
// about 15 minutes (tcp_retries2). A node's heartbeat stuck that long costs it its lease while
// it still sends, and its claims and results stop without an error. These settings bound each
// wait (docs/configuration.md, the database_* keys):
//   connect_timeout      a connection attempt (libpq counts whole seconds: rounded up, at least 2)
//   tcp_user_timeout     data sent but not acknowledged: the server is gone mid-statement
//   keepalives_*         an idle connection (the LISTEN one) whose peer vanished: probes after
//                        keepalive_idle, every idle / 5 (at least 1 s), 3 unanswered → dead
//   statement_timeout    a statement the server runs too long (as `-c` in `options`, which
//                        OpenConnection, database_connection.h, sets after connecting)
// and, beside them, `-c jit=off` (unless the operator's options name jit): JIT compiling one of
// a node's short statements costs more than running it, up to seconds (ADR 0027).
// A keyword the operator set in the connection string (URL or keyword/value) is kept as they set
// it; for `options`, theirs come first and statement_timeout is added unless they set it. A
// value of 0 leaves that setting to libpq's (or the server's) default.
//
// Pure: parses with libpq's PQconninfoParse and returns a keyword/value string. A string libpq
// cannot parse is returned unchanged: connecting with it fails with libpq's own message.
#pragma once

#include <cstdint>
#include <string>

namespace bulkhead {

struct DatabaseTimeouts {
  int64_t connect_timeout_ms = 5000;
  int64_t statement_timeout_ms = 60000;
  int64_t tcp_user_timeout_ms = 10000;
  int64_t keepalive_idle_ms = 10000;
};

std::string WithSessionSettings(const std::string& conninfo, const DatabaseTimeouts& timeouts);

// A value as a keyword/value connection string writes it: single-quoted, with \ and ' escaped.
std::string ConninfoValue(const std::string& value);

}  // namespace bulkhead
