// ThrowawayPgBouncer: Debian's PgBouncer (1.18) in front of the test's throwaway PostgreSQL, with
// PgBouncer's default settings but for what it cannot start without: where it listens (a free
// loopback port), how it logs in (trust, for the cluster's superuser), and which server it
// pools (every database of the cluster, over its Unix socket). So it refuses what a stock
// PgBouncer refuses — the `options` startup parameter among them — and pools in session mode;
// `pool_mode` switches it to transaction mode.
//
// PgBouncer refuses to run as root, so under root it runs as the `postgres` system user, as the
// cluster does, daemonized with a pid file; the destructor stops it (SIGINT, then SIGKILL) and
// removes its folder. A test process killed without unwinding leaves it running (unlike the
// cluster, it does not die with its parent); it serves only a cluster that is gone by then.
// Made and destroyed by the test's main thread.
#pragma once

#include <filesystem>
#include <string>

#include "throwaway_postgres.h"

namespace bulkhead::testing {

class ThrowawayPgBouncer {
 public:
  // Throws std::runtime_error with PgBouncer's log when it does not start (or is not installed:
  // ./setup.sh installs it).
  ThrowawayPgBouncer(const ThrowawayPostgres& cluster, const std::string& pool_mode = "session");
  ~ThrowawayPgBouncer();
  ThrowawayPgBouncer(const ThrowawayPgBouncer&) = delete;
  ThrowawayPgBouncer& operator=(const ThrowawayPgBouncer&) = delete;

  // libpq keyword/value string for `dbname` through PgBouncer, over TCP on 127.0.0.1.
  std::string ConnectionString(const std::string& dbname) const;
  std::string Log() const;

 private:
  std::filesystem::path dir_;
  int port_ = 0;
};

}  // namespace bulkhead::testing
