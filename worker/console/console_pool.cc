#include "console_pool.h"

#include "database_connection.h"

namespace bulkhead::console {

ConsoleStores::ConsoleStores(std::unique_ptr<pqxx::connection> connection)
    : conn(std::move(connection)), console(*conn), channels(*conn), jobs(*conn) {}

ConsolePool::ConsolePool(std::string conninfo, size_t size)
    : conninfo_(std::move(conninfo)), size_(size) {}

std::unique_ptr<ConsoleStores> ConsolePool::Open() const {
  std::unique_ptr<pqxx::connection> conn = OpenConnection(conninfo_, "console");
  pqxx::nontransaction setup(*conn, "console_settings");
  setup.exec0("SET plan_cache_mode = force_custom_plan");
  // Each bounded read costs a few milliseconds, but its LIMITed subplans can push the planner's
  // estimate past jit_above_cost; compiling it then took 0.7 s of the overview's 1 s.
  setup.exec0("SET jit = off");
  setup.exec0("SET statement_timeout = " +
              std::to_string(std::chrono::milliseconds(kStatementTimeout).count()));
  setup.commit();
  return std::make_unique<ConsoleStores>(std::move(conn));
}

ConsolePool::Lent::Lent(ConsolePool& owner) : pool(owner) {
  std::unique_lock lock(pool.mu_);
  pool.returned_.wait(lock, [&] { return !pool.idle_.empty() || pool.open_ < pool.size_; });
  if (!pool.idle_.empty()) {
    stores = std::move(pool.idle_.back());
    pool.idle_.pop_back();
    return;
  }
  ++pool.open_;  // counted before connecting, so that no other caller opens one past the size
  lock.unlock();
  try {
    stores = pool.Open();
  } catch (...) {
    lock.lock();
    --pool.open_;
    pool.returned_.notify_one();
    throw;
  }
}

ConsolePool::Lent::~Lent() {
  std::lock_guard lock(pool.mu_);
  if (stores && stores->conn->is_open()) {
    pool.idle_.push_back(std::move(stores));
  } else {
    --pool.open_;
  }
  pool.returned_.notify_one();
}

}  // namespace bulkhead::console
