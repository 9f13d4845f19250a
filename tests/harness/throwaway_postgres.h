// ThrowawayPostgres: a private PostgreSQL 15 cluster for one test process.
//
// Start() copies a fresh initdb's folder into a new folder (in /dev/shm when it exists; the
// copy is of one that initdb made once for the server binaries), picks a free port and
// starts `postgres` on it and on a Unix socket in that folder, with durability off (fsync,
// synchronous_commit, full_page_writes): a crash loses a test's data, which is what a throwaway
// cluster is for. PostgreSQL refuses to run as root, so when the tests run as root the cluster
// runs as the `postgres` system user. pg_stat_statements is preloaded, so that a test can count
// the statements a piece of code runs (after CREATE EXTENSION in its database).
//
// Cleanup, also after a failed run: the destructor stops the server (fast shutdown) and removes
// the folder. If the test process dies without unwinding (abort, SIGKILL), the server gets
// SIGINT from the kernel (PR_SET_PDEATHSIG) and stops, and the next Start() removes every
// folder whose owning test process is gone.
//
// Not thread-safe; made and destroyed by the main thread (the GoogleTest environment), read
// by any thread afterwards (the accessors are const).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

namespace bulkhead::testing {

class ThrowawayPostgres {
 public:
  // Throws std::runtime_error with the server log's tail if the cluster cannot start.
  static std::unique_ptr<ThrowawayPostgres> Start();

  ~ThrowawayPostgres();
  ThrowawayPostgres(const ThrowawayPostgres&) = delete;
  ThrowawayPostgres& operator=(const ThrowawayPostgres&) = delete;

  // libpq keyword/value string for `dbname`, over the Unix socket.
  std::string ConnectionString(const std::string& dbname) const;
  // postgresql:// URL for `dbname`, over TCP on 127.0.0.1, as an operator would write it.
  std::string Url(const std::string& dbname) const;
  // Folder of the server's binaries (pg_dump, psql), matching the server's version.
  const std::filesystem::path& bindir() const { return bindir_; }
  int port() const { return port_; }

 private:
  ThrowawayPostgres(std::filesystem::path root, std::filesystem::path bindir);
  void Launch();

  const std::filesystem::path root_;    // the temp folder; removed on destruction
  const std::filesystem::path bindir_;  // initdb, postgres, pg_dump
  int port_ = 0;
  pid_t server_pid_ = -1;
};

}  // namespace bulkhead::testing
