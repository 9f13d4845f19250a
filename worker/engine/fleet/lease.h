// Lease: this node's view of its own lease, which says whether it may claim.
//
// Rescue returns the executing jobs of every node whose lease (nodes.lease_until) has run out.
// A node whose heartbeat cannot land — the database unreachable for it, its row forgotten —
// must therefore stop claiming before its lease ends, or the jobs it claims are rescued and
// sent again by another node while it sends them too. Renewed() is told the time a heartbeat
// was sent once it succeeds; the database set the lease to its own now() + lease_ms, which
// is no earlier than that send. The node holds its lease, for claiming, until one heartbeat
// period (lease_ms / 5) before that end: the margin a claim started just before needs to
// commit while the lease still runs.
//
// Threads: Renewed() from the heartbeat's thread; Held() from any (queue runners before each
// claim). One atomic; no lock.
#pragma once

#include <atomic>
#include <chrono>

namespace bulkhead {

class Lease {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Lease(std::chrono::milliseconds lease) : lease_(lease) {}

  // A heartbeat (or the registration) sent at `sent_at` has landed.
  void Renewed(Clock::time_point sent_at) {
    held_until_.store(sent_at + lease_ - lease_ / 5, std::memory_order_release);
  }

  // Whether the node may claim at `now`. False until the first Renewed().
  bool Held(Clock::time_point now) const {
    return now < held_until_.load(std::memory_order_acquire);
  }

  // The end of the lease as held for claiming (Clock::time_point::min() before any renewal).
  Clock::time_point held_until() const { return held_until_.load(std::memory_order_acquire); }

 private:
  const std::chrono::milliseconds lease_;
  std::atomic<Clock::time_point> held_until_{Clock::time_point::min()};
};

}  // namespace bulkhead
