// DeliveryTest: a DatabaseTest that makes deliveries and counts them — the helpers the tests of
// the node, the breaker, the caps, the fleet and the admin verbs all need, written once.
//
// A fixture of its own rather than part of DatabaseTest so that the schema's tests, which call
// bulkhead.enqueue themselves under the same names, keep them. Everything here runs on the
// test's main thread, on db().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "database_test.h"

namespace bulkhead::testing {

class DeliveryTest : public DatabaseTest {
 protected:
  using DatabaseTest::DatabaseTest;

  // Rows of bulkhead.jobs WHERE `where` (SQL).
  int64_t Count(const std::string& where);

  // `n` deliveries to `channel`, one bulkhead.enqueue call each (payload {}), in one
  // transaction, as an application's loop would make them.
  void Enqueue(int64_t channel, int n);
  // One delivery; returns its job id.
  int64_t EnqueueOne(int64_t channel, const std::string& payload = "{}");
  // `n` deliveries to `channel` in one bulkhead.enqueue_many call (payload i is {"n": i}), then
  // `extra_sql` in the same transaction, so that a node sees them changed or not at all.
  // Returns their ids in order.
  std::vector<int64_t> EnqueueMany(int64_t channel, int n, const std::string& extra_sql = "");
};

}  // namespace bulkhead::testing
