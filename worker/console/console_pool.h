// ConsolePool: the console's database connections — at most `size` (two by default), opened
// when first needed, each with the stores the console runs (ConsoleStore for its reads and
// audit log, AdminChannelStore and AdminJobsStore for its actions, the same statements the CLI's
// verbs run).
//
// Every connection is named `bulkhead:<host>:console` in pg_stat_activity, plans each
// statement with its parameters (plan_cache_mode = force_custom_plan: the console's filters
// are `$n IS NULL OR …`, which only a custom plan folds away), compiles nothing (jit = off:
// JIT took 0.7 s of a 1 s overview, load/console_bench.sh), and cancels any statement after
// kStatementTimeout, so a slow query cannot hold a request thread or the database for long.
//
// Threads: With() may be called from any thread; a caller waits while every connection is
// lent. A connection whose use threw pqxx::broken_connection is closed, not lent again; the
// next With() opens a new one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "admin_channel_store.h"
#include "admin_jobs_store.h"
#include "console_store.h"

namespace bulkhead::console {

// One connection and the stores prepared on it.
struct ConsoleStores {
  explicit ConsoleStores(std::unique_ptr<pqxx::connection> connection);

  std::unique_ptr<pqxx::connection> conn;
  ConsoleStore console;
  AdminChannelStore channels;
  AdminJobsStore jobs;
};

class ConsolePool {
 public:
  static constexpr auto kStatementTimeout = std::chrono::seconds(5);

  explicit ConsolePool(std::string conninfo, size_t size = 2);

  // Runs `use` on a lent connection's stores and returns what it returns; rethrows what it
  // throws. Opening a connection may throw too (pqxx::broken_connection).
  template <typename Use>
  auto With(Use&& use) -> decltype(use(std::declval<ConsoleStores&>())) {
    Lent lent(*this);
    return use(*lent.stores);
  }

 private:
  // A connection out of the pool for one With(); returned on destruction, unless it broke.
  struct Lent {
    explicit Lent(ConsolePool& pool);
    ~Lent();
    ConsolePool& pool;
    std::unique_ptr<ConsoleStores> stores;
  };

  std::unique_ptr<ConsoleStores> Open() const;

  const std::string conninfo_;
  const size_t size_;
  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<ConsoleStores>> idle_;  // guarded by mu_
  size_t open_ = 0;                                   // guarded by mu_: idle and lent
};

}  // namespace bulkhead::console
